"""Iteration notes (`secverify iterate`): scaffolded from real heuristic runs on E1: the baseline's triage, the
hypothesis, the tweak, the candidate's fast eval on the same items with paired bootstrap CIs; refused when the two
runs drew different items; never overwriting a note."""

from __future__ import annotations

import argparse
import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from secverify_dagster.cli.iterate import register
from secverify_dagster.reports.views import view_dataset, view_evals_root
from secverify_dagster.research.iteration_notes import (
    HYPOTHESIS_PLACEHOLDER,
    IterationNoteError,
    build_facts,
    find_run,
    write_note,
)
from secverify_dagster.resources.models import load_registry
from secverify_dagster.runner.datasets import embedded_dataset
from secverify_dagster.runner.eval_runner import EvalRunner
from sv_shared.answers.collapse import profile_line
from sv_shared.answers.statistics import paired_bootstrap
from sv_shared.config import project_root
from sv_shared.config.experiments import load_experiment
from sv_shared.registry import get_environment
from sv_shared.runs.ablations import ablated_environment, load_ablation

SHIPPED = Path("configs/experiments/e1/2026-11-24.yaml")
TODAY = date(2026, 11, 24)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Three real heuristic runs on E1's test split, N=4: the full split and its no-state view with seed 42 (the
    same items), and the full split with seed 7 (other items)."""
    outputs = tmp_path_factory.mktemp("iterate") / "outputs"
    env = get_environment("e1")
    spec = load_registry()["heuristic"]
    evals = outputs / "evals"

    def run(seed: int, view: str | None = None, scored_by: Any = env) -> str:
        dataset = embedded_dataset(env, split="test", seed=seed)
        root = evals
        if view:
            dataset, root = view_dataset(env, dataset, view), view_evals_root(evals, view)
        outcome = EvalRunner(scored_by, spec, evals_root=root).run(dataset, n=4, seed=seed)
        assert outcome.status == "complete"
        return outcome.metadata.run_id

    return {
        "env": env,
        "outputs": outputs,
        "evals": evals,
        "baseline": run(42),
        "candidate": run(42, "no-state"),
        "other_items": run(7),
        "other_reward": run(42, scored_by=ablated_environment(load_ablation("e1", "no-calibration"))),
    }


def facts_for(runs: dict[str, Any], candidate: str | None = "candidate", **options: Any):
    env, evals = runs["env"], runs["evals"]
    return build_facts(
        env,
        find_run(evals, env, runs["baseline"]),
        candidate=find_run(evals, env, runs[candidate]) if candidate else None,
        datasets_root=runs["outputs"] / "datasets",
        today=TODAY,
        **options,
    )


def test_a_note_from_two_runs_on_the_same_items(runs: dict[str, Any], tmp_path: Path) -> None:
    experiment = load_experiment(SHIPPED, project_root())
    facts = facts_for(runs, experiment=experiment)
    path = write_note(tmp_path / "notes", facts)
    assert path.name == "2026-11-24-iteration.md"
    text = path.read_text()
    for section in ("## Triage of the baseline", "## Hypothesis", "## The batch or tweak", "## Fast eval", "## Links"):
        assert section in text
    assert " ".join(experiment[0].hypothesis.split()) in text and experiment[1].sha256[:12] in text

    # The fast eval is the paired bootstrap (seed 42) of the two runs' rewards on the same items.
    env, evals = runs["env"], runs["evals"]
    baseline = {r.id: r.reward for r in find_run(evals, env, runs["baseline"]).records()}
    candidate = {r.id: r.reward for r in find_run(evals, env, runs["candidate"]).records()}
    ids = sorted(baseline)
    expected = paired_bootstrap([candidate[i] for i in ids], [baseline[i] for i in ids], seed=42)
    reward = facts.fast_eval["paired"][0]
    assert reward["name"] == "reward" and facts.fast_eval["n_paired"] == 4
    assert (reward["delta"], reward["ci_low"], reward["ci_high"]) == (
        expected.delta,
        expected.ci_low,
        expected.ci_high,
    )
    assert f"{expected.delta:+.3f} [{expected.ci_low:+.3f}, {expected.ci_high:+.3f}]" in text
    assert {row["name"] for row in facts.fast_eval["headline"]} >= {"accuracy (ITT)"}
    # Both runs' answers against the split's labels, so a collapsed candidate cannot hide behind its reward.
    for label in ("baseline", "candidate"):
        profile = getattr(facts, label)["answers"]
        assert profile["n"] == 4 and f"heuristic: {profile_line(profile)}." in text

    # The triage counts every scored sample; the sidecar holds the same facts.
    assert sum(facts.triage["counts"].values()) == 4
    sidecar = json.loads(path.with_suffix(".json").read_text())
    assert sidecar["fast_eval"] == json.loads(json.dumps(facts.fast_eval)) and sidecar["note"] == path.name
    # No model text: not one completion of either run is quoted.
    for run_id in (runs["baseline"], runs["candidate"]):
        for record in find_run(evals, env, run_id).records():
            assert record.completion not in text


def test_runs_on_different_items_are_refused(runs: dict[str, Any], tmp_path: Path) -> None:
    with pytest.raises(IterationNoteError, match=r"did not draw the same items.*seed 42 vs 7"):
        facts_for(runs, candidate="other_items")


def test_runs_scored_under_different_reward_configs_are_refused(runs: dict[str, Any]) -> None:
    with pytest.raises(IterationNoteError, match=r"different configs \(reward_weights differ\)"):
        facts_for(runs, candidate="other_reward")


def test_without_an_experiment_the_hypothesis_is_a_marked_placeholder(runs: dict[str, Any], tmp_path: Path) -> None:
    facts = facts_for(runs, candidate=None)
    text = write_note(tmp_path, facts).read_text()
    assert HYPOTHESIS_PLACEHOLDER in text and "no candidate run yet" in text
    assert facts.fast_eval is None and facts.hypothesis_from == "placeholder"
    with pytest.raises(ValueError, match="no batch 'b-missing'"):
        facts_for(runs, candidate=None, batch_id="b-missing")


def test_a_note_is_never_overwritten(runs: dict[str, Any], tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "2026-11-24-iteration.md").write_text("a person's note")
    facts = facts_for(runs)
    second = write_note(notes, facts)
    third = write_note(notes, facts)
    assert (second.name, third.name) == ("2026-11-24-iteration-2.md", "2026-11-24-iteration-3.md")
    assert (notes / "2026-11-24-iteration.md").read_text() == "a person's note"
    assert sorted(path.name for path in notes.iterdir()) == [
        "2026-11-24-iteration-2.json",
        "2026-11-24-iteration-2.md",
        "2026-11-24-iteration-3.json",
        "2026-11-24-iteration-3.md",
        "2026-11-24-iteration.md",
    ]


def test_the_trajectory_pages_are_linked_when_present(runs: dict[str, Any]) -> None:
    run_dir = find_run(runs["evals"], runs["env"], runs["candidate"]).run_dir
    page = run_dir / "trajectories.html"
    page.write_text("<html></html>")
    try:
        links = facts_for(runs).links
    finally:
        page.unlink()
    assert links["candidate trajectories"] == str(page) and "baseline trajectories" not in links


def test_the_iterate_command_writes_the_note(
    runs: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(runs["outputs"]))
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(
        ["iterate", "--env", "e1", "--baseline", runs["baseline"], "--candidate", runs["candidate"]]
    )
    assert args.func(args) == 0
    (note,) = (runs["outputs"] / "notes").glob("*-iteration*.md")
    assert "iteration note:" in capsys.readouterr().out and "## Fast eval" in note.read_text()
