"""Partitions: the models (dynamic, seeded from the registry), by which each environment's eval asset is partitioned;
and the checkpoints awaiting a reviewer's decision, by which the approval job is (its launchpad offers exactly them)."""

from __future__ import annotations

import dagster as dg

MODELS_PARTITION = "models"

models_partitions = dg.DynamicPartitionsDefinition(name=MODELS_PARTITION)

AWAITING_APPROVAL_PARTITION = "awaiting_approval"

awaiting_approval_partitions = dg.DynamicPartitionsDefinition(name=AWAITING_APPROVAL_PARTITION)
"""Checkpoints whose safety scan passed and that no reviewer has decided on yet (added by the scan, removed by the
approval job's decision)."""
