"""The seed's cadences: weekly quick sweep (E1–E4, N=10), bi-weekly full eval (all six) and tournament, nightly
regression evals of the unmodified open checkpoints, monthly reports (definitions.py).

Bi-weekly means every 14 days from a fixed Monday (cadences.BIWEEKLY_ANCHOR), across year ends too. A sweep asks
only for runs that can happen: models still in the registry, configured for that environment, reachable from here
(key or endpoint set, a served model's endpoint answering); the rest are logged with their reason, not launched to
log "skipped". Each (environment, model) pair is one run (an environment's eval asset has its own model set, so the
partition grids list only runnable pairs; partitions.py), tagged with its model's provider for the run queue's limits
(concurrency.provider_tags, dagster.yaml)."""

from __future__ import annotations

from collections.abc import Callable

import dagster as dg

from secverify_dagster.cadences import (
    NIGHTLY_ENVS,
    WEEKLY_ENVS,
    is_biweekly_week,
    is_open_base_model,
    runnable_pairs,
)
from secverify_dagster.jobs import EVAL_JOB, eval_run_request
from secverify_dagster.partitions import models_partition_name
from secverify_dagster.resources.dagster_resources import ModelRegistryResource
from secverify_dagster.resources.served_endpoints import without_down_endpoints
from secverify_dagster.resources.vllm import VllmResource
from secverify_dagster.schedules import documented_schedule
from sv_shared.registry import get_environment, implemented_env_ids


def sweep_requests(
    context: dg.ScheduleEvaluationContext,
    models: ModelRegistryResource,
    vllm: VllmResource,
    env_ids: list[str],
    *,
    n: int | None,
    tag: str,
    views: bool,
    include: Callable[[str], bool] = lambda model_id: True,
) -> list[dg.RunRequest] | dg.SkipReason:
    """An eval run per (environment, model) pair that can run here: each implemented environment's models (its
    partitions) that are still registered and reachable.

    views: also run the feature-ablated views (E1's four: about 2.8 times E1's cost), or the full split only."""
    registry = models.specs()
    envs = [env_id for env_id in env_ids if env_id in implemented_env_ids()]
    pairs: list[tuple[str, str]] = []
    left_out: dict[str, str] = {}
    for env_id in envs:
        partitions = sorted(context.instance.get_dynamic_partitions(models_partition_name(env_id)))
        chosen = [model_id for model_id in partitions if model_id not in registry or include(model_id)]
        runnable, skipped = runnable_pairs(chosen, [env_id], registry, {env_id: get_environment(env_id).baselines})
        pairs += runnable
        left_out |= skipped
    pairs, down = without_down_endpoints(pairs, vllm.down(registry, {model_id for _, model_id in pairs}))
    for pair, reason in sorted((left_out | down).items()):
        context.log.info(f"{tag}: not requesting {pair}: {reason}")
    if not pairs:
        return dg.SkipReason(
            f"{tag}: no model can run here ({len(left_out) + len(down)} pairs left out; see the tick's logs)"
        )
    stamp = context.scheduled_execution_time.strftime("%Y-%m-%d") if context.scheduled_execution_time else "now"
    config: dict[str, object] = {"seed": 42, **({"n": n} if n else {}), **({} if views else {"views": []})}
    return [
        eval_run_request(
            registry[model_id],
            env_id,
            run_key=f"{tag}:{stamp}:{env_id}:{model_id}",
            config=config,
            tags={"secverify/cadence": tag, "secverify/views": "all" if views else "none"},
        )
        for env_id, model_id in pairs
    ]


@documented_schedule(job_name=EVAL_JOB, cron_schedule="0 6 * * 1", execution_timezone="UTC")
def weekly_sweep(
    context: dg.ScheduleEvaluationContext, models: ModelRegistryResource, vllm: VllmResource
) -> list[dg.RunRequest] | dg.SkipReason:
    """Monday 06:00 UTC: E1–E4 with N=10 for trend tracking (the full split only: no ablated views)."""
    return sweep_requests(context, models, vllm, list(WEEKLY_ENVS), n=10, tag="weekly", views=False)


@documented_schedule(job_name=EVAL_JOB, cron_schedule="0 8 * * 1", execution_timezone="UTC")
def biweekly_full_eval(
    context: dg.ScheduleEvaluationContext, models: ModelRegistryResource, vllm: VllmResource
) -> list[dg.RunRequest] | dg.SkipReason:
    """Every other Monday, 08:00 UTC (every 14 days from cadences.BIWEEKLY_ANCHOR; the other Mondays' ticks are
    skipped): all six environments at their default N, with E1's four feature-ablated views (about 2.8 times E1's
    cost)."""
    when = context.scheduled_execution_time
    if when is not None and not is_biweekly_week(when.date()):
        return dg.SkipReason("not a bi-weekly week: the full eval runs every 14 days")
    return sweep_requests(context, models, vllm, list(implemented_env_ids()), n=None, tag="biweekly", views=True)


@documented_schedule(job_name=EVAL_JOB, cron_schedule="0 3 * * *", execution_timezone="UTC")
def nightly_regression(
    context: dg.ScheduleEvaluationContext, models: ModelRegistryResource, vllm: VllmResource
) -> list[dg.RunRequest] | dg.SkipReason:
    """Every night, 03:00 UTC: the unmodified open-weights checkpoints (served or local, not API models, not our
    trained checkpoints) on E1–E4 at N=10 (no ablated views), so a serving or dependency change shows up the next
    morning."""
    registry = models.specs()
    return sweep_requests(
        context,
        models,
        vllm,
        list(NIGHTLY_ENVS),
        n=10,
        tag="nightly",
        views=False,
        include=lambda model_id: is_open_base_model(registry[model_id]),
    )


@documented_schedule(job_name="tournament_job", cron_schedule="0 2 * * 3", execution_timezone="UTC")
def biweekly_tournament(context: dg.ScheduleEvaluationContext) -> dg.RunRequest | dg.SkipReason:
    """Wednesday 02:00 UTC of every bi-weekly week, every 14 days (a low-usage window; the other Wednesdays' ticks are
    skipped): judges re-measured, then the E5/E6 tournament."""
    when = context.scheduled_execution_time
    if when is not None and not is_biweekly_week(when.date()):
        return dg.SkipReason("not a bi-weekly week: the tournament runs every 14 days")
    stamp = when.strftime("%Y-%m-%d") if when else "now"
    return dg.RunRequest(run_key=f"tournament:{stamp}", tags={"secverify/cadence": "biweekly-tournament"})
