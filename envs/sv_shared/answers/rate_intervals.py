"""Bootstrap CIs of a binary classifier's rates from its confusion counts.

A rate (accuracy, precision, recall, F1, FPR, FNR) depends on each item only through its confusion cell, so resampling
items with replacement is resampling the four cell counts from a multinomial over the cells' shares: the same bootstrap
as over the items themselves, without needing them. A resample in which a rate is undefined (its denominator drew
zero) is left out of that rate's interval, as the rate itself is reported as None when undefined.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import numpy as np

CELLS: Final = ("tp", "fp", "tn", "fn")
RATES: Final = ("accuracy", "precision", "recall", "f1", "fpr", "fnr")


def _rates(tp: np.ndarray, fp: np.ndarray, tn: np.ndarray, fn: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(numerator, denominator) of every rate, as Confusion.rates defines them."""
    return {
        "accuracy": (tp + tn, tp + fp + tn + fn),
        "precision": (tp, tp + fp),
        "recall": (tp, tp + fn),
        "f1": (2 * tp, 2 * tp + fp + fn),
        "fpr": (fp, fp + tn),
        "fnr": (fn, tp + fn),
    }


def confusion_rate_cis(
    confusion: Mapping[str, int], *, n_resamples: int = 10_000, seed: int = 42, confidence: float = 0.95
) -> dict[str, tuple[float, float] | None]:
    """Per rate, its percentile bootstrap CI over the items the confusion counts (None where no resample defines it,
    e.g. precision of a model that never flags a positive)."""
    counts = np.array([int(confusion[cell]) for cell in CELLS], dtype=np.int64)
    if np.any(counts < 0):
        raise ValueError(f"confusion counts must not be negative: {dict(confusion)}")
    n = int(counts.sum())
    if n == 0:
        return dict.fromkeys(RATES)
    draws = np.random.default_rng(seed).multinomial(n, counts / n, size=n_resamples)
    tail = (1.0 - confidence) / 2.0 * 100.0
    intervals: dict[str, tuple[float, float] | None] = {}
    for name, (numerator, denominator) in _rates(*draws.T).items():
        defined = denominator > 0
        if not np.any(defined):
            intervals[name] = None
            continue
        values = numerator[defined] / denominator[defined]
        low, high = np.percentile(values, [tail, 100.0 - tail])
        intervals[name] = (float(low), float(high))
    return intervals
