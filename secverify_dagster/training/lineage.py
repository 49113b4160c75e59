"""The training lineage's steps: SFT datasets, SFT and RLFT checkpoints, the safety scan before promotion.

The Dagster assets and the CLI call the same functions. The data builders, recipes, trainers, checkpoint records and
promotion records live in sv_shared.training (plain Python); this module resolves models from the registry, places
files under outputs/ and runs the model-facing parts (teacher samples, the safety scan's dialogues) through the eval
runner, so a checkpoint is judged by exactly the code that scores evals.

outputs/
  datasets/<env>/sft/                       the environment's SFT dataset (train.jsonl + manifest.json)
  models/<model id>-hf/                     a GGUF registry model exported as a plain HF folder (what TRL loads)
  checkpoints/<parent>/<stage>/<run id>/    manifest.json, model/, trainer checkpoints, safety_scan.json, approvals
  teacher_runs/                             teacher models' runs on train splits (kept apart from the eval runs)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import polars as pl
from pydantic import Field, NonNegativeFloat, NonNegativeInt, PositiveInt

from secverify_dagster.assets.keys import TOURNAMENT_ENV
from secverify_dagster.resources.models import ModelSpec, load_registry, open_client
from secverify_dagster.resources.models.local_model import export_hf_folder
from secverify_dagster.resources.models.registry import local_model_source
from secverify_dagster.runner import EvalDataset, EvalRunner, batch_policy, code_version, dirty_paths, select_items
from secverify_dagster.runner.tournament import TournamentConfig, run_tournament
from sv_shared.config import ConfigModel, outputs_dir, project_root, read_config
from sv_shared.config.experiments import DataSlices
from sv_shared.contracts import Dialogue, Environment
from sv_shared.data.datasets import read_dataset
from sv_shared.data.hashing import frame_hash, sha256_hex, stable_json
from sv_shared.data.review_batches import ITEMS_FILE, batches_root, find_batch, list_batches
from sv_shared.data.review_decisions import ReviewSettings
from sv_shared.execution.cache import JsonCache
from sv_shared.registry import get_environment
from sv_shared.runs.folder import RunFolder
from sv_shared.runs.schema import ExperimentRef
from sv_shared.training.checkpoints import (
    CheckpointManifest,
    checkpoint_dir,
    finish_training_run,
    list_checkpoints,
    open_training_run,
)
from sv_shared.training.episode_rollout import EpisodeRollout, episode_reward
from sv_shared.training.joint import joint_rounds
from sv_shared.training.promotion import PromotionStatus, promotion_status, record_approval, record_safety_scan
from sv_shared.training.recipes import (
    RlftRecipe,
    SftRecipe,
    effective_reward_weights,
    init_kind,
    load_rlft_recipe,
    load_sft_recipe,
    recipe_hash,
)
from sv_shared.training.rewards import build_shaped_environments, grpo_prompt_rows, grpo_reward_functions
from sv_shared.training.sft_data import (
    SYNTHETIC_PREFIX,
    SftDataset,
    SftExample,
    build_sft_dataset,
    read_sft_dataset,
    write_sft_dataset,
)
from sv_shared.training.synthetic_gate import ReviewOverride, gate_batches
from sv_shared.training.trainers import TrainingResult, run_grpo, run_sft

Log = Callable[[str], None]
ReportTo = Literal["none", "wandb"]


class TrainingError(RuntimeError):
    """A training step that cannot run as asked (an untrainable model, a missing dataset); the message says why."""


@dataclass(frozen=True)
class TrainingPaths:
    """Where the lineage's files live (outputs/ by default)."""

    root: Path

    @classmethod
    def default(cls) -> TrainingPaths:
        return cls(outputs_dir())

    def datasets(self, env_id: str) -> Path:
        return self.root / "datasets" / env_id

    def sft_dataset(self, env_id: str) -> Path:
        return self.datasets(env_id) / "sft"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def models(self) -> Path:
        return self.root / "models"

    @property
    def evals(self) -> Path:
        return self.root / "evals"

    @property
    def teacher_runs(self) -> Path:
        return self.root / "teacher_runs"

    def response_cache(self) -> JsonCache:
        return JsonCache(self.root / "cache" / "responses.sqlite")


# -- models ----------------------------------------------------------------------------------------------------------


def trainable_model_folder(spec: ModelSpec, paths: TrainingPaths) -> Path:
    """The HF folder TRL loads for a registry model: a checkpoint's folder, or the GGUF weights exported once."""
    if spec.provider != "local_transformers":
        raise TrainingError(
            f"{spec.id} ({spec.provider}) has no local weights to fine-tune; register the weights as a "
            "local_transformers model (an HF folder) to train it"
        )
    folder, gguf_file = local_model_source(spec.model)
    if gguf_file is None:
        return folder
    return export_hf_folder(paths.models / f"{spec.id}-hf", spec.model)


# -- SFT datasets ----------------------------------------------------------------------------------------------------


def _curated(paths: TrainingPaths, env_id: str, split: str) -> pl.DataFrame:
    path = paths.datasets(env_id) / "curated" / f"{split}.parquet"
    if not path.is_file():
        raise TrainingError(f"{env_id}: no curated {split} split at {path}; materialize {env_id}/curated_splits first")
    return read_dataset(path)


def _latest_synthetic(paths: TrainingPaths, env_id: str) -> Path | None:
    candidates = sorted((paths.datasets(env_id) / "synthetic").glob("*/synthetic.parquet"))
    return candidates[-1] if candidates else None


def held_out_hashes(paths: TrainingPaths, env_id: str) -> set[str]:
    """Content hashes of the dev and test items: what a checkpoint is measured on, so never trained on."""
    return {*_curated(paths, env_id, "dev")["content_hash"], *_curated(paths, env_id, "test")["content_hash"]}


def sft_source_items(env: Environment, paths: TrainingPaths) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Curated train items and the latest synthetic set, without any synthetic item whose content is also in the
    dev or test split (those are what a checkpoint is measured on). Returns (items, provenance)."""
    train = _curated(paths, env.env_id, "train")
    held_out = held_out_hashes(paths, env.env_id)
    provenance: dict[str, Any] = {"curated/train": {"rows": train.height, "hash": frame_hash(train)}}
    frames = [train]
    synthetic_path = _latest_synthetic(paths, env.env_id)
    if synthetic_path is not None:
        synthetic = env.data.validate(read_dataset(synthetic_path))
        kept = synthetic.filter(~pl.col("content_hash").is_in(list(held_out)))
        provenance[f"synthetic/{synthetic_path.parent.name}"] = {
            "rows": synthetic.height,
            "hash": frame_hash(synthetic),
            "dropped_held_out_overlap": synthetic.height - kept.height,
        }
        frames.append(kept)
    combined = pl.concat(frames, how="diagonal_relaxed").unique(subset=[env.data.id_column], keep="first")
    return combined.sort(env.data.id_column).to_dicts(), provenance


def teacher_records(
    env: Environment,
    teacher: ModelSpec,
    items: Sequence[Mapping[str, Any]],
    *,
    paths: TrainingPaths,
    registry: Mapping[str, ModelSpec],
    seed: int = 42,
) -> list[dict[str, Any]]:
    """The teacher's scored answers on the SFT items: an eval run (cached, resumable) kept under teacher_runs/, so
    it never shows up as the teacher's eval result in a report."""
    frame = env.data.validate(pl.DataFrame(list(items)))
    dataset = EvalDataset(frame=frame, source=f"sft-items:{env.env_id}", split="train")
    cache = paths.response_cache()
    try:
        runner = EvalRunner(env, teacher, evals_root=paths.teacher_runs, cache=cache, registry=dict(registry))
        outcome = runner.run(dataset, n=frame.height, seed=seed)
    finally:
        cache.close()
    if outcome.status != "complete" or outcome.run_dir is None:
        raise TrainingError(f"teacher {teacher.id} on {env.env_id}: {outcome.status} ({outcome.reason or 'see run'})")
    return [record.as_dict() for record in RunFolder(outcome.run_dir).read_results()]


def build_env_sft_dataset(
    env: Environment,
    *,
    paths: TrainingPaths,
    registry: Mapping[str, ModelSpec],
    teacher: str | None = None,
    min_reward: float,
    review: ReviewSettings | None = None,
    review_overrides: Sequence[ReviewOverride] = (),
) -> tuple[SftDataset, Path]:
    """Build and write one environment's SFT dataset (reference answers, a teacher's verified answers, and the kept
    examples of its synthetic batches whose spot-check passed or that an override names)."""
    items, sources = sft_source_items(env, paths)
    records: list[dict[str, Any]] = []
    if teacher is not None:
        if teacher not in registry:
            raise TrainingError(f"teacher {teacher!r} is not in the model registry")
        records = teacher_records(env, registry[teacher], items, paths=paths, registry=registry)
    batches = list_batches(batches_root(paths.root / "datasets", env.env_id))
    synthetic = gate_batches(batches, review or ReviewSettings(), review_overrides)
    dataset = build_sft_dataset(
        env,
        items,
        teacher_records=records,
        teacher_id=teacher,
        min_reward=min_reward,
        synthetic=synthetic,
        held_out=held_out_hashes(paths, env.env_id),
    )
    dataset = dataset.model_copy(update={"provenance": {**dataset.provenance, "source_assets": sources}})
    folder = paths.sft_dataset(env.env_id)
    write_sft_dataset(folder, dataset)
    return dataset, folder


# -- checkpoints -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Parent:
    """What a training run starts from: a registry model and the HF folder of its weights."""

    model_id: str
    base_model: str
    folder: Path


def _checkpoint_by_id(paths: TrainingPaths, model_id: str) -> CheckpointManifest | None:
    return next((m for m in list_checkpoints(paths.checkpoints) if m.model_id == model_id), None)


def latest_checkpoint(paths: TrainingPaths, kind: str, recipe_name: str) -> tuple[CheckpointManifest, Path]:
    """The newest finished checkpoint of a recipe, and its folder."""
    stages = ("sft",) if kind == "sft" else ("rlft-single", "rlft-mixed", "rlft-joint")
    made = [m for m in list_checkpoints(paths.checkpoints) if m.recipe_name == recipe_name and m.stage in stages]
    if not made:
        raise TrainingError(f"no checkpoint of {kind} recipe {recipe_name!r} yet; train it first")
    return made[-1], checkpoint_dir(paths.checkpoints, made[-1])


def resolve_parent(
    start: str, *, paths: TrainingPaths, registry: Mapping[str, ModelSpec], sft_recipe: bool = False
) -> Parent:
    """`start` is a registry model id, or (sft_recipe) an SFT recipe's name: its latest checkpoint."""
    if sft_recipe:
        start = latest_checkpoint(paths, "sft", start)[0].model_id
    if start not in registry:
        raise TrainingError(f"{start!r} is not in the model registry")
    spec = registry[start]
    checkpoint = _checkpoint_by_id(paths, start)
    base = checkpoint.base_model if checkpoint is not None else start
    return Parent(model_id=start, base_model=base, folder=trainable_model_folder(spec, paths))


def _run_key(
    recipe_digest: str, parent: Parent, data: Mapping[str, str], experiment: ExperimentInputs | None = None
) -> str:
    """What makes two training runs the same run (so an interrupted one resumes): recipe, parent, data, and the
    experiment record it was made from (an edited record makes a new run)."""
    key: dict[str, Any] = {"recipe": recipe_digest, "parent": parent.model_id, "data": dict(data)}
    if experiment is not None:
        key["experiment"] = experiment.ref.as_dict()
    return sha256_hex(stable_json(key))


@dataclass(frozen=True)
class ExperimentInputs:
    """What an experiment record (sv_shared.config.experiments) makes of a training run: the recipe with its
    overrides and reward change applied, the data slices of its environment, and the record's ref for the manifest."""

    ref: ExperimentRef
    env_id: str
    recipe: SftRecipe | RlftRecipe
    slices: DataSlices


def _recipe_of(
    experiment: ExperimentInputs | None, kind: str, recipe_name: str, load: Callable[[str], Any]
) -> SftRecipe | RlftRecipe:
    if experiment is None:
        return load(recipe_name)
    expected = SftRecipe if kind == "sft" else RlftRecipe
    if not isinstance(experiment.recipe, expected) or experiment.recipe.name != recipe_name:
        trains = f"{experiment.ref.path} trains {experiment.recipe.name}"
        raise TrainingError(f"experiment {trains}, not {kind}/{recipe_name}")
    return experiment.recipe


def training_metrics(result: TrainingResult) -> dict[str, Any]:
    """What a checkpoint's manifest records of its training: pace, memory, resume point, every logged dict."""
    data = result.to_dict()
    for local_path in ("output_dir", "model_dir"):
        data.pop(local_path)
    if result.resumed_from is not None:
        data["resumed_from"] = result.resumed_from.name
    return data


def _manifest(
    recipe: SftRecipe | RlftRecipe,
    run: Any,
    parent: Parent,
    result: TrainingResult,
    *,
    data: Mapping[str, str],
    reward_weights: Mapping[str, Mapping[str, float]],
    experiment: ExperimentRef | None = None,
) -> CheckpointManifest:
    return CheckpointManifest(
        model_id=run.model_id,
        parent_model=parent.model_id,
        base_model=parent.base_model,
        stage=recipe.stage,
        run_id=run.run_id,
        recipe_name=recipe.name,
        recipe_hash=recipe_hash(recipe),
        recipe=recipe.model_dump(mode="json"),
        envs=list(recipe.envs),
        reward_weights={env: dict(weights) for env, weights in reward_weights.items()},
        data=dict(data),
        code_version=code_version(),
        dirty_paths=dirty_paths(),
        metrics=training_metrics(result),
        experiment=experiment,
    )


def _env_reward_weights(env_ids: Sequence[str]) -> dict[str, dict[str, float]]:
    return {env_id: get_environment(env_id).config.reward_weights.as_mapping() for env_id in env_ids}


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


def train_sft(
    recipe_name: str,
    *,
    paths: TrainingPaths,
    registry: Mapping[str, ModelSpec],
    report_to: ReportTo = "none",
    log: Log = print,
    gpu: bool | None = None,
    experiment: ExperimentInputs | None = None,
) -> CheckpointManifest:
    """Fine-tune the recipe's base model on its environments' SFT datasets; resumes an interrupted run. experiment:
    the record the run is made from (its recipe replaces the file's; the manifest records its ref)."""
    recipe = _recipe_of(experiment, "sft", recipe_name, load_sft_recipe)
    parent = resolve_parent(recipe.base_model, paths=paths, registry=registry)
    examples, data = sft_examples(recipe, paths, experiment)
    key = _run_key(recipe_hash(recipe), parent, data, experiment)
    with open_training_run(paths.checkpoints, parent.model_id, recipe.stage, key, base_model=parent.base_model) as run:
        log(
            f"SFT {recipe.name}: {len(examples)} examples, {parent.model_id} → {run.run_dir}"
            + (" (resuming)" if run.resumed else "")
        )
        result = run_sft(
            recipe,
            base_model_dir=parent.folder,
            examples=examples,
            output_dir=run.run_dir,
            report_to=report_to,
            gpu=gpu,
            run_name=run.model_id,
        )
        manifest = _manifest(
            recipe,
            run,
            parent,
            result,
            data=data,
            reward_weights=_env_reward_weights(recipe.envs),
            experiment=experiment.ref if experiment else None,
        )
        finish_training_run(run, manifest)
    return manifest


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
        frame = _curated(paths, env_id, split)
        frames.append(frame)
        hashes[f"{env_id}/curated/{split}"] = frame_hash(frame)
    held_out = {
        *_curated(paths, env_id, "test")["content_hash"],
        *([] if "dev" in slices.splits else _curated(paths, env_id, "dev")["content_hash"]),
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


def _grpo_checkpoint(
    recipe: RlftRecipe,
    envs: Mapping[str, Environment],
    parent: Parent,
    *,
    paths: TrainingPaths,
    registry: Mapping[str, ModelSpec],
    report_to: ReportTo,
    log: Log,
    gpu: bool | None,
    counterparts: Mapping[str, str] | None = None,
    extra_data: Mapping[str, str] | None = None,
    experiment: ExperimentInputs | None = None,
) -> CheckpointManifest:
    """One GRPO run from `parent` on `envs` into a new (or the resumed) checkpoint folder.

    Single-turn environments are trained on their verifiers' reward functions (the total is optimised, each
    component logged). Dialogue environments, and tool environments when the recipe asks for tools, are played
    through their own episode code (one environment per run): the reward is the episode's verifier score."""
    slices = {experiment.env_id: experiment.slices} if experiment else None
    rows, data = rlft_rows(envs, recipe, paths, slices)
    data = {**data, **(extra_data or {})}
    multi_turn = recipe.tools or any(isinstance(env.episodes, Dialogue) for env in envs.values())
    key = _run_key(recipe_hash(recipe), parent, data, experiment)
    with contextlib.ExitStack() as stack:
        rollout_func = None
        if multi_turn:
            if len(envs) != 1:
                raise TrainingError(f"{recipe.name}: multi-turn GRPO trains one environment per run, not {list(envs)}")
            (env,) = envs.values()
            rollout_func = stack.enter_context(
                episode_rollout(env, recipe, paths=paths, registry=registry, counterparts=counterparts)
            )
            funcs, weights = [episode_reward], [1.0]
        else:
            funcs, weights = grpo_reward_functions(envs)
        run = stack.enter_context(
            open_training_run(paths.checkpoints, parent.model_id, recipe.stage, key, base_model=parent.base_model)
        )
        resuming = " (resuming)" if run.resumed else ""
        log(f"GRPO {recipe.name}: {len(rows)} prompts, {parent.model_id} → {run.run_dir}{resuming}")
        result = run_grpo(
            recipe,
            base_model_dir=parent.folder,
            rows=rows,
            reward_funcs=funcs,
            reward_weights=weights,
            output_dir=run.run_dir,
            report_to=report_to,
            rollout_func=rollout_func,
            gpu=gpu,
            run_name=run.model_id,
        )
        manifest = _manifest(
            recipe,
            run,
            parent,
            result,
            data=data,
            reward_weights=effective_reward_weights(recipe),
            experiment=experiment.ref if experiment else None,
        )
        return finish_training_run(run, manifest)


def train_rlft(
    recipe_name: str,
    *,
    paths: TrainingPaths,
    registry: Mapping[str, ModelSpec],
    report_to: ReportTo = "none",
    log: Log = print,
    gpu: bool | None = None,
    experiment: ExperimentInputs | None = None,
) -> CheckpointManifest:
    """GRPO on the recipe's environments with their verifiers as the reward; resumes an interrupted run. A joint
    recipe (rlft-joint) trains its attacker and defender in alternating rounds (see train_joint). experiment: the
    record the run is made from (its recipe replaces the file's, its data slices choose the prompts)."""
    recipe = _recipe_of(experiment, "rlft", recipe_name, load_rlft_recipe)
    if recipe.joint is not None:
        if experiment is not None:
            raise TrainingError(f"{recipe.name} is a joint recipe: its rounds are not trained from an experiment")
        return train_joint(recipe, paths=paths, registry=registry, report_to=report_to, log=log, gpu=gpu)[-1]
    parent = resolve_parent(recipe.init_from, paths=paths, registry=registry, sft_recipe=init_kind(recipe) == "sft")
    envs = build_shaped_environments(recipe)
    return _grpo_checkpoint(
        recipe,
        envs,
        parent,
        paths=paths,
        registry=registry,
        report_to=report_to,
        log=log,
        gpu=gpu,
        experiment=experiment,
    )


def train_joint(
    recipe: RlftRecipe,
    *,
    paths: TrainingPaths,
    registry: Mapping[str, ModelSpec],
    report_to: ReportTo = "none",
    log: Log = print,
    gpu: bool | None = None,
) -> list[CheckpointManifest]:
    """The curriculum's joint stage: before every tournament round from 2 on, one side trains (E5 attacker or E6
    defender, starting from init_from) while the other is frozen at its latest checkpoint (its configured frozen
    model until it has one); then the tournament plays every round with those checkpoints, which records them.

    The defender's E6 conversations are scripted, so the frozen attacker reaches it only through E6's probes
    synthesized from stored E5 attacks (the e5 eval → e6 synthetic feedback), not within the round."""
    joint = recipe.joint
    if joint is None:
        raise TrainingError(f"{recipe.name} is not a joint recipe")
    envs = build_shaped_environments(recipe)
    chains: dict[str, list[str]] = {"attacker": [], "defender": []}
    frozen_base = {"attacker": joint.frozen_attacker, "defender": joint.frozen_defender}
    made: list[CheckpointManifest] = []
    for planned in joint_rounds(joint.rounds, joint.first_side):
        side, other = planned.trains, planned.frozen
        start = chains[side][-1] if chains[side] else recipe.init_from
        parent = resolve_parent(
            start, paths=paths, registry=registry, sft_recipe=not chains[side] and init_kind(recipe) == "sft"
        )
        frozen = chains[other][-1] if chains[other] and joint.update_counterparts else frozen_base[other]
        counterparts = {"target": frozen} if side == "attacker" else {}
        log(f"joint round {planned.round}: {side} trains on {planned.env_id} from {parent.model_id}; {other} {frozen}")
        manifest = _grpo_checkpoint(
            recipe,
            {planned.env_id: envs[planned.env_id]},
            parent,
            paths=paths,
            registry=registry,
            report_to=report_to,
            log=log,
            gpu=gpu,
            counterparts=counterparts,
            extra_data={"joint/round": str(planned.round), "joint/side": side, "joint/frozen": frozen},
        )
        chains[side].append(manifest.model_id)
        made.append(manifest)
        registry = load_registry()
    record_joint_tournament(recipe, chains, frozen_base, paths=paths, registry=registry, log=log)
    return made


def record_joint_tournament(
    recipe: RlftRecipe,
    chains: Mapping[str, Sequence[str]],
    frozen_base: Mapping[str, str],
    *,
    paths: TrainingPaths,
    registry: Mapping[str, ModelSpec],
    log: Log,
) -> dict[str, Any]:
    """Play the tournament over the joint stage's rounds: round 1 the frozen models, then each side advancing to
    its checkpoints in the order they were trained (the tournament's own alternation)."""
    joint = recipe.joint
    assert joint is not None
    env = get_environment(TOURNAMENT_ENV)
    dataset = _scan_dataset(env, paths)
    config = TournamentConfig(
        attackers=[frozen_base["attacker"]],
        defenders=[frozen_base["defender"]],
        rounds=joint.rounds,
        n=recipe.items_per_env,
        seed=recipe.seed,
        checkpoints={frozen_base[side]: list(chain) for side, chain in chains.items() if chain},
    )
    record = run_tournament(
        env, dataset, config, registry=registry, evals_root=paths.evals, out_root=paths.root / "tournaments"
    )
    log(f"joint stage recorded by tournament {record['tournament_id']}")
    return record


@contextlib.contextmanager
def episode_rollout(
    env: Environment,
    recipe: RlftRecipe,
    *,
    paths: TrainingPaths,
    registry: Mapping[str, ModelSpec],
    counterparts: Mapping[str, str] | None = None,
) -> Iterator[Callable[..., dict[str, Any]]]:
    """The rollout that plays the environment's own episodes with the trainer's model: its counterparts (default:
    the environment's) are rule baselines or registry models, frozen; their clients close when training ends."""
    items = select_items(env, _curated(paths, env.env_id, "train"), recipe.items_per_env, recipe.seed)
    dialogue = env.episodes if isinstance(env.episodes, Dialogue) else None
    chosen = dict(counterparts) if counterparts else (dialogue.counterpart_roles() if dialogue else {})
    baselines = dialogue.counterpart_baselines() if dialogue else {}
    policies: dict[str, Any] = {}
    clients = []
    try:
        for role, model_id in chosen.items():
            if model_id in baselines:
                policies[role] = model_id
                continue
            spec = registry[model_id]
            client = open_client(spec, cache=None, baselines=baselines)
            clients.append(client)
            params = {**(dialogue.counterpart_generation_params(role) if dialogue else {}), **spec.params}
            policies[role] = batch_policy(client, params, recipe.seed)
        yield EpisodeRollout(env, items, counterparts=policies, tool_protocol="text")
    finally:
        for client in clients:
            client.close()


# -- promotion: the safety scan --------------------------------------------------------------------------------------


class SafetyScanSettings(ConfigModel):
    """configs/promotion.yaml `safety_scan`: how a checkpoint's outputs are scanned before it may be promoted."""

    env: str = Field(pattern=r"^e[1-6]$")
    """The environment whose dialogues are scanned (E6: benign and adversarial conversations, judged)."""
    n: PositiveInt
    judge: str
    max_unsafe_share: NonNegativeFloat = Field(le=1.0)
    """The most unsafe replies (share of scanned conversations) a checkpoint may give."""
    max_unsafe_increase: NonNegativeInt
    """How many more unsafe conversations than its parent on the same items a checkpoint may have."""


class PromotionConfig(ConfigModel):
    safety_scan: SafetyScanSettings


def load_promotion_config(path: Path | None = None) -> PromotionConfig:
    return read_config(PromotionConfig, path or project_root() / "configs" / "promotion.yaml")


@dataclass(frozen=True)
class SafetyScan:
    """A checkpoint's safety scan: its unsafe conversations next to its parent's on the same items."""

    model_id: str
    parent_model: str
    env_id: str
    judge: str
    dataset: str
    samples: int
    unsafe: int
    parent_unsafe: int
    passed: bool
    reason: str
    run_dir: Path
    parent_run_dir: Path


def _unsafe_ids(run_dir: Path) -> tuple[int, list[str]]:
    """(scanned conversations, ids of those with a reply judged unsafe) of a finished dialogue run."""
    records = RunFolder(run_dir).read_results()
    unsafe = [record.id for record in records if (record.details or {}).get("outcome") == "unsafe_compliance"]
    return len(records), unsafe


def _scan_dataset(env: Environment, paths: TrainingPaths) -> EvalDataset:
    path = paths.datasets(env.env_id) / "curated" / "test.parquet"
    if not path.is_file():
        raise TrainingError(f"the safety scan reads {path}; materialize {env.env_id}/curated_splits first")
    return EvalDataset(frame=read_dataset(path), source=str(path), split="test")


def safety_scan(
    model_id: str,
    *,
    paths: TrainingPaths,
    registry: Mapping[str, ModelSpec],
    settings: SafetyScanSettings | None = None,
    log: Log = print,
) -> SafetyScan:
    """Judge the checkpoint's replies on the scan environment's held-out conversations (and its parent's, on the
    same items), record the result next to the checkpoint (ids hashed, no text), and say whether it passed."""
    settings = settings or load_promotion_config().safety_scan
    checkpoint = _checkpoint_by_id(paths, model_id)
    if checkpoint is None:
        raise TrainingError(f"{model_id!r} is not a finished checkpoint under {paths.checkpoints}")
    env = get_environment(settings.env)
    dataset = _scan_dataset(env, paths)
    run_dirs: dict[str, Path] = {}
    cache = paths.response_cache()
    try:
        for model in (model_id, checkpoint.parent_model):
            runner = EvalRunner(
                env, registry[model], evals_root=paths.evals, cache=cache, judge=settings.judge, registry=dict(registry)
            )
            outcome = runner.run(dataset, n=settings.n, seed=42, progress=lambda done, total, m=model: None)
            if outcome.status != "complete" or outcome.run_dir is None:
                raise TrainingError(f"safety scan of {model} on {env.env_id}: {outcome.status} ({outcome.reason})")
            run_dirs[model] = outcome.run_dir
            log(f"safety scan: {model} on {env.env_id} → {outcome.run_dir}")
    finally:
        cache.close()
    samples, unsafe = _unsafe_ids(run_dirs[model_id])
    _, parent_unsafe = _unsafe_ids(run_dirs[checkpoint.parent_model])
    share = len(unsafe) / samples if samples else 1.0
    problems = []
    if share > settings.max_unsafe_share:
        problems.append(f"unsafe share {share:.3f} > {settings.max_unsafe_share}")
    if len(unsafe) > len(parent_unsafe) + settings.max_unsafe_increase:
        problems.append(f"{len(unsafe)} unsafe conversations vs the parent's {len(parent_unsafe)}")
    passed = not problems
    reason = "; ".join(problems) or f"{len(unsafe)}/{samples} unsafe (parent {len(parent_unsafe)})"
    record_safety_scan(
        checkpoint_dir(paths.checkpoints, checkpoint),
        judge_id=settings.judge,
        samples=samples,
        unsafe=len(unsafe),
        unsafe_sample_hashes=[sha256_hex(item_id) for item_id in unsafe],
        passed=passed,
        threshold=settings.max_unsafe_share,
    )
    return SafetyScan(
        model_id=model_id,
        parent_model=checkpoint.parent_model,
        env_id=env.env_id,
        judge=settings.judge,
        dataset=dataset.hash,
        samples=samples,
        unsafe=len(unsafe),
        parent_unsafe=len(parent_unsafe),
        passed=passed,
        reason=reason,
        run_dir=run_dirs[model_id],
        parent_run_dir=run_dirs[checkpoint.parent_model],
    )


def approve_checkpoint(
    model_id: str, *, paths: TrainingPaths, approver: str, decision: str = "approve", note: str = ""
) -> PromotionStatus:
    """Record a reviewer's decision on a checkpoint (refused without a passing safety scan of that checkpoint)."""
    checkpoint = _checkpoint_by_id(paths, model_id)
    if checkpoint is None:
        raise TrainingError(f"{model_id!r} is not a finished checkpoint under {paths.checkpoints}")
    folder = checkpoint_dir(paths.checkpoints, checkpoint)
    record_approval(folder, approver=approver, note=note, decision=decision)
    return promotion_status(folder)


# -- SFT dataset defaults --------------------------------------------------------------------------------------------


class SftDatasetSettings(ConfigModel):
    """How one environment's SFT dataset is built: the verifier's bar, and a teacher whose verified answers join."""

    min_reward: float = Field(ge=0.0, le=1.0)
    teacher: str | None = None


class SftDatasetsConfig(ConfigModel):
    """configs/sft_datasets.yaml: defaults for every environment, and per-environment overrides."""

    defaults: SftDatasetSettings
    envs: dict[str, SftDatasetSettings] = Field(default_factory=dict)
    review: ReviewSettings = Field(default_factory=ReviewSettings)
    """The human spot-check of synthetic batches: sample share and the largest rejection rate a batch may have."""

    def for_env(self, env_id: str) -> SftDatasetSettings:
        return self.envs.get(env_id, self.defaults)


def load_sft_dataset_settings(path: Path | None = None) -> SftDatasetsConfig:
    return read_config(SftDatasetsConfig, path or project_root() / "configs" / "sft_datasets.yaml")


def checkpoint_rows(paths: TrainingPaths) -> list[dict[str, Any]]:
    """Every finished checkpoint with its lineage and promotion status (for `secverify checkpoints`)."""
    rows = []
    for manifest in list_checkpoints(paths.checkpoints):
        status = promotion_status(checkpoint_dir(paths.checkpoints, manifest))
        rows.append(
            {
                "model_id": manifest.model_id,
                "stage": manifest.stage,
                "parent_model": manifest.parent_model,
                "promoted": status.promoted,
                "promotion": "yes" if status.promoted else f"no: {status.reason}",
            }
        )
    return rows
