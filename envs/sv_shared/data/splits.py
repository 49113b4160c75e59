"""Deterministic stratified splits shared by every environment.

A split must not depend on the order rows arrive in (a re-run of an upstream asset may shuffle them), and
adding a new stratum must not reshuffle the existing ones, so each stratum is permuted with its own seed
derived from the global seed and the stratum's key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from sv_shared.data.hashing import sha256_hex, stable_json

_FRACTION_TOLERANCE = 1e-9


def validate_fractions(fractions: Mapping[str, float]) -> dict[str, float]:
    """Check that fractions are named, finite, non-negative and sum to 1; return them as a plain dict."""
    if not fractions:
        raise ValueError("fractions must name at least one split")
    checked: dict[str, float] = {}
    for name, value in fractions.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"split names must be non-empty strings, got {name!r}")
        number = float(value)
        if not math.isfinite(number) or number < 0:
            raise ValueError(f"fraction for split {name!r} must be a finite number >= 0, got {value!r}")
        checked[name] = number
    total = math.fsum(checked.values())
    if abs(total - 1.0) > _FRACTION_TOLERANCE:
        raise ValueError(f"fractions must sum to 1, got {total!r} from {checked}")
    return checked


def allocate_counts(n: int, fractions: Mapping[str, float]) -> dict[str, int]:
    """Split n items by largest remainder: counts sum to n, each the floor or ceiling of n * fraction.

    Ties between equal remainders go to the split listed first, so the result is deterministic.
    """
    if n < 0:
        raise ValueError(f"cannot allocate a negative count ({n})")
    checked = validate_fractions(fractions)
    # Rounding the quotas first keeps float error (0.1 * 30 = 3.0000000000000004) from moving an item.
    quotas = {name: round(n * fraction, 9) for name, fraction in checked.items()}
    counts = {name: math.floor(quota) for name, quota in quotas.items()}
    leftover = n - sum(counts.values())
    order = sorted(checked, key=lambda name: (-(quotas[name] - counts[name]), list(checked).index(name)))
    for name in order[:leftover]:
        counts[name] += 1
    return counts


def _stratum_seed(seed: int, key: Sequence[object]) -> list[int]:
    """Seed material for one stratum: the global seed plus a stable 64-bit digest of the stratum's key."""
    return [seed, int(sha256_hex(stable_json(list(key)))[:16], 16)]


def stratified_split(
    frame: pl.DataFrame,
    *,
    by: list[str],
    fractions: Mapping[str, float],
    seed: int,
    id_column: str,
) -> dict[str, pl.DataFrame]:
    """Split a frame into named parts, each stratum (distinct values of `by`) divided by `allocate_counts`.

    Rows are sorted by `id_column` first and each stratum is shuffled with a seed derived from `seed` and the
    stratum's values, so the result depends only on the rows' content, never on their input order. Parts come
    back in the order of `fractions`, each sorted by `id_column`.
    """
    checked = validate_fractions(fractions)
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    missing = [column for column in [id_column, *by] if column not in frame.columns]
    if missing:
        raise ValueError(f"cannot split: column(s) {missing} missing from frame with columns {frame.columns}")
    if frame[id_column].null_count():
        raise ValueError(f"cannot split: id column {id_column!r} has null values")
    if frame[id_column].is_duplicated().any():
        duplicates = frame.filter(pl.col(id_column).is_duplicated())[id_column].unique().sort().head(5).to_list()
        raise ValueError(f"cannot split: id column {id_column!r} is not unique (e.g. {duplicates})")

    ordered = frame.sort(id_column)
    names = list(checked)
    assignment = np.zeros(ordered.height, dtype=np.int64)
    strata = ordered.with_row_index("__row").group_by(by, maintain_order=True).agg(pl.col("__row"))
    for stratum in strata.iter_rows(named=True):
        rows = np.asarray(stratum["__row"], dtype=np.int64)
        rng = np.random.default_rng(_stratum_seed(seed, [stratum[column] for column in by]))
        shuffled = rng.permutation(rows)
        counts = allocate_counts(len(rows), checked)
        start = 0
        for index, name in enumerate(names):
            count = counts[name]
            assignment[shuffled[start : start + count]] = index
            start += count
    parts = ordered.with_columns(pl.Series("__split", assignment))
    return {name: parts.filter(pl.col("__split") == index).drop("__split") for index, name in enumerate(names)}
