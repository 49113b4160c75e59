"""Stable hashes for content, configs and datasets, so every number can be traced to its inputs."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl


def stable_json(value: Any) -> str:
    """Canonical JSON: sorted keys, no whitespace, UTF-8 kept; the input of every hash here."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256_hex(text: str | bytes) -> str:
    # surrogatepass: model text may hold a lone surrogate, which strict UTF-8 cannot encode but a hash must take.
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def content_hash(record: Mapping[str, Any], fields: Iterable[str]) -> str:
    """Hash of the named fields of a record (16 hex chars), used for dedup and item ids."""
    return sha256_hex(stable_json({name: record.get(name) for name in fields}))[:16]


def frame_hash(frame: pl.DataFrame) -> str:
    """Hash of a frame's content, independent of row and column order."""
    ordered = frame.select(sorted(frame.columns))
    if ordered.height:
        ordered = ordered.sort(ordered.columns, nulls_last=True)
    return sha256_hex(ordered.write_csv())
