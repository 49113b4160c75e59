"""E2 patch validity (issue 25, item 7): a patched config Kubernetes or Terraform would refuse earns no patch credit.

Found on main: `hostIPC: "true"` (a string where the API wants a boolean) and a repeated `hostIPC` key (the last
value wins in PyYAML) both earned patch 1.0. Each refusal here is patch 0 with a named `patch_invalid:*` error and
the place in `detail`; detection keeps its credit, and nothing raises."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest
from e2_fakes import FakeOracle, make_item

from sv_env_config_verification import hcltext, validity, verify
from sv_env_config_verification.adapters.opa import OpaAdapter
from sv_env_config_verification.loading import parse_config
from sv_env_config_verification.manifests import unified_diff
from sv_env_config_verification.oracle import Oracle
from sv_env_config_verification.remediation import PatchOutcome
from sv_shared.answers.rewards import RewardWeights

SETTINGS = verify.VerifierSettings(
    weights=RewardWeights({"detection": 0.6, "patch": 0.3, "format": 0.1}), introduced_penalty=1.0
)
POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: tools
spec:
  hostIPC: true
  containers:
  - name: app
    image: nginx:1.27
    securityContext:
      privileged: true
    resources:
      limits:
        memory: 128Mi
"""
FIXED = POD.replace("privileged: true", "privileged: false")
ROLLOUT = """\
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: shop
spec:
  replicas: 2
  strategy:
    canary:
      steps:
      - setWeight: 20
  selector:
    matchLabels:
      app: shop
  template:
    metadata:
      labels:
        app: shop
    spec:
      containers:
      - name: shop
        image: ghcr.io/acme/shop:1.4
"""
VOLUME_TF = """\
resource "aws_ebs_volume" "data" {
  availability_zone = "eu-west-1a"
  size              = 40
  encrypted         = false
}
"""
RDS_TF = """\
resource "aws_db_instance" "main" {
  engine              = "postgres"
  instance_class      = "db.t3.micro"
  storage_encrypted   = true
  publicly_accessible = true
}
"""


@pytest.fixture(scope="module")
def oracle() -> FakeOracle:
    return FakeOracle()


@pytest.fixture(scope="module")
def pod(oracle: FakeOracle) -> dict[str, Any]:
    return make_item(oracle, "kubernetes", "pod.yaml", POD)


def outcome(item: dict[str, Any], new_text: str, oracle: Any) -> PatchOutcome:
    return verify.evaluate_patch(item, unified_diff(item["content"], new_text, item["filename"]), oracle, penalty=1.0)


def refused(result: PatchOutcome, error: str, *in_detail: str) -> bool:
    detail = result.detail or ""
    return (
        result.error == error
        and result.score == 0.0
        and result.applies
        and not result.valid
        and all(text in detail for text in in_detail)
    )


# --- Kubernetes: what the issue found, and its neighbours ---


def test_the_honest_fix_still_earns_full_patch_credit(pod: dict[str, Any], oracle: FakeOracle) -> None:
    result = outcome(pod, FIXED, oracle)
    assert (result.error, result.valid, result.score, result.unvalidated) == (None, True, 1.0, [])
    scored = verify.score_completion(
        pod,
        json.dumps({"violations": [], "patch": unified_diff(POD, FIXED, "pod.yaml"), "confidence": 0.9}),
        oracle,
        SETTINGS,
    )
    assert scored.components["patch"] == 1.0 and scored.error is None


@pytest.mark.parametrize("value", ['"false"', "'false'", '"no"', "0"])
def test_a_string_or_number_where_the_api_wants_a_boolean_is_refused(
    value: str, pod: dict[str, Any], oracle: FakeOracle
) -> None:
    """The fake oracle, like a policy comparing with `true`, no longer sees a privileged container: it is gone only
    in that reading, and the API server would refuse the object."""
    result = outcome(pod, POD.replace("privileged: true", f"privileged: {value}"), oracle)
    assert refused(result, "patch_invalid:schema", "spec.containers[0].securityContext.privileged", "boolean")


def test_the_string_true_for_host_ipc_is_refused_by_json_patch_too(pod: dict[str, Any], oracle: FakeOracle) -> None:
    ops = [
        {"op": "replace", "path": "/spec/hostIPC", "value": "true"},
        {"op": "replace", "path": "/spec/containers/0/securityContext/privileged", "value": False},
    ]
    result = verify.evaluate_patch(pod, ops, oracle, penalty=1.0)
    assert refused(result, "patch_invalid:schema", "Pod/tools spec.hostIPC", "'true' is not of type 'boolean'")


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        ("  hostIPC: true\n", "  hostIPC: true\n  hostIPC: false\n", "document 1 spec.hostIPC"),
        ("privileged: true\n", "privileged: true\n      privileged: false\n", "securityContext.privileged"),
        ("kind: Pod\n", "kind: Pod\nkind: Pod\n", "document 1 kind"),
    ],
    ids=["nested", "deep", "top-level"],
)
def test_a_repeated_key_at_any_depth_is_refused(
    old: str, new: str, where: str, pod: dict[str, Any], oracle: FakeOracle
) -> None:
    result = outcome(pod, POD.replace(old, new), oracle)
    assert refused(result, "patch_invalid:duplicate_key", where, "appears twice")


def test_keys_that_become_one_json_key_are_a_duplicate() -> None:
    text = POD + "  nodeSelector:\n    1: a\n    '1': b\n"
    problems = validity.check_config(parse_config("kubernetes", text), text).problems
    assert [problem.code for problem in problems] == ["patch_invalid:duplicate_key"]


def test_a_merge_key_override_is_not_a_duplicate() -> None:
    text = POD.replace(
        "    resources:\n",
        "    env:\n    - &base {name: MODE, value: a}\n    - <<: *base\n      name: LEVEL\n    resources:\n",
    )
    assert validity.check_config(parse_config("kubernetes", text), text).problems == frozenset()


def test_a_container_without_its_required_name_is_refused(pod: dict[str, Any], oracle: FakeOracle) -> None:
    ops = [
        {"op": "replace", "path": "/spec/containers/0/securityContext/privileged", "value": False},
        {"op": "add", "path": "/spec/containers/-", "value": {"image": "busybox:1.36"}},
    ]
    result = verify.evaluate_patch(pod, ops, oracle, penalty=1.0)
    assert refused(result, "patch_invalid:schema", "spec.containers[1]", "'name' is a required property")


@pytest.mark.parametrize(
    ("addition", "where"),
    [
        ("    ports:\n    - containerPort: http\n", "containerPort"),
        ("    ports:\n    - containerPort: '8080'\n", "containerPort"),
        ("    stdin: 1\n", "stdin"),
        ("    securityContex:\n      runAsNonRoot: true\n", "Additional properties are not allowed"),
    ],
    ids=["word-for-int", "string-for-int", "int-for-bool", "unknown-field"],
)
def test_a_wrong_type_or_unknown_field_is_refused(
    addition: str, where: str, pod: dict[str, Any], oracle: FakeOracle
) -> None:
    result = outcome(pod, FIXED.replace("    resources:\n", addition + "    resources:\n"), oracle)
    assert refused(result, "patch_invalid:schema", where)


def test_a_builtin_kind_under_an_apiversion_that_does_not_serve_it_is_refused(
    pod: dict[str, Any], oracle: FakeOracle
) -> None:
    """Otherwise renaming the apiVersion would switch schema validation off."""
    result = outcome(pod, FIXED.replace("apiVersion: v1", "apiVersion: v9"), oracle)
    assert refused(result, "patch_invalid:schema", "apiVersion 'v9' does not serve kind 'Pod'")


def test_problems_the_original_already_had_are_not_held_against_the_patch(oracle: FakeOracle) -> None:
    """An apiVersion Kubernetes no longer serves and an unknown field, both in the corpus file: fixing the finding
    still earns credit, but a new problem does not."""
    old = (
        "apiVersion: extensions/v1beta1\nkind: Deployment\nmetadata:\n  name: legacy\n  owner: ops\nspec:\n"
        "  template:\n    spec:\n      containers:\n      - name: app\n        image: nginx:1.27\n"
        "        securityContext:\n          privileged: true\n        resources:\n          limits:\n"
        "            memory: 64Mi\n"
    )
    item = make_item(oracle, "kubernetes", "legacy.yaml", old)
    result = outcome(item, old.replace("privileged: true", "privileged: false"), oracle)
    assert (result.error, result.valid, result.score) == (None, True, 1.0)
    assert result.unvalidated == [
        "Deployment/legacy: no schema for extensions/v1beta1 Deployment; only its pod template (spec.template) "
        "was validated"
    ]
    worse = old.replace("privileged: true", "privileged: 'false'")
    assert refused(outcome(item, worse, oracle), "patch_invalid:schema", "spec.template.spec.containers[0]")


def test_a_repeat_the_original_had_stays_the_same_problem_when_lines_move(oracle: FakeOracle) -> None:
    old = POD.replace("  name: tools\n", "  name: tools\n  labels:\n    team: a\n    team: b\n")
    item = make_item(oracle, "kubernetes", "pod.yaml", old)
    moved = old.replace("metadata:\n", "metadata:\n  annotations:\n    owner: ops\n").replace(
        "privileged: true", "privileged: false"
    )
    result = outcome(item, moved, oracle)
    assert (result.error, result.score) == (None, 1.0)


# --- kinds without a schema ---


def test_a_custom_resource_is_validated_through_its_pod_template(oracle: FakeOracle) -> None:
    rollout = make_item(oracle, "kubernetes", "rollout.yaml", ROLLOUT)
    harmless = ROLLOUT.replace("  replicas: 2\n", "  replicas: 3\n")
    result = outcome(rollout, harmless, oracle)
    assert (result.error, result.score) == (None, 1.0)
    assert result.unvalidated == [
        "Rollout/shop: no schema for argoproj.io/v1alpha1 Rollout; only its pod template (spec.template) was validated"
    ]
    broken = ROLLOUT.replace("      - name: shop\n", "      - name: shop\n        tty: 'yes'\n")
    assert refused(
        outcome(rollout, broken, oracle), "patch_invalid:schema", "Rollout/shop spec.template.spec.containers[0].tty"
    )


def test_a_custom_resource_without_a_pod_template_is_named_as_unvalidated(oracle: FakeOracle) -> None:
    """Decision: credit is not withheld (the scanners' verdict stands); the details say nothing was validated."""
    certificate = (
        "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: web\nspec:\n  secretName: web-tls\n"
    )
    item = make_item(oracle, "kubernetes", "cert.yaml", certificate)
    result = outcome(item, certificate.replace("web-tls", "web-tls-2"), oracle)
    assert (result.error, result.valid, result.score) == (None, True, 1.0)
    assert result.unvalidated == [
        "Certificate/web: no schema for cert-manager.io/v1 Certificate; nothing in it was validated"
    ]


# --- hostile patches never crash the scorer ---


def test_a_yaml_bomb_in_a_patch_is_refused_before_validation(pod: dict[str, Any], oracle: FakeOracle) -> None:
    bomb = "".join(f"x{i}: &x{i} [{', '.join([f'*x{i - 1}'] * 9) if i else 'lol'}]\n" for i in range(10))
    result = outcome(pod, FIXED + bomb, oracle)
    assert (result.error, result.score) == ("patched_yaml_bomb", 0.0)


def test_a_huge_patch_is_validated_within_bounds(pod: dict[str, Any], oracle: FakeOracle) -> None:
    """2,000 environment variables are valid; 2,000 invalid ones are named once, with a bounded detail."""
    valid = [{"name": f"V{i}", "value": str(i)} for i in range(2_000)]
    fix = {"op": "replace", "path": "/spec/containers/0/securityContext/privileged", "value": False}
    ops = [fix, {"op": "add", "path": "/spec/containers/0/env", "value": valid}]
    assert verify.evaluate_patch(pod, ops, oracle, penalty=1.0).score == 1.0
    invalid = [{"name": i, "value": [i] * 20} for i in range(2_000)]
    ops = [fix, {"op": "add", "path": "/spec/containers/0/env", "value": invalid}]
    result = verify.evaluate_patch(pod, ops, oracle, penalty=1.0)
    assert refused(result, "patch_invalid:schema", "more)")
    assert len(result.detail or "") < 1_000


@pytest.mark.parametrize(
    "tail",
    [
        "  template: 3\n",
        "  template: {spec: [1, 2]}\n",
        "  affinity: {nodeAffinity: {x: [[[[[[[[[[[[1]]]]]]]]]]]]}}\n",
        "---\n- not an object\n",
        "---\n? [a, b]\n: c\n",
    ],
    ids=["scalar-template", "list-spec", "deep-junk", "list-document", "complex-key"],
)
def test_odd_shapes_are_problems_not_crashes(tail: str, pod: dict[str, Any], oracle: FakeOracle) -> None:
    result = outcome(pod, FIXED + tail, oracle)
    assert result.score == 0.0 and (result.error or "").startswith(("patch_invalid:", "patched_"))


def test_validation_never_opens_a_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    """The schemas come from the installed wheel: with sockets disabled a kind never validated in this process
    (its schema file read and compiled now) still validates, and the wheel's version is the one in provenance."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("validation tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    policy = (
        "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: deny\n"
        "spec:\n  podSelector: {}\n  policyTypes: Ingress\n"
    )
    problems = validity.check_config(parse_config("kubernetes", policy), policy).problems
    assert [problem.where for problem in problems] == ["NetworkPolicy/deny spec.policyTypes"]
    assert validity.validator_versions() == {"kubernetes-validate": "1.37.0", "kubernetes_schema": "1.37.0 strict"}


# --- Terraform ---


@pytest.fixture(scope="module")
def volume(oracle: FakeOracle) -> dict[str, Any]:
    return make_item(oracle, "terraform", "main.tf", VOLUME_TF)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("true", None),
        ('"true"', None),  # Terraform converts the string
        ('"yes"', "patch_invalid:type"),
        ('"True"', "patch_invalid:type"),
        ("1", "patch_invalid:type"),  # no number converts to a bool
        ('["x"]', "patch_invalid:type"),
        ("var.encrypted", None),  # an expression is not evaluated
    ],
)
def test_a_policy_attribute_must_convert_to_its_terraform_type(
    value: str, error: str | None, volume: dict[str, Any], oracle: FakeOracle
) -> None:
    result = outcome(volume, VOLUME_TF.replace("encrypted         = false", f"encrypted = {value}"), oracle)
    assert result.error == error
    assert result.score == (1.0 if error is None else 0.0)


def test_an_attribute_set_twice_in_one_block_is_refused(volume: dict[str, Any], oracle: FakeOracle) -> None:
    twice = VOLUME_TF.replace("  encrypted         = false\n", "  encrypted = false\n  encrypted = true\n")
    result = outcome(volume, twice, oracle)
    assert refused(result, "patch_invalid:duplicate_key", 'resource "aws_ebs_volume" "data" encrypted', "twice")


def test_a_resource_declared_twice_is_refused(volume: dict[str, Any], oracle: FakeOracle) -> None:
    again = VOLUME_TF.replace("false", "true") + '\nresource "aws_ebs_volume" "data" {\n  size = 1\n}\n'
    assert refused(outcome(volume, again, oracle), "patch_invalid:duplicate_resource", "aws_ebs_volume.data")


def test_a_cidr_list_written_as_a_string_is_refused(oracle: FakeOracle) -> None:
    group = (
        'resource "aws_security_group" "web" {\n  ingress {\n    from_port = 443\n    to_port = 443\n'
        '    protocol = "tcp"\n    cidr_blocks = ["0.0.0.0/0"]\n  }\n  ingress {\n    from_port = 80\n'
        '    to_port = 80\n    protocol = "tcp"\n    cidr_blocks = ["10.0.0.0/8"]\n  }\n}\n'
    )
    item = make_item(oracle, "terraform", "sg.tf", group)
    result = outcome(item, group.replace('["0.0.0.0/0"]', '"0.0.0.0/0"'), oracle)
    assert refused(result, "patch_invalid:type", "ingress[0].cidr_blocks", "a list of strings is required")
    assert outcome(item, group.replace("0.0.0.0/0", "10.1.0.0/16"), oracle).score == 1.0


def test_attributes_are_per_block_and_object_values_are_not_blocks() -> None:
    """The same attribute in two blocks, or in an object value beside the block's own, is no redefinition."""
    text = (
        'resource "aws_security_group" "web" {\n  ingress {\n    from_port = 1\n  }\n  ingress {\n    from_port = 2\n'
        '  }\n  tags = {\n    from_port = 3\n    Name = "web"\n  }\n  from_port = 4\n}\n'
    )
    assert hcltext.HclText(text).redefined_attributes() == []


def test_the_policy_reads_one_and_zero_as_terraform_does() -> None:
    """go-cty converts "1" and "0" to booleans: `publicly_accessible = "1"` is still public, so it fixes nothing."""
    oracle = Oracle(adapters=[OpaAdapter()])
    [result] = oracle.scan_many([("db.tf", RDS_TF)])
    item = make_item(oracle, "terraform", "db.tf", RDS_TF)
    assert [finding.canonical_id for finding in result.findings] == ["TF_RDS_PUBLIC"]
    assert outcome(item, RDS_TF.replace("= true\n}", '= "1"\n}'), oracle).score == 0.0
    assert outcome(item, RDS_TF.replace("= true\n}", '= "0"\n}'), oracle).score == 1.0
