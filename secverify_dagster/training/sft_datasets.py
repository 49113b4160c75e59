"""One environment's SFT dataset: its curated train items and latest synthetic set, a teacher's verified answers (an
eval run kept under teacher_runs/) and the synthetic batches whose spot-check passed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from secverify_dagster.resources.models import ModelSpec
from secverify_dagster.runner.datasets import EvalDataset
from secverify_dagster.runner.eval_runner import EvalRunner
from secverify_dagster.training.paths import TrainingError, TrainingPaths, curated
from sv_shared.contracts import Environment
from sv_shared.data.datasets import read_dataset
from sv_shared.data.hashing import frame_hash
from sv_shared.data.review_batches import batches_root, list_batches, unfinished_batches
from sv_shared.data.review_decisions import ReviewSettings
from sv_shared.runs.folder import RunFolder
from sv_shared.training.sft_data import LabelTargets, build_sft_dataset
from sv_shared.training.sft_files import SftDataset, write_sft_dataset
from sv_shared.training.synthetic_gate import ReviewOverride, gate_batches


def _latest_synthetic(paths: TrainingPaths, env_id: str) -> Path | None:
    candidates = sorted((paths.datasets(env_id) / "synthetic").glob("*/synthetic.parquet"))
    return candidates[-1] if candidates else None


def held_out_hashes(paths: TrainingPaths, env_id: str) -> set[str]:
    """Content hashes of the dev and test items: what a checkpoint is measured on, so never trained on."""
    return {*curated(paths, env_id, "dev")["content_hash"], *curated(paths, env_id, "test")["content_hash"]}


def sft_source_items(env: Environment, paths: TrainingPaths) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Curated train items and the latest synthetic set, without any synthetic item whose content is also in the
    dev or test split (those are what a checkpoint is measured on). Returns (items, provenance)."""
    train = curated(paths, env.env_id, "train")
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
    balance_labels: bool = True,
    confidence_from: str | None = None,
) -> tuple[SftDataset, Path]:
    """Build and write one environment's SFT dataset (reference answers, a teacher's verified answers, and the kept
    examples of its synthetic batches whose spot-check passed or that an override names); where answers are labels,
    balanced by label and with reference confidences from the confidence_from baseline's reading of the evidence."""
    if confidence_from is not None and confidence_from not in env.baselines:
        raise TrainingError(
            f"confidence_from {confidence_from!r} is not a rule baseline of {env.env_id} "
            f"(its baselines: {', '.join(sorted(env.baselines)) or 'none'})"
        )
    label_targets = LabelTargets(
        balance=balance_labels,
        confidence_from=env.baselines[confidence_from] if confidence_from is not None else None,
        confidence_source=confidence_from,
    )
    items, sources = sft_source_items(env, paths)
    records: list[dict[str, Any]] = []
    if teacher is not None:
        if teacher not in registry:
            raise TrainingError(f"teacher {teacher!r} is not in the model registry")
        records = teacher_records(env, registry[teacher], items, paths=paths, registry=registry)
    root = batches_root(paths.root / "datasets", env.env_id)
    synthetic = gate_batches(
        list_batches(root), review or ReviewSettings(), review_overrides, unfinished=unfinished_batches(root)
    )
    dataset = build_sft_dataset(
        env,
        items,
        teacher_records=records,
        teacher_id=teacher,
        min_reward=min_reward,
        synthetic=synthetic,
        held_out=held_out_hashes(paths, env.env_id),
        label_targets=label_targets,
    )
    dataset = dataset.model_copy(update={"provenance": {**dataset.provenance, "source_assets": sources}})
    folder = paths.sft_dataset(env.env_id)
    write_sft_dataset(folder, dataset)
    return dataset, folder
