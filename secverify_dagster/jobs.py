"""Jobs: each environment's data lineage, the partitioned eval job, and the report jobs."""

from __future__ import annotations

import dagster as dg

from secverify_dagster.assets.corpora import curated_key, raw_key, synthetic_key
from secverify_dagster.assets.evals import EVAL_RESULTS
from secverify_dagster.assets.reports import report_key
from secverify_dagster.partitions import eval_partitions


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
    selection=dg.AssetSelection.assets(EVAL_RESULTS),
    partitions_def=eval_partitions,
    description="One model on one environment (a partition env|model); backfill it to sweep models × envs.",
)


def report_job(env_id: str) -> dg.UnresolvedAssetJobDefinition:
    return dg.define_asset_job(f"{env_id}_report_job", selection=dg.AssetSelection.assets(report_key(env_id)))
