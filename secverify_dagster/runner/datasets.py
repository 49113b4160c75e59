"""What an eval draws its items from: the dataset (frame + provenance) and the seeded selection of N items."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from sv_shared.contracts import Environment, Item
from sv_shared.data.datasets import read_dataset
from sv_shared.data.hashing import frame_hash


@dataclass(frozen=True)
class EvalDataset:
    """The frame an eval draws its items from, and where it came from (recorded in metadata)."""

    frame: pl.DataFrame
    source: str
    split: str

    @property
    def hash(self) -> str:
        return frame_hash(self.frame)


def select_items(env: Environment, frame: pl.DataFrame, n: int, seed: int) -> list[Item]:
    """The same N items for every model: a seeded permutation of the split in id order."""
    ordered = frame.sort(env.data.id_column)
    order = np.random.default_rng(seed).permutation(ordered.height)[: min(n, ordered.height)]
    return ordered[order.tolist()].to_dicts()


def embedded_dataset(env: Environment, *, split: str, seed: int) -> EvalDataset:
    """The embedded corpus curated in memory exactly as the Dagster assets curate it."""
    splits = env.data.curate([env.data.load_source("embedded")], seed=seed)
    return EvalDataset(frame=splits[split], source=f"embedded:{split}", split=split)


def file_dataset(env: Environment, path: Path, *, split: str = "file") -> EvalDataset:
    """An items file (parquet, CSV or JSONL) in the environment's schema, or a raw format the environment reads
    itself (E4: labelled raw mail), validated."""
    frame = env.data.load_path(path)
    return EvalDataset(
        frame=env.data.validate(frame if frame is not None else read_dataset(path)), source=str(path), split=split
    )
