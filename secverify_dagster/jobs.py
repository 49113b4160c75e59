"""Jobs: each environment's data lineage, the tournament and the report jobs; eval runs are requested of Dagster's
asset job (EVAL_JOB). Eval runs and tournament runs carry their model's provider tags (concurrency.py), which
dagster.yaml limits."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dagster as dg

from secverify_dagster.assets.evals import eval_run_config
from secverify_dagster.assets.keys import (
    JUDGE_VALIDATION,
    TOURNAMENT,
    ablations_key,
    curated_key,
    eval_key,
    raw_key,
    report_key,
    synthetic_key,
)
from secverify_dagster.concurrency import PROVIDER_TAG, provider_tags
from secverify_dagster.resources.models import ModelSpec

ENV_TAG = "secverify/env"
"""The environment an eval run evaluates on (its model is the run's partition)."""


def data_job(env_id: str, sources: list[str]) -> dg.UnresolvedAssetJobDefinition:
    """Raw corpora (the configured ones), curated splits and the synthetic set of one environment, with checks."""
    keys = [raw_key(env_id, source) for source in sources] + [curated_key(env_id), synthetic_key(env_id)]
    return dg.define_asset_job(
        f"{env_id}_data_job",
        selection=dg.AssetSelection.assets(*keys),
        description=f"{env_id}: raw corpora {sources} → curated splits → synthetic set, with asset checks.",
    )


EVAL_JOB = "__ASSET_JOB"
"""The job eval runs are launched in: Dagster's asset job, the one job that holds assets of different partition sets
(each environment's eval asset has its own, partitions.py). A run of it is one environment × one model, as the UI's
*Materialize* of one partition is; its steps share the run's process (definitions.py's executor). The name is
Dagster's (IMPLICIT_ASSET_JOB_NAME), written out so the docs can read it from the source."""


def eval_run_request(
    spec: ModelSpec,
    env_id: str,
    *,
    run_key: str,
    tags: Mapping[str, str],
    config: Mapping[str, Any] | None = None,
) -> dg.RunRequest:
    """One model on one environment: a run of the asset job on the model's partition of that environment's eval
    asset, tagged with the model's provider so the run queue applies its limit, and with the pair for the run list."""
    return dg.RunRequest(
        run_key=run_key,
        partition_key=spec.id,
        asset_selection=[eval_key(env_id)],
        run_config=eval_run_config(env_id, config or {}) if config else {},
        tags={**dict(tags), **provider_tags(spec), ENV_TAG: env_id},
    )


tournament_job = dg.define_asset_job(
    "tournament_job",
    selection=dg.AssetSelection.assets(JUDGE_VALIDATION, TOURNAMENT),
    # Its default entrants include the local model, loaded in the run's process: it queues with local model runs.
    tags={PROVIDER_TAG: "local_transformers"},
    description="Measure the judges on the validation set, then play the attacker × defender tournament.",
)


def report_job(env_id: str) -> dg.UnresolvedAssetJobDefinition:
    # The ablation table is re-scored from the stored runs (no model call) just before the report that shows it.
    return dg.define_asset_job(
        f"{env_id}_report_job", selection=dg.AssetSelection.assets(ablations_key(env_id), report_key(env_id))
    )
