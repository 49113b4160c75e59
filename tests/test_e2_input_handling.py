"""E2 on real-world input: one bad entry never rejects a whole file, and Terraform's heredoc rules are Terraform's."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2_fakes import FakeOracle, make_item

from sv_env_config_verification import verify as e2_verify
from sv_env_config_verification.adapters.opa import OpaAdapter
from sv_env_config_verification.config_model import ConfigParseError
from sv_env_config_verification.data import LoadReport, load_manifest_dir
from sv_env_config_verification.hcltext import HclText
from sv_env_config_verification.loading import parse_config
from sv_env_config_verification.manifests import unified_diff
from sv_env_config_verification.oracle import Oracle
from sv_env_config_verification.schema import findings_from_json

# The example: a `kind: List` whose second item is empty (a stray "-"), as kubectl-exported files have.
LIST_WITH_NULL_ITEM = """\
apiVersion: v1
kind: List
items:
  - apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: web
    spec:
      selector:
        matchLabels: {app: web}
      template:
        metadata:
          labels: {app: web}
        spec:
          containers:
            - name: app
              image: nginx:latest
              securityContext:
                privileged: true
  -
  - apiVersion: v1
    kind: Pod
    metadata:
      name: debug
    spec:
      hostNetwork: true
      containers:
        - name: shell
          image: busybox:1.36
"""

HEREDOC_POLICY = """\
resource "aws_iam_policy" "admin" {
  name   = "admin"
  policy = <<EOT
{
  "Version": "2012-10-17",
  "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]
}
EOT
}
"""


@pytest.fixture(scope="module")
def oracle() -> Oracle:
    return Oracle([OpaAdapter()])


def test_a_null_list_item_is_skipped_and_named_and_the_other_items_keep_their_findings(oracle: Oracle) -> None:
    parsed = parse_config("kubernetes", LIST_WITH_NULL_ITEM)
    assert parsed.resource_names() == ["Deployment/web", "Pod/debug"]
    assert [entry.to_dict() for entry in parsed.skipped] == [
        {
            "reason": "invalid_manifest",
            "where": "item 2 of the List in document 1",
            "problem": "is empty (null)",
            "line": 20,
        }
    ]
    result = oracle.scan("exported.yaml", LIST_WITH_NULL_ITEM)
    assert result.error is None
    found = {(f.canonical_id, f.resource) for f in result.findings}
    assert {("K8S_PRIVILEGED", "Deployment/web"), ("K8S_HOST_NAMESPACE", "Pod/debug")} <= found


def test_documents_that_are_not_objects_are_skipped_one_by_one() -> None:
    text = (
        "just a string\n---\n- 1\n- 2\n---\nmetadata: {name: no-kind}\n---\n"
        "apiVersion: v1\nkind: List\nitems: [null, 3, {apiVersion: v1, kind: Pod, metadata: {name: inner}}]\n---\n"
        "apiVersion: v1\nkind: Service\nmetadata: {name: front}\n"
    )
    parsed = parse_config("kubernetes", text)
    assert parsed.resource_names() == ["Pod/inner", "Service/front"]
    assert [str(entry) for entry in parsed.skipped] == [
        "document 1 (line 1) is a str, not a Kubernetes object",
        "document 2 (line 3) is a list, not a Kubernetes object",
        "document 3 (line 6) has no string 'apiVersion'",
        "item 1 of the List in document 4 (line 10) is empty (null)",
        "item 2 of the List in document 4 (line 10) is a int, not a Kubernetes object",
    ]


def test_a_file_with_no_object_at_all_is_still_not_a_manifest() -> None:
    with pytest.raises(ConfigParseError) as caught:
        parse_config("kubernetes", "apiVersion: v1\nkind: List\nitems: [null, null]\n")
    assert caught.value.reason == "invalid_manifest"
    assert "item 1 of the List in document 1" in str(caught.value)
    assert parse_config("kubernetes", "apiVersion: v1\nkind: List\nitems: [null]\n", strict=False).resources == []


def test_loaders_keep_a_file_with_a_bad_entry_and_report_the_entry(tmp_path: Path, oracle: Oracle) -> None:
    (tmp_path / "exported.yaml").write_text(LIST_WITH_NULL_ITEM, encoding="utf-8")
    report = LoadReport(source=str(tmp_path))
    frame = load_manifest_dir(tmp_path, oracle=oracle, report=report)
    assert frame.height == 1 and frame["label"].to_list() == ["vulnerable"]
    assert report.skipped_entries == {"exported.yaml": ["item 2 of the List in document 1 (line 20) is empty (null)"]}
    assert "1 entries that are not Kubernetes objects skipped in 1 files" in report.summary()


@pytest.mark.parametrize(
    "closing",
    ["EOT   ", "EOT\t", "  EOT", " \tEOT  "],
    ids=["trailing-spaces", "trailing-tab", "indented", "both"],
)
def test_whitespace_around_a_heredoc_terminator_is_accepted_like_terraform(closing: str, oracle: Oracle) -> None:
    text = HEREDOC_POLICY.replace("\nEOT\n", f"\n{closing}\n")
    policy = parse_config("terraform", text).resources[0].body["policy"]
    assert policy == parse_config("terraform", HEREDOC_POLICY).resources[0].body["policy"]
    assert [f.canonical_id for f in oracle.scan("iam.tf", text).findings] == ["TF_IAM_WILDCARD"]


def test_crlf_files_with_a_padded_terminator_parse() -> None:
    text = HEREDOC_POLICY.replace("\nEOT\n", "\nEOT  \n").replace("\n", "\r\n")
    assert parse_config("terraform", text).resource_names() == ["aws_iam_policy.admin"]


def test_flush_heredocs_lose_their_common_indentation_as_in_terraform() -> None:
    text = (
        'resource "aws_instance" "web" {\n'
        "  user_data = <<-EOF\n"
        "    #!/bin/sh\n"
        "\n"
        '      echo "indented twice"\n'
        "    EOF  \n"
        "}\n"
    )
    body = parse_config("terraform", text).resources[0].body
    assert body["user_data"] == '#!/bin/sh\n\n  echo "indented twice"'


def test_an_iam_policy_in_an_indented_flush_heredoc_is_read_as_json(oracle: Oracle) -> None:
    indented = HEREDOC_POLICY.replace("<<EOT\n", "<<-EOT\n").replace("\nEOT\n", "\n    EOT \n")
    indented = "\n".join(
        ("    " + line if 2 < number < 7 else line) for number, line in enumerate(indented.split("\n"))
    )
    assert [f.canonical_id for f in oracle.scan("iam.tf", indented).findings] == ["TF_IAM_WILDCARD"]


def test_heredoc_openers_keep_terraforms_rule() -> None:
    """Terraform's scanner wants the newline right after `<<EOT`: an opener with trailing spaces is not HCL."""
    with pytest.raises(ConfigParseError) as caught:
        parse_config("terraform", HEREDOC_POLICY.replace("<<EOT\n", "<<EOT  \n"))
    assert caught.value.reason == "invalid_hcl"


def test_text_edits_see_through_padded_terminators() -> None:
    text = HEREDOC_POLICY.replace("\nEOT\n", "\nEOT   \n") + 'resource "aws_s3_bucket" "b" {\n  bucket = "b"\n}\n'
    assert [".".join(block.labels) for block in HclText(text).resources()] == [
        "aws_iam_policy.admin",
        "aws_s3_bucket.b",
    ]


@pytest.mark.parametrize(
    "broken",
    ["  -\n", "  - 3\n", "  - metadata: {name: web}\n"],
    ids=["null", "scalar", "no-kind"],
)
def test_a_patch_that_turns_the_flawed_item_into_a_skipped_entry_earns_nothing(broken: str) -> None:
    """Skipping bad entries must not open a hole: blanking the vulnerable item removes its findings from the scan, but
    the resource is gone, so the patch is destructive and earns no patch credit."""
    item = make_item(FakeOracle(), "kubernetes", "exported.yaml", LIST_WITH_NULL_ITEM)
    assert {f.resource for f in findings_from_json(item["oracle_findings"])} >= {"Deployment/web"}
    start = LIST_WITH_NULL_ITEM.index("  - apiVersion: apps/v1")
    end = LIST_WITH_NULL_ITEM.index("  -\n")
    blanked = LIST_WITH_NULL_ITEM[:start] + broken + LIST_WITH_NULL_ITEM[end:]
    patch = unified_diff(LIST_WITH_NULL_ITEM, blanked, "exported.yaml")
    outcome = e2_verify.evaluate_patch(item, patch, FakeOracle(), penalty=1.0)
    assert outcome.destructive and outcome.score == 0.0
    assert "Deployment/web was removed" in (outcome.detail or "")
