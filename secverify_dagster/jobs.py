"""Jobs: each environment's data lineage, the eval job over every environment's evals, the tournament and the report
jobs. Eval runs and tournament runs carry their model's provider tags (concurrency.py), which dagster.yaml limits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
from secverify_dagster.partitions import models_partitions
from secverify_dagster.resources.models import ModelSpec
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
    # One process per run: a model's environments run one after another in the process that loaded it (the local
    # model once per run, not once per step); parallelism is the model client's requests and the run queue's runs.
    executor_def=dg.in_process_executor,
    description="Models (partitions) on environments (each one's eval_results asset): select environments' assets "
    "to run one model there, or backfill partitions to sweep models × environments.",
)


def eval_run_request(
    spec: ModelSpec,
    env_ids: Sequence[str],
    *,
    run_key: str,
    tags: Mapping[str, str],
    config: Mapping[str, Any] | None = None,
) -> dg.RunRequest:
    """One model on some environments, as one run of eval_job on the model's partition (selecting only those
    environments' evals), tagged with the model's provider so the run queue applies its limit."""
    ops = {op: settings for env_id in env_ids for op, settings in eval_run_config(env_id, config or {})["ops"].items()}
    return dg.RunRequest(
        run_key=run_key,
        partition_key=spec.id,
        asset_selection=[eval_key(env_id) for env_id in env_ids],
        run_config={"ops": ops} if config else {},
        tags={**dict(tags), **provider_tags(spec)},
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
