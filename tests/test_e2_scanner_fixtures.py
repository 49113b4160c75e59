"""E2's labels on the scanners' own public Kubernetes fixtures, a standing measure (issue 28, item 1).

The fixtures are outside data (../shared/data/scanner-fixtures, not shipped): the tests that read them skip when
the folder is absent. Floors are the figures bench/bench_e2_fixtures.py measured when pod specs became
shape-based (before: checkov recall 15/18, false positives 2/20; trivy-checks 12/12 and 0/9)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sv_env_config_verification.canonical import CANONICAL
from sv_env_config_verification.scanner_fixtures import (
    CHECK_MAPPINGS,
    CheckScore,
    SetScore,
    load_fixtures,
    oracle_labeller,
    score_checks,
    score_sets,
)

ROOT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scanner-fixtures"

# fixture set -> (caught, failing, flagged, passing) as measured; recall may only rise, false positives only fall.
FLOORS: dict[str, tuple[int, int, int, int]] = {
    "checkov": (16, 18, 1, 20),
    "trivy-checks": (12, 12, 0, 9),
}


def test_every_mapping_names_canonical_kubernetes_ids() -> None:
    for fixture_set, mappings in CHECK_MAPPINGS.items():
        for check, mapping in mappings.items():
            assert mapping.canonical_ids, (fixture_set, check)
            for canonical_id in mapping.canonical_ids:
                assert CANONICAL[canonical_id].kind == "kubernetes", (fixture_set, check)


@pytest.fixture(scope="module")
def measured() -> tuple[list[CheckScore], dict[str, SetScore]]:
    if not ROOT.is_dir():
        pytest.skip(f"no scanner fixtures at {ROOT}")
    fixtures = load_fixtures(ROOT)
    checks = score_checks(fixtures, oracle_labeller())
    return checks, {score.fixture_set: score for score in score_sets(fixtures, checks)}


@pytest.mark.parametrize("fixture_set", sorted(FLOORS))
def test_recall_and_false_positives_hold_their_floors(
    measured: tuple[list[CheckScore], dict[str, SetScore]], fixture_set: str
) -> None:
    _, sets = measured
    caught, failing, flagged, passing = FLOORS[fixture_set]
    score = sets[fixture_set]
    assert (score.failing, score.passing) == (failing, passing), "the fixtures or the mapping changed: re-measure"
    assert score.caught >= caught, [c.missed for c in measured[0] if c.fixture_set == fixture_set]
    assert score.flagged <= flagged, [c.false_positives for c in measured[0] if c.fixture_set == fixture_set]


def test_every_mapped_check_has_fixtures_and_the_unmapped_are_named(
    measured: tuple[list[CheckScore], dict[str, SetScore]],
) -> None:
    checks, sets = measured
    for fixture_set, mappings in CHECK_MAPPINGS.items():
        assert {c.check for c in checks if c.fixture_set == fixture_set} == set(mappings), fixture_set
        assert sets[fixture_set].unmapped and not set(sets[fixture_set].unmapped) & set(mappings)


def test_the_deployment_config_is_caught_and_the_mapping_containers_pod_is_not_flagged(
    measured: tuple[list[CheckScore], dict[str, SetScore]],
) -> None:
    """The two files the shape-based discovery changed: a DeploymentConfig (not one of the nine kinds) and a Pod
    whose containers: is a mapping."""
    checks, _ = measured
    [escalation] = [c for c in checks if (c.fixture_set, c.check) == ("checkov", "AllowPrivilegeEscalation")]
    assert "example_AllowPrivilegeEscalation/oc-deploymentConfig-FAILED.yml" not in escalation.missed
    assert escalation.false_positives == ()
