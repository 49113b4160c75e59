"""A run whose process died is marked failed: `secverify run` killed mid-run (SIGKILL: found at the next start;
SIGTERM: recorded at once, and nothing after it starts), and the sweep leaves live and foreign runs alone."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from secverify_dagster.run_processes import RUN_PROCESS_TAG, fail_abandoned_runs, process_tags
from sv_shared.execution.processes import ProcessIdentity

ROOT = Path(__file__).resolve().parents[1]
FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


@dg.op
def _noop() -> None:
    pass


@dg.job
def _job() -> None:
    _noop()


def _started_run(instance: dg.DagsterInstance, process: str) -> dg.DagsterRun:
    return instance.create_run_for_job(
        job_def=_job, run_config={}, tags={RUN_PROCESS_TAG: process}, status=dg.DagsterRunStatus.STARTED
    )


def test_the_sweep_fails_runs_of_ended_processes_only() -> None:
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    gone = ProcessIdentity(ended.pid, socket.gethostname(), None).as_text()
    me = process_tags()[RUN_PROCESS_TAG]
    reused = ProcessIdentity(os.getpid(), socket.gethostname(), 1).as_text()  # this pid, an earlier process
    elsewhere = ProcessIdentity(ended.pid, "another-host", None).as_text()
    with dg.instance_for_test() as instance:
        runs = {name: _started_run(instance, text) for name, text in [("gone", gone), ("me", me), ("reused", reused)]}
        runs["elsewhere"] = _started_run(instance, elsewhere)
        canceling = _started_run(instance, gone)
        instance.report_run_canceling(canceling)
        marked = fail_abandoned_runs(instance)
        assert sorted(marked) == sorted([runs["gone"].run_id, runs["reused"].run_id, canceling.run_id])
        status = {name: instance.get_run_by_id(run.run_id).status for name, run in runs.items()}
        assert status == {
            "gone": dg.DagsterRunStatus.FAILURE,
            "me": dg.DagsterRunStatus.STARTED,
            "reused": dg.DagsterRunStatus.FAILURE,
            "elsewhere": dg.DagsterRunStatus.STARTED,
        }
        assert instance.get_run_by_id(canceling.run_id).status == dg.DagsterRunStatus.CANCELED
        (failure,) = instance.all_logs(runs["gone"].run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
        assert f"pid {ended.pid}" in failure.message and "ended without finishing it" in failure.message
        assert fail_abandoned_runs(instance) == []  # once


def test_the_sweep_frees_the_pool_slots_a_dead_run_held() -> None:
    """A killed run kept the `local-model` pool's one slot: the next run's step waited for it forever."""
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    gone = ProcessIdentity(ended.pid, socket.gethostname(), None).as_text()
    with dg.instance_for_test() as instance:
        storage = instance.event_log_storage
        storage.set_concurrency_slots("local-model", 1)
        dead, alive = _started_run(instance, gone), _started_run(instance, process_tags()[RUN_PROCESS_TAG])
        assert storage.claim_concurrency_slot("local-model", dead.run_id, "train").is_claimed
        assert not storage.claim_concurrency_slot("local-model", alive.run_id, "train").is_claimed
        assert fail_abandoned_runs(instance) == [dead.run_id]
        assert storage.claim_concurrency_slot("local-model", alive.run_id, "train").is_claimed
        # A finished run still holding a slot (left by a version without this sweep) is freed too; a live one is not.
        storage.free_concurrency_slots_for_run(alive.run_id)
        assert storage.claim_concurrency_slot("local-model", dead.run_id, "scan").is_claimed
        assert fail_abandoned_runs(instance) == []
        assert storage.claim_concurrency_slot("local-model", alive.run_id, "train").is_claimed
        assert fail_abandoned_runs(instance) == []
        assert not storage.claim_concurrency_slot("local-model", dead.run_id, "scan").is_claimed


@contextlib.contextmanager
def _secverify_run(tmp_path: Path) -> Iterator[tuple[subprocess.Popen, Path, dict[str, str]]]:
    env = {
        **os.environ,
        "DAGSTER_HOME": str(tmp_path / "dagster_home"),
        "SECVERIFY_OUTPUTS": str(tmp_path / "outputs"),
    }
    log = tmp_path / "run.log"
    with log.open("w") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "secverify_dagster.cli.main", "run", "--env", "e1", "--models", "heuristic"],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield process, log, env
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        # A SIGKILLed command leaves its children behind (Dagster's `tail -F` of the step's compute log): end them with
        # the test, not after it.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


def _wait_until_a_run_is_started(process: subprocess.Popen, log: Path, home: Path) -> dg.DagsterInstance:
    deadline = time.monotonic() + 180
    # The instance is made by the command (prepare_instance): opened here only once it has printed its first step.
    while "[1/" not in log.read_text(errors="replace"):
        assert process.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
        time.sleep(0.05)
    instance = dg.DagsterInstance.from_config(str(home))
    while not instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED])):
        assert process.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
        time.sleep(0.05)
    return instance


def test_a_secverify_run_killed_mid_run_is_marked_failed_at_the_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _secverify_run(tmp_path) as (process, log, env):
        instance = _wait_until_a_run_is_started(process, log, Path(env["DAGSTER_HOME"]))
        process.send_signal(signal.SIGKILL)
        process.wait()
    (left,) = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
    assert left.tags[RUN_PROCESS_TAG].startswith(f"{process.pid}@")
    monkeypatch.setenv("DAGSTER_HOME", env["DAGSTER_HOME"])
    from secverify_dagster.pipeline import prepare_instance

    prepare_instance()  # what the next `secverify run` or `secverify train` does first
    assert instance.get_run_by_id(left.run_id).status == dg.DagsterRunStatus.FAILURE
    assert all(run.status in FINISHED for run in instance.get_runs())


def test_a_secverify_run_told_to_stop_records_its_run_failed_and_starts_nothing_after(tmp_path: Path) -> None:
    with _secverify_run(tmp_path) as (process, log, env):
        instance = _wait_until_a_run_is_started(process, log, Path(env["DAGSTER_HOME"]))
        runs_when_told = len(instance.get_runs())
        told = time.monotonic()
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
        took = time.monotonic() - told
    runs = instance.get_runs()
    assert took < 15, log.read_text()
    assert len(runs) == runs_when_told, "a run started after SIGTERM"
    assert all(run.status in FINISHED for run in runs), [run.status for run in runs]
    # Told while a step ran (nearly always): Dagster records the run failed and the command says so. Told in the
    # moment between two runs, the default SIGTERM ends the process with no run unfinished either.
    if code == 130:
        assert runs[0].status == dg.DagsterRunStatus.FAILURE
        assert "interrupted: run" in log.read_text()
    else:
        assert code == -signal.SIGTERM, log.read_text()
