"""The regression gate: a significant drop of more than 3% against the previous comparable run fails it, noise does
not, nothing escapes by giving up items or changing N, and runs that are not comparable are named, never compared."""

from __future__ import annotations

import argparse
import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest

from secverify_dagster.assets.keys import eval_key, report_key
from secverify_dagster.assets.regression_checks import CHECK_NAME
from secverify_dagster.cli.check import NOTHING_TO_CHECK, REGRESSED, register
from secverify_dagster.jobs import eval_run_request
from secverify_dagster.partitions import add_model_partitions
from secverify_dagster.reports.regression_gate import (
    CORE_METRIC,
    MIN_PAIRED_ITEMS,
    UnjudgeableRunError,
    compare_runs,
    gate,
    judge,
    previous_comparable_run,
)
from secverify_dagster.resources.models import load_registry
from secverify_dagster.runner.datasets import embedded_dataset, select_items
from sv_shared.answers.statistics import align_paired
from sv_shared.registry import get_environment
from sv_shared.runs.folder import RunFolder
from sv_shared.runs.records import FinishedRun
from sv_shared.runs.schema import DatasetRef, ErrorRecord, ModelIdentity, ResultRecord, RunMetadata, Session, Usage

E1 = get_environment("e1")
START = datetime(2026, 11, 2, 6, 0, tzinfo=UTC)


def _metadata(run_id: str, n_items: int, started: datetime, model_id: str) -> RunMetadata:
    at = started.isoformat()
    return RunMetadata(
        run_id=run_id,
        env="e1",
        env_name=E1.name,
        verifier_version=E1.verifier.version,
        verifier_provenance={},
        model=ModelIdentity(id=model_id, provider="openai", model="m-2026-10", params={}, price={}),
        generation={"max_tokens": 40, "temperature": 0.0},
        config=E1.config.as_dict(),
        dataset=DatasetRef(source="curated/test.parquet", split="test", hash="d" * 64, rows=2000),
        n_requested=n_items,
        n_items=n_items,
        seed=42,
        fingerprint_hash=run_id * 4,
        code_version="c0ffee",
        created_at=at,
        sessions=[Session(started_at=at, code_version="c0ffee", finished_at=at)],
        status="complete",
    )


def _record(item_id: str, reward: float, model_id: str, turns: int | None) -> ResultRecord:
    return ResultRecord(
        id=item_id,
        reward=reward,
        components={},
        parsed=None,
        error=None,
        details={},
        model=model_id,
        prompt=[],
        completion="",
        usage=Usage(prompt_tokens=0, completion_tokens=0),
        latency_s=0.0,
        cost_usd=0.0,
        cached=False,
        turns=turns,
    )


def write_run(
    root: Path,
    run_id: str,
    rewards: dict[str, float],
    *,
    days: int = 0,
    given_up: tuple[str, ...] = (),
    model_id: str = "m",
    turns: int | None = None,
    status: str = "complete",
    **changes: object,
) -> FinishedRun:
    """A run folder as the runner writes it: rewards by item, items given up after 3 failures in errors.jsonl."""
    metadata = _metadata(run_id, len(rewards) + len(given_up), START + timedelta(days=days), model_id)
    metadata = metadata.replace(status=status, **changes)
    folder = RunFolder(root / f"{E1.name}--{model_id}" / run_id)
    folder.path.mkdir(parents=True)
    folder.write_metadata(metadata)
    folder.append_results(_record(item, reward, model_id, turns) for item, reward in rewards.items())
    folder.append_errors(
        ErrorRecord(id=item, kind="bad_request", status=400, message=f"refused (attempt {attempt} of 3)", at="t")
        for item in given_up
        for attempt in (1, 2, 3)
    )
    return FinishedRun(folder.path, metadata)


def ids(n: int) -> list[str]:
    return [f"item-{index:04d}" for index in range(n)]


def issue_example(n: int = 500) -> tuple[dict[str, float], dict[str, float]]:
    """0.748 → 0.710 on n items: 374 of 500 right before; now 30 of those wrong and 11 others right (net −19)."""
    items = ids(n)
    right_before = round(0.748 * n)
    before = {item: 1.0 if index < right_before else 0.0 for index, item in enumerate(items)}
    now = dict(before)
    for item in items[:30]:
        now[item] = 0.0
    for item in items[right_before : right_before + 11]:
        now[item] = 1.0
    return now, before


def test_the_issues_unflagged_drop_is_a_regression(tmp_path: Path) -> None:
    now, before = issue_example()
    previous = write_run(tmp_path, "week-1", before)
    current = write_run(tmp_path, "week-2", now, days=7)
    verdict = compare_runs(current, previous)
    assert (round(verdict.mean_previous, 3), round(verdict.mean_current, 3)) == (0.748, 0.710)
    assert verdict.n_paired == 500 and verdict.previous_run == "week-1" and verdict.current_run == "week-2"
    assert verdict.relative_change == pytest.approx(-0.038 / 0.748)
    assert verdict.ci_high < 0 and verdict.p_value < 0.05
    assert verdict.regressed
    assert f"{CORE_METRIC} 0.748 → 0.710 (-5.1%) on 500 shared items" in verdict.reason
    assert verdict.as_dict()["metric"] == CORE_METRIC


def test_the_same_means_on_five_noisy_items_are_not_a_regression(tmp_path: Path) -> None:
    items = ids(5)
    before = dict(zip(items, [0.9, 0.5, 0.84, 0.7, 0.8], strict=True))
    now = dict(zip(items, [0.6, 0.8, 0.6, 0.9, 0.65], strict=True))
    verdict = compare_runs(write_run(tmp_path, "b", now, days=1), write_run(tmp_path, "a", before))
    assert (round(verdict.mean_previous, 3), round(verdict.mean_current, 3)) == (0.748, 0.710)
    assert verdict.ci_low < 0 < verdict.ci_high
    assert not verdict.regressed


def test_a_drop_beyond_three_percent_fails_by_the_seeds_rule_and_significance_is_optional(tmp_path: Path) -> None:
    """Issue 27: a 6.7% drop of two items net fails (the seed: "fail CI if reward drops >3%"); its CI includes 0, which
    the reason says, and only a gate that requires significance lets it pass."""
    items = ids(20)
    before = {item: 1.0 if index % 4 else 0.0 for index, item in enumerate(items)}  # 0.75
    now = dict(before)
    now[items[1]] = now[items[2]] = 0.0
    now[items[4]] = 1.0  # 0.70: a 6.7% drop, of two items net
    current, previous = write_run(tmp_path, "b", now, days=1), write_run(tmp_path, "a", before)
    verdict = compare_runs(current, previous)
    assert verdict.relative_change < -0.03 and verdict.ci_low < 0 <= verdict.ci_high
    assert verdict.regressed and "REGRESSED: beyond the 3% allowed (the CI includes 0)" in verdict.reason
    strict = compare_runs(current, previous, require_significance=True)
    assert not strict.regressed and "significance is required" in strict.reason


def test_a_significant_drop_within_three_percent_is_allowed(tmp_path: Path) -> None:
    items = ids(1000)
    before = {item: 1.0 if index < 748 else 0.0 for index, item in enumerate(items)}
    now = {item: 0.0 if index < 15 else reward for index, (item, reward) in enumerate(before.items())}
    verdict = compare_runs(write_run(tmp_path, "b", now, days=1), write_run(tmp_path, "a", before))
    assert verdict.ci_high < 0 and verdict.relative_change == pytest.approx(-0.015 / 0.748)
    assert not verdict.regressed and "within the 3% allowed" in verdict.reason


def test_items_given_up_count_as_the_floor_so_refusing_hard_items_does_not_escape(tmp_path: Path) -> None:
    """A given-up item counts what an unparseable answer earns, E1's floor (-0.7): never more than a wrong answer."""
    _, before = issue_example()
    right = [item for item, reward in before.items() if reward == 1.0]
    abandoned = tuple(right[:19])
    now = {item: reward for item, reward in before.items() if item not in abandoned}
    previous = write_run(tmp_path, "a", before)
    current = write_run(tmp_path, "b", now, days=1, given_up=abandoned)
    # Over the items both runs scored, nothing changed: the drop is entirely in the items this run gave up.
    _, scored_now, scored_before = align_paired(
        (record.as_dict() for record in current.records()), (record.as_dict() for record in previous.records())
    )
    assert scored_now == scored_before
    verdict = compare_runs(current, previous)
    assert verdict.n_paired == 500 and verdict.mean_current == pytest.approx(0.748 - 19 * 1.7 / 500)
    assert verdict.regressed
    assert "19 items given up in this run (scored before) count as reward -0.7" in verdict.reason


def test_too_few_shared_items_are_not_judged_even_when_every_one_dropped(tmp_path: Path) -> None:
    items = ids(MIN_PAIRED_ITEMS - 1)
    verdict = compare_runs(
        write_run(tmp_path, "b", dict.fromkeys(items, 0.0), days=1),
        write_run(tmp_path, "a", dict.fromkeys(items, 1.0)),
    )
    assert verdict.ci_high < 0 and verdict.relative_change == -1.0
    assert not verdict.regressed and "not judged" in verdict.reason
    one = compare_runs(write_run(tmp_path, "d", {"x": 0.0}, days=3), write_run(tmp_path, "c", {"x": 1.0}, days=2))
    assert one.n_paired == 1 and not one.regressed


def test_a_zero_previous_mean_has_no_relative_change_and_no_regression(tmp_path: Path) -> None:
    items = ids(20)
    verdict = compare_runs(
        write_run(tmp_path, "b", dict.fromkeys(items, 0.0), days=1),
        write_run(tmp_path, "a", dict.fromkeys(items, 0.0)),
    )
    assert verdict.mean_previous == 0.0 and verdict.relative_change is None and verdict.delta == 0.0
    assert not verdict.regressed and "previous mean 0" in verdict.reason


def test_a_non_finite_reward_or_an_unaccounted_item_cannot_be_judged(tmp_path: Path) -> None:
    before = dict.fromkeys(ids(10), 1.0)
    previous = write_run(tmp_path, "a", before)
    broken = write_run(tmp_path, "b", {**before, "item-0003": float("nan")}, days=1)
    with pytest.raises(UnjudgeableRunError, match="item-0003"):
        compare_runs(broken, previous)
    # A results line removed by hand: the metadata still counts the item, and nothing says why it is gone.
    trimmed = write_run(tmp_path, "c", before, days=2)
    lines = trimmed.run_dir.joinpath("results.jsonl").read_text().splitlines(keepends=True)
    trimmed.run_dir.joinpath("results.jsonl").write_text("".join(lines[1:]))
    with pytest.raises(UnjudgeableRunError, match="10 items, its results and errors hold 9"):
        compare_runs(trimmed, previous)


def test_a_run_scored_by_another_verifier_is_named_and_never_compared(tmp_path: Path) -> None:
    now, before = issue_example()
    older = write_run(tmp_path, "old-verifier", before, verifier_version="e1-verifier-1")
    current = write_run(tmp_path, "now", now, days=7)
    assert previous_comparable_run(tmp_path, current) is None
    judgement = judge(tmp_path, current)
    assert judgement.previous is None and not judgement.verdict.regressed
    assert "no previous comparable run" in judgement.verdict.reason
    assert "old-verifier, in verifier version 'e1-verifier-1' → 'e1-verifier-4'" in judgement.verdict.reason
    direct = compare_runs(current, older)
    assert direct.delta is None and not direct.regressed and direct.reason.startswith("not comparable")
    # A comparable run further back is found past the one that is not.
    comparable = write_run(tmp_path, "older-same-verifier", before, days=-7)
    assert previous_comparable_run(tmp_path, current) == comparable
    assert judge(tmp_path, current).verdict.regressed


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"dataset": DatasetRef(source="x", split="test", hash="e" * 64, rows=2000)}, "dataset hash"),
        ({"seed": 7}, "seed"),
        ({"verifier_provenance": {"semgrep": "1.182"}}, "verifier provenance"),
        ({"judge": "refusal-detector"}, "judge"),
    ],
)
def test_runs_that_differ_in_what_a_reward_means_are_not_comparable(
    tmp_path: Path, change: dict[str, object], expected: str
) -> None:
    now, before = issue_example(100)
    previous = write_run(tmp_path, "a", before, **change)
    verdict = compare_runs(write_run(tmp_path, "b", now, days=1), previous)
    assert not verdict.regressed and verdict.reason.startswith("not comparable") and expected in verdict.reason


def test_scoring_config_and_episode_kind_must_match(tmp_path: Path) -> None:
    now, before = issue_example()
    config = E1.config.as_dict()
    reweighted = write_run(tmp_path, "a", before, config={**config, "costs": {**config["costs"], "miss": 2.0}})
    tools = write_run(tmp_path, "b", before, days=1, turns=3)
    current = write_run(tmp_path, "c", now, days=2)
    assert "scoring config" in compare_runs(current, reweighted).reason
    assert "episodes tool-using → single-turn" in compare_runs(current, tools).reason
    assert previous_comparable_run(tmp_path, current) is None


def test_a_new_snapshot_or_new_generation_settings_are_compared_and_caught(tmp_path: Path) -> None:
    now, before = issue_example()
    previous = write_run(tmp_path, "a", before)
    settings = {"max_tokens": 20, "temperature": 0.7}
    current = write_run(
        tmp_path,
        "b",
        now,
        days=1,
        model=ModelIdentity(id="m", provider="openai_compatible", model="m-2026-11", params={"top_p": 0.9}, price={}),
        generation=settings,
        config={**E1.config.as_dict(), "generation": settings},
        code_version="beef",
    )
    assert previous_comparable_run(tmp_path, current) == previous
    assert compare_runs(current, previous).regressed


def test_the_runner_draws_a_shorter_run_s_items_first_in_a_longer_one() -> None:
    frame = embedded_dataset(E1, split="test", seed=42).frame
    drawn = {n: [item[E1.data.id_column] for item in select_items(E1, frame, n, 42)] for n in (10, frame.height)}
    assert drawn[10] == drawn[frame.height][:10]


def test_runs_of_another_n_are_paired_on_the_items_both_drew(tmp_path: Path) -> None:
    now, before = issue_example()
    previous = write_run(tmp_path, "full", before)
    # A shorter run draws the first items of the same seeded permutation: it is judged on those.
    first_300 = dict(list(now.items())[:300])
    verdict = compare_runs(write_run(tmp_path, "short", first_300, days=1), previous)
    assert verdict.n_paired == 300 and verdict.regressed
    # Items that are not one draw's first ones mean the runs drew differently: not comparable.
    elsewhere = {f"other-{index}": 1.0 for index in range(300)}
    other = compare_runs(write_run(tmp_path, "other", elsewhere, days=2), previous)
    assert not other.regressed and "items: the runs share 0 items" in other.reason


def test_gate_judges_each_models_latest_complete_run(tmp_path: Path) -> None:
    now, before = issue_example()
    write_run(tmp_path, "a1", before, model_id="a")
    write_run(tmp_path, "a2", now, days=7, model_id="a")
    write_run(tmp_path, "a3-running", now, days=8, model_id="a", status="running")
    write_run(tmp_path, "b1", now, model_id="b")
    write_run(tmp_path, "b2", before, days=7, model_id="b")
    write_run(tmp_path, "c1", now, model_id="c")
    verdicts = {verdict.model_id: verdict for verdict in gate(tmp_path, ["e1"])}
    assert (verdicts["a"].current_run, verdicts["a"].previous_run, verdicts["a"].regressed) == ("a2", "a1", True)
    assert (verdicts["b"].previous_run, verdicts["b"].regressed, verdicts["b"].delta > 0) == ("b1", False, True)
    assert verdicts["c"].previous_run is None and "first complete run of c on e1" in verdicts["c"].reason
    assert [verdict.model_id for verdict in gate(tmp_path, ["e1", "e2"], ["b"])] == ["b"]


def _check_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="secverify")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["check", *argv])
    return args.func(args)


def test_check_command_exits_1_on_a_regression_with_a_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path))
    assert _check_command([]) == 0
    assert "nothing to gate" in capsys.readouterr().out
    now, before = issue_example()
    write_run(tmp_path / "evals", "a1", before, model_id="a")
    write_run(tmp_path / "evals", "a2", now, days=7, model_id="a")
    write_run(tmp_path / "evals", "b1", before, model_id="b")
    assert _check_command(["--env", "e1"]) == REGRESSED
    out = capsys.readouterr().out
    assert "0.748 → 0.710" in out and "REGRESSED" in out and "-5.1%" in out
    assert _check_command(["--models", "b"]) == 0
    assert _check_command(["--models", "a", "--json"]) == REGRESSED
    capsys.readouterr()
    assert _check_command(["--models", "a,b", "--json"]) == REGRESSED
    rows = json.loads(capsys.readouterr().out)
    assert {(row["model_id"], row["regressed"]) for row in rows} == {("a", True), ("b", False)}
    assert _check_command(["--models", "a typo"]) == NOTHING_TO_CHECK
    assert "no complete run of typo" in capsys.readouterr().err


def test_the_blocking_check_runs_with_the_eval_and_stops_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from secverify_dagster.definitions import defs

    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path))
    curated = tmp_path / "datasets" / "e1" / "curated"
    curated.mkdir(parents=True)
    embedded_dataset(E1, split="test", seed=42).frame.write_parquet(curated / "test.parquet")
    eval_and_report = dg.define_asset_job("eval_and_report", selection=[eval_key("e1"), report_key("e1")])
    gated = dg.Definitions.merge(defs, dg.Definitions(jobs=[eval_and_report]))
    check_key = dg.AssetCheckKey(eval_key("e1"), CHECK_NAME)

    with dg.instance_for_test() as instance:
        add_model_partitions(instance, [("e1", "heuristic")])
        first = gated.resolve_job_def("eval_and_report").execute_in_process(
            instance=instance, partition_key="heuristic"
        )
        (evaluation,) = first.get_asset_check_evaluations()
        assert evaluation.passed and evaluation.asset_check_key == check_key
        assert "first complete run of heuristic on e1" in evaluation.metadata["reason"].value
        assert {event.asset_key for event in first.get_asset_materialization_events()} == {
            eval_key("e1"),
            report_key("e1"),
        }
        run_dir = Path(evaluation.metadata["current_run_dir"].value)

        # A previous comparable run that scored every item 1.0: the heuristic's real run is a drop from it.
        better = run_dir.parent / "earlier-better"
        shutil.copytree(run_dir, better)
        folder = RunFolder(better)
        metadata = folder.read_metadata()
        earlier = (datetime.fromisoformat(metadata.started_at) - timedelta(days=7)).isoformat()
        folder.write_metadata(
            metadata.replace(run_id="earlier-better", sessions=[metadata.sessions[0].replace(started_at=earlier)])
        )
        records = [record.replace(reward=1.0) for record in folder.read_results()]
        folder.results_path.unlink()
        folder.append_results(records)
        # The heuristic is right on nearly every E1 test item (mean reward ≈ 0.97), within 3% of a perfect run: its
        # stored run is marked down a tenth, so the run the schedule resumes is a drop beyond the 3% allowed.
        current = RunFolder(run_dir)
        lowered = [record.replace(reward=record.reward * 0.9) for record in current.read_results()]
        current.results_path.unlink()
        current.append_results(lowered)

        # As a schedule launches it: the asset job, the model's partition, only the eval asset selected.
        heuristic = load_registry()["heuristic"]
        request = eval_run_request(heuristic, "e1", run_key="weekly", tags={"secverify/cadence": "weekly"})
        assert request.asset_check_keys is None  # so the run takes every check of the selected asset
        scheduled = gated.resolve_implicit_global_asset_job_def().execute_in_process(
            instance=instance,
            partition_key=request.partition_key,
            asset_selection=request.asset_selection,
            run_config=request.run_config,
            tags=request.tags,
            raise_on_error=False,
        )
        assert not scheduled.success
        (evaluation,) = scheduled.get_asset_check_evaluations()
        assert not evaluation.passed and evaluation.metadata["regressed"].value is True
        assert evaluation.metadata["previous_run"].value == "earlier-better"
        assert Path(evaluation.metadata["previous_run_dir"].value) == better
        assert evaluation.metadata["mean_previous"].value == 1.0

        blocked = gated.resolve_job_def("eval_and_report").execute_in_process(
            instance=instance, partition_key="heuristic", raise_on_error=False
        )
        assert not blocked.success
        assert [event.asset_key for event in blocked.get_asset_materialization_events()] == [eval_key("e1")]
        (evaluation,) = blocked.get_asset_check_evaluations()
        assert not evaluation.passed
