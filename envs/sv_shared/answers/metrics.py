"""Binary-classification metrics with abstention and calibration, for every environment with a positive class.

Everything returned is plain JSON (int, float, None, list, dict): undefined ratios are None, never NaN.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sv_shared.answers.costs import CostTable
from sv_shared.answers.statistics import bootstrap_mean_ci

MAX_CURVE_POINTS = 101
"""Risk–coverage curves longer than this are downsampled evenly (the last point is always kept)."""


@dataclass(frozen=True)
class Outcome:
    """One scored item: the truth, the model's answer (None when it gave none) and its stated confidence.

    truth is True for the positive class (attack, phish); prediction None without abstention is a format
    failure (its confidence is None).
    """

    truth: bool
    prediction: bool | None
    abstained: bool
    confidence: float | None

    def __post_init__(self) -> None:
        if self.abstained and self.prediction is not None:
            raise ValueError("an abstained outcome cannot carry a prediction")
        if self.confidence is not None and not 0.0 <= self.confidence <= 1.0:
            # The negated range test also refuses NaN.
            raise ValueError(f"confidence must be in [0, 1] (got {self.confidence})")

    @property
    def answered(self) -> bool:
        return self.prediction is not None

    @property
    def format_failure(self) -> bool:
        return self.prediction is None and not self.abstained

    @property
    def correct(self) -> bool:
        """Only an answer equal to the truth is correct; abstentions and format failures are not."""
        return self.prediction is not None and bool(self.prediction) == bool(self.truth)


def mean_or_none(values: Iterable[float]) -> float | None:
    """Mean of the values, or None when there are none (an undefined mean is reported, not faked as 0)."""
    collected = [float(value) for value in values]
    if not collected:
        return None
    return math.fsum(collected) / len(collected)


def _ratio(numerator: float, denominator: float) -> float | None:
    return None if denominator == 0 else numerator / denominator


def _reliability(calibrated: Sequence[tuple[float, bool]], n_bins: int) -> tuple[list[dict[str, Any]], float | None]:
    """Equal-width reliability bins over [0, 1] and the ECE they imply.

    Bin i covers [i/n_bins, (i+1)/n_bins); a confidence of exactly 1.0 falls in the last bin. Membership is
    decided against the same float edges that are reported as lower/upper, so the two always agree.
    """
    edges = [i / n_bins for i in range(n_bins)]
    members: list[list[tuple[float, bool]]] = [[] for _ in range(n_bins)]
    for confidence, correct in calibrated:
        index = min(bisect_right(edges, confidence) - 1, n_bins - 1)
        members[index].append((confidence, correct))
    bins: list[dict[str, Any]] = []
    gap_sum = 0.0
    for index, bin_members in enumerate(members):
        mean_confidence = mean_or_none(confidence for confidence, _ in bin_members)
        accuracy = mean_or_none(1.0 if correct else 0.0 for _, correct in bin_members)
        if mean_confidence is not None and accuracy is not None:
            gap_sum += len(bin_members) * abs(accuracy - mean_confidence)
        bins.append(
            {
                "lower": index / n_bins,
                "upper": (index + 1) / n_bins,
                "count": len(bin_members),
                "mean_confidence": mean_confidence,
                "accuracy": accuracy,
            }
        )
    ece = gap_sum / len(calibrated) if calibrated else None
    return bins, ece


def _risk_coverage(answered: Sequence[Outcome], n: int) -> tuple[list[dict[str, float]], float | None]:
    """Risk–coverage curve and its area (AURC), answering the most confident items first.

    Items are ordered by confidence descending; ties keep their input order (a stable sort), so callers should
    pass outcomes in a canonical order such as sorted item id. Answered items without a confidence are treated
    as the least confident and come last, in input order.
    """
    if not answered:
        return [], None
    ordered = sorted(
        answered,
        key=lambda o: (o.confidence is None, -(o.confidence if o.confidence is not None else 0.0)),
    )
    points: list[dict[str, float]] = []
    errors = 0
    for k, outcome in enumerate(ordered, start=1):
        errors += 0 if outcome.correct else 1
        points.append({"coverage": k / n, "risk": errors / k})
    aurc = math.fsum(point["risk"] for point in points) / len(points)
    return _downsample(points), aurc


def _downsample(points: list[dict[str, float]]) -> list[dict[str, float]]:
    """At most MAX_CURVE_POINTS evenly spaced points, first and last included, so artifacts stay small."""
    count = len(points)
    if count <= MAX_CURVE_POINTS:
        return points
    steps = MAX_CURVE_POINTS - 1
    # Integer arithmetic keeps the choice exact; the indices are distinct because count - 1 >= steps.
    return [points[(i * (count - 1)) // steps] for i in range(steps)] + [points[-1]]


def classification_metrics(outcomes: Sequence[Outcome], *, costs: CostTable, n_bins: int = 10) -> dict[str, Any]:
    """Every metric of a binary classifier that may abstain: accuracy, PR/F1, error rates, calibration, AURC.

    Conventions (so every environment reports the same numbers):
    - accuracy divides by all n items; selective_accuracy by the answered ones only.
    - An abstention or format failure on a positive item is a false negative; on a negative item it is neither
      a false positive nor a true negative. fpr = fp / actual negatives, fnr = fn / actual positives.
    - f1 = 2tp / (2tp + fp + fn), which equals the harmonic mean of precision and recall when both are defined
      and is 0.0 (not None) for a model that never flags a positive on a set that has positives.
    - Calibration (ece, brier, reliability_bins) uses the answered items that state a confidence; the ECE
      weights each bin by its share of those items (n_answered when every answer has a confidence).
    """
    if n_bins < 1:
        raise ValueError(f"n_bins must be at least 1 (got {n_bins})")
    n = len(outcomes)
    answered = [o for o in outcomes if o.answered]
    # (confidence, correct) of the answered items that state a confidence: the calibration population.
    calibrated = [(float(o.confidence), o.correct) for o in answered if o.confidence is not None]
    n_answered = len(answered)
    n_abstained = sum(1 for o in outcomes if o.abstained)
    n_format_failures = sum(1 for o in outcomes if o.format_failure)
    n_correct = sum(1 for o in outcomes if o.correct)
    n_positive = sum(1 for o in outcomes if o.truth)
    n_negative = n - n_positive

    tp = sum(1 for o in outcomes if o.truth and o.answered and o.prediction)
    fn = n_positive - tp
    fp = sum(1 for o in outcomes if not o.truth and o.answered and o.prediction)
    tn = sum(1 for o in outcomes if not o.truth and o.answered and not o.prediction)

    precision = _ratio(tp, tp + fp)
    recall = _ratio(tp, n_positive)
    bins, ece = _reliability(calibrated, n_bins)
    brier = mean_or_none((confidence - (1.0 if correct else 0.0)) ** 2 for confidence, correct in calibrated)
    curve, aurc = _risk_coverage(answered, n)

    return {
        "n": n,
        "n_answered": n_answered,
        "n_abstained": n_abstained,
        "n_format_failures": n_format_failures,
        "n_positive": n_positive,
        "n_negative": n_negative,
        "accuracy": _ratio(n_correct, n),
        "selective_accuracy": _ratio(n_correct, n_answered),
        "precision": precision,
        "recall": recall,
        "f1": _ratio(2 * tp, 2 * tp + fp + fn),
        "fpr": _ratio(fp, n_negative),
        "fnr": _ratio(fn, n_positive),
        "abstention_rate": _ratio(n_abstained, n),
        "coverage": _ratio(n_answered, n),
        "format_failure_rate": _ratio(n_format_failures, n),
        "confusion": {"tp": tp, "fp": fp, "tn": tn, "fn": fn},
        "ece": ece,
        "reliability_bins": bins,
        "brier": brier,
        "cost_weighted_error": mean_or_none(costs.cost(o.truth, o.prediction, abstained=o.abstained) for o in outcomes),
        "aurc": aurc,
        "risk_coverage": curve,
    }


def reward_summary(rewards: Sequence[float], *, seed: int = 42) -> dict[str, Any]:
    """Mean reward with a seeded bootstrap 95% CI, and the sample standard deviation (ddof=1).

    Empty input gives n=0 and None everywhere; a single reward has std None and a CI collapsed onto it.
    """
    values = [float(reward) for reward in rewards]
    n = len(values)
    if n == 0:
        return {"mean": None, "std": None, "ci_low": None, "ci_high": None, "n": 0}
    mean, ci_low, ci_high = bootstrap_mean_ci(values, seed=seed)
    std = None
    if n >= 2:
        centre = math.fsum(values) / n
        std = math.sqrt(math.fsum((value - centre) ** 2 for value in values) / (n - 1))
    return {"mean": mean, "std": std, "ci_low": ci_low, "ci_high": ci_high, "n": n}
