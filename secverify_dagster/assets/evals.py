"""Eval assets: one per environment, partitioned by the models that can run there (partitions.py); each partition is
one run folder written by the runner.

An environment's evals read only its own curated splits, so Dagster's lineage and staleness stay per environment.
"""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dagster as dg

from secverify_dagster.assets.keys import curated_key, eval_key
from secverify_dagster.partitions import models_partitions
from secverify_dagster.publishing.wandb_artifacts import WandbArtifactError, log_eval_artifact
from secverify_dagster.reports.trajectories import write_run_page
from secverify_dagster.reports.views import dataset_views, view_dataset, view_evals_root
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource, ModelRegistryResource
from secverify_dagster.resources.training import TrackingResource
from secverify_dagster.runner.datasets import EvalDataset
from secverify_dagster.runner.eval_runner import EvalOutcome, EvalRunner
from secverify_dagster.training.paths import TrainingPaths
from sv_shared.answers.metrics import metric_value
from sv_shared.contracts import Environment
from sv_shared.data.datasets import read_dataset

SHOWN_DECIMALS = 4
"""Decimals of the figures an eval's materialization shows in the UI (the run's summary.json keeps them exact)."""


def eval_run_config(env_id: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """Run config that sets one environment's EvalConfig (its op is named after the asset key: e1__eval_results)."""
    return {"ops": {eval_key(env_id).to_python_identifier(): {"config": dict(config)}}}


class EvalConfig(dg.Config):
    """N defaults to the environment's eval.default_n; the same seed and items for every model."""

    n: int | None = None
    seed: int = 42
    split: str = "test"
    include_tools: bool = False
    counterparts: dict[str, str] | None = None
    """Dialogue environments: role → registry model id (E5: {"target": ...}); default: the environment's config."""
    judge: str | None = None
    """Dialogue environments: the judge spec (local, refusal-detector, llama-guard-3:<id>, llm:<id>)."""
    views: list[str] | None = None
    """Feature-ablated views run after the full split, each under evals/views/<view>/ (default: every view the
    environment defines, E1's no-bytes, no-packets, no-state and no-service; [] for none)."""


def _skip(context: dg.AssetExecutionContext, env: Environment, model_id: str, reason: str | None) -> None:
    """A model (or a counterpart) that cannot run here is skipped with its reason: no materialization, no score."""
    context.log.warning(f"skipped {model_id} on {env.env_id}: {reason}")
    context.log_event(
        dg.AssetObservation(
            asset_key=eval_key(env.env_id),
            partition=context.partition_key,
            metadata={"status": "skipped", "reason": reason},
        )
    )


def build_eval_asset(env: Environment) -> dg.AssetsDefinition:
    env_id = env.env_id

    @dg.asset(
        key=eval_key(env_id),
        partitions_def=models_partitions(env_id),
        deps=[curated_key(env_id)],
        group_name=env_id,
        kinds={"python"},
        output_required=False,
        description=f"{env.name}: scored samples of one model (a partition) on the curated split: "
        f"`outputs/evals/{env.name}--<model>/<run_id>/`.",
    )
    def eval_results(
        context: dg.AssetExecutionContext,
        config: EvalConfig,
        models: ModelRegistryResource,
        artifacts: ArtifactStoreResource,
        tracking: TrackingResource,
    ):
        model_id = context.partition_key
        spec = models.spec(model_id)
        reach = models.reachability(model_id, env_id, list(env.baselines))
        if not reach.ok:
            _skip(context, env, model_id, reach.reason)
            return
        path = artifacts.datasets(env_id) / "curated" / f"{config.split}.parquet"
        dataset = EvalDataset(frame=read_dataset(path), source=str(path), split=config.split)
        views = list(dataset_views(env)) if config.views is None else config.views
        n = config.n or env.config.eval.default_n
        counterparts = {role: models.spec(model) for role, model in (config.counterparts or {}).items()}
        cache = artifacts.response_cache()

        def evaluate(data: EvalDataset, evals_root: Path, what: str) -> EvalOutcome:
            def progress(done: int, total: int) -> None:
                context.log.info(f"{env_id} × {model_id}{what}: {done}/{total} samples scored")

            runner = EvalRunner(
                env,
                spec,
                evals_root=evals_root,
                cache=cache,
                counterparts=counterparts,
                judge=config.judge,
                registry=models.specs(),
            )
            outcome = runner.run(
                data,
                n=n,
                seed=config.seed,
                progress=progress,
                include_tools=config.include_tools,
                on_lock_wait=context.log.info,
            )
            if outcome.status not in ("complete", "skipped"):
                raise dg.Failure(
                    f"{env_id} × {model_id}{what}: {outcome.n_done} of {outcome.summary.n_items} samples scored, "
                    f"{outcome.n_provider_errors} provider errors (see {outcome.run_dir}/errors.jsonl); "
                    "re-run to resume the missing samples",
                )
            return outcome

        try:
            outcome = evaluate(dataset, artifacts.evals(), "")
            if outcome.status == "skipped":
                _skip(context, env, model_id, outcome.reason)
                return
            view_outcomes = {
                view: evaluate(view_dataset(env, dataset, view), view_evals_root(artifacts.evals(), view), f" ({view})")
                for view in views
            }
        finally:
            cache.close()
        metrics = outcome.summary.metrics
        trajectories = write_run_page(env, outcome.run_dir)
        try:
            # The run's summary as a W&B artifact that uses the model's (a checkpoint's own) and the split's.
            artifact = log_eval_artifact(
                tracking,
                outcome.run_dir,
                outcome.metadata,
                context.run_id,
                context.asset_key.to_user_string(),
                model_id,
                checkpoints_root=TrainingPaths(artifacts.base()).checkpoints,
                log=context.log.warning,
            )
        except WandbArtifactError as error:
            raise dg.Failure(str(error)) from error
        # Shown to 4 decimals, as reports show them; the exact values stay in the run's summary.json.
        headline = {
            key: round(float(value), SHOWN_DECIMALS)
            for _, key in env.verifier.report_columns()
            if isinstance(value := metric_value(metrics, key), int | float)
        }
        yield dg.MaterializeResult(
            metadata={
                "run_dir": dg.MetadataValue.path(str(outcome.run_dir)),
                "run_id": outcome.metadata.run_id,
                # The run's samples, lowest reward first, with prompts, answers, tools, verdicts and triage categories.
                "trajectories": dg.MetadataValue.path(str(trajectories.path)),
                "view_reward_means": dg.MetadataValue.json(
                    {
                        view: round(view_outcome.summary.metrics["reward"]["mean"], SHOWN_DECIMALS)
                        for view, view_outcome in view_outcomes.items()
                    }
                ),
                # The view runs' folders: `secverify audit` finds a view run's Dagster materialization here.
                "view_run_dirs": dg.MetadataValue.json(
                    {view: str(view_outcome.run_dir) for view, view_outcome in view_outcomes.items()}
                ),
                "n": metrics["n"],
                "reward_mean": round(metrics["reward"]["mean"], SHOWN_DECIMALS),
                # Samples that failed on every attempt: counted as failures in the metrics, listed so a reader sees
                # the run's gaps.
                "given_up": dg.MetadataValue.json(list(outcome.given_up)),
                **headline,
                "dataset_hash": outcome.metadata.dataset.hash,
                "verifier_version": outcome.metadata.verifier_version,
                "code_version": outcome.metadata.code_version,
                "cost_usd": None if (cost := outcome.metadata.cost_usd) is None else round(cost, 6),
                "tokens": dg.MetadataValue.json(outcome.metadata.usage.as_dict()),
                "timings": dg.MetadataValue.json(outcome.metadata.timings),
                **(artifact.as_metadata() if artifact else {}),
            }
        )

    return eval_results
