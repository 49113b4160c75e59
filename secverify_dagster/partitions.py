"""Partitions: the models (dynamic, seeded from the registry). Each environment's eval asset is partitioned by them."""

from __future__ import annotations

import dagster as dg

MODELS_PARTITION = "models"

models_partitions = dg.DynamicPartitionsDefinition(name=MODELS_PARTITION)
