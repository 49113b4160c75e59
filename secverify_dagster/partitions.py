"""Partitions: models (dynamic, seeded from the registry) × environments (static e1 … e6)."""

from __future__ import annotations

import dagster as dg

from sv_shared.registry import ENV_IDS

MODELS_PARTITION = "models"

models_partitions = dg.DynamicPartitionsDefinition(name=MODELS_PARTITION)
envs_partitions = dg.StaticPartitionsDefinition(list(ENV_IDS))
# Dagster orders dimensions alphabetically in key strings: "env|model".
eval_partitions = dg.MultiPartitionsDefinition({"env": envs_partitions, "model": models_partitions})


def eval_partition_key(env_id: str, model_id: str) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey({"env": env_id, "model": model_id})
