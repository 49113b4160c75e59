"""Partitions: each environment's models (dynamic), by which its eval asset is partitioned; and the checkpoints
awaiting a reviewer's decision, by which the approval job is (its launchpad offers exactly them).

An environment's model set holds the models that can run there: a rule baseline only on its own environment, a model
configured for some environments only there, an API model once its key is set, a served model once its endpoint is
configured (resources.models.reachability). So each eval asset's partition grid lists exactly the pairs that can run.
A model enters a set the first time it can run there (`secverify run`, `secverify train` and the new-model sensor add
it) and stays: its past evals stay on the grid after its key is unset or it leaves the registry (an eval asked for
then ends at once, skipped with its reason).

The price of exact grids: Dagster runs only assets of one partition set together, so every eval run is one
environment × one model (sweeps and backfills request one run per pair).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from functools import cache

import dagster as dg

from secverify_dagster.cadences import runnable_pairs
from secverify_dagster.resources.models import ModelSpec
from sv_shared.registry import get_environment, implemented_env_ids


def models_partition_name(env_id: str) -> str:
    """The name of an environment's model set (e1_models, ...)."""
    return f"{env_id}_models"


@cache
def models_partitions(env_id: str) -> dg.DynamicPartitionsDefinition:
    """The models that can run on `env_id`: its eval asset's partitions (and its regression check's)."""
    return dg.DynamicPartitionsDefinition(name=models_partition_name(env_id))


def registry_pairs(registry: Mapping[str, ModelSpec], env_ids: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """The (environment, model) pairs of the registry that can run here, judged from configuration (no network)."""
    envs = [env_id for env_id in (env_ids or implemented_env_ids()) if env_id in implemented_env_ids()]
    baselines = {env_id: list(get_environment(env_id).baselines) for env_id in envs}
    return runnable_pairs(list(registry), envs, registry, baselines)[0]


def new_partitions(instance: dg.DagsterInstance, pairs: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """Per model set, the models of `pairs` it does not hold yet (in the pairs' order)."""
    wanted: dict[str, list[str]] = defaultdict(list)
    for env_id, model_id in pairs:
        if model_id not in wanted[env_id]:
            wanted[env_id].append(model_id)
    new: dict[str, list[str]] = {}
    for env_id, models in wanted.items():
        known = set(instance.get_dynamic_partitions(models_partition_name(env_id)))
        if missing := [model_id for model_id in models if model_id not in known]:
            new[models_partition_name(env_id)] = missing
    return new


def add_model_partitions(instance: dg.DagsterInstance, pairs: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """Add each pair's model to its environment's set; returns what was added, per set."""
    added = new_partitions(instance, pairs)
    for name, models in added.items():
        instance.add_dynamic_partitions(name, models)
    return added


AWAITING_APPROVAL_PARTITION = "awaiting_approval"

awaiting_approval_partitions = dg.DynamicPartitionsDefinition(name=AWAITING_APPROVAL_PARTITION)
"""Checkpoints whose safety scan passed and that no reviewer has decided on yet (added by the scan, removed by the
approval job's decision)."""
