"""A missing CPU limit and a missing memory limit are two findings, so a patch that adds only one is seen (and paid)
as fixing exactly one."""

from __future__ import annotations

import pytest
from e2_fakes import make_item

from sv_env_config_verification import verify
from sv_env_config_verification.adapters.opa import OpaAdapter
from sv_env_config_verification.baseline import remediate_kubernetes
from sv_env_config_verification.canonical import CANONICAL
from sv_env_config_verification.manifests import unified_diff
from sv_env_config_verification.oracle import Oracle


def deployment(limits: str | None) -> str:
    """A hardened Deployment whose only possible findings are about resources.limits (None: no resources at all)."""
    resources = f"          resources:\n            limits: {limits}\n" if limits is not None else ""
    return (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\nspec:\n  template:\n    spec:\n"
        "      containers:\n        - name: api\n          image: api:1.2\n"
        "          securityContext:\n            runAsNonRoot: true\n            allowPrivilegeEscalation: false\n"
        "            readOnlyRootFilesystem: true\n" + resources
    )


@pytest.fixture(scope="module")
def oracle() -> Oracle:
    return Oracle([OpaAdapter()])


@pytest.mark.parametrize(
    ("limits", "expected"),
    [
        (None, ["K8S_NO_CPU_LIMIT", "K8S_NO_MEMORY_LIMIT"]),
        ("{memory: 256Mi}", ["K8S_NO_CPU_LIMIT"]),
        ("{cpu: 500m}", ["K8S_NO_MEMORY_LIMIT"]),
        ('{cpu: "", memory: null}', ["K8S_NO_CPU_LIMIT", "K8S_NO_MEMORY_LIMIT"]),  # empty is not a limit
        ("{cpu: 500m, memory: 256Mi}", []),
    ],
)
def test_each_missing_limit_is_its_own_finding(oracle: Oracle, limits: str | None, expected: list[str]) -> None:
    (result,) = oracle.scan_many([("api.yaml", deployment(limits))])
    assert result.canonical_ids() == expected


def test_the_two_ids_weigh_the_same() -> None:
    assert CANONICAL["K8S_NO_CPU_LIMIT"].severity == CANONICAL["K8S_NO_MEMORY_LIMIT"].severity == "low"


@pytest.mark.parametrize(
    ("after", "removed", "score"),
    [
        ("{cpu: 500m}", ["K8S_NO_CPU_LIMIT@Deployment/api"], 0.5),
        ("{memory: 256Mi}", ["K8S_NO_MEMORY_LIMIT@Deployment/api"], 0.5),
        ('{cpu: "", memory: ""}', [], 0.0),
        ("{cpu: 500m, memory: 256Mi}", ["K8S_NO_CPU_LIMIT@Deployment/api", "K8S_NO_MEMORY_LIMIT@Deployment/api"], 1.0),
    ],
)
def test_a_fix_of_one_limit_is_credited_as_one(oracle: Oracle, after: str, removed: list[str], score: float) -> None:
    original = deployment(None)
    item = make_item(oracle, "kubernetes", "api.yaml", original)
    outcome = verify.evaluate_patch(item, unified_diff(original, deployment(after), "api.yaml"), oracle, penalty=1.0)
    assert outcome.removed == removed and outcome.score == score
    assert outcome.fixes_all is (score == 1.0)


def test_the_baseline_fixes_only_the_limit_a_finding_names(oracle: Oracle) -> None:
    original = deployment("{memory: 128Mi}")
    (result,) = oracle.scan_many([("api.yaml", original)])
    fixed = remediate_kubernetes(original, result.findings)
    assert "memory: 128Mi" in fixed and "cpu: 500m" in fixed
    assert oracle.scan_many([("api.yaml", fixed)])[0].findings == []
