"""What a training run starts from: a registry model and the HF folder TRL loads for it, a checkpoint found by model
id, or an SFT recipe's latest checkpoint."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from secverify_dagster.resources.models import ModelSpec
from secverify_dagster.resources.models.local_model import export_hf_folder
from secverify_dagster.resources.models.registry import local_model_source
from secverify_dagster.training.paths import TrainingError, TrainingPaths
from sv_shared.training.checkpoints import CheckpointManifest, checkpoint_dir, list_checkpoints


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


@dataclass(frozen=True)
class Parent:
    """What a training run starts from: a registry model and the HF folder of its weights."""

    model_id: str
    base_model: str
    folder: Path


def checkpoint_by_id(paths: TrainingPaths, model_id: str) -> CheckpointManifest | None:
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
    checkpoint = checkpoint_by_id(paths, start)
    base = checkpoint.base_model if checkpoint is not None else start
    return Parent(model_id=start, base_model=base, folder=trainable_model_folder(spec, paths))
