"""The run-failure sensor: every failed run of this code location is recorded under outputs/run_failures/, once, for
the reports' "Failed runs" section (secverify_dagster.audit.run_failures)."""

from __future__ import annotations

from datetime import UTC, datetime

import dagster as dg

from secverify_dagster.audit.run_failures import MAX_ERROR_CHARS, RunFailure, StepFailure, record_failure
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource
from sv_shared.registry import ENV_IDS


def _planned_envs(context: dg.RunFailureSensorContext) -> list[str]:
    """The environments whose steps the run planned: asset steps are named <env>__<asset>."""
    run = context.dagster_run
    plan = (
        context.instance.get_execution_plan_snapshot(run.execution_plan_snapshot_id)
        if run.execution_plan_snapshot_id
        else None
    )
    keys = [step.key for step in plan.steps] if plan else []
    return sorted({part for key in keys for part in key.split("__") if part in ENV_IDS})


def _failed_at(context: dg.RunFailureSensorContext) -> str:
    """When the run ended (its record's end time; its last update for a run that never recorded an end)."""
    record = context.instance.get_run_record_by_id(context.dagster_run.run_id)
    if record is None:
        raise dg.DagsterInvariantViolationError(f"failed run {context.dagster_run.run_id} has no run record")
    stamp = record.end_time if record.end_time is not None else record.update_timestamp.timestamp()
    return datetime.fromtimestamp(stamp, UTC).isoformat()


def _step_failure(event: dg.DagsterEvent) -> StepFailure:
    error = event.event_specific_data.error if event.event_specific_data else None
    if error is None:
        return StepFailure(step_key=event.step_key or "", cause=event.message or "", error=event.message or "")
    innermost = error
    while innermost.cause is not None:
        innermost = innermost.cause
    return StepFailure(
        step_key=event.step_key or "",
        cause=f"{innermost.cls_name}: {innermost.message.strip()}"[:MAX_ERROR_CHARS],
        error=error.to_string()[:MAX_ERROR_CHARS],
    )


def failure_of(context: dg.RunFailureSensorContext) -> RunFailure:
    """What a report needs to know about a failed run, all read from the run and its events."""
    run = context.dagster_run
    steps = [_step_failure(event) for event in context.get_step_failure_events()]
    return RunFailure(
        run_id=run.run_id,
        job_name=run.job_name,
        failed_at=_failed_at(context),
        message=context.failure_event.message or "",
        tags=dict(run.tags),
        partition=run.tags.get("dagster/partition"),
        envs=_planned_envs(context),
        steps=steps,
    )


@dg.run_failure_sensor(
    name="run_failure_recorder",
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Records each failed run (job, tags, partition, step errors, time) under outputs/run_failures/ for "
    "the reports.",
)
def run_failure_recorder(context: dg.RunFailureSensorContext, artifacts: ArtifactStoreResource) -> None:
    failure = failure_of(context)
    if record_failure(artifacts.base() / "run_failures", failure):
        context.log.info(f"recorded failed run {failure.run_id} ({failure.job_name}, envs {failure.envs})")
    else:
        context.log.info(f"failed run {failure.run_id} was already recorded")
