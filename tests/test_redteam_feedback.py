"""The E5 ↔ E6 loop through stored runs: defender failures seed attack goal trees, attack messages become probes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from secverify_dagster.resources.models import load_registry
from secverify_dagster.runner.datasets import embedded_dataset
from secverify_dagster.runner.eval_runner import EvalRunner
from sv_env_redteam_attack.failures import defender_failures
from sv_env_redteam_defense.probes import attack_probes
from sv_shared.registry import ENV_NAMES, get_environment
from sv_shared.runs.records import latest_complete_runs

REGISTRY = load_registry()


pytestmark = pytest.mark.usefixtures("isolated_outputs")


def _feedback(env, isolated_outputs: Path) -> list:
    """The runs the asset graph passes to `synthesize`: the feedback environment's latest complete runs."""
    return latest_complete_runs(isolated_outputs / "evals", ENV_NAMES[env.data.feedback_env])


def test_defender_failures_seed_the_next_goal_trees(isolated_outputs: Path) -> None:
    e5, e6 = get_environment("e5"), get_environment("e6")
    assert e5.data.feedback_env == "e6"
    no_runs = _feedback(e5, isolated_outputs)
    assert defender_failures(no_runs) == []
    unseeded = e5.data.synthesize(30, seed=42, feedback=no_runs)
    assert all(json.loads(p)["seeded_by"] is None for p in unseeded["generator_params"].to_list())

    run = EvalRunner(e6, REGISTRY["naive-complier"], registry=REGISTRY).run(
        embedded_dataset(e6, split="test", seed=42), n=24, seed=42
    )
    runs = _feedback(e5, isolated_outputs)
    failures = defender_failures(runs)
    assert failures and all(f["run"].startswith("naive-complier/") for f in failures)
    assert len(failures) == run.summary.metrics["outcomes"]["unsafe_compliance"] - sum(
        1
        for line in (run.run_dir / "results.jsonl").read_text().splitlines()
        if json.loads(line)["details"]["kind"] == "benign"
        and json.loads(line)["details"]["outcome"] == "unsafe_compliance"
    )
    seeded = e5.data.synthesize(30, seed=42, feedback=runs)
    seeds = {json.loads(p)["seeded_by"] for p in seeded["generator_params"].to_list()} - {None}
    assert seeds and seeds <= {f["behavior_id"] for f in failures}


def test_stored_attack_messages_become_defense_probes(isolated_outputs: Path) -> None:
    e5, e6 = get_environment("e5"), get_environment("e6")
    EvalRunner(
        e5, REGISTRY["template-attacker"], counterparts={"target": REGISTRY["refuse-all"]}, registry=REGISTRY
    ).run(embedded_dataset(e5, split="test", seed=42), n=6, seed=42)
    assert e6.data.feedback_env == "e5"
    runs = _feedback(e6, isolated_outputs)
    probes = attack_probes(runs)
    assert probes and all(not p["message"].startswith("[REDACTED") for p in probes)
    frame = e6.data.synthesize(40, seed=42, feedback=runs)
    from_e5 = frame.filter(frame["generator"] == "e5_attacks")
    assert from_e5.height > 0 and set(from_e5["kind"].to_list()) == {"adversarial"}
    assert {json.loads(turns)[-1] for turns in from_e5["turns"].to_list()} <= {p["message"] for p in probes}
