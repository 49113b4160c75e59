"""Seeded bootstrap statistics, so model comparisons carry uncertainty and rerun to the same numbers."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

# Cap on the cells of one resampled index matrix (int64: 8 bytes each, so about 16 MB); larger draws are made
# in row chunks. numpy's Generator draws the bounded integers one after another from the same stream, so the
# chunked draws are the same numbers a single (n_resamples, n) matrix would hold.
_MAX_INDEX_CELLS = 2_000_000


@dataclass(frozen=True)
class PairedBootstrap:
    """Difference of two models' mean rewards on the same items, with percentile CI and bootstrap p-value."""

    mean_a: float
    mean_b: float
    delta: float
    ci_low: float
    ci_high: float
    p_value: float
    n: int
    n_resamples: int
    seed: int
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _as_finite_array(values: Iterable[float], name: str) -> np.ndarray:
    """Float array of the values; NaN or infinite rewards would poison every mean, so they are refused."""
    array = np.asarray(list(values), dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a flat sequence of numbers")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return array


def _check_parameters(n_resamples: int, confidence: float) -> None:
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1 (got {n_resamples})")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1) (got {confidence})")


def _resampled_means(values: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Mean of each of n_resamples resamples (with replacement) of values, drawn in bounded-memory chunks."""
    n = values.shape[0]
    rows_per_chunk = max(1, _MAX_INDEX_CELLS // n)
    means = np.empty(n_resamples, dtype=np.float64)
    for start in range(0, n_resamples, rows_per_chunk):
        stop = min(start + rows_per_chunk, n_resamples)
        indices = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = values[indices].mean(axis=1)
    return means


def _percentile_interval(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    """Percentile interval (numpy's default linear interpolation) holding `confidence` of the samples."""
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(samples, [tail, 100.0 - tail])
    return float(low), float(high)


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    *,
    n_resamples: int = 10_000,
    seed: int = 42,
    confidence: float = 0.95,
) -> PairedBootstrap:
    """Paired bootstrap of mean(a) − mean(b), resampling items so per-item difficulty cancels between models.

    a[i] and b[i] are the same item's rewards under two models. Each resample draws n item indices with
    replacement from numpy.random.default_rng(seed); the CI is the percentile interval of the resampled deltas
    and the two-sided p-value is 2 * min(share of deltas <= 0, share of deltas >= 0), capped at 1.
    """
    array_a = _as_finite_array(a, "a")
    array_b = _as_finite_array(b, "b")
    if array_a.shape != array_b.shape:
        raise ValueError(f"paired samples differ in length: {array_a.shape[0]} != {array_b.shape[0]}")
    n = int(array_a.shape[0])
    if n == 0:
        raise ValueError("paired bootstrap needs at least one item")
    _check_parameters(n_resamples, confidence)
    rng = np.random.default_rng(seed)
    deltas = _resampled_means(array_a - array_b, n_resamples, rng)
    ci_low, ci_high = _percentile_interval(deltas, confidence)
    share_at_or_below = float(np.mean(deltas <= 0.0))
    share_at_or_above = float(np.mean(deltas >= 0.0))
    mean_a = float(array_a.mean())
    mean_b = float(array_b.mean())
    return PairedBootstrap(
        mean_a=mean_a,
        mean_b=mean_b,
        delta=mean_a - mean_b,
        ci_low=ci_low,
        ci_high=ci_high,
        p_value=min(1.0, 2.0 * min(share_at_or_below, share_at_or_above)),
        n=n,
        n_resamples=int(n_resamples),
        seed=int(seed),
        confidence=float(confidence),
    )


def bootstrap_mean_ci(
    values: Sequence[float],
    *,
    n_resamples: int = 10_000,
    seed: int = 42,
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """(mean, ci_low, ci_high) of the values: a percentile bootstrap CI, seeded so reruns agree exactly."""
    array = _as_finite_array(values, "values")
    if array.shape[0] == 0:
        raise ValueError("bootstrap needs at least one value")
    _check_parameters(n_resamples, confidence)
    rng = np.random.default_rng(seed)
    means = _resampled_means(array, n_resamples, rng)
    ci_low, ci_high = _percentile_interval(means, confidence)
    return float(array.mean()), ci_low, ci_high


def _values_by_key(records: Iterable[Mapping[str, Any]], key: str, value: str, side: str) -> dict[str, float]:
    """Scored value of each record by id; a repeated id would make the pairing ambiguous, so it is refused."""
    by_key: dict[str, float] = {}
    for record in records:
        item_id = str(record[key])
        if item_id in by_key:
            raise ValueError(f"records_{side} holds id {item_id!r} more than once")
        raw = record.get(value)
        if raw is None:
            continue
        number = float(raw)
        if not math.isfinite(number):
            raise ValueError(f"records_{side} has a non-finite {value} for id {item_id!r}")
        by_key[item_id] = number
    return by_key


def align_paired(
    records_a: Iterable[Mapping[str, Any]],
    records_b: Iterable[Mapping[str, Any]],
    *,
    key: str = "id",
    value: str = "reward",
) -> tuple[list[str], list[float], list[float]]:
    """(ids, rewards_a, rewards_b) for the items both runs scored, in sorted id order, ready to pair.

    Items missing from either side, or whose value is None (not scored), are left out; callers can compare
    len(ids) with their record counts to report how many were dropped. Ids are compared as strings.
    """
    values_a = _values_by_key(records_a, key, value, "a")
    values_b = _values_by_key(records_b, key, value, "b")
    ids = sorted(values_a.keys() & values_b.keys())
    return ids, [values_a[item_id] for item_id in ids], [values_b[item_id] for item_id in ids]
