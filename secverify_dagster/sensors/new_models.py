"""The new-model sensor: every model that enters the registry (configs/models.yaml, or a trained checkpoint) is
evaluated on every environment it can answer, once, in one backfill per provider.

A backfill's tags are every one of its runs' tags, and the run queue limits runs by provider (dagster.yaml): so the
tick's pairs are grouped by their model's provider tags (concurrency.provider_tags: local models, each API provider,
each served model) into one backfill per group, a handful at most, each shown and cancellable as one in the UI.

What it has backfilled is its own cursor, not the partition lists: `secverify run` (or anyone) adding a partition does
not take a model's backfill away. Each runnable pair's model joins that environment's model set (partitions.py), so
the eval assets' grids list only what can run. Which (environment, model) pairs can run is decided from the registry
before anything is requested (a baseline only on its environment, an API model only with its key, a served model only
with its endpoint); the rest are logged with their reason. A model backfilled on nothing (its key or endpoint is not
set yet, its served endpoint does not answer now) is left out of the cursor, so a later tick backfills it once it can
run. Models that left the registry are reported as retired.
"""

from __future__ import annotations

import json
from collections import defaultdict

import dagster as dg
from dagster._core.definitions.assets.graph.asset_graph_subset import AssetGraphSubset
from dagster._core.definitions.assets.graph.base_asset_graph import BaseAssetGraph
from dagster._core.definitions.events import AssetKeyPartitionKey

from secverify_dagster.assets.keys import eval_key
from secverify_dagster.cadences import runnable_pairs
from secverify_dagster.concurrency import provider_tags
from secverify_dagster.partitions import new_partitions, registry_pairs
from secverify_dagster.resources.dagster_resources import ModelRegistryResource
from secverify_dagster.resources.models import ModelSpec
from secverify_dagster.resources.served_endpoints import without_down_endpoints
from secverify_dagster.resources.vllm import VllmResource
from sv_shared.registry import get_environment, implemented_env_ids


def read_cursor(cursor: str | None) -> set[str]:
    """The model ids already backfilled (an unreadable cursor counts as none: at worst a backfill is asked twice,
    and the eval runs it asks for resume instead of repeating work)."""
    try:
        value = json.loads(cursor) if cursor else []
    except ValueError:
        return set()
    return {model for model in value if isinstance(model, str)} if isinstance(value, list) else set()


def backfills_by_provider(
    pairs: list[tuple[str, str]], registry: dict[str, ModelSpec], asset_graph: BaseAssetGraph
) -> list[dg.RunRequest]:
    """One backfill per provider group of (environment, model) pairs, tagged with the group's provider tags."""
    groups: dict[tuple[tuple[str, str], ...], set[AssetKeyPartitionKey]] = defaultdict(set)
    for env_id, model_id in pairs:
        tags = tuple(sorted(provider_tags(registry[model_id]).items()))
        groups[tags].add(AssetKeyPartitionKey(eval_key(env_id), model_id))
    return [
        dg.RunRequest.for_asset_graph_subset(
            AssetGraphSubset.from_asset_partition_set(partitions, asset_graph),
            tags={"secverify/trigger": "new-model", **dict(tags)},
        )
        for tags, partitions in sorted(groups.items())
    ]


@dg.sensor(
    asset_selection=[eval_key(env_id) for env_id in implemented_env_ids()],
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Every minute (on by default): a model new to the registry (configs/models.yaml, or a trained "
    "checkpoint) is backfilled once on every environment it can answer, one backfill per provider; a model that "
    "cannot run anywhere yet (no key, no endpoint, its server down) is asked again on later ticks; the pairs left "
    "out are logged with their reason. Every tick also adds each runnable pair to its environment's model set "
    "(the eval grids), for models new or not.",
)
def new_model_sensor(
    context: dg.SensorEvaluationContext, models: ModelRegistryResource, vllm: VllmResource
) -> dg.SensorResult:
    registry = models.specs()
    backfilled = read_cursor(context.cursor)
    retired = sorted(backfilled - set(registry))
    if retired:
        context.log.warning(f"retired (no longer in the registry, no longer evaluated): {retired}")
    envs = list(implemented_env_ids())
    baselines = {env_id: list(get_environment(env_id).baselines) for env_id in envs}
    # Every pair of the registry that can run is on its environment's grid, whoever added the model and whenever its
    # key came: checked on every tick, so sets made before a model could run (an instance upgraded from one shared
    # model set, a key set since) fill up without a backfill of their own; a served model whose server is down now
    # joins too (its backfill comes on a later tick).
    partition_requests = [
        dg.AddDynamicPartitionsRequest(name, models)
        for name, models in sorted(new_partitions(context.instance, registry_pairs(registry, envs)).items())
    ]
    new_models = [model_id for model_id in registry if model_id not in backfilled]
    if not new_models:
        return dg.SensorResult(
            skip_reason=None if partition_requests else "no new models in the registry",
            dynamic_partitions_requests=partition_requests,
            cursor=json.dumps(sorted(set(registry) & backfilled)),
        )
    runnable, left_out = runnable_pairs(new_models, envs, registry, baselines)
    down_models = vllm.down(registry, {model_id for _, model_id in runnable})
    pairs, down = without_down_endpoints(runnable, down_models)
    for pair, reason in sorted((left_out | down).items()):
        context.log.info(f"not backfilling {pair}: {reason}")
    # A model with nothing to run yet (no key or endpoint set, its server down now) is asked again on a later tick: it
    # stays out of the cursor until some environment's eval is requested for it.
    requested = {model_id for _, model_id in pairs}
    waiting = sorted(set(new_models) - requested)
    if waiting:
        context.log.info(f"nothing to backfill yet for {waiting}: asked again on later ticks")
    cursor = json.dumps(sorted(set(registry) & backfilled | requested))
    requests = backfills_by_provider(pairs, registry, context.repository_def.asset_graph) if pairs else []
    context.log.info(f"new models {new_models}: {len(pairs)} eval runs in {len(requests)} backfills (one per provider)")
    return dg.SensorResult(run_requests=requests, dynamic_partitions_requests=partition_requests, cursor=cursor)
