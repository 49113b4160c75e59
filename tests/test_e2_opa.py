"""The project's Rego policies, evaluated by regopy: each fires on its vulnerable fixture and not on the secure twin."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sv_env_config_verification.adapters.opa import RULE_MAP, OpaAdapter, render_message
from sv_env_config_verification.canonical import CANONICAL
from sv_env_config_verification.config_model import ConfigParseError

FIXTURES = Path(__file__).parent / "fixtures" / "e2_opa"

# (fixture stem, the one canonical id its vulnerable twin must raise). Each pair differs in one setting; the
# secure twin must be clean under every policy, so a rule that fires too broadly fails here too.
CASES: list[tuple[str, str]] = [
    ("k8s_privileged", "K8S_PRIVILEGED"),
    ("k8s_privileged_init_container", "K8S_PRIVILEGED"),
    ("k8s_host_network", "K8S_HOST_NAMESPACE"),
    ("k8s_host_pid", "K8S_HOST_NAMESPACE"),
    ("k8s_run_as_user_zero", "K8S_RUN_AS_ROOT"),
    ("k8s_run_as_root_missing", "K8S_RUN_AS_ROOT"),
    ("k8s_priv_escalation", "K8S_PRIV_ESCALATION"),
    ("k8s_priv_escalation_unset", "K8S_PRIV_ESCALATION"),
    ("k8s_no_cpu_limit", "K8S_NO_CPU_LIMIT"),
    ("k8s_no_memory_limit", "K8S_NO_MEMORY_LIMIT"),
    ("k8s_writable_root_fs", "K8S_WRITABLE_ROOT_FS"),
    ("k8s_dangerous_capabilities", "K8S_DANGEROUS_CAPABILITIES"),
    ("k8s_dangerous_capabilities_cap_prefix", "K8S_DANGEROUS_CAPABILITIES"),
    ("k8s_latest_tag", "K8S_LATEST_TAG"),
    ("k8s_untagged_image", "K8S_LATEST_TAG"),
    ("k8s_hostpath", "K8S_HOSTPATH"),
    ("k8s_rbac_wildcard_verbs", "K8S_RBAC_WILDCARD"),
    ("k8s_rbac_wildcard_resources", "K8S_RBAC_WILDCARD"),
    ("k8s_secret_in_env", "K8S_SECRET_IN_ENV"),
    ("k8s_secret_value_pattern", "K8S_SECRET_IN_ENV"),
    ("tf_s3_public_acl", "TF_S3_PUBLIC"),
    ("tf_s3_bucket_acl_resource", "TF_S3_PUBLIC"),
    ("tf_s3_public_access_block", "TF_S3_PUBLIC"),
    ("tf_s3_unencrypted", "TF_S3_UNENCRYPTED"),
    ("tf_sg_open_ipv4", "TF_OPEN_INGRESS"),
    ("tf_sg_open_ipv6", "TF_OPEN_INGRESS"),
    ("tf_sg_rule_open", "TF_OPEN_INGRESS"),
    ("tf_ebs_unencrypted", "TF_EBS_UNENCRYPTED"),
    ("tf_instance_root_device_unencrypted", "TF_EBS_UNENCRYPTED"),
    ("tf_rds_unencrypted", "TF_RDS_UNENCRYPTED"),
    ("tf_rds_public", "TF_RDS_PUBLIC"),
    ("tf_iam_wildcard_jsonencode", "TF_IAM_WILDCARD"),
    ("tf_iam_wildcard_heredoc", "TF_IAM_WILDCARD"),
    ("tf_iam_policy_document", "TF_IAM_WILDCARD"),
    ("tf_gcs_public_member", "TF_GCS_PUBLIC"),
    ("tf_gcs_public_binding", "TF_GCS_PUBLIC"),
    ("tf_gcp_open_firewall", "TF_GCP_OPEN_FIREWALL"),
]


@pytest.fixture(scope="module")
def opa() -> OpaAdapter:
    return OpaAdapter()


def fixture_pair(stem: str) -> dict[str, str]:
    paths = sorted(FIXTURES.glob(f"{stem}.*"))
    assert {p.name.split(".")[1] for p in paths} == {"secure", "vulnerable"}, stem
    return {p.name: p.read_text(encoding="utf-8") for p in paths}


@pytest.mark.parametrize(("stem", "canonical_id"), CASES, ids=[stem for stem, _ in CASES])
def test_policy_fires_on_vulnerable_and_not_on_secure_twin(opa: OpaAdapter, stem: str, canonical_id: str) -> None:
    results = opa.scan(fixture_pair(stem))
    for name, findings in results.items():
        if ".vulnerable." in name:
            assert {f.canonical_id for f in findings} == {canonical_id}, [f.message for f in findings]
            for finding in findings:
                assert finding.tool == "opa"
                assert finding.path == name
                assert finding.severity == CANONICAL[canonical_id].severity
                assert finding.resource and finding.line and finding.line >= 1
                assert RULE_MAP[finding.rule_id] == canonical_id
        else:
            assert findings == [], [f.message for f in findings]


def test_cases_cover_every_canonical_rule_and_every_fixture() -> None:
    assert {canonical_id for _, canonical_id in CASES} == set(CANONICAL)
    stems = {path.name.split(".")[0] for path in FIXTURES.iterdir()}
    assert stems == {stem for stem, _ in CASES}


def test_rule_table_matches_compiled_policies_and_vocabulary(opa: OpaAdapter) -> None:
    metadata = opa.rule_metadata()
    assert {rule_id: meta["canonical_id"] for rule_id, meta in metadata.items()} == RULE_MAP
    for rule_id, meta in metadata.items():
        rule = CANONICAL[meta["canonical_id"]]
        assert meta["severity"] == rule.severity, rule_id
        assert meta["kind"] == rule.kind, rule_id
    assert set(RULE_MAP.values()) == set(CANONICAL)


def test_workload_kinds_and_lines(opa: OpaAdapter) -> None:
    manifest = """\
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          initContainers:
            - name: fetch
              image: busybox:1.36
              securityContext:
                privileged: true
          containers:
            - name: run
              image: app:2
              securityContext:
                capabilities:
                  add: ["CAP_SYS_ADMIN", "CHOWN"]
"""
    findings = opa.scan({"cron.yaml": manifest})["cron.yaml"]
    by_rule = {f.canonical_id: f for f in findings}
    privileged = by_rule["K8S_PRIVILEGED"]
    assert privileged.resource == "CronJob/nightly"
    assert privileged.line == 14
    assert privileged.message.startswith('init container "fetch": runs privileged')
    capability = by_rule["K8S_DANGEROUS_CAPABILITIES"]
    assert capability.line == 20
    assert '"CAP_SYS_ADMIN"' in capability.message
    assert sum(f.canonical_id == "K8S_DANGEROUS_CAPABILITIES" for f in findings) == 1  # CHOWN is harmless
    # Both containers lack limits and runAsNonRoot: the CronJob's pod template is reached, init containers too.
    limits = {"K8S_NO_CPU_LIMIT", "K8S_NO_MEMORY_LIMIT"}
    assert {(f.canonical_id, f.line) for f in findings if f.canonical_id in limits} == {
        (canonical_id, line) for canonical_id in limits for line in (11, 16)
    }


def test_hostile_names_cannot_corrupt_policy_output(opa: OpaAdapter) -> None:
    """regopy prints strings unescaped; names with quotes/backslashes must still come back exact."""
    manifest = """\
apiVersion: v1
kind: Pod
metadata: {name: "evil\\"},\\\\"}
spec:
  containers:
    - name: "x\\"y"
      image: "nginx:1.25\\"}"
      securityContext: {privileged: true}
      env: [{name: "API_TOKEN", value: "s3cr3t\\"value"}]
"""
    findings = opa.scan({"evil.yaml": manifest})["evil.yaml"]
    assert {f.resource for f in findings} == {'Pod/evil"},\\'}
    privileged = next(f for f in findings if f.canonical_id == "K8S_PRIVILEGED")
    assert privileged.message.startswith('container "x\\"y": runs privileged')
    secret = next(f for f in findings if f.canonical_id == "K8S_SECRET_IN_ENV")
    assert "s3cr3t" not in secret.message  # the path ends at the variable's name, never its value
    assert '"API_TOKEN"' in secret.message


def test_terraform_messages_name_the_offending_field(opa: OpaAdapter) -> None:
    text = (FIXTURES / "tf_sg_open_ipv6.vulnerable.tf").read_text()
    (finding,) = opa.scan({"sg.tf": text})["sg.tf"]
    assert finding.resource == "aws_security_group.web"
    assert finding.line == 1
    assert finding.message == 'allows ingress from an internet-scale range (ingress[0].ipv6_cidr_blocks[0] = "::/0")'


def test_bad_files_raise_with_the_file_name(opa: OpaAdapter) -> None:
    with pytest.raises(ConfigParseError) as caught:
        opa.scan({"broken.tf": 'resource "x" {'})
    assert caught.value.reason == "invalid_hcl"
    assert "broken.tf" in str(caught.value)


def test_status_version_ruleset_hash_and_timings(opa: OpaAdapter, tmp_path: Path) -> None:
    import regopy

    status = opa.status()
    assert status.available and status.version == regopy.__version__
    baseline = opa.ruleset_hash()
    assert baseline == OpaAdapter().ruleset_hash()
    copied = tmp_path / "policies"
    shutil.copytree(Path(opa.policy_dir), copied)
    assert OpaAdapter(copied).ruleset_hash() == baseline  # content, not location
    rbac = copied / "kubernetes" / "rbac.rego"
    rbac.write_text(rbac.read_text().replace('"severity": "high"', '"severity": "medium"'))
    edited = OpaAdapter(copied)
    assert edited.ruleset_hash() != baseline
    assert edited.rule_metadata()["SV-K8S-010"]["severity"] == "medium"  # recompiled, not the cached bundle
    assert opa.timings.files > 0 and opa.timings.per_file_ms()["eval_ms"] > 0


def test_broken_policies_make_the_adapter_unavailable(tmp_path: Path) -> None:
    (tmp_path / "kubernetes").mkdir()
    (tmp_path / "terraform").mkdir()
    (tmp_path / "kubernetes" / "bad.rego").write_text("package secverify.kubernetes.bad\nimport rego.v1\ndeny contains")
    status = OpaAdapter(tmp_path).status()
    assert not status.available and "do not compile" in status.reason
    assert not OpaAdapter(tmp_path / "nowhere").status().available


def test_render_message_shows_short_values_only() -> None:
    body = {"spec": {"containers": [{"name": "web", "image": "x" * 200}]}}
    message = render_message("uses an untagged image", body, ["spec", "containers", 0, "image"])
    assert message == 'container "web": uses an untagged image (spec.containers[0].image)'


def test_same_name_in_two_namespaces_keeps_each_finding_on_its_own_object(opa: OpaAdapter) -> None:
    secure = (FIXTURES / "k8s_privileged.secure.yaml").read_text()
    vulnerable = (FIXTURES / "k8s_privileged.vulnerable.yaml").read_text().replace("namespace: shop", "namespace: dev")
    findings = opa.scan({"two.yaml": secure + "---\n" + vulnerable})["two.yaml"]
    (privileged,) = findings
    assert privileged.resource == "Deployment/web"
    line_in_second_document = vulnerable.splitlines().index("          privileged: true") + 1
    assert privileged.line == secure.count("\n") + 1 + line_in_second_document  # + 1 for the "---" line
