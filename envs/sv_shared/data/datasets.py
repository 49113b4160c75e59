"""Dataset artifacts: a parquet file plus a metadata.json that documents its provenance."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from sv_shared.data.files import exclusive, replacing, write_json_atomic
from sv_shared.data.hashing import frame_hash


@dataclass(frozen=True)
class DatasetArtifact:
    path: Path
    rows: int
    hash: str


WRITE_WAIT_S = 120.0
"""How long a writer waits for another process writing the same dataset folder (a write takes seconds)."""


def write_dataset(frame: pl.DataFrame, path: Path, provenance: Mapping[str, Any]) -> DatasetArtifact:
    """Write the frame and a `<name>.metadata.json` beside it (hash, rows, provenance, time).

    Each file is replaced atomically (readers see the old artifact or the new one), and the pair is written under
    the folder's lock, so two processes materializing the same asset at once cannot leave one's parquet beside the
    other's metadata."""
    artifact = DatasetArtifact(path=path, rows=frame.height, hash=frame_hash(frame))
    metadata = {
        "path": path.name,
        "rows": artifact.rows,
        "hash": artifact.hash,
        "columns": frame.columns,
        "written_at": datetime.now(UTC).isoformat(),
        **provenance,
    }
    with exclusive(path.parent / ".lock", wait_s=WRITE_WAIT_S, what=f"dataset folder {path.parent}"):
        with replacing(path) as tmp:
            frame.write_parquet(tmp)
        write_json_atomic(path.with_suffix(".metadata.json"), metadata, default=str)
    return artifact


_READERS = {".parquet": pl.read_parquet, ".csv": pl.read_csv, ".jsonl": pl.read_ndjson, ".json": pl.read_ndjson}


def read_dataset(path: Path) -> pl.DataFrame:
    """A dataset file: the project's own artifacts (parquet) or a user's items file (parquet, CSV or JSON lines).

    Corpus mirrors in their publishers' formats go through sv_shared.data.loading.read_table instead."""
    reader = _READERS.get(path.suffix.lower())
    if reader is None:
        raise ValueError(f"{path}: unsupported dataset format (use .parquet, .csv or .jsonl)")
    if not path.exists():
        raise FileNotFoundError(f"dataset {path} does not exist: materialize the asset that writes it first")
    if not path.is_file():
        raise ValueError(f"dataset {path} is not a regular file")
    return reader(path)


def value_counts(frame: pl.DataFrame, column: str) -> dict[str, int]:
    """Counts per value, sorted by value, as plain ints (for metadata and checks)."""
    if frame.height == 0:
        return {}
    counts = frame.group_by(column).len().sort(column)
    return {str(row[column]): int(row["len"]) for row in counts.to_dicts()}
