"""The new-model sensor: watches configs/models.yaml and backfills every new model on every environment."""

import dagster as dg

from secverify_dagster.jobs import eval_job, eval_run_request
from secverify_dagster.partitions import MODELS_PARTITION
from secverify_dagster.resources.dagster_resources import ModelRegistryResource
from sv_shared.registry import implemented_env_ids


def plan_backfill(new_models: list[str], env_ids: list[str]) -> list[dg.RunRequest]:
    """One eval run per (environment, new model); run keys make re-ticks idempotent."""
    return [
        eval_run_request(
            env_id, model_id, run_key=f"backfill:{env_id}:{model_id}", tags={"secverify/trigger": "new-model"}
        )
        for model_id in new_models
        for env_id in env_ids
    ]


@dg.sensor(job=eval_job, minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.RUNNING)
def new_model_sensor(context: dg.SensorEvaluationContext, models: ModelRegistryResource) -> dg.SensorResult:
    registered = sorted(models.specs())
    known = set(context.instance.get_dynamic_partitions(MODELS_PARTITION))
    new_models = [model_id for model_id in registered if model_id not in known]
    if not new_models:
        return dg.SensorResult(skip_reason="no new models in the registry")
    context.log.info(f"new models: {new_models}")
    return dg.SensorResult(
        run_requests=plan_backfill(new_models, implemented_env_ids()),
        dynamic_partitions_requests=[dg.AddDynamicPartitionsRequest(MODELS_PARTITION, new_models)],
    )
