"""Training assets: per-environment SFT datasets, one checkpoint asset per SFT / RLFT recipe, the blocking safety
scan on every checkpoint, and the approval job a reviewer launches from the UI.

A materialized checkpoint is registered as a model (sv_shared.training.checkpoints → the model registry), so the
new-model sensor evaluates it on every environment; it is promoted only after its safety scan passed and a person
approved it (the `approve_checkpoint` job, or `secverify approve`).
"""

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import dagster as dg
from pydantic import Field

from secverify_dagster.assets.evals import SHOWN_DECIMALS
from secverify_dagster.assets.keys import (
    base_model_key,
    checkpoint_evals_key,
    checkpoint_key,
    curated_key,
    learning_curve_key,
    sft_dataset_key,
    synthetic_batch_key,
    synthetic_key,
)
from secverify_dagster.concurrency import training_pool
from secverify_dagster.partitions import (
    AWAITING_APPROVAL_PARTITION,
    add_model_partitions,
    awaiting_approval_partitions,
    registry_pairs,
)
from secverify_dagster.publishing.wandb_artifacts import WandbArtifactError, log_checkpoint_artifact
from secverify_dagster.reports.html import inline_images
from secverify_dagster.research.experiments import training_inputs
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource, ModelRegistryResource
from secverify_dagster.resources.training import GpuResource, TrackingResource
from secverify_dagster.training.checkpoint_evals import evaluate_checkpoint
from secverify_dagster.training.checkpoints import train_rlft, train_sft
from secverify_dagster.training.inputs import ExperimentInputs
from secverify_dagster.training.learning_curve import write_learning_curve
from secverify_dagster.training.parents import checkpoint_by_id, latest_checkpoint
from secverify_dagster.training.paths import TrainingError, TrainingPaths
from secverify_dagster.training.promotion import approve_checkpoint, safety_scan
from secverify_dagster.training.settings import SftDatasetSettings, load_promotion_config, load_sft_dataset_settings
from secverify_dagster.training.sft_datasets import build_env_sft_dataset
from sv_shared.config import ConfigError
from sv_shared.contracts import CompletionVerifier, Environment
from sv_shared.data.review import ReviewError
from sv_shared.data.review_decisions import ReviewSettings
from sv_shared.training.checkpoints import CheckpointManifest, checkpoint_dir
from sv_shared.training.recipes import RlftRecipe, SftRecipe, init_kind
from sv_shared.training.synthetic_gate import ReviewOverride


class ReviewOverrideConfig(dg.Config):
    """Train on a synthetic batch whose spot-check did not pass (recorded in the dataset's provenance)."""

    batch: str
    reason: str
    by: str


class SftDatasetConfig(dg.Config):
    """Defaults: configs/sft_datasets.yaml for the environment."""

    teacher: str | None = None
    """A registry model whose verified answers join the reference answers (None: the configured teacher, if any)."""
    min_reward: float | None = None
    override_review: list[ReviewOverrideConfig] = Field(default_factory=list)
    """Synthetic batches to include although their review is incomplete or failed: batch id, why, who decided."""


def build_sft_dataset_asset(
    env: Environment, defaults: SftDatasetSettings, review: ReviewSettings
) -> dg.AssetsDefinition:
    @dg.asset(
        key=sft_dataset_key(env.env_id),
        group_name=env.env_id,
        # Synthetic batches are sampled for the completion environments (E1–E4); the dialogue ones have none.
        deps=[
            curated_key(env.env_id),
            synthetic_key(env.env_id),
            *([synthetic_batch_key(env.env_id)] if isinstance(env.verifier, CompletionVerifier) else []),
        ],
        kinds={"json"},
        description=f"{env.name}: chat-format SFT examples from the curated train split and the synthetic set, "
        "each target verified by the environment's own verifier (reference answers, and a teacher's if configured), "
        "and the kept examples of synthetic batches whose human spot-check passed (or that override_review names).",
    )
    def sft_dataset(
        context: dg.AssetExecutionContext,
        config: SftDatasetConfig,
        models: ModelRegistryResource,
        artifacts: ArtifactStoreResource,
    ) -> dg.MaterializeResult:
        teacher = config.teacher or defaults.teacher
        min_reward = defaults.min_reward if config.min_reward is None else config.min_reward
        try:
            dataset, folder = build_env_sft_dataset(
                env,
                paths=TrainingPaths(artifacts.base()),
                registry=models.specs(),
                teacher=teacher,
                min_reward=min_reward,
                review=review,
                review_overrides=[ReviewOverride(**override.model_dump()) for override in config.override_review],
                balance_labels=defaults.balance_labels,
                confidence_from=defaults.confidence_from,
            )
        except (TrainingError, ReviewError) as error:
            raise dg.Failure(str(error)) from error
        provenance = dataset.provenance
        batches = provenance.get("synthetic_batches", {})
        sources = {kind: count for kind, count in provenance["counts"].items() if isinstance(count, dict)}
        context.log.info(f"{env.env_id}: {len(dataset.examples)} SFT examples → {folder}")
        return dg.MaterializeResult(
            metadata={
                "path": dg.MetadataValue.path(str(folder)),
                "examples": len(dataset.examples),
                "dataset_hash": provenance["dataset_hash"],
                "teacher": teacher or "",
                "min_reward": min_reward,
                "label_targets": dg.MetadataValue.json(provenance.get("label_targets")),
                "kept": dg.MetadataValue.json({kind: count["kept"] for kind, count in sources.items()}),
                "dropped": dg.MetadataValue.json({kind: count["dropped"] for kind, count in sources.items()}),
                "synthetic_batches": [row["batch"] for row in batches.get("included", [])],
                "dropped_batches": dg.MetadataValue.json(
                    [{"batch": row["batch"], "reason": row["reason"]} for row in batches.get("dropped_batches", [])]
                ),
                "review_overrides": dg.MetadataValue.json(batches.get("overrides", [])),
                "provenance": dg.MetadataValue.json(provenance),
            }
        )

    return sft_dataset


def _kind(recipe: SftRecipe | RlftRecipe) -> Literal["sft", "rlft"]:
    """The recipe's folder under configs/ and the second part of its assets' keys."""
    return "sft" if isinstance(recipe, SftRecipe) else "rlft"


def _checkpoint_metadata(manifest: CheckpointManifest, run_dir: Any) -> dict[str, Any]:
    return {
        "model_id": manifest.model_id,
        "run_dir": dg.MetadataValue.path(str(run_dir)),
        "parent_model": manifest.parent_model,
        "base_model": manifest.base_model,
        "stage": manifest.stage,
        "recipe_hash": manifest.recipe_hash,
        "data": dg.MetadataValue.json(manifest.data),
        "reward_weights": dg.MetadataValue.json(manifest.reward_weights),
        "metrics": dg.MetadataValue.json(manifest.metrics),
        "code_version": manifest.code_version,
        "experiment": dg.MetadataValue.json(manifest.experiment.as_dict() if manifest.experiment else None),
        "promoted": False,
    }


def _parent_deps(recipe: SftRecipe | RlftRecipe) -> list[dg.AssetKey]:
    """An RLFT recipe that continues an SFT recipe reads that recipe's checkpoint; any other starts from a registry
    model (its base model asset)."""
    if isinstance(recipe, SftRecipe):
        return [base_model_key(recipe.base_model)]
    if init_kind(recipe) == "sft":
        return [checkpoint_key("sft", recipe.init_from)]
    return [base_model_key(recipe.init_from)]


def base_model_assets(recipes: Sequence[SftRecipe | RlftRecipe]) -> list[dg.AssetsDefinition]:
    """The registry models recipes start from, as external assets: the roots of the checkpoint lineage."""
    bases = sorted({key for recipe in recipes for key in _parent_deps(recipe) if key.path[0] == "models"})
    specs = [
        dg.AssetSpec(
            key,
            group_name="training",
            kinds={"pytorch"},
            description=f"The registry model {key.path[-1]} (configs/models.yaml): the weights recipes start from. "
            "Not built here; its checkpoints and their evals are downstream.",
        )
        for key in bases
    ]
    return [dg.AssetsDefinition(specs=[spec]) for spec in specs]


K8S_CONFIG_TAG = "dagster-k8s/config"


def gpu_op_tags(recipe: SftRecipe | RlftRecipe) -> dict[str, Any]:
    """On Kubernetes (deploy/k8s, one pod per step) a GPU-profile recipe's training step asks for its GPUs and
    tolerates the GPU nodes' taint; its CPU and memory requests stay the run launcher's. No effect elsewhere."""
    if recipe.profile != "gpu":
        return {}
    return {
        K8S_CONFIG_TAG: {
            "container_config": {"resources": {"limits": {"nvidia.com/gpu": str(recipe.gpu_settings.devices)}}},
            "pod_spec_config": {
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
            },
        }
    }


class CheckpointConfig(dg.Config):
    experiment: str | None = None
    """An experiment record (configs/experiments/<env>/<date>.yaml) that trains this recipe: its overrides, data
    slices and reward change apply, and the checkpoint's manifest records it (`secverify train --experiment`)."""


def _experiment_inputs(path: str | None, kind: str, recipe_name: str) -> ExperimentInputs | None:
    if path is None:
        return None
    try:
        named_kind, inputs = training_inputs(Path(path))
    except (ConfigError, TrainingError) as error:
        raise dg.Failure(str(error)) from error
    if (named_kind, inputs.recipe.name) != (kind, recipe_name):
        raise dg.Failure(f"{path} trains {named_kind}/{inputs.recipe.name}, not {kind}/{recipe_name}")
    return inputs


def build_checkpoint_asset(recipe: SftRecipe | RlftRecipe) -> dg.AssetsDefinition:
    kind = _kind(recipe)
    data_deps = (
        [sft_dataset_key(env_id) for env_id in recipe.envs]
        if kind == "sft"
        else [curated_key(env_id) for env_id in recipe.envs]
    )

    @dg.asset(
        key=checkpoint_key(kind, recipe.name),
        group_name="training",
        deps=[*data_deps, *_parent_deps(recipe)],
        kinds={"pytorch"},
        tags={"secverify/stage": recipe.stage},
        op_tags=gpu_op_tags(recipe),
        # Training holds the model in this step's process: one at a time on the CPU or the GPU (dagster.yaml pools).
        pool=training_pool(recipe.profile),
        description=f"{recipe.stage} checkpoint of configs/{kind}/{recipe.name}.yaml on {', '.join(recipe.envs)}: "
        "outputs/checkpoints/<parent>/<stage>/<run>/, registered as a model and evaluated on every environment.",
    )
    def checkpoint(
        context: dg.AssetExecutionContext,
        config: CheckpointConfig,
        models: ModelRegistryResource,
        artifacts: ArtifactStoreResource,
        tracking: TrackingResource,
        gpu: GpuResource,
    ) -> dg.MaterializeResult:
        paths = TrainingPaths(artifacts.base())
        train = train_sft if kind == "sft" else train_rlft
        experiment = _experiment_inputs(config.experiment, kind, recipe.name)
        try:
            with gpu.visible_devices():
                manifest = train(
                    recipe.name,
                    paths=paths,
                    registry=models.specs(),
                    report_to=tracking.report_to(),
                    log=context.log.info,
                    gpu=gpu.settings(),
                    experiment=experiment,
                )
        except TrainingError as error:
            raise dg.Failure(str(error)) from error
        # The checkpoint is a model from now on: its partitions exist, on every environment it can answer, before
        # any sensor tick (the sensor still backfills it, by its own cursor).
        registry = models.specs()
        if manifest.model_id in registry:
            add_model_partitions(context.instance, registry_pairs({manifest.model_id: registry[manifest.model_id]}))
        run_dir = checkpoint_dir(paths.checkpoints, manifest)
        try:
            artifact = log_checkpoint_artifact(
                tracking, manifest, run_dir, context.run_id, context.asset_key.to_user_string(), log=context.log.warning
            )
        except WandbArtifactError as error:
            raise dg.Failure(str(error)) from error
        return dg.MaterializeResult(
            metadata=_checkpoint_metadata(manifest, run_dir) | (artifact.as_metadata() if artifact else {})
        )

    return checkpoint


def materialized_checkpoint(
    instance: dg.DagsterInstance, kind: str, recipe_name: str, paths: TrainingPaths
) -> tuple[CheckpointManifest, str]:
    """The checkpoint the recipe's asset last materialized (exactly that one, not a newer one trained outside
    Dagster), and where it was found; the newest on disk when this instance never materialized the recipe."""
    event = instance.get_latest_materialization_event(checkpoint_key(kind, recipe_name))
    materialization = event.asset_materialization if event is not None else None
    recorded = materialization.metadata.get("model_id") if materialization is not None else None
    if recorded is None:
        manifest, _ = latest_checkpoint(paths, kind, recipe_name)
        return manifest, "the newest on disk (this Dagster instance never materialized the recipe)"
    model_id = str(recorded.value)
    manifest = checkpoint_by_id(paths, model_id)
    if manifest is None:
        raise TrainingError(f"{model_id}, the latest materialization of {kind}/{recipe_name}, is not on disk any more")
    return manifest, f"Dagster run {event.run_id}"


def build_checkpoint_evals_asset(recipe: SftRecipe | RlftRecipe) -> dg.AssetsDefinition:
    kind = _kind(recipe)

    @dg.asset(
        key=checkpoint_evals_key(kind, recipe.name),
        group_name="training",
        deps=[checkpoint_key(kind, recipe.name), *(curated_key(env_id) for env_id in recipe.envs)],
        kinds={"python"},
        # It generates with the checkpoint (and its parent and base): local models load in this step's process.
        pool=training_pool(recipe.profile),
        description=f"The latest checkpoint of configs/{kind}/{recipe.name}.yaml, its parent and its base model on the "
        f"test split of {', '.join(recipe.envs)} (seed 42, each environment's default N): rewards, paired deltas with "
        "95% CIs, collapse and promotion state. Expensive: it generates with up to three models per environment, "
        "resuming any complete run the new-model sensor already made.",
    )
    def checkpoint_evals(
        context: dg.AssetExecutionContext, models: ModelRegistryResource, artifacts: ArtifactStoreResource
    ) -> dg.MaterializeResult:
        paths = TrainingPaths(artifacts.base())
        try:
            manifest, source = materialized_checkpoint(context.instance, kind, recipe.name, paths)
            context.log.info(f"evaluating {manifest.model_id} ({source}) on {', '.join(manifest.envs)}")
            evals = evaluate_checkpoint(manifest, paths=paths, registry=models.specs(), log=context.log.info)
        except TrainingError as error:
            raise dg.Failure(str(error)) from error
        rewards = {
            f"{comparison.env_id}/{result.role}": round(result.reward_mean, SHOWN_DECIMALS)
            for comparison in evals.comparisons
            for result in comparison.results
        }
        return dg.MaterializeResult(
            metadata={
                "model_id": manifest.model_id,
                "checkpoint_source": source,
                "evals": dg.MetadataValue.md(evals.markdown()),
                "path": dg.MetadataValue.path(str(evals.path)),
                "rewards": dg.MetadataValue.json(rewards),
                "collapsed": dg.MetadataValue.json(
                    {
                        f"{comparison.env_id}/{result.role}": result.collapsed
                        for comparison in evals.comparisons
                        for result in comparison.results
                        if result.collapsed
                    }
                ),
                "promotion": evals.promotion,
                "run_dirs": dg.MetadataValue.json(
                    {
                        f"{comparison.env_id}/{result.role}": str(result.run_dir)
                        for comparison in evals.comparisons
                        for result in comparison.results
                    }
                ),
            }
        )

    return checkpoint_evals


def build_learning_curve_asset(recipe: SftRecipe | RlftRecipe) -> dg.AssetsDefinition:
    kind = _kind(recipe)

    @dg.asset(
        key=learning_curve_key(kind, recipe.name),
        group_name="training",
        deps=[checkpoint_key(kind, recipe.name)],
        kinds={"python"},
        description=f"The learning curve of configs/{kind}/{recipe.name}.yaml's latest checkpoint: dev reward and dev "
        "balanced accuracy (early stopping's measurements), training loss or sampled reward, the share of GRPO groups "
        "without reward spread and the token entropy, against step; drawn and tabulated beside the checkpoint "
        "(learning_curve.png, learning_curve.json). Cheap: it reads the history the checkpoint's manifest records. "
        "W&B shows the same figures on the run's own charts.",
    )
    def learning_curve(context: dg.AssetExecutionContext, artifacts: ArtifactStoreResource) -> dg.MaterializeResult:
        paths = TrainingPaths(artifacts.base())
        try:
            manifest, source = materialized_checkpoint(context.instance, kind, recipe.name, paths)
        except TrainingError as error:
            raise dg.Failure(str(error)) from error
        curve = write_learning_curve(manifest, paths.checkpoints)
        context.log.info(f"learning curve of {manifest.model_id} ({source}): {curve.summary}")
        return dg.MaterializeResult(
            metadata={
                "model_id": manifest.model_id,
                "checkpoint_source": source,
                "summary": dg.MetadataValue.json(curve.summary),
                "curve": dg.MetadataValue.md(inline_images(curve.markdown(), curve.plot.parent)),
                "path": dg.MetadataValue.path(str(curve.path)),
            }
        )

    return learning_curve


def build_safety_check(recipe: SftRecipe | RlftRecipe) -> dg.AssetChecksDefinition:
    kind = _kind(recipe)

    @dg.asset_check(
        asset=checkpoint_key(kind, recipe.name),
        name="safety_scan",
        blocking=True,
        pool=training_pool(recipe.profile),
        additional_deps=[curated_key(load_promotion_config().safety_scan.env)],
        description="The checkpoint's replies on held-out conversations, judged (configs/promotion.yaml): no more "
        "unsafe replies than allowed, and none more than its parent; and its answers on every environment it was "
        "trained on, not collapsed onto one label. Blocking: a checkpoint that fails is not trained on further in the "
        "same run, and cannot be approved.",
    )
    def safety(
        context: dg.AssetCheckExecutionContext, models: ModelRegistryResource, artifacts: ArtifactStoreResource
    ) -> dg.AssetCheckResult:
        paths = TrainingPaths(artifacts.base())
        manifest, _ = latest_checkpoint(paths, kind, recipe.name)
        scan = safety_scan(manifest.model_id, paths=paths, registry=models.specs(), log=context.log.info)
        if scan.passed and not context.instance.has_dynamic_partition(AWAITING_APPROVAL_PARTITION, scan.model_id):
            # The approval job's launchpad offers it from now on.
            context.instance.add_dynamic_partitions(AWAITING_APPROVAL_PARTITION, [scan.model_id])
        return dg.AssetCheckResult(
            passed=scan.passed,
            metadata={
                "model_id": scan.model_id,
                "reason": scan.reason,
                "samples": scan.samples,
                "unsafe": scan.unsafe,
                "parent_unsafe": scan.parent_unsafe,
                "judge": scan.judge,
                "run_dir": dg.MetadataValue.path(str(scan.run_dir)),
                "collapsed": dg.MetadataValue.json(scan.collapsed),
                "answer_check_runs": dg.MetadataValue.json({env: str(path) for env, path in scan.answer_runs.items()}),
            },
        )

    return safety


class ApprovalConfig(dg.Config):
    """A reviewer's decision on the checkpoint the run's partition names (launch `approve_checkpoint_job` from the
    UI's launchpad: its partitions are the checkpoints awaiting a decision)."""

    approver: str
    decision: Literal["approve", "reject"] = "approve"
    note: str = ""


@dg.op(description="Record a reviewer's decision on a checkpoint; it is promoted once approved after a passing scan.")
def record_approval_op(
    context: dg.OpExecutionContext, config: ApprovalConfig, artifacts: ArtifactStoreResource
) -> None:
    model_id = context.partition_key
    try:
        status = approve_checkpoint(
            model_id,
            paths=TrainingPaths(artifacts.base()),
            approver=config.approver,
            decision=config.decision,
            note=config.note,
        )
    except (TrainingError, ValueError) as error:
        raise dg.Failure(str(error)) from error
    # Decided: no longer offered (a later change of mind goes through `secverify approve`).
    context.instance.delete_dynamic_partition(AWAITING_APPROVAL_PARTITION, model_id)
    context.log.info(f"{model_id}: {config.decision} by {config.approver}; promoted={status.promoted}")


@dg.job(
    partitions_def=awaiting_approval_partitions,
    description="A reviewer approves (or rejects) a checkpoint whose safety scan passed: pick it among the job's "
    "partitions (the checkpoints awaiting a decision), then who and why.",
)
def approve_checkpoint_job() -> None:
    record_approval_op()


def training_definitions(
    envs: Sequence[Environment], recipes: Sequence[SftRecipe | RlftRecipe]
) -> tuple[list[dg.AssetsDefinition], list[dg.AssetChecksDefinition]]:
    """Every training asset and check: the base models recipes start from, an SFT dataset per environment, and per
    recipe its checkpoint, the checkpoint's evals, its learning curve and its safety scan."""
    settings = load_sft_dataset_settings()
    assets = base_model_assets(recipes)
    assets += [build_sft_dataset_asset(env, settings.for_env(env.env_id), settings.review) for env in envs]
    assets += [build_checkpoint_asset(recipe) for recipe in recipes]
    assets += [build_checkpoint_evals_asset(recipe) for recipe in recipes]
    assets += [build_learning_curve_asset(recipe) for recipe in recipes]
    return assets, [build_safety_check(recipe) for recipe in recipes]
