"""E2 verifier: the answer parser's named failures, exact rewards (hand-computed), the patch appliers, hostile and
destructive patches (each scored 0 with a named error), and the run metrics."""

from __future__ import annotations

import json
from typing import Any

import pytest
from e2_fakes import FakeOracle, make_item

from sv_env_config_verification import patching, schema, verify
from sv_env_config_verification.config import Config
from sv_env_config_verification.patching import PatchError
from sv_shared.answers.rewards import RewardWeights
from sv_shared.registry import load_env_config

WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: app
        image: nginx:1.27
        securityContext:
          privileged: true
          runAsUser: 0
"""
CLEAN = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  replicas: 1
  selector:
    matchLabels:
      app: api
  template:
    metadata:
      labels:
        app: api
    spec:
      containers:
      - name: api
        image: ghcr.io/acme/api:2.0
        resources:
          limits:
            cpu: 500m
            memory: 256Mi
"""
VOLUME_TF = """\
resource "aws_ebs_volume" "data" {
  availability_zone = "eu-west-1a"
  size              = 40
  encrypted         = false
}
"""
SETTINGS = verify.VerifierSettings(
    weights=RewardWeights({"detection": 0.6, "patch": 0.3, "format": 0.1}), introduced_penalty=1.0
)
FIX_PRIVILEGED = """\
--- a/web.yaml
+++ b/web.yaml
@@ -19,3 +19,3 @@
         securityContext:
-          privileged: true
+          privileged: false
           runAsUser: 0
"""


@pytest.fixture(scope="module")
def oracle() -> FakeOracle:
    return FakeOracle()


@pytest.fixture(scope="module")
def web(oracle: FakeOracle) -> dict[str, Any]:
    return make_item(oracle, "kubernetes", "web.yaml", WEB)


@pytest.fixture(scope="module")
def clean(oracle: FakeOracle) -> dict[str, Any]:
    return make_item(oracle, "kubernetes", "api.yaml", CLEAN)


def answer(violations: list[dict[str, Any]], patch: Any = None, confidence: float = 0.8) -> str:
    return json.dumps({"violations": violations, "patch": patch, "confidence": confidence})


def v(canonical_id: str, severity: str = "high", resource: str | None = None) -> dict[str, Any]:
    return {"id": canonical_id, "severity": severity, "resource": resource}


# --- the item under test is what the fake oracle says ---


def test_fixture_findings(web: dict[str, Any], clean: dict[str, Any]) -> None:
    found = {(f.canonical_id, f.severity, f.resource) for f in schema.findings_from_json(web["oracle_findings"])}
    assert found == {
        ("K8S_PRIVILEGED", "high", "Deployment/web"),
        ("K8S_RUN_AS_ROOT", "medium", "Deployment/web"),
        ("K8S_NO_MEMORY_LIMIT", "low", "Deployment/web"),
    }
    assert web["label"] == "vulnerable" and clean["label"] == "secure"


# --- parser ---


@pytest.mark.parametrize(
    ("completion", "reason"),
    [
        ("", "empty_completion"),
        ("I found nothing wrong.", "no_json_object"),
        ('{"violations": [', "truncated_json"),
        ("[1, 2]", "not_an_object"),
        ('{"patch": null, "confidence": 0.5}', "missing_violations"),
        ('{"violations": {"id": "K8S_PRIVILEGED"}, "confidence": 0.5}', "violations_not_list"),
        ('{"violations": ["K8S_PRIVILEGED"], "confidence": 0.5}', "violation_not_object"),
        ('{"violations": [{"severity": "high"}], "confidence": 0.5}', "violation_missing_id"),
        ('{"violations": [{"id": 7, "severity": "high"}], "confidence": 0.5}', "violation_id_not_string"),
        ('{"violations": [{"id": "K8S_PRIVILEGED"}], "confidence": 0.5}', "violation_missing_severity"),
        (
            '{"violations": [{"id": "K8S_PRIVILEGED", "severity": "critical"}], "confidence": 0.5}',
            "violation_bad_severity",
        ),
        (
            '{"violations": [{"id": "K8S_PRIVILEGED", "severity": "high", "resource": ["a"]}], "confidence": 0.5}',
            "violation_resource_not_string",
        ),
        (
            '{"violations": [{"id": "K8S_PRIVILEGED", "severity": "high", "evidence": 3}], "confidence": 0.5}',
            "violation_evidence_not_string",
        ),
        ('{"violations": [], "patch": 42, "confidence": 0.5}', "patch_bad_type"),
        ('{"violations": [], "patch": [{"op": "explode", "path": "/a"}], "confidence": 0.5}', "patch_ops_invalid"),
        ('{"violations": [], "patch": null}', "missing_confidence"),
        ('{"violations": [], "patch": null, "confidence": "high"}', "confidence_not_numeric"),
        ('{"violations": [], "patch": null, "confidence": 1.5}', "confidence_out_of_range"),
        (json.dumps({"violations": [v("K8S_PRIVILEGED")] * 101, "confidence": 0.5}), "too_many_violations"),
    ],
)
def test_parser_names_each_failure(completion: str, reason: str) -> None:
    parsed = schema.parse_answer(completion)
    assert parsed.output is None and parsed.error == reason


def test_parser_canonicalizes_ids_and_keeps_unknown_ones() -> None:
    text = (
        "Here you go:\n```json\n"
        + answer([v(" k8s-privileged ", "HIGH", "Deployment/web"), v("K8S_NOT_A_RULE", "low")], patch="")
        + "\n```"
    )
    parsed = schema.parse_answer(text)
    assert parsed.ok
    first, second = parsed.output["violations"]
    assert first == {
        "id": "K8S_PRIVILEGED",
        "known": True,
        "severity": "high",
        "resource": "Deployment/web",
        "evidence": None,
    }
    assert second["id"] == "K8S_NOT_A_RULE" and second["known"] is False
    assert parsed.output["patch"] is None  # an empty string is no patch


def test_parser_reads_a_json_patch_sent_as_a_string() -> None:
    ops = [{"op": "replace", "path": "/spec/replicas", "value": 3}]
    parsed = schema.parse_answer(answer([], patch=json.dumps(ops)))
    assert parsed.output["patch"] == ops


# --- resource matching ---


@pytest.mark.parametrize(
    ("predicted", "actual", "matches"),
    [
        (None, "Deployment/web", True),
        ("Deployment/web", "Deployment/web", True),
        ("deployment.web", "Deployment/web", True),
        ("web", "Deployment/web", True),
        ("Deployment/web/app", "Deployment/web", True),
        ("Deployment/api", "Deployment/web", False),
        ("StatefulSet/web", "Deployment/web", False),
        ("logs", "aws_s3_bucket.logs", True),
        ("aws_s3_bucket.logs", "aws_s3_bucket.logs", True),
        ("aws_s3_bucket.other", "aws_s3_bucket.logs", False),
    ],
)
def test_resource_matching_rule(predicted: str | None, actual: str, matches: bool) -> None:
    assert verify.resource_matches(predicted, actual) is matches


# --- exact rewards ---


def test_exact_reward_partial_detection_and_partial_fix(web: dict[str, Any], oracle: FakeOracle) -> None:
    # Findings: PRIVILEGED high 3, RUN_AS_ROOT medium 2, NO_MEMORY_LIMIT low 1 (total 6).
    # Predictions: PRIVILEGED@Deployment/web (tp, 3), RUN_AS_ROOT without resource (tp, 2), HOSTPATH (fp, high 3).
    # precision = 5/8, recall = 5/6, F1 = 2PR/(P+R) = 5/7. The patch removes PRIVILEGED: 3/6 = 0.5.
    # reward = 0.6 * 5/7 + 0.3 * 0.5 + 0.1 * 1.
    completion = answer(
        [v("K8S_PRIVILEGED", "high", "Deployment/web"), v("K8S_RUN_AS_ROOT", "medium"), v("K8S_HOSTPATH", "low")],
        patch=FIX_PRIVILEGED,
    )
    scored = verify.score_completion(web, completion, oracle, SETTINGS)
    assert scored.components["detection"] == pytest.approx(5 / 7)
    assert scored.components["patch"] == pytest.approx(0.5)
    assert scored.components["format"] == 1.0
    assert scored.reward == pytest.approx(0.6 * 5 / 7 + 0.3 * 0.5 + 0.1)
    assert scored.error is None
    patch = scored.details["patch"]
    assert patch["applies"] and patch["valid"] and not patch["fixes_all"]
    assert patch["removed"] == ["K8S_PRIVILEGED@Deployment/web"] and patch["introduced"] == []
    assert scored.details["detection"]["false_positive_ids"] == ["K8S_HOSTPATH"]


def test_false_positive_weight_ignores_the_claimed_severity(web: dict[str, Any], oracle: FakeOracle) -> None:
    # HOSTPATH is canonically high (3) even when claimed "low"; an unknown id weighs medium (2).
    # detection: P = 3/(3+3+2) = 3/8, R = 3/6 -> F1 = 2*(3/8)*(1/2)/((3/8)+(1/2)) = 3/7.
    completion = answer([v("K8S_PRIVILEGED"), v("K8S_HOSTPATH", "low"), v("K8S_MADE_UP", "low")])
    scored = verify.score_completion(web, completion, oracle, SETTINGS)
    assert scored.components["detection"] == pytest.approx(3 / 7)
    assert scored.details["detection"]["unknown_ids"] == ["K8S_MADE_UP"]
    assert scored.components["patch"] == 0.0  # no patch on a vulnerable config


def test_wrong_resource_is_a_false_positive_and_a_miss(web: dict[str, Any], oracle: FakeOracle) -> None:
    scored = verify.score_completion(web, answer([v("K8S_PRIVILEGED", "high", "Deployment/api")]), oracle, SETTINGS)
    assert scored.components["detection"] == 0.0


def test_duplicate_predictions_count_once(web: dict[str, Any], oracle: FakeOracle) -> None:
    once = verify.score_completion(web, answer([v("K8S_PRIVILEGED")]), oracle, SETTINGS)
    twice = verify.score_completion(web, answer([v("K8S_PRIVILEGED"), v("k8s_privileged")]), oracle, SETTINGS)
    assert once.components == twice.components
    assert once.components["detection"] == pytest.approx(2 * 1 * 0.5 / 1.5)  # P = 1, R = 3/6


def test_clean_config_answered_clean_earns_full_reward(clean: dict[str, Any], oracle: FakeOracle) -> None:
    scored = verify.score_completion(clean, answer([]), oracle, SETTINGS)
    assert scored.components == {"detection": 1.0, "patch": 1.0, "format": 1.0}
    assert scored.reward == pytest.approx(1.0)


def test_false_alarm_on_a_clean_config(clean: dict[str, Any], oracle: FakeOracle) -> None:
    scored = verify.score_completion(clean, answer([v("K8S_PRIVILEGED")]), oracle, SETTINGS)
    assert scored.components == {"detection": 0.0, "patch": 1.0, "format": 1.0}
    assert scored.reward == pytest.approx(0.4)


def test_patch_that_introduces_a_finding_is_penalized(web: dict[str, Any], oracle: FakeOracle) -> None:
    # Removes PRIVILEGED (3) and introduces LATEST_TAG (medium 2): (3 - 1.0 * 2) / 6 = 1/6.
    diff = """\
--- a/web.yaml
+++ b/web.yaml
@@ -17,5 +17,5 @@
       - name: app
-        image: nginx:1.27
+        image: nginx:latest
         securityContext:
-          privileged: true
+          privileged: false
           runAsUser: 0
"""
    scored = verify.score_completion(web, answer([v("K8S_PRIVILEGED")], patch=diff), oracle, SETTINGS)
    assert scored.components["patch"] == pytest.approx(1 / 6)
    assert scored.details["patch"]["introduced"] == ["K8S_LATEST_TAG@Deployment/web"]
    heavier = verify.VerifierSettings(weights=SETTINGS.weights, introduced_penalty=2.0)
    assert verify.score_completion(web, answer([], patch=diff), oracle, heavier).components["patch"] == 0.0


def test_a_complete_fix_by_json_patch(web: dict[str, Any], oracle: FakeOracle) -> None:
    ops = [
        {"op": "replace", "path": "/spec/template/spec/containers/0/securityContext/privileged", "value": False},
        {"op": "replace", "path": "/spec/template/spec/containers/0/securityContext/runAsUser", "value": 10001},
        {"op": "add", "path": "/spec/template/spec/containers/0/resources", "value": {"limits": {"cpu": "1"}}},
    ]
    scored = verify.score_completion(web, answer([], patch=ops), oracle, SETTINGS)
    assert scored.components["patch"] == 1.0
    assert scored.details["patch"]["fixes_all"] and scored.details["patch"]["format"] == "json_patch"


def test_unified_diff_hunk_at_the_wrong_line_still_applies(web: dict[str, Any], oracle: FakeOracle) -> None:
    misnumbered = FIX_PRIVILEGED.replace("@@ -19,3 +19,3 @@", "@@ -3,3 +3,3 @@")
    scored = verify.score_completion(web, answer([], patch=misnumbered), oracle, SETTINGS)
    assert scored.components["patch"] == pytest.approx(0.5)


def test_a_harmless_patch_on_a_clean_config_keeps_full_credit(clean: dict[str, Any], oracle: FakeOracle) -> None:
    ops = [{"op": "replace", "path": "/spec/replicas", "value": 2}]
    assert verify.score_completion(clean, answer([], patch=ops), oracle, SETTINGS).components["patch"] == 1.0
    worse = [{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "ghcr.io/acme/api:latest"}]
    scored = verify.score_completion(clean, answer([], patch=worse), oracle, SETTINGS)
    assert scored.components["patch"] == 0.0 and scored.details["patch"]["introduced"]


def test_terraform_diff_is_rescanned(oracle: FakeOracle) -> None:
    item = make_item(oracle, "terraform", "volume.tf", VOLUME_TF)
    diff = (
        "--- a/volume.tf\n+++ b/volume.tf\n@@ -3,2 +3,2 @@\n   size              = 40\n"
        "-  encrypted         = false\n+  encrypted         = true\n }\n"
    )
    scored = verify.score_completion(
        item, answer([v("TF_EBS_UNENCRYPTED", "medium", "aws_ebs_volume.data")], diff), oracle, SETTINGS
    )
    assert scored.components == {"detection": 1.0, "patch": 1.0, "format": 1.0}


def test_format_failure_zeroes_everything(web: dict[str, Any], oracle: FakeOracle) -> None:
    scored = verify.score_completion(web, "privileged container, fix it", oracle, SETTINGS)
    assert scored.reward == 0.0 and set(scored.components.values()) == {0.0}
    assert scored.error == "no_json_object" and scored.details == {"format_error": "no_json_object"}


# --- hostile and broken patches: patch 0, a named error, detection kept ---

HOSTILE_DIFFS = {
    "patch_path_traversal": FIX_PRIVILEGED.replace("a/web.yaml", "a/../../etc/passwd"),
    "patch_absolute_path": FIX_PRIVILEGED.replace("+++ b/web.yaml", "+++ /etc/cron.d/evil"),
    "patch_touches_other_file": FIX_PRIVILEGED.replace("web.yaml", "other.yaml"),
    "patch_multiple_files": FIX_PRIVILEGED + FIX_PRIVILEGED.replace("web.yaml", "second.yaml"),
    "patch_creates_or_deletes_file": FIX_PRIVILEGED.replace("--- a/web.yaml", "--- /dev/null"),
    "patch_does_not_apply": FIX_PRIVILEGED.replace("privileged: true", "privileged: maybe"),
    "patch_not_a_diff": "just set privileged to false",
    "patch_malformed_hunk": FIX_PRIVILEGED.replace("           runAsUser: 0", "*          runAsUser: 0"),
    "patched_invalid_yaml": FIX_PRIVILEGED.replace("+          privileged: false", "+          privileged: [false"),
    "patched_invalid_manifest": (
        "--- a/web.yaml\n+++ b/web.yaml\n@@ -1,2 +1,2 @@\n-apiVersion: apps/v1\n+version: 1\n kind: Deployment\n"
    ),
    "patched_yaml_bomb": (
        "--- a/web.yaml\n+++ b/web.yaml\n@@ -1,1 +1,12 @@\n apiVersion: apps/v1\n"
        + "".join(f"+x{i}: &x{i} [{', '.join([f'*x{i - 1}'] * 9) if i else 'lol'}]\n" for i in range(10))
        + "+bomb: *x9\n"
    ),
}


@pytest.mark.parametrize("reason", sorted(HOSTILE_DIFFS))
def test_hostile_or_broken_diff_scores_zero_with_its_reason(
    reason: str, web: dict[str, Any], oracle: FakeOracle
) -> None:
    scored = verify.score_completion(web, answer([v("K8S_PRIVILEGED")], patch=HOSTILE_DIFFS[reason]), oracle, SETTINGS)
    assert scored.components["patch"] == 0.0
    assert scored.details["patch"]["error"] == reason == scored.error
    assert scored.components["detection"] > 0 and scored.components["format"] == 1.0


DESTRUCTIVE_OPS = {
    "workload deleted": [{"op": "remove", "path": "/spec"}],
    "containers emptied": [{"op": "replace", "path": "/spec/template/spec/containers", "value": []}],
    "container removed": [
        {"op": "add", "path": "/spec/template/spec/containers/-", "value": {"name": "other", "image": "x:1"}},
        {"op": "remove", "path": "/spec/template/spec/containers/0"},
    ],
    "scaled to zero": [{"op": "replace", "path": "/spec/replicas", "value": 0}],
    "kind changed": [{"op": "replace", "path": "/kind", "value": "ConfigMap"}],
}


@pytest.mark.parametrize("case", sorted(DESTRUCTIVE_OPS))
def test_destructive_fix_earns_no_patch_credit(case: str, web: dict[str, Any], oracle: FakeOracle) -> None:
    scored = verify.score_completion(web, answer([], patch=DESTRUCTIVE_OPS[case]), oracle, SETTINGS)
    assert scored.components["patch"] == 0.0
    assert scored.details["patch"]["error"] == "destructive_fix" and scored.details["patch"]["destructive"]


def test_deleting_the_whole_file_by_diff_is_destructive(web: dict[str, Any], oracle: FakeOracle) -> None:
    lines = WEB.splitlines()
    diff = f"--- a/web.yaml\n+++ b/web.yaml\n@@ -1,{len(lines)} +1,1 @@\n" + "".join(f"-{line}\n" for line in lines)
    diff += "+apiVersion: v1\n"
    scored = verify.score_completion(web, answer([], patch=diff), oracle, SETTINGS)
    assert scored.details["patch"]["error"] in ("destructive_fix", "patched_invalid_manifest")
    assert scored.components["patch"] == 0.0


def test_terraform_resource_removed_or_disabled_is_destructive(oracle: FakeOracle) -> None:
    item = make_item(oracle, "terraform", "volume.tf", VOLUME_TF)
    removal = "--- a/volume.tf\n+++ b/volume.tf\n@@ -1,5 +1,0 @@\n" + "".join(
        f"-{line}\n" for line in VOLUME_TF.splitlines()
    )
    count_zero = (
        '--- a/volume.tf\n+++ b/volume.tf\n@@ -1,1 +1,2 @@\n resource "aws_ebs_volume" "data" {\n+  count = 0\n'
    )
    for diff in (removal, count_zero):
        outcome = verify.evaluate_patch(
            item, schema.parse_answer(answer([], diff)).output["patch"], oracle, penalty=1.0
        )
        assert outcome.error == "destructive_fix" and outcome.score == 0.0


def test_broken_results_are_named(web: dict[str, Any], oracle: FakeOracle) -> None:
    lone_surrogate = FIX_PRIVILEGED.replace("privileged: false", "privileged: false  # \ud800")
    completion = json.dumps({"violations": [], "patch": lone_surrogate, "confidence": 0.5})
    assert verify.score_completion(web, completion, oracle, SETTINGS).details["patch"]["error"] == "patched_not_utf8"
    item = make_item(oracle, "terraform", "volume.tf", VOLUME_TF)
    unclosed = "--- a/volume.tf\n+++ b/volume.tf\n@@ -5,1 +5,1 @@\n-}\n+{\n"
    scored = verify.score_completion(item, answer([], unclosed), oracle, SETTINGS)
    assert scored.details["patch"]["error"] == "patched_invalid_hcl" and scored.components["patch"] == 0.0


def test_json_patch_on_a_multi_document_file(oracle: FakeOracle) -> None:
    service = "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80\n"
    item = make_item(oracle, "kubernetes", "web.yaml", WEB + service)
    ops = [{"op": "replace", "path": "/0/spec/template/spec/containers/0/securityContext/privileged", "value": False}]
    assert verify.evaluate_patch(item, ops, oracle, penalty=1.0).score == pytest.approx(0.5)
    ports = [{"op": "replace", "path": "/1/spec/ports", "value": []}]
    outcome = verify.evaluate_patch(item, ports, oracle, penalty=1.0)
    assert outcome.error == "destructive_fix" and "Service port" in (outcome.detail or "")


def test_json_patch_errors_are_named(web: dict[str, Any], oracle: FakeOracle) -> None:
    item = make_item(oracle, "terraform", "volume.tf", VOLUME_TF)
    ops = [{"op": "replace", "path": "/resource", "value": {}}]
    assert verify.evaluate_patch(item, ops, oracle, penalty=1.0).error == "json_patch_unsupported_for_kind"
    failing = [{"op": "test", "path": "/spec/replicas", "value": 5}]
    assert verify.evaluate_patch(web, failing, oracle, penalty=1.0).error == "json_patch_failed"
    missing = [{"op": "remove", "path": "/spec/nothing/here"}]
    assert verify.evaluate_patch(web, missing, oracle, penalty=1.0).error == "json_patch_failed"


# --- bounded patches: each bound a named patch error (patch 0, detection kept), the batch scored to the end ---


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def test_a_900_deep_patch_value_is_a_format_failure_not_a_crash(web: dict[str, Any], oracle: FakeOracle) -> None:
    """A 1.9 KB answer whose JSON Patch value nests 900 levels raised RecursionError (deepcopy) and stopped the run."""
    completion = answer([v("K8S_PRIVILEGED")], patch=[{"op": "add", "path": "/metadata/x", "value": nested(900)}])
    assert len(completion) < 2_000
    scored = verify.score_completion(web, completion, oracle, SETTINGS)
    assert scored.error == "json_too_deep" and scored.reward == 0.0


def test_a_patch_value_deeper_than_a_config_may_be_costs_the_patch_only(
    web: dict[str, Any], oracle: FakeOracle
) -> None:
    ops = [{"op": "add", "path": "/metadata/labels", "value": nested(patching.MAX_JSON_PATCH_DEPTH)}]
    scored = verify.score_completion(web, answer([v("K8S_PRIVILEGED")], patch=ops), oracle, SETTINGS)
    assert scored.error == "patch_too_deep" == scored.details["patch"]["error"]
    assert scored.components["patch"] == 0.0 and scored.components["detection"] > 0
    deep_path = "/spec/template/spec/containers/0/securityContext"
    for depth, error in (  # within the bound the patch applies, and then the schema refuses the unknown field
        (patching.MAX_JSON_PATCH_DEPTH - 7, "patch_invalid:schema"),
        (patching.MAX_JSON_PATCH_DEPTH - 6, "patch_too_deep"),
    ):
        ops = [{"op": "add", "path": deep_path + "/x", "value": nested(depth)}]  # 7 levels down, as deep as YAML allows
        assert verify.evaluate_patch(web, ops, oracle, penalty=1.0).error == error
    moved = [{"op": "move", "from": "/spec", "path": deep_path + "/spec"}]
    assert verify.evaluate_patch(web, moved, oracle, penalty=1.0).error == "json_patch_failed"  # into itself


def test_copies_of_a_node_into_itself_stop_at_the_growth_bound(web: dict[str, Any], oracle: FakeOracle) -> None:
    """40 copies of /spec into /spec doubled the document each time: out of memory, the run lost."""
    ops = [{"op": "copy", "from": "/spec", "path": f"/spec/c{i}"} for i in range(40)]
    scored = verify.score_completion(web, answer([v("K8S_PRIVILEGED")], patch=ops), oracle, SETTINGS)
    assert scored.error == "patch_growth_exceeded" and scored.components["patch"] == 0.0
    assert scored.components["detection"] > 0
    root = [{"op": "copy", "from": "", "path": f"/c{i}"} for i in range(40)]
    assert verify.evaluate_patch(web, root, oracle, penalty=1.0).error == "patch_growth_exceeded"


def test_op_count_and_size_bounds(web: dict[str, Any], oracle: FakeOracle) -> None:
    many = [{"op": "test", "path": "/kind", "value": "Deployment"}] * (patching.MAX_JSON_PATCH_OPS + 1)
    scored = verify.score_completion(web, answer([v("K8S_PRIVILEGED")], patch=many), oracle, SETTINGS)
    assert scored.error == "patch_too_many_ops" and scored.components["detection"] > 0
    huge = [{"op": "add", "path": "/metadata/annotations", "value": {"a": "x" * patching.MAX_PATCH_BYTES}}]
    with pytest.raises(PatchError) as error:
        patching.apply_json_patch({"metadata": {}}, huge)
    assert error.value.reason == "patch_too_large"


def test_an_array_index_with_thousands_of_digits_is_out_of_range() -> None:
    """int() refuses more than 4,300 digits with a ValueError that no caller expected."""
    with pytest.raises(PatchError) as error:
        patching.apply_json_patch({"a": [1]}, [{"op": "remove", "path": "/a/1" + "0" * 5000}])
    assert error.value.reason == "json_patch_failed"


def test_a_quoted_json_patch_follows_the_answer_rules() -> None:
    repeated = '[{"op": "replace", "path": "/spec/replicas", "value": 1, "value": 0}]'
    assert schema.parse_answer(answer([], patch=repeated)).error == "duplicate_key"
    deep = json.dumps([{"op": "add", "path": "/x", "value": nested(150)}])
    assert schema.parse_answer(answer([], patch=deep)).error == "json_too_deep"


def test_a_repeated_key_anywhere_in_the_answer_is_a_format_failure(web: dict[str, Any], oracle: FakeOracle) -> None:
    completion = (
        '{"violations": [{"id": "K8S_PRIVILEGED", "severity": "high", "severity": "low"}], '
        '"patch": null, "confidence": 0.9}'
    )
    scored = verify.score_completion(web, completion, oracle, SETTINGS)
    assert scored.error == "duplicate_key" and scored.reward == 0.0
    metrics = verify.aggregate([scored.to_record()], {web["config_id"]: web}, weights=SETTINGS.weights)
    assert metrics["format_errors"] == {"duplicate_key": 1}


def test_a_hunk_header_with_a_huge_line_number_is_malformed(web: dict[str, Any], oracle: FakeOracle) -> None:
    """int() of a 5,000-digit line number raised ValueError out of the diff parser."""
    diff = FIX_PRIVILEGED.replace("@@ -19,3 +19,3 @@", f"@@ -{'9' * 5000},3 +19,3 @@")
    scored = verify.score_completion(web, answer([v("K8S_PRIVILEGED")], patch=diff), oracle, SETTINGS)
    assert scored.error == "patch_malformed_hunk" and scored.components["detection"] > 0


PATCHED_PARSE_BOUNDS = {
    "patched_too_deep": "+deep: " + "[" * 70 + "]" * 70 + "\n",
    "patched_too_many_documents": "+---\n" * 501,
    "patched_yaml_bomb": "+loop: &loop [*loop]\n",  # an alias inside its own anchor: infinite once expanded
}


@pytest.mark.parametrize("reason", sorted(PATCHED_PARSE_BOUNDS))
def test_a_patched_config_is_reparsed_under_the_loader_limits(
    reason: str, web: dict[str, Any], oracle: FakeOracle
) -> None:
    diff = "--- a/web.yaml\n+++ b/web.yaml\n@@ -1,1 +1,2 @@\n apiVersion: apps/v1\n" + PATCHED_PARSE_BOUNDS[reason]
    scored = verify.score_completion(web, answer([v("K8S_PRIVILEGED")], patch=diff), oracle, SETTINGS)
    assert scored.error == reason and scored.components["patch"] == 0.0 and scored.components["detection"] > 0


def test_a_deeply_nested_terraform_patch_is_too_deep(oracle: FakeOracle) -> None:
    item = make_item(oracle, "terraform", "volume.tf", VOLUME_TF)
    diff = "--- a/volume.tf\n+++ b/volume.tf\n@@ -4,1 +4,2 @@\n   encrypted         = false\n"
    diff += "+  tags = " + "[" * 200 + "]" * 200 + "\n"
    assert verify.score_completion(item, answer([], diff), oracle, SETTINGS).error == "patched_too_deep"


def test_hostile_answers_in_a_batch_leave_the_rest_scored(web: dict[str, Any], oracle: FakeOracle) -> None:
    config = load_env_config("e2")
    assert isinstance(config, Config)
    verifier = verify.ConfigVerifier(config, oracle=oracle)
    completions = [
        answer([v("K8S_PRIVILEGED")], patch=[{"op": "add", "path": "/x", "value": nested(900)}]),
        answer([], patch=[{"op": "copy", "from": "/spec", "path": f"/spec/c{i}"} for i in range(40)]),
        answer([v("K8S_PRIVILEGED")], patch=FIX_PRIVILEGED),
    ]
    scored = verifier.score_many([web] * 3, completions)
    assert [sample.error for sample in scored] == ["json_too_deep", "patch_growth_exceeded", None]
    assert scored[2].components["patch"] == pytest.approx(0.5)


# --- the appliers on their own ---


def test_unified_diff_applier_edge_cases() -> None:
    original = "a\nb\nc\nd\n"
    insertion = "@@ -2,0 +3,1 @@\n+inserted\n"  # headerless, pure insertion after line 2
    assert patching.apply_unified_diff(original, insertion, "f.yaml") == "a\nb\ninserted\nc\nd\n"
    prose = "Here is the fix:\n--- f.yaml\n+++ f.yaml\n@@ -3,1 +3,1 @@\n-c\n+C\n"
    assert patching.apply_unified_diff(original, prose, "f.yaml") == "a\nb\nC\nd\n"
    trailing = "@@ -1,2 +1,2 @@\n a   \n-b\n+B\n"  # context differs only in trailing spaces
    assert patching.apply_unified_diff(original, trailing, "f.yaml") == "a\nB\nc\nd\n"
    two = "@@ -1,1 +1,1 @@\n-a\n+A\n@@ -4,1 +4,1 @@\n-d\n+D\n"
    assert patching.apply_unified_diff(original, two, "f.yaml") == "A\nb\nc\nD\n"
    with pytest.raises(PatchError) as error:
        patching.apply_unified_diff(original, "@@ -1,1 +1,1 @@\n-z\n+Z\n", "f.yaml")
    assert error.value.reason == "patch_does_not_apply"
    with pytest.raises(PatchError) as error:
        patching.apply_unified_diff(original, "x" * (patching.MAX_PATCH_BYTES + 1), "f.yaml")
    assert error.value.reason == "patch_too_large"
    with pytest.raises(PatchError) as error:
        patching.apply_unified_diff(original, "--- a\\..\\f.yaml\n+++ b/f.yaml\n@@ -1 +1 @@\n-a\n+A\n", "f.yaml")
    assert error.value.reason == "patch_path_traversal"
    fenced = "--- a/f.yaml\n+++ f.yaml\n@@ -1 +1 @@\n-a\n+A\n```\n"  # one side prefixed, a closing fence
    assert patching.apply_unified_diff(original, fenced, "f.yaml") == "A\nb\nc\nd\n"
    with pytest.raises(PatchError) as error:
        patching.apply_unified_diff("a\x00\n", "@@ -1 +1 @@\n-a\x00\n+A\n", "f.yaml")
    assert error.value.reason == "patch_binary"


def test_json_patch_operations() -> None:
    document = {"a": {"b": [1, 2]}, "c~d": 1, "e/f": 2}
    ops = [
        {"op": "add", "path": "/a/b/-", "value": 3},
        {"op": "add", "path": "/a/b/0", "value": 0},
        {"op": "replace", "path": "/c~0d", "value": 9},
        {"op": "remove", "path": "/e~1f"},
        {"op": "copy", "from": "/a/b", "path": "/copied"},
        {"op": "move", "from": "/copied", "path": "/moved"},
        {"op": "test", "path": "/moved/3", "value": 3},
    ]
    assert patching.apply_json_patch(document, ops) == {"a": {"b": [0, 1, 2, 3]}, "c~d": 9, "moved": [0, 1, 2, 3]}
    assert document == {"a": {"b": [1, 2]}, "c~d": 1, "e/f": 2}  # all or nothing, input untouched
    for bad in ([{"op": "move", "from": "/a", "path": "/a/b/x"}], [{"op": "add", "path": "/a/b/9", "value": 1}]):
        with pytest.raises(PatchError):
            patching.apply_json_patch(document, bad)


# --- metrics ---


def test_aggregate_metrics(web: dict[str, Any], clean: dict[str, Any], oracle: FakeOracle) -> None:
    partial = answer(
        [v("K8S_PRIVILEGED", "high", "Deployment/web"), v("K8S_RUN_AS_ROOT", "medium"), v("K8S_HOSTPATH")],
        patch=FIX_PRIVILEGED,
    )
    cases = [
        (web, partial),
        (clean, answer([])),
        (dict(clean, config_id="c2"), answer([v("K8S_PRIVILEGED")])),
        (dict(web, config_id="w2"), "no idea"),
    ]
    records = [verify.score_completion(item, text, oracle, SETTINGS).to_record() for item, text in cases]
    items = {item["config_id"]: item for item, _ in cases}
    metrics = verify.aggregate(records, items, weights=SETTINGS.weights)
    assert metrics["n"] == 4 and metrics["n_vulnerable"] == 2 and metrics["n_clean"] == 2
    assert metrics["detection_score"] == pytest.approx((5 / 7 + 1 + 0 + 0) / 4)
    # weighted micro: predictions 3+2+3 (item 1) + 3 (false alarm) = 11, matched 5; findings 6 + 6, matched 5
    assert metrics["weighted"]["precision"] == pytest.approx(5 / 11)
    assert metrics["weighted"]["recall"] == pytest.approx(5 / 12)
    assert metrics["unweighted"]["precision"] == pytest.approx(2 / 4)
    assert metrics["unweighted"]["recall"] == pytest.approx(2 / 6)
    assert metrics["positive_only"]["weighted"]["precision"] == pytest.approx(5 / 8)
    assert metrics["clean_accuracy"] == 0.5 and metrics["fpr_clean"] == 0.5
    assert metrics["format_errors"] == {"no_json_object": 1} and metrics["format_failure_rate"] == 0.25
    assert metrics["patch"]["provided_rate"] == 0.5 and metrics["patch"]["applies_rate"] == 1.0
    assert metrics["patch"]["fixes_all_rate"] == 0.0 and metrics["patch"]["introduces_new_rate"] == 0.0
    assert metrics["recall_by_id"] == {"K8S_NO_MEMORY_LIMIT": 0.0, "K8S_PRIVILEGED": 0.5, "K8S_RUN_AS_ROOT": 0.5}
    assert metrics["reward"]["n"] == 4 and metrics["tools"]["episodes"] == 0
    assert json.dumps(metrics)  # plain JSON throughout


def test_a_from_member_an_op_does_not_use_may_hold_anything(web: dict[str, Any], oracle: FakeOracle) -> None:
    """Found by hypothesis: a non-string "from" on an add raised TypeError while the patch's size was counted."""
    ops = [{"op": "replace", "path": "/spec/replicas", "value": 3, "from": 1.0}]
    assert verify.score_completion(web, answer([], patch=ops), oracle, SETTINGS).details["patch"]["applies"]
