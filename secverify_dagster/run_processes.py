"""The process behind each in-process run, recorded on the run, so a run whose process died is marked as such.

`secverify run` and `secverify train` execute their jobs in their own process against the persistent instance. No
daemon watches such a run: if the process is killed (SIGKILL, a crash, the machine going down) its run would stay
STARTED for good. So each run carries its process as a tag (pid, host and start time: a pid the system has since
reused is not mistaken for the run's), and the next CLI start marks every run whose process is gone as FAILURE (or
CANCELED, when it was being cancelled), saying why, and frees the concurrency-pool slots it held (the daemon frees a
finished run's slots, but no daemon watches these runs: a killed training run kept the `local-model` pool's one slot,
and the next run's step waited for it forever, spinning a core). A SIGTERM or Ctrl-C needs no sweep: Dagster's own
interrupt handling records the run as FAILURE as it stops, and `was_interrupted` tells the caller not to start the next
run.
"""

from __future__ import annotations

import dagster as dg

from sv_shared.execution.processes import ProcessIdentity

RUN_PROCESS_TAG = "secverify/process"
"""The process executing an in-process run: `<pid>@<host>#<start ticks>` (ProcessIdentity.as_text)."""

INTERRUPTED_REASON = "UNEXPECTED_TERMINATION"
"""Dagster's `dagster/failure_reason` for a run whose process was interrupted (SIGTERM, SIGINT) mid-run."""

_UNFINISHED = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]


def process_tags() -> dict[str, str]:
    """The tag that names this process, for each run it executes in-process."""
    return {RUN_PROCESS_TAG: ProcessIdentity.current().as_text()}


def was_interrupted(instance: dg.DagsterInstance, run_id: str) -> bool:
    """Whether the run ended because its process was told to stop (then nothing after it should start)."""
    run = instance.get_run_by_id(run_id)
    return run is not None and run.tags.get("dagster/failure_reason") == INTERRUPTED_REASON


def fail_abandoned_runs(instance: dg.DagsterInstance) -> list[str]:
    """Mark each unfinished run whose recorded process has ended (on this host) as FAILURE, or CANCELED when it was
    being cancelled, and free its pool slots; returns their run ids. Runs of other hosts, and runs without the tag, are
    left alone."""
    marked = []
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=_UNFINISHED)):
        recorded = run.tags.get(RUN_PROCESS_TAG)
        if recorded is None:
            continue
        try:
            process = ProcessIdentity.from_text(recorded)
        except ValueError:
            continue
        if process.still_running() is not False:
            continue
        message = (
            f"The process that executed this run (pid {process.pid} on {process.host}) ended without finishing it "
            f"(killed or crashed); found by the next secverify start."
        )
        if run.status == dg.DagsterRunStatus.CANCELING:
            instance.report_run_canceled(run, message)
        else:
            instance.report_run_failed(run, message)
        marked.append(run.run_id)
    _free_slots_of_finished_runs(instance)
    return marked


def _free_slots_of_finished_runs(instance: dg.DagsterInstance) -> None:
    """Free the pool slots still held by runs that have finished: the ones just marked, and any an earlier version
    left behind (what the daemon's run monitoring does for the runs it watches)."""
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return
    for run_id in storage.get_concurrency_run_ids():
        run = instance.get_run_by_id(run_id)
        if run is None or run.is_finished:
            storage.free_concurrency_slots_for_run(run_id)
