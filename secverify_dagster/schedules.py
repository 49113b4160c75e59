"""The seed's cadences: weekly quick sweep (E1–E4, N=10), bi-weekly full eval (all six), monthly reports."""

import dagster as dg

from secverify_dagster.jobs import eval_job, eval_run_request
from secverify_dagster.partitions import MODELS_PARTITION
from sv_shared.registry import implemented_env_ids

WEEKLY_ENVS = ("e1", "e2", "e3", "e4")


def sweep_requests(
    context: dg.ScheduleEvaluationContext, env_ids: list[str], *, n: int | None, tag: str
) -> list[dg.RunRequest]:
    """An eval run per (environment, registered model) for the environments implemented in this version."""
    models = sorted(context.instance.get_dynamic_partitions(MODELS_PARTITION))
    stamp = context.scheduled_execution_time.strftime("%Y-%m-%d") if context.scheduled_execution_time else "now"
    config = {"n": n, "seed": 42} if n else None
    return [
        eval_run_request(
            env_id,
            model_id,
            run_key=f"{tag}:{stamp}:{env_id}:{model_id}",
            config=config,
            tags={"secverify/cadence": tag},
        )
        for env_id in env_ids
        if env_id in implemented_env_ids()
        for model_id in models
    ]


@dg.schedule(job=eval_job, cron_schedule="0 6 * * 1", execution_timezone="UTC")
def weekly_sweep(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
    """Monday 06:00 UTC: E1–E4 with N=10 for trend tracking."""
    return sweep_requests(context, list(WEEKLY_ENVS), n=10, tag="weekly")


@dg.schedule(job=eval_job, cron_schedule="0 8 * * 1", execution_timezone="UTC")
def biweekly_full_eval(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest] | dg.SkipReason:
    """Every other Monday (even ISO weeks): all six environments at their default N."""
    when = context.scheduled_execution_time
    if when is not None and when.isocalendar().week % 2:
        return dg.SkipReason("odd ISO week: the full eval runs on even weeks")
    return sweep_requests(context, list(implemented_env_ids()), n=None, tag="biweekly")


@dg.schedule(job_name="tournament_job", cron_schedule="0 2 * * 3", execution_timezone="UTC")
def biweekly_tournament(context: dg.ScheduleEvaluationContext) -> dg.RunRequest | dg.SkipReason:
    """Wednesday 02:00 UTC of even ISO weeks (a low-usage window): judges re-measured, then the E5/E6 tournament."""
    when = context.scheduled_execution_time
    if when is not None and when.isocalendar().week % 2:
        return dg.SkipReason("odd ISO week: the tournament runs on even weeks")
    stamp = when.strftime("%Y-%m-%d") if when else "now"
    return dg.RunRequest(run_key=f"tournament:{stamp}", tags={"secverify/cadence": "biweekly-tournament"})
