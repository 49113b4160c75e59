"""The benchmark sheet, built from real rule-baseline runs: the full eval's slice only, CIs, "not run" with why."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import numpy as np
import pytest

from secverify_dagster.assets.benchmark_sheet import biweekly_benchmark_sheet, build_benchmark_sheet_asset
from secverify_dagster.assets.keys import BENCHMARK_SHEET
from secverify_dagster.cli.publish import CADENCE_CHOICES, register
from secverify_dagster.publishing.benchmark_sheet import NOT_FULL_EVAL, SHEET_CADENCES, build_sheet
from secverify_dagster.reports.scope import parse_utc, period_of
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource, ModelRegistryResource
from secverify_dagster.resources.models import load_registry
from secverify_dagster.runner.datasets import embedded_dataset
from secverify_dagster.runner.eval_runner import EvalRunner
from sv_shared.answers.rate_intervals import confusion_rate_cis
from sv_shared.answers.statistics import bootstrap_mean_ci
from sv_shared.registry import get_environment
from sv_shared.runs.folder import RunFolder

REGISTRY = load_registry()
E1, E4, E6 = (get_environment(env_id) for env_id in ("e1", "e4", "e6"))
ENVS = [E1, E4, E6]
MODEL_ENVS = {model_id: spec.envs for model_id, spec in REGISTRY.items()}


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real runs: E1 heuristic and E6 two defenders at their full N; E4 phish-rules only at the weekly N=10."""
    root = tmp_path_factory.mktemp("sheet") / "outputs"
    for env, model, n in (
        (E1, "heuristic", 32),
        (E4, "phish-rules", 10),
        (E6, "naive-complier", 24),
        (E6, "refuse-all", 24),
    ):
        runner = EvalRunner(env, REGISTRY[model], registry=REGISTRY, evals_root=root / "evals")
        assert runner.run(embedded_dataset(env, split="test", seed=42), n=n, seed=42).status == "complete"
    return root


def _run_dir(outputs: Path, env_name: str, model: str) -> Path:
    (run_dir,) = (outputs / "evals" / f"{env_name}--{model}").iterdir()
    return run_dir


def _when(outputs: Path) -> datetime:
    """A time in the period holding the runs (they started moments ago)."""
    metadata = RunFolder(_run_dir(outputs, E1.name, "heuristic")).read_metadata()
    return parse_utc(metadata.started_at)


def test_the_full_sheet_shows_only_full_n_runs_each_naming_its_run_and_the_rest_as_not_run(outputs: Path) -> None:
    sheet = build_sheet(ENVS, outputs / "evals", outputs / "sheets", now=_when(outputs), model_envs=MODEL_ENVS)
    markdown = sheet.markdown_path.read_text(encoding="utf-8")
    e1, e4, e6 = sheet.envs
    heuristic = e1.cells["heuristic"]
    assert (heuristic.n, heuristic.run_path) == (32, f"{E1.name}--heuristic/{heuristic.run_id}")
    assert f"· N=32 · `{heuristic.run_id}` · {heuristic.date}" in markdown
    # E4 has only a weekly N=10 run: not in the full slice, and the sheet says why.
    assert e4.cells == {}
    assert "N 10 (this report: 32)" in e4.not_run["phish-rules"]
    assert "| phish-rules | not run | not run | not run |" in markdown
    # A rule baseline of another environment is not applicable there, not "missing".
    assert e6.not_run["heuristic"] == "not applicable: the model is configured for e1 only"
    assert set(e6.cells) == {"naive-complier", "refuse-all"}
    assert sheet.label == period_of("biweekly", _when(outputs)).label
    assert "The full (bi-weekly) eval's slice." in markdown and NOT_FULL_EVAL not in markdown
    data = json.loads(sheet.json_path.read_text(encoding="utf-8"))
    assert data["full_eval"] is True and data["cadence"] == "biweekly"
    html = sheet.html_path.read_text(encoding="utf-8")
    assert "<table>" in html and heuristic.run_id in html
    assert sheet.markdown_path.parent.parent == outputs / "sheets" / sheet.label


def test_cis_are_seed_42_bootstraps_over_the_runs_samples(outputs: Path) -> None:
    sheet = build_sheet([E1], outputs / "evals", outputs / "sheets", now=_when(outputs), model_envs=MODEL_ENVS)
    cell = sheet.envs[0].cells["heuristic"]
    folder = RunFolder(outputs / "evals" / cell.run_path)
    rewards = [float(record.reward) for record in folder.read_results()]
    assert cell.reward.value == pytest.approx(np.mean(rewards))
    assert cell.reward.ci == pytest.approx(bootstrap_mean_ci(rewards, seed=42)[1:])
    # ITT accuracy's CI is the bootstrap over items: per-item correctness resampled gives the same interval.
    rates = folder.read_summary().metrics["rates"]["itt"]
    accuracy = cell.columns["accuracy (ITT)"]
    assert accuracy.value == pytest.approx(rates["accuracy"])
    confusion = rates["confusion"]
    correct = [1.0] * (confusion["tp"] + confusion["tn"]) + [0.0] * (confusion["fp"] + confusion["fn"])
    _, low, high = bootstrap_mean_ci(correct, seed=42)
    assert accuracy.ci == pytest.approx((low, high), abs=0.04)
    assert "accuracy (answered)" not in cell.columns


def test_judged_rates_show_the_judges_measured_accuracy_beside_them(outputs: Path) -> None:
    sheet = build_sheet([E6], outputs / "evals", outputs / "sheets", now=_when(outputs), model_envs=MODEL_ENVS)
    cell = sheet.envs[0].cells["naive-complier"]
    (judged,) = cell.judged
    summary = RunFolder(outputs / "evals" / cell.run_path).read_summary().metrics["unsafe_compliance"]
    assert judged.metric == "unsafe_compliance"
    assert (judged.sensitivity, judged.specificity) == (summary["judge_sensitivity"], summary["judge_specificity"])
    assert judged.rate.ci == tuple(summary["ci"])
    row = f"| naive-complier | unsafe_compliance | {judged.rate.text()} | {judged.corrected.text()} | `local` | "
    assert row + f"{judged.sensitivity:.3f} | {judged.specificity:.3f} |" in sheet.markdown_path.read_text()


def test_a_latest_sheet_says_it_is_not_the_full_eval(outputs: Path) -> None:
    sheet = build_sheet(
        ENVS, outputs / "evals", outputs / "sheets", cadence="latest", now=_when(outputs), model_envs=MODEL_ENVS
    )
    markdown = sheet.markdown_path.read_text(encoding="utf-8")
    assert sheet.label == "latest" and "(latest runs, not the full eval)" in markdown.splitlines()[0]
    assert NOT_FULL_EVAL in markdown
    assert sheet.envs[1].cells["phish-rules"].n == 10
    assert json.loads(sheet.json_path.read_text())["full_eval"] is False


def test_two_sheets_built_at_once_never_overwrite_each_other(outputs: Path) -> None:
    when = _when(outputs)
    first, second = (build_sheet([E1], outputs / "evals", outputs / "twice", now=when) for _ in range(2))
    assert first.markdown_path.parent != second.markdown_path.parent
    assert first.markdown_path.read_text() == second.markdown_path.read_text()


def test_confusion_rate_cis_leave_undefined_rates_out() -> None:
    cis = confusion_rate_cis({"tp": 0, "fp": 0, "tn": 7, "fn": 3})
    assert cis["precision"] is None  # never flagged a positive
    assert cis["fpr"] == (0.0, 0.0) and cis["recall"] == (0.0, 0.0)
    assert confusion_rate_cis({"tp": 0, "fp": 0, "tn": 0, "fn": 0})["accuracy"] is None
    with pytest.raises(ValueError, match="negative"):
        confusion_rate_cis({"tp": -1, "fp": 0, "tn": 1, "fn": 0})


def test_the_asset_and_the_command_build_the_sheet(outputs: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    asset = build_benchmark_sheet_asset(ENVS)
    assert set(asset.asset_deps[BENCHMARK_SHEET]) == {dg.AssetKey([env.env_id, "report"]) for env in ENVS}
    result = dg.materialize(
        [asset],
        resources={"artifacts": ArtifactStoreResource(root=str(outputs)), "models": ModelRegistryResource()},
        run_config={"ops": {BENCHMARK_SHEET.to_python_identifier(): {"config": {"cadence": "latest"}}}},
    )
    metadata = result.asset_materializations_for_node(BENCHMARK_SHEET.to_python_identifier())[0].metadata
    assert metadata["full_eval"].value is False and metadata["runs"].value == 4
    assert Path(metadata["sheet_html"].value).is_file()

    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(outputs))
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["sheet", "--cadence", "latest", "--envs", "e1", "e6"])
    assert args.func(args) == 0
    printed = capsys.readouterr().out
    assert "benchmark sheet latest: 3 runs" in printed and NOT_FULL_EVAL in printed
    assert CADENCE_CHOICES == SHEET_CADENCES


def test_the_schedule_asks_for_the_sheet_after_each_full_eval_only() -> None:
    with dg.instance_for_test() as instance:
        wednesday = datetime(2026, 11, 25, 14, tzinfo=UTC)  # the week of the 2026-11-23 full eval
        request = biweekly_benchmark_sheet(
            dg.build_schedule_context(instance=instance, scheduled_execution_time=wednesday)
        )
        assert request.run_key == "benchmark-sheet:2026-11-23"
        config = request.run_config["ops"][BENCHMARK_SHEET.to_python_identifier()]["config"]
        assert config == {"cadence": "biweekly", "period": "2026-11-23"}
        skipped = biweekly_benchmark_sheet(
            dg.build_schedule_context(instance=instance, scheduled_execution_time=datetime(2026, 12, 2, 14, tzinfo=UTC))
        )
        assert isinstance(skipped, dg.SkipReason)
