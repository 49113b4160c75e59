"""What a training run trains on: an SFT recipe's examples, an RLFT recipe's prompt rows, and the data slices of the
experiment record a run is made from (its curated splits, its reviewed synthetic batches, its labels)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from secverify_dagster.runner.datasets import select_items
from secverify_dagster.training.paths import TrainingError, TrainingPaths, curated
from secverify_dagster.training.settings import load_sft_dataset_settings
from sv_shared.config.experiments import DataSlices
from sv_shared.contracts import CompletionVerifier, Environment
from sv_shared.data.datasets import read_dataset
from sv_shared.data.hashing import frame_hash
from sv_shared.data.review_batches import ITEMS_FILE, batches_root, find_batch
from sv_shared.runs.schema import ExperimentRef
from sv_shared.training.recipes import Recipe, RlftRecipe, SftRecipe
from sv_shared.training.rewards import grpo_prompt_rows
from sv_shared.training.sft_data import SYNTHETIC_PREFIX
from sv_shared.training.sft_files import SftExample, read_sft_dataset
from sv_shared.training.synthetic_gate import gate_batches

if TYPE_CHECKING:
    from sv_shared.training.early_stopping import DevProbe


@dataclass(frozen=True)
class ExperimentInputs:
    """What an experiment record (sv_shared.config.experiments) makes of a training run: the recipe with its
    overrides and reward change applied, the data slices of its environment, and the record's ref for the manifest."""

    ref: ExperimentRef
    env_id: str
    recipe: SftRecipe | RlftRecipe
    slices: DataSlices


def _kept_batches(env_id: str, examples: Sequence[SftExample], batches: Sequence[str]) -> list[SftExample]:
    """An experiment's SFT examples: every reference and teacher example, and the named batches' only. A named batch
    with no example in the dataset (its spot-check had not passed when the dataset was built) is an error."""
    sources = {SYNTHETIC_PREFIX + batch for batch in batches}
    missing = sorted(source for source in sources if not any(example.source == source for example in examples))
    if missing:
        raise TrainingError(
            f"{env_id}: the SFT dataset has no example of {', '.join(missing)}: review the batch "
            f"(secverify review) and materialize {env_id}/sft_dataset again"
        )
    return [
        example for example in examples if not example.source.startswith(SYNTHETIC_PREFIX) or example.source in sources
    ]


def sft_examples(
    recipe: SftRecipe, paths: TrainingPaths, experiment: ExperimentInputs | None = None
) -> tuple[list[SftExample], dict[str, str]]:
    """The recipe's environments' SFT examples at or above its min_reward, and each dataset's hash. An experiment
    keeps of its environment's synthetic batches only those its data slices name."""
    examples: list[SftExample] = []
    hashes: dict[str, str] = {}
    for env_id in recipe.envs:
        folder = paths.sft_dataset(env_id)
        if not (folder / "manifest.json").is_file():
            raise TrainingError(f"{env_id}: no SFT dataset at {folder}; materialize {env_id}/sft_dataset first")
        dataset = read_sft_dataset(folder)
        hashes[f"{env_id}/sft_dataset"] = dataset.provenance["dataset_hash"]
        chosen = list(dataset.examples)
        if experiment is not None and experiment.env_id == env_id:
            chosen = _kept_batches(env_id, chosen, experiment.slices.synthetic_batches)
        examples.extend(example for example in chosen if example.reward >= recipe.min_reward)
    if not examples:
        raise TrainingError(f"SFT recipe {recipe.name}: no example reaches min_reward {recipe.min_reward}")
    return examples, hashes


def rlft_rows(
    envs: Mapping[str, Environment],
    recipe: RlftRecipe,
    paths: TrainingPaths,
    slices: Mapping[str, DataSlices] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Prompt rows from each environment's curated train split, or the data slices an experiment gives it (the same
    seeded items every run), and the hash of every frame they came from."""
    rows: list[dict[str, Any]] = []
    data: dict[str, str] = {}
    for env_id, env in envs.items():
        pool, hashes = sliced_items(env, paths, (slices or {}).get(env_id, DataSlices()))
        items = select_items(env, pool, recipe.items_per_env, recipe.seed)
        data.update(hashes)
        rows.extend(grpo_prompt_rows(env, items))
    return rows, data


def sliced_items(env: Environment, paths: TrainingPaths, slices: DataSlices) -> tuple[pl.DataFrame, dict[str, str]]:
    """The items of the slices' curated splits and synthetic batches (a batch item whose content is in a split the
    run does not train on is dropped: those are what checkpoints are measured on), kept to the slices' labels."""
    env_id = env.env_id
    frames: list[pl.DataFrame] = []
    hashes: dict[str, str] = {}
    for split in slices.splits:
        frame = curated(paths, env_id, split)
        frames.append(frame)
        hashes[f"{env_id}/curated/{split}"] = frame_hash(frame)
    held_out = {
        *curated(paths, env_id, "test")["content_hash"],
        *([] if "dev" in slices.splits else curated(paths, env_id, "dev")["content_hash"]),
    }
    root = batches_root(paths.root / "datasets", env_id)
    named = [find_batch(root, batch_id) for batch_id in slices.synthetic_batches]
    # A batch goes into training only once its human spot-check passed, or an override names it (as for SFT).
    gate = gate_batches(named, load_sft_dataset_settings().review, slices.override_review)
    if failed := gate.provenance["dropped_batches"]:
        raise TrainingError(
            f"{env_id}: synthetic batch {failed[0]['batch']} is not used for training: {failed[0]['reason']} "
            "(review it with `secverify review`, or name it under data.override_review with a reason)"
        )
    for batch in named:
        items = env.data.validate(read_dataset(batch.path / ITEMS_FILE))
        hashes[f"{env_id}/batches/{batch.batch_id}"] = frame_hash(items)
        frames.append(items.filter(~pl.col("content_hash").is_in(list(held_out))))
    pool = pl.concat(frames, how="diagonal_relaxed").unique(subset=[env.data.id_column], keep="first")
    if slices.labels is not None:
        pool = pool.filter(pl.col(env.data.label_column).cast(pl.String).is_in(slices.labels))
    if pool.is_empty():
        raise TrainingError(f"{env_id}: the data slices leave no item to train on ({slices.model_dump()})")
    return pool, hashes


def dev_probes(recipe: Recipe, envs: Mapping[str, Environment], paths: TrainingPaths) -> list[DevProbe]:
    """Each environment's seeded dev sample for early stopping (recipe.early_stopping.dev_items of its curated dev
    split), posed as the environment poses an eval item, with its verifier and token budget. The environments should
    be the unshaped ones: a run stops on the reward the project reports, whatever reward it trains on."""
    if recipe.early_stopping is None:
        return []
    from sv_shared.training.early_stopping import DevProbe

    probes = []
    for env_id in recipe.envs:
        env = envs[env_id]
        if not isinstance(env.verifier, CompletionVerifier):
            raise TrainingError(f"recipe {recipe.name}: early stopping scores single answers; {env_id} has none")
        rows = select_items(env, curated(paths, env_id, "dev"), recipe.early_stopping.dev_items, recipe.seed)
        probes.append(
            DevProbe(
                env_id=env_id,
                items=rows,
                prompts=[env.episodes.messages(item) for item in rows],
                verifier=env.verifier,
                label_column=env.data.label_column if env.verifier.answers_are_labels else None,
                max_new_tokens=env.config.generation.max_tokens,
            )
        )
    return probes
