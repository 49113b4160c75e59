"""The one place the Dagster definitions are assembled."""

from __future__ import annotations

import dagster as dg

from secverify_dagster.assets.ablations import build_ablations_asset
from secverify_dagster.assets.benchmark_sheet import (
    benchmark_sheet_job,
    biweekly_benchmark_sheet,
    build_benchmark_sheet_asset,
)
from secverify_dagster.assets.checks import build_dataset_checks
from secverify_dagster.assets.corpora import build_corpus_assets
from secverify_dagster.assets.evals import build_eval_asset
from secverify_dagster.assets.governance import build_governance_asset, govern
from secverify_dagster.assets.keys import ablations_key, report_key
from secverify_dagster.assets.redteam import judge_validation, tournament
from secverify_dagster.assets.regression_checks import build_regression_check
from secverify_dagster.assets.reports import WEEKLY_MEMO, build_report_asset, weekly_memo
from secverify_dagster.assets.review_checks import build_review_check
from secverify_dagster.assets.synthetic_batches import build_synthetic_batch_assets
from secverify_dagster.assets.training import approve_checkpoint_job, training_definitions
from secverify_dagster.jobs import data_job, report_job, tournament_job
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource, ModelRegistryResource
from secverify_dagster.resources.training import GpuResource, TrackingResource
from secverify_dagster.resources.vllm import VllmResource
from secverify_dagster.schedules.reports import REPORT_SCHEDULES
from secverify_dagster.schedules.sweeps import biweekly_full_eval, biweekly_tournament, nightly_regression, weekly_sweep
from secverify_dagster.sensors.new_models import new_model_sensor
from secverify_dagster.sensors.run_failures import run_failure_recorder
from secverify_dagster.training.settings import load_sft_dataset_settings
from sv_shared.contracts import CompletionVerifier
from sv_shared.registry import get_environment, implemented_env_ids
from sv_shared.training.recipes import load_rlft_recipe, load_sft_recipe, rlft_recipe_names, sft_recipe_names

ENVIRONMENTS = [get_environment(env_id) for env_id in implemented_env_ids()]
RECIPES = [*map(load_sft_recipe, sft_recipe_names()), *map(load_rlft_recipe, rlft_recipe_names())]
TRAINING_ASSETS, TRAINING_CHECKS = training_definitions(ENVIRONMENTS, RECIPES)


def _default_sources(env) -> list[str]:
    return list(dict.fromkeys([*env.config.data.train_sources, *env.config.data.ood_sources]))


all_reports_job = dg.define_asset_job(
    "reports_job",
    selection=dg.AssetSelection.assets(
        *(key for env in ENVIRONMENTS for key in (ablations_key(env.env_id), report_key(env.env_id))),
        WEEKLY_MEMO,
    ),
)

ASSETS = [
    *(asset for env in ENVIRONMENTS for asset in build_corpus_assets(env)),
    *(build_eval_asset(env) for env in ENVIRONMENTS),
    *build_synthetic_batch_assets(ENVIRONMENTS),
    judge_validation,
    tournament,
    *(build_report_asset(env) for env in ENVIRONMENTS),
    weekly_memo,
    *(build_ablations_asset(env) for env in ENVIRONMENTS),
    build_benchmark_sheet_asset(ENVIRONMENTS),
    *TRAINING_ASSETS,
    build_governance_asset(ENVIRONMENTS, RECIPES),
]
"""Every asset as built; the definitions hold them governed: owners, kinds and code versions (assets/governance.py)."""


def build_definitions(executor: dg.ExecutorDefinition = dg.in_process_executor) -> dg.Definitions:
    """The project's definitions with `executor` for every job that does not choose its own.

    Locally every step of a run shares the run's process: a backfill of a model over environments loads the local
    model once, not once per environment's step (and a step starts in milliseconds, not seconds). The Kubernetes code
    location passes its per-step pod executor (deploy/k8s/code_location.py)."""
    return dg.Definitions(
        assets=govern(ASSETS),
        asset_checks=[
            *(check for env in ENVIRONMENTS for check in build_dataset_checks(env)),
            *(build_regression_check(env) for env in ENVIRONMENTS),
            *TRAINING_CHECKS,
            *(
                build_review_check(env.env_id, load_sft_dataset_settings().review)
                for env in ENVIRONMENTS
                if isinstance(env.verifier, CompletionVerifier)
            ),
        ],
        jobs=[
            *(data_job(env.env_id, _default_sources(env)) for env in ENVIRONMENTS),
            *(report_job(env.env_id) for env in ENVIRONMENTS),
            all_reports_job,
            tournament_job,
            approve_checkpoint_job,
            benchmark_sheet_job,
        ],
        schedules=[
            weekly_sweep,
            biweekly_full_eval,
            biweekly_tournament,
            nightly_regression,
            *REPORT_SCHEDULES,
            biweekly_benchmark_sheet,
        ],
        sensors=[new_model_sensor, run_failure_recorder],
        resources={
            "models": ModelRegistryResource(),
            "artifacts": ArtifactStoreResource(),
            "tracking": TrackingResource(),
            "gpu": GpuResource(),
            "vllm": VllmResource(),
        },
        executor=executor,
    )


defs = build_definitions()
"""What `dagster dev`, the CLI and the tests load."""
