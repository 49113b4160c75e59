"""Safe parsing of untrusted E2 configs: every hostile input gets its named reason, fast, before any expansion."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from sv_env_config_verification.config_model import DEFAULT_LIMITS, ConfigParseError, LoadLimits, decode_config
from sv_env_config_verification.loading import detect_kind, parse_config, read_config_file

BILLION_LAUGHS = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: lol}
data:
  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
  e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
  f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
  g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
  h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
  i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
    - name: app
      image: nginx:1.25
"""

TERRAFORM = """\
resource "aws_s3_bucket" "logs" {
  bucket = "acme-logs"
}

data "aws_iam_policy_document" "read" {
  statement {
    actions = ["s3:GetObject"]
  }
}

resource "aws_iam_policy" "p" {
  policy = jsonencode({
    Version   = "2012-10-17"
    Statement = [{ Effect = "Allow", Action = "*", Resource = "*" }]
  })
}
"""


def reason_of(kind: str, text: str | bytes, **kwargs: object) -> str:
    with pytest.raises(ConfigParseError) as caught:
        parse_config(kind, text, **kwargs)  # type: ignore[arg-type]
    assert isinstance(caught.value, ValueError)
    return caught.value.reason


def test_billion_laughs_is_rejected_before_expansion_and_fast() -> None:
    started = time.perf_counter()
    with pytest.raises(ConfigParseError) as caught:
        parse_config("kubernetes", BILLION_LAUGHS)
    assert time.perf_counter() - started < 0.1
    assert caught.value.reason == "yaml_bomb"
    assert caught.value.line is not None and caught.value.line >= 6  # pinned to the alias that blew the budget


def test_recursive_alias_is_a_bomb() -> None:
    assert reason_of("kubernetes", "apiVersion: v1\nkind: ConfigMap\ndata: &a {x: *a}\n") == "yaml_bomb"


def test_modest_anchors_and_merge_keys_are_accepted() -> None:
    text = """\
apiVersion: v1
kind: Pod
metadata: {name: anchors}
spec:
  containers:
    - &base {name: a, image: "nginx:1.25", env: [{name: MODE, value: prod}]}
    - <<: *base
      name: b
"""
    parsed = parse_config("kubernetes", text)
    containers = parsed.documents[0]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["a", "b"]
    assert containers[1]["env"] == [{"name": "MODE", "value": "prod"}]


def test_alias_that_nests_past_the_depth_limit_is_too_deep() -> None:
    deep = "[" * 60 + "1" + "]" * 60
    text = f"apiVersion: v1\nkind: ConfigMap\ndata:\n  a: &a {deep}\n  b: [[[[[[[[*a]]]]]]]]\n"
    assert reason_of("kubernetes", text) == "too_deep"


@pytest.mark.parametrize("kind", ["kubernetes", "terraform"])
@pytest.mark.parametrize("as_bytes", [False, True])
def test_five_megabytes_is_too_large(kind: str, as_bytes: bool) -> None:
    text = "# padding line\n" * (5_000_000 // 15)
    started = time.perf_counter()
    assert reason_of(kind, text.encode() if as_bytes else text) == "too_large"
    assert time.perf_counter() - started < 0.5


def test_multibyte_text_is_measured_in_bytes() -> None:
    limits = LoadLimits(max_bytes=100)
    text = POD + "# " + "é" * 60 + "\n"  # under 100 characters of comment, over 100 bytes in all
    with pytest.raises(ConfigParseError) as caught:
        decode_config(text, limits)
    assert caught.value.reason == "too_large"


@pytest.mark.parametrize("kind", ["kubernetes", "terraform"])
def test_non_utf8_bytes_are_rejected(kind: str) -> None:
    assert reason_of(kind, POD.encode() + b"\xff\xfe bad") == "not_utf8"
    assert reason_of(kind, "name: \udcff") == "not_utf8"  # a lone surrogate smuggled in a str


def test_utf8_bom_is_dropped() -> None:
    parsed = parse_config("kubernetes", b"\xef\xbb\xbf" + POD.encode())
    assert parsed.resource_names() == ["Pod/web"]


def test_deep_nesting_is_too_deep_for_both_kinds() -> None:
    assert reason_of("kubernetes", "a: " + "[" * 5000 + "]" * 5000) == "too_deep"
    assert reason_of("terraform", "locals {\n  x = " + "[" * 5000 + "]" * 5000 + "\n}\n") == "too_deep"


def test_too_many_documents() -> None:
    docs = "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n" * (DEFAULT_LIMITS.max_documents + 1)
    assert reason_of("kubernetes", docs) == "too_many_documents"


def test_invalid_yaml_reports_the_line() -> None:
    with pytest.raises(ConfigParseError) as caught:
        parse_config("kubernetes", "apiVersion: v1\nkind: Pod\nspec: [a,\n  b: }\n")
    assert caught.value.reason == "invalid_yaml"
    assert caught.value.line == 4


def test_python_tags_are_refused_not_executed() -> None:
    text = "apiVersion: v1\nkind: Pod\nx: !!python/object/apply:os.system ['touch /tmp/pwned']\n"
    assert reason_of("kubernetes", text) == "invalid_yaml"


def test_documents_must_be_kubernetes_objects_when_strict() -> None:
    assert reason_of("kubernetes", "- 1\n- 2\n") == "invalid_manifest"
    assert reason_of("kubernetes", "apiVersion: v1\nmetadata: {name: x}\n") == "invalid_manifest"
    lenient = parse_config("kubernetes", "- 1\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: x}\n", strict=False)
    assert lenient.resource_names() == ["Pod/x"]


def test_invalid_hcl() -> None:
    with pytest.raises(ConfigParseError) as caught:
        parse_config("terraform", 'resource "aws_s3_bucket" "b" {\n  bucket = \n}\n')
    assert caught.value.reason == "invalid_hcl"
    assert "invalid HCL" in str(caught.value)
    assert reason_of("terraform", 'resource "aws_s3_bucket" "b" {') == "invalid_hcl"
    assert reason_of("terraform", '{"resource": ') == "invalid_hcl"


def test_kubernetes_names_lines_and_list_items() -> None:
    text = (
        POD
        + """\
---
---
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Service
    metadata: {name: web, creationTimestamp: 2024-01-02T03:04:05Z}
  - apiVersion: v1
    kind: ConfigMap
    metadata: {generateName: settings-}
  - apiVersion: v1
    kind: Secret
"""
    )
    parsed = parse_config("kubernetes", text)
    assert parsed.kind == "kubernetes"
    assert parsed.resource_names() == ["Pod/web", "Service/web", "ConfigMap/settings-", "Secret/#3"]
    assert [r.line for r in parsed.resources] == [1, 14, 17, 20]
    pod = parsed.resources[0]
    assert parsed.line_at(pod, ["spec", "containers", 0, "image"]) == 8
    assert parsed.line_at(pod, ["spec", "missing", "path"]) == 5  # deepest node reached: spec
    # Timestamps are JSON-safe strings, so documents can go into Rego input, caches and prompts as they are.
    json.dumps(parsed.documents)
    assert parsed.resources[1].body["metadata"]["creationTimestamp"].startswith("2024-01-02T03:04:05")


def test_terraform_addresses_lines_and_jsonencode() -> None:
    parsed = parse_config("terraform", TERRAFORM)
    assert parsed.resource_names() == ["aws_s3_bucket.logs", "aws_iam_policy.p", "data.aws_iam_policy_document.read"]
    assert {r.name: r.line for r in parsed.resources} == {
        "aws_s3_bucket.logs": 1,
        "aws_iam_policy.p": 11,
        "data.aws_iam_policy_document.read": 5,
    }
    assert parsed.resources[0].body["bucket"] == "acme-logs"  # quotes stripped
    policy = parsed.resources[1].body["policy"]
    assert policy["Statement"][0]["Action"] == "*"  # jsonencode(...) arrives as the object it encodes
    managed = parsed.policy_input()["managed"]
    assert managed["aws_s3_bucket"][0]["address"] == "aws_s3_bucket.logs"


def test_terraform_json_syntax() -> None:
    text = json.dumps({"resource": {"aws_ebs_volume": {"data": {"size": 10, "encrypted": False}}}})
    parsed = parse_config("terraform", text)
    assert parsed.resource_names() == ["aws_ebs_volume.data"]
    assert parsed.resources[0].body == {"size": 10, "encrypted": False}


def test_unsafe_names_are_masked_in_policy_input_only() -> None:
    text = 'apiVersion: v1\nkind: Pod\nmetadata: {name: "we\\"b\\\\x"}\nspec: {containers: []}\n'
    parsed = parse_config("kubernetes", text)
    assert parsed.resource_names() == ['Pod/we"b\\x']
    masked = parsed.policy_input()["resources"][0]["name"]
    assert masked == "resource#0"
    assert parsed.policy_names()[masked].name == 'Pod/we"b\\x'


def test_detect_kind() -> None:
    assert detect_kind("main.tf", POD) == "terraform"
    assert detect_kind("stack.tf.json", "{}") == "terraform"
    assert detect_kind("deploy.yml", TERRAFORM) == "kubernetes"
    assert detect_kind("item-17", TERRAFORM) == "terraform"
    assert detect_kind("item-18", POD) == "kubernetes"


def test_read_config_file_stops_at_the_limit(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a" * 2048)
    with pytest.raises(ConfigParseError) as caught:
        read_config_file(big, limits=LoadLimits(max_bytes=1024))
    assert caught.value.reason == "too_large"
    small = tmp_path / "pod.yaml"
    small.write_text(POD)
    assert read_config_file(small) == POD.encode()


def test_unknown_reason_codes_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown parse error reason"):
        ConfigParseError("bogus", "x")


def test_resource_at_line_follows_yaml_spans_and_terraform_blocks() -> None:
    text = (
        POD.replace("name: web", "name: web  # flow or block style alike")
        + "---\n"
        + (
            "apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: Service\n    metadata: {name: a}\n"
            "  - {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n"
        )
    )
    parsed = parse_config("kubernetes", text)
    names = {line: (r.name if (r := parsed.resource_at_line(line)) else None) for line in range(1, 17)}
    assert [names[line] for line in (1, 5, 8)] == ["Pod/web"] * 3
    assert [names[line] for line in (9, 10, 11, 12)] == [None] * 4  # the separator and List wrapper: no resource
    assert [names[line] for line in (13, 14, 15, 16)] == ["Service/a", "Service/a", "Service/a", "ConfigMap/b"]
    assert parsed.resource_at_line(None) is None
    terraform = parse_config("terraform", TERRAFORM)
    assert terraform.resource_at_line(2).name == "aws_s3_bucket.logs"  # type: ignore[union-attr]
    assert terraform.resource_at_line(7).name == "data.aws_iam_policy_document.read"  # type: ignore[union-attr]
    assert terraform.resource_at_line(13).name == "aws_iam_policy.p"  # type: ignore[union-attr]
