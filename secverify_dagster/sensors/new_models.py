"""The new-model sensor: every model that enters the registry (configs/models.yaml, or a trained checkpoint) is
evaluated on every environment it can answer, once, as one backfill.

What it has backfilled is its own cursor, not the partition list: `secverify run` (or anyone) adding a partition
does not take a model's backfill away. Which (environment, model) pairs can run is decided from the registry before
anything is requested (a baseline only on its environment, an API model only with its key, a served model only with
its endpoint); the rest are logged with their reason. Models that left the registry are reported as retired.
"""

from __future__ import annotations

import json

import dagster as dg
from dagster._core.definitions.assets.graph.asset_graph_subset import AssetGraphSubset
from dagster._core.definitions.events import AssetKeyPartitionKey

from secverify_dagster.assets.keys import eval_key
from secverify_dagster.cadences import runnable_pairs
from secverify_dagster.partitions import MODELS_PARTITION
from secverify_dagster.resources.dagster_resources import ModelRegistryResource
from sv_shared.registry import get_environment, implemented_env_ids


def read_cursor(cursor: str | None) -> set[str]:
    """The model ids already backfilled (an unreadable cursor counts as none: at worst a backfill is asked twice,
    and the eval runs it asks for resume instead of repeating work)."""
    try:
        value = json.loads(cursor) if cursor else []
    except ValueError:
        return set()
    return {model for model in value if isinstance(model, str)} if isinstance(value, list) else set()


@dg.sensor(
    asset_selection=[eval_key(env_id) for env_id in implemented_env_ids()],
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
)
def new_model_sensor(context: dg.SensorEvaluationContext, models: ModelRegistryResource) -> dg.SensorResult:
    registry = models.specs()
    backfilled = read_cursor(context.cursor)
    retired = sorted(backfilled - set(registry))
    if retired:
        context.log.warning(f"retired (no longer in the registry, no longer evaluated): {retired}")
    new_models = [model_id for model_id in registry if model_id not in backfilled]
    cursor = json.dumps(sorted(set(registry) & backfilled | set(new_models)))
    if not new_models:
        return dg.SensorResult(skip_reason="no new models in the registry", cursor=cursor)
    envs = list(implemented_env_ids())
    baselines = {env_id: list(get_environment(env_id).baselines) for env_id in envs}
    pairs, left_out = runnable_pairs(new_models, envs, registry, baselines)
    for pair, reason in sorted(left_out.items()):
        context.log.info(f"not backfilling {pair}: {reason}")
    known = set(context.instance.get_dynamic_partitions(MODELS_PARTITION))
    partitions = [model_id for model_id in new_models if model_id not in known]
    requests = []
    if pairs:
        asset_graph = context.repository_def.asset_graph
        subset = AssetGraphSubset.from_asset_partition_set(
            {AssetKeyPartitionKey(eval_key(env_id), model_id) for env_id, model_id in pairs}, asset_graph
        )
        # One backfill object for the tick's new models, shown and cancellable as one in the UI.
        requests.append(dg.RunRequest.for_asset_graph_subset(subset, tags={"secverify/trigger": "new-model"}))
    context.log.info(f"new models {new_models}: {len(pairs)} eval runs in one backfill")
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[dg.AddDynamicPartitionsRequest(MODELS_PARTITION, partitions)]
        if partitions
        else [],
        cursor=cursor,
    )
