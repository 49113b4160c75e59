"""Jobs: each environment's data lineage, the eval job over every environment's evals, and the report jobs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dagster as dg

from secverify_dagster.assets.evals import eval_run_config
from secverify_dagster.assets.keys import curated_key, eval_key, raw_key, report_key, synthetic_key
from secverify_dagster.partitions import models_partitions
from sv_shared.registry import implemented_env_ids


def data_job(env_id: str, sources: list[str]) -> dg.UnresolvedAssetJobDefinition:
    """Raw corpora (the configured ones), curated splits and the synthetic set of one environment, with checks."""
    keys = [raw_key(env_id, source) for source in sources] + [curated_key(env_id), synthetic_key(env_id)]
    return dg.define_asset_job(
        f"{env_id}_data_job",
        selection=dg.AssetSelection.assets(*keys),
        description=f"{env_id}: raw corpora {sources} → curated splits → synthetic set, with asset checks.",
    )


eval_job = dg.define_asset_job(
    "eval_job",
    selection=dg.AssetSelection.assets(*(eval_key(env_id) for env_id in implemented_env_ids())),
    partitions_def=models_partitions,
    description="Models (partitions) on environments (each one's eval_results asset): select one environment's "
    "asset to run one model there, or backfill partitions to sweep models × environments.",
)


def eval_run_request(
    env_id: str, model_id: str, *, run_key: str, tags: Mapping[str, str], config: Mapping[str, Any] | None = None
) -> dg.RunRequest:
    """One model on one environment: eval_job on the model's partition, selecting only that environment's evals."""
    return dg.RunRequest(
        run_key=run_key,
        partition_key=model_id,
        asset_selection=[eval_key(env_id)],
        run_config=eval_run_config(env_id, config) if config else {},
        tags=dict(tags),
    )


def report_job(env_id: str) -> dg.UnresolvedAssetJobDefinition:
    return dg.define_asset_job(f"{env_id}_report_job", selection=dg.AssetSelection.assets(report_key(env_id)))
