"""The weekly memo: the weekly reports' reward deltas and gate verdicts, notable regressions and collapsed policies,
new synthetic volumes and outstanding risks, each line naming where it was read; one whole file per ISO week under
docs-internal/reports (or $SECVERIFY_MEMOS), written by the weekly report run once after its reports, and by
`secverify memo`."""

from __future__ import annotations

import argparse
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from memo_writer import write_memo_again_and_again
from test_checkpoints import BASE, manifest_for, write_model
from test_promotion import passing
from test_reports import write_run

from secverify_dagster.assets.keys import report_key
from secverify_dagster.assets.reports import WEEKLY_MEMO, build_report_asset, build_weekly_memo_asset
from secverify_dagster.audit.run_failures import RunFailure, StepFailure, record_failure
from secverify_dagster.cadences import WEEKLY_ENVS
from secverify_dagster.cli.memo import register
from secverify_dagster.reports.environment_report import build_report, report_dir
from secverify_dagster.reports.memo_findings import shown
from secverify_dagster.reports.regression_gate import compare_runs
from secverify_dagster.reports.scope import ReportScopeError, parse_period, report_scope
from secverify_dagster.reports.weekly_memo import (
    MEMO_CUTOFF,
    MEMO_DIR_VARIABLE,
    build_weekly_memo,
    memo_window,
    write_weekly_memo,
)
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource, ModelRegistryResource
from secverify_dagster.resources.models import load_registry
from secverify_dagster.schedules.reports import REPORT_SCHEDULES, REPORTS_JOB
from sv_shared.answers.collapse import answer_profile
from sv_shared.data.datasets import write_dataset
from sv_shared.data.files import write_json_atomic
from sv_shared.judging.measured import load_measurement
from sv_shared.registry import get_environment
from sv_shared.runs.folder import RunFolder
from sv_shared.runs.records import FinishedRun
from sv_shared.training.checkpoints import finish_training_run, open_training_run
from sv_shared.training.promotion import record_approval

E1 = get_environment("e1")
WEEK = parse_period("weekly", "2026-W48")
SWEEP_W47 = datetime(2026, 11, 16, 6, tzinfo=UTC)  # the Monday 06:00 weekly sweeps
SWEEP_W48 = datetime(2026, 11, 23, 6, tzinfo=UTC)
IN_WINDOW = datetime(2026, 11, 20, 9, tzinfo=UTC)  # a Friday between the two memos


def _scores(right: int, n: int = 10) -> dict[str, float]:
    return {f"item-{index:03d}": 1.0 if index < right else 0.0 for index in range(n)}


def _checkpoint(root: Path, key: str) -> Path:
    with open_training_run(root, BASE, "sft", key) as run:
        write_model(run)
        finish_training_run(run, manifest_for(run))
    return run.run_dir


def _week_of_records(outputs: Path) -> tuple[dict[str, FinishedRun], dict[str, Path]]:
    """A week as the project records it: the sweeps of two weeks (one regression, one collapsed policy), a synthetic
    set and a synthetic batch, an unfinished batch, checkpoints, a failed Dagster run and an unfinished eval run."""
    evals = outputs / "evals"
    before = write_run(evals, "alpha", _scores(9), started=SWEEP_W47)
    now = write_run(evals, "alpha", _scores(5), started=SWEEP_W48)  # 0.9 → 0.5: beyond the gate's 3%
    write_run(evals, "beta", _scores(6), started=SWEEP_W47)
    write_run(evals, "beta", _scores(6), started=SWEEP_W48)
    truths = ["Benign"] * 6 + ["Malicious"] * 4
    collapsed = write_run(
        evals,
        "sft-ckpt",
        _scores(6),
        started=SWEEP_W48,
        metrics={"answers": answer_profile(["Benign"] * 10, truths, [0.9] * 10)},
    )
    write_run(evals, "gamma", _scores(7), started=SWEEP_W47)  # ran last week only
    unfinished = write_run(evals, "delta", _scores(4), started=IN_WINDOW)
    RunFolder(unfinished.run_dir).write_metadata(unfinished.metadata.replace(status="incomplete", n_scored=4))
    write_run(evals, "old", _scores(4), started=datetime(2026, 11, 2, tzinfo=UTC))  # before the window

    datasets = outputs / "datasets" / "e1"
    write_dataset(
        pl.DataFrame({"generator": ["a", "a", "b"]}),
        datasets / "synthetic" / "2026-11-20" / "synthetic.parquet",
        {"n": 5, "generators": {"a": 2, "b": 1}, "written_at": IN_WINDOW.isoformat()},
    )
    write_dataset(
        pl.DataFrame({"generator": ["a"]}),
        datasets / "synthetic" / "2026-11-01" / "synthetic.parquet",
        {"n": 1, "written_at": datetime(2026, 11, 1, tzinfo=UTC).isoformat()},
    )
    batch = datasets / "batches" / "2026-11-21-0123456789ab"
    write_json_atomic(
        batch / "batch.json",
        {
            "batch_id": batch.name,
            "env": "e1",
            "model": "heuristic",
            "created_at": (IN_WINDOW + timedelta(days=1)).isoformat(),
            "counts": {"candidates": 12, "kept": 7, "dropped": {"below_min_reward": 4, "unparsed": 1}},
        },
    )
    (datasets / "batches" / "2026-11-22-ba9876543210" / "samples").mkdir(parents=True)  # stopped half-way

    checkpoints = outputs / "checkpoints"
    pending = _checkpoint(checkpoints, "key-pending")
    passing(pending)
    rejected = _checkpoint(checkpoints, "key-rejected")
    passing(rejected)
    record_approval(rejected, approver="alice", decision="reject", note="too weak")
    record_failure(
        outputs / "run_failures",
        RunFailure(
            run_id="f" * 8 + "-0000-0000-0000-" + "0" * 12,
            job_name="eval_job",
            failed_at=IN_WINDOW.isoformat(),
            message="step failed",
            tags={"secverify/cadence": "weekly"},
            partition="heuristic",
            envs=["e2"],
            steps=[StepFailure("e2__eval_results", "RuntimeError: the provider answered 500 three times", "...")],
        ),
    )
    runs = {"before": before, "now": now}
    paths = {"collapsed": collapsed.run_dir, "pending": pending, "unfinished": unfinished.run_dir}
    return runs, paths | {name: run.run_dir for name, run in runs.items()}


def test_the_memo_lists_the_regression_the_collapse_new_volumes_and_the_outstanding_risks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    outputs = tmp_path / "outputs"
    runs, paths = _week_of_records(outputs)
    judges = outputs / "judges"
    load_measurement("refusal-detector", judges)  # κ 0.17 on the shipped test split
    (measured,) = judges.iterdir()
    # The same figures stored for an older validation set: not what today's rates use, so not a risk of today's.
    (judges / "refusal-detector--000000000000.json").write_bytes(measured.read_bytes())
    scope = report_scope(E1, "weekly", period=WEEK.label)
    report = build_report(E1, outputs / "evals", report_dir(outputs / "reports" / "e1", scope), scope=scope)

    memo = build_weekly_memo(WEEK, outputs, load_registry(include_checkpoints=False))
    text = memo.markdown()

    # The rewards are the weekly report's: the same runs, the gate's own verdict, the same regression list.
    (e1, *others) = memo.envs
    assert [row.model_id for row in e1.rows] == report.models == ["alpha", "beta", "sft-ckpt"]
    assert memo.regressed == [f"e1 {model}" for model in report.regressed] == ["e1 alpha"]
    verdict = compare_runs(runs["now"], runs["before"])
    assert e1.rows[0].verdict == verdict
    assert (
        f"| alpha | 0.900 | 0.500 | -0.400 | -44.4% | [{verdict.ci_low:+.3f}, {verdict.ci_high:+.3f}] | "
        f"{verdict.p_value:.3f} | 10 | **REGRESSED** | `{shown(paths['now'])}` |"
    ) in text
    assert "| beta | 0.600 | 0.600 | +0.000 | +0.0% |" in text and "| ok |" in text
    assert f"Weekly report: `{shown(report.markdown_path)}`" in text
    assert [env.env_id for env in others] == ["e2", "e3", "e4"]
    assert "No weekly report of this week yet." in text and "No complete run of the weekly slice this week." in text

    regressions = text.split("## Notable regressions")[1].split("## New synthetic volumes")[0]
    assert "- e1 alpha: reward_mean 0.900 → 0.500 (-44.4%) on 10 shared items vs run" in regressions
    assert f"last week's run `{shown(paths['before'])}`" in regressions
    flag = answer_profile(["Benign"] * 10, ["Benign"] * 6 + ["Malicious"] * 4)["collapse"]
    assert f"- e1 sft-ckpt: run {paths['collapsed'].name}: {flag} (`{shown(paths['collapsed'])}`)" in regressions

    volumes = text.split("## New synthetic volumes")[1].split("## Outstanding risks")[0]
    assert "Created 2026-11-16 12:00 – 2026-11-23 12:00 UTC." in volumes
    assert "1 synthetic sets: 3 rows kept of 5 requested, 2 dropped." in volumes
    assert "1 synthetic batches: 7 completions kept of 12 sampled, 5 dropped." in volumes
    assert "| e1 | synthetic set | 2026-11-20 | 2026-11-20T09:00 | 5 | 3 | 2 |" in volumes
    assert "| 12 | 7 | 5 (below_min_reward 4, unparsed 1) |" in volumes
    assert "2026-11-01" not in volumes  # created before the window

    risks = text.split("## Outstanding risks")[1]
    pending = [line for line in risks.splitlines() if "checkpoint " in line]
    assert len(pending) == 1 and "is unpromoted: safety scan passed; awaiting approval" in pending[0]
    assert f"(`{shown(paths['pending'])}`)" in pending[0]  # the rejected one was decided: not outstanding
    assert "- e1 alpha: -44.4% against last week, beyond the gate's 3%" in risks
    assert "- e1 gamma: no run in 2026-W48; its latest run of this slice is from 2026-W47" in risks
    assert "- model gpt-5 (openai) is skipped on e1, e2, e3, e4: OPENAI_API_KEY is not set" in risks
    judges = [line for line in risks.splitlines() if line.startswith("- judge ")]
    assert len(judges) == 1 and judges[0].startswith("- judge refusal-detector: Cohen's κ 0.173 with the category")
    assert (
        "Dagster run ffffffff-0000-0000-0000-000000000000 (eval_job, e2, cadence weekly) failed 2026-11-20T09:00: "
        "RuntimeError: the provider answered 500 three times"
    ) in risks
    assert (
        f"- e1 delta: run {paths['unfinished'].name} is incomplete, 4 of 10 scored (`{shown(paths['unfinished'])}`)"
        in risks
    )
    assert "synthetic batch 2026-11-22-ba9876543210 is unfinished (no batch.json)" in risks
    assert " old:" not in text and "run seed42-n10-old" not in text  # a run before the window

    # One file per week, in the folder the tests choose.
    path = write_weekly_memo(memo, tmp_path / "memos")
    assert path == tmp_path / "memos" / "2026-W48.md" and path.read_text(encoding="utf-8") == text
    monkeypatch.setenv(MEMO_DIR_VARIABLE, str(tmp_path / "elsewhere"))
    assert write_weekly_memo(memo) == tmp_path / "elsewhere" / "2026-W48.md"


def test_the_memo_windows_follow_each_other_from_the_weekly_report_s_tick() -> None:
    weekly_report = next(schedule for schedule in REPORT_SCHEDULES if schedule.name == "weekly_report")
    minute, hour, _, _, weekday = weekly_report.cron_schedule.split()
    assert (weekday, timedelta(hours=int(hour), minutes=int(minute))) == ("1", MEMO_CUTOFF)
    window = memo_window(WEEK)
    assert (window.start, window.end) == (
        datetime(2026, 11, 16, 12, tzinfo=UTC),
        datetime(2026, 11, 23, 12, tzinfo=UTC),
    )
    assert memo_window(WEEK.previous()).end == window.start
    assert memo_window(parse_period("weekly", "2027-W01")).start == memo_window(parse_period("weekly", "2026-W53")).end


def test_two_writers_at_once_leave_one_whole_memo_and_a_reader_never_sees_half_of_one(tmp_path: Path) -> None:
    outputs = tmp_path / "outputs"
    write_run(outputs / "evals", "alpha", _scores(9), started=SWEEP_W47)
    write_run(outputs / "evals", "alpha", _scores(5), started=SWEEP_W48)
    folder = tmp_path / "memos"
    memo = folder / "2026-W48.md"
    seen: set[str] = set()
    # spawn, not fork: a forked worker copies other tests' threads mid-lock (see test_reports).
    spawn = multiprocessing.get_context("spawn")
    with spawn.Manager() as manager, ProcessPoolExecutor(2, mp_context=spawn) as pool:
        start = manager.Barrier(2)
        jobs = [(str(outputs), str(folder), WEEK.label, writer, start) for writer in (0, 1)]
        writers = [pool.submit(write_memo_again_and_again, job) for job in jobs]
        while not all(writer.done() for writer in writers):
            try:
                seen.add(memo.read_text(encoding="utf-8"))
            except FileNotFoundError:
                continue
        texts = {writer.result() for writer in writers}
    assert len(texts) == 2 and len(seen) >= 1
    assert seen <= texts  # every read found one writer's memo, whole
    assert [path.name for path in folder.iterdir()] == ["2026-W48.md"]  # no temporary file left beside it
    assert memo.read_text(encoding="utf-8") in texts


def test_the_weekly_report_run_writes_the_memo_once_after_every_weekly_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    by_name = {schedule.name: schedule for schedule in REPORT_SCHEDULES}
    with dg.instance_for_test() as instance:
        tick = dg.build_schedule_context(
            instance=instance, scheduled_execution_time=datetime(2026, 11, 23, 12, tzinfo=UTC)
        )
        weekly = by_name["weekly_report"](tick)
        monthly = by_name["monthly_report"](
            dg.build_schedule_context(instance=instance, scheduled_execution_time=datetime(2026, 12, 1, 9, tzinfo=UTC))
        )
    assert weekly.asset_selection.count(WEEKLY_MEMO) == 1
    assert weekly.run_config["ops"]["reports__weekly_memo"] == {"config": {"week": "2026-W48"}}
    assert WEEKLY_MEMO not in monthly.asset_selection and "reports__weekly_memo" not in monthly.run_config["ops"]

    envs = [get_environment(env_id) for env_id in WEEKLY_ENVS]
    memo_asset = build_weekly_memo_asset()
    reports = [build_report_asset(env) for env in envs]
    resources = {"artifacts": ArtifactStoreResource(root=str(tmp_path / "outputs")), "models": ModelRegistryResource()}
    job = dg.define_asset_job(REPORTS_JOB, selection=[*(report_key(env.env_id) for env in envs), WEEKLY_MEMO])
    defs = dg.Definitions(assets=[*reports, memo_asset], jobs=[job], schedules=REPORT_SCHEDULES, resources=resources)
    dg.Definitions.validate_loadable(defs)
    assert defs.resolve_asset_graph().get(WEEKLY_MEMO).parent_keys == {report_key(env.env_id) for env in envs}
    dg.validate_run_config(defs.resolve_job_def(REPORTS_JOB), weekly.run_config)

    # What the run does: the four reports, then the memo over them, written where $SECVERIFY_MEMOS says.
    write_run(tmp_path / "outputs" / "evals", "alpha", _scores(9), started=SWEEP_W47)
    write_run(tmp_path / "outputs" / "evals", "alpha", _scores(5), started=SWEEP_W48)
    monkeypatch.setenv(MEMO_DIR_VARIABLE, str(tmp_path / "memos"))
    result = dg.materialize(
        [*reports, memo_asset],
        resources=resources,
        run_config={"ops": {key: value for key, value in weekly.run_config["ops"].items()}},
    )
    order = [event.asset_key for event in result.get_asset_materialization_events()]
    assert order[-1] == WEEKLY_MEMO and order.count(WEEKLY_MEMO) == 1
    (event,) = result.asset_materializations_for_node("reports__weekly_memo")
    assert event.metadata["memo"].value == str(tmp_path / "memos" / "2026-W48.md")
    assert event.metadata["regressed"].value == ["e1 alpha"] and event.metadata["week"].value == "2026-W48"
    text = Path(event.metadata["memo"].value).read_text(encoding="utf-8")
    e1_report = next((tmp_path / "outputs" / "reports" / "e1" / "weekly" / "2026-W48").iterdir()) / "report.md"
    assert f"Weekly report: `{shown(e1_report)}`" in text and "**REGRESSED**" in text


def test_the_memo_command_writes_the_week_and_refuses_a_bad_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path / "outputs"))
    monkeypatch.setenv(MEMO_DIR_VARIABLE, str(tmp_path / "memos"))
    write_run(tmp_path / "outputs" / "evals", "alpha", _scores(9), started=SWEEP_W47)
    write_run(tmp_path / "outputs" / "evals", "alpha", _scores(5), started=SWEEP_W48)
    parser = argparse.ArgumentParser(prog="secverify")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["memo", "--week", "2026-W48"])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert f"weekly memo 2026-W48: {tmp_path / 'memos' / '2026-W48.md'}" in out
    assert "regressed since last week: e1 alpha" in out
    args = parser.parse_args(["memo", "--week", "2026-W47", "--out", str(tmp_path / "out")])
    assert args.func(args) == 0 and (tmp_path / "out" / "2026-W47.md").is_file()
    with pytest.raises(ReportScopeError, match="expected a label like 2026-W48"):
        args = parser.parse_args(["memo", "--week", "2026-48"])
        args.func(args)
    assert [path.name for path in (tmp_path / "memos").iterdir()] == ["2026-W48.md"]


def test_the_code_location_s_reports_job_runs_the_weekly_memo() -> None:
    """What the daemon launches from the weekly tick: the code location's reports job narrowed to the request's
    assets, with its config; the memo is in the job and reads every weekly report."""
    from secverify_dagster.definitions import defs

    weekly_report = next(schedule for schedule in REPORT_SCHEDULES if schedule.name == "weekly_report")
    with dg.instance_for_test() as instance:
        tick = dg.build_schedule_context(
            instance=instance, scheduled_execution_time=datetime(2026, 11, 23, 12, tzinfo=UTC)
        )
        request = weekly_report(tick)
    job = defs.resolve_job_def(REPORTS_JOB)
    assert WEEKLY_MEMO in job.asset_layer.executable_asset_keys
    dg.validate_run_config(job.get_subset(asset_selection=set(request.asset_selection)), request.run_config)
    assert defs.resolve_asset_graph().get(WEEKLY_MEMO).parent_keys == {report_key(env_id) for env_id in WEEKLY_ENVS}
