"""Synthetic batch assets (E1–E4): candidates sampled from a registry model over a temperature sweep, kept when the
environment's verifier agrees, with a seeded 5% of the kept examples queued for a human spot-check:
`outputs/datasets/<env>/batches/<batch id>/`."""

import dagster as dg
from pydantic import Field

from secverify_dagster.assets.keys import curated_key, eval_run_writers, synthetic_batch_key, synthetic_key
from secverify_dagster.research.synthetic_batches import (
    BatchRequest,
    ItemSlice,
    SyntheticBatchError,
    artifact_source,
    build_synthetic_batch,
    failed_in_run,
)
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource, ModelRegistryResource
from secverify_dagster.training.settings import load_sft_dataset_settings
from sv_shared.contracts import CompletionVerifier, Environment
from sv_shared.data.review import ReviewError
from sv_shared.training.batch_items import ItemSliceError


class SyntheticBatchConfig(dg.Config):
    """What to sample: the model, the temperature sweep, samples per item and temperature, how many items, the
    reward a kept example needs, and optionally the failures of an eval run to target (by triage category)."""

    model: str = "smollm2-135m-instruct"
    temperatures: list[float] = Field(default_factory=lambda: [0.3, 0.7, 1.0])
    samples_per_temperature: int = 2
    n_items: int = 20
    min_reward: float | None = None
    """Default: the environment's min_reward in configs/sft_datasets.yaml (what an SFT target must earn)."""
    source: str = "synthetic"
    """"synthetic" (the latest synthetic set) or "curated-train" (the curated train split)."""
    items_from_run: str | None = None
    categories: list[str] = Field(default_factory=lambda: ["format", "reasoning"])
    seed: int = 42


_DEFAULT = SyntheticBatchConfig()
"""What a materialization without config samples (the asset's description says it)."""


def build_synthetic_batch_asset(env: Environment) -> dg.AssetsDefinition:
    env_id = env.env_id

    @dg.asset(
        key=synthetic_batch_key(env_id),
        group_name=env_id,
        # A targeted batch reads an eval run's failures: the eval writers are declared so lineage shows it (the
        # checkpoints' evals are downstream of a batch, through the SFT dataset: a run of theirs is read all the same).
        deps=[curated_key(env_id), synthetic_key(env_id), *eval_run_writers(env_id, checkpoint_evals=False)],
        kinds={"python", "jsonl"},
        description=f"{env.name}: candidate completions sampled from a registry model over a temperature sweep, "
        "schema-checked and scored by the verifier, kept when it agrees with the gold; a seeded 5% of the kept "
        f"examples queued for review: `outputs/datasets/{env_id}/batches/<batch id>/`. Expensive: by default it "
        f"generates {_DEFAULT.n_items * len(_DEFAULT.temperatures) * _DEFAULT.samples_per_temperature} completions "
        f"with {_DEFAULT.model} in this step's process ({_DEFAULT.n_items} items × {len(_DEFAULT.temperatures)} "
        f"temperatures × {_DEFAULT.samples_per_temperature} samples: minutes for a local model on a CPU); its config "
        "names another model or a smaller sweep.",
    )
    def synthetic_batch(
        context: dg.AssetExecutionContext,
        config: SyntheticBatchConfig,
        models: ModelRegistryResource,
        artifacts: ArtifactStoreResource,
    ) -> dg.MaterializeResult:
        reach = models.reachability(config.model, env_id, list(env.baselines))
        if not reach.ok:
            raise dg.Failure(f"{config.model} cannot sample {env_id} here: {reach.reason}")
        sft_settings = load_sft_dataset_settings()
        generations = config.n_items * len(config.temperatures) * config.samples_per_temperature
        context.log.info(
            f"{env_id} synthetic batch: up to {generations} generations with {config.model} "
            f"({models.spec(config.model).provider}): {config.n_items} items × {len(config.temperatures)} temperatures "
            f"× {config.samples_per_temperature} samples"
        )
        cache = artifacts.response_cache()
        try:
            failed = (
                failed_in_run(env, artifacts.evals(), config.items_from_run, config.categories)
                if config.items_from_run
                else None
            )
            outcome = build_synthetic_batch(
                env,
                models.spec(config.model),
                artifact_source(env, config.source, artifacts.datasets(env_id)),
                BatchRequest(
                    temperatures=tuple(config.temperatures),
                    samples_per_temperature=config.samples_per_temperature,
                    n_items=config.n_items,
                    min_reward=(
                        config.min_reward if config.min_reward is not None else sft_settings.for_env(env_id).min_reward
                    ),
                    seed=config.seed,
                    review_share=sft_settings.review.sample_share,
                    review_seed=sft_settings.review.seed,
                ),
                datasets_root=artifacts.base() / "datasets",
                item_slice=ItemSlice(failed=failed),
                cache=cache,
                on_lock_wait=lambda holder: context.log.info(f"waiting for {holder}, building this batch"),
            )
        except (SyntheticBatchError, ItemSliceError, ReviewError, FileNotFoundError) as error:
            raise dg.Failure(f"{env_id} synthetic batch: {error}") from error
        finally:
            cache.close()
        if outcome.status != "complete":
            raise dg.Failure(
                f"{env_id} synthetic batch {outcome.batch_dir.name} is incomplete (samples failed; their errors are in "
                f"{outcome.batch_dir / 'samples'}); materialize again to resume it"
            )
        info = outcome.info
        counts = info["counts"]
        context.log.info(f"batch {outcome.batch_dir}: kept {counts['kept']} of {counts['candidates']} candidates")
        return dg.MaterializeResult(
            data_version=dg.DataVersion(outcome.batch_dir.name),
            metadata={
                "path": dg.MetadataValue.path(str(outcome.batch_dir)),
                "batch_id": outcome.batch_dir.name,
                "model": config.model,
                "items": info["items"]["count"],
                "candidates": counts["candidates"],
                "kept": counts["kept"],
                "dropped": dg.MetadataValue.json(counts["dropped"]),
                "by_temperature": dg.MetadataValue.json(counts["by_temperature"]),
                "review_queue_size": info["review_queue"]["size"],
                "source_run_ids": dg.MetadataValue.json(info["source_run_ids"]),
            },
        )

    return synthetic_batch


def build_synthetic_batch_assets(environments: list[Environment]) -> list[dg.AssetsDefinition]:
    """One batch asset per environment whose verifier scores single completions (E1–E4); dialogue environments
    (E5, E6) get their SFT examples from teacher dialogues instead."""
    return [build_synthetic_batch_asset(env) for env in environments if isinstance(env.verifier, CompletionVerifier)]
