"""Where the training lineage's files live (TrainingPaths), what its steps share (TrainingError, the Log and ReportTo
types) and the curated splits they start from.

outputs/
  datasets/<env>/sft/                       the environment's SFT dataset (train.jsonl + manifest.json)
  models/<model id>-hf/                     a GGUF registry model exported as a plain HF folder (what TRL loads)
  checkpoints/<parent>/<stage>/<run id>/    manifest.json, model/, trainer checkpoints, safety_scan.json, approvals
  teacher_runs/                             teacher models' runs on train splits (kept apart from the eval runs)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import polars as pl

from sv_shared.config import outputs_dir
from sv_shared.data.datasets import read_dataset
from sv_shared.execution.cache import JsonCache

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


def curated(paths: TrainingPaths, env_id: str, split: str) -> pl.DataFrame:
    path = paths.datasets(env_id) / "curated" / f"{split}.parquet"
    if not path.is_file():
        raise TrainingError(f"{env_id}: no curated {split} split at {path}; materialize {env_id}/curated_splits first")
    return read_dataset(path)
