"""Binary-classification metrics with abstention and calibration, for every environment with a positive class.

Everything returned is plain JSON (int, float, None, list, dict): undefined ratios are None, never NaN.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
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


def metric_value(metrics: Mapping[str, Any], key: str) -> Any:
    """A metric by dotted key ("rates.itt.accuracy", "patch.applies_rate"); None where any part is missing."""
    value: Any = metrics
    for part in key.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


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


HEADLINE_RATES = "itt"
"""Which of a run's two rate views a headline quotes: intent-to-treat, the honest one (a model cannot lower its FPR by
failing the answer format)."""

ITT_TAG = "(ITT)"
ANSWERED_TAG = "(answered)"
RATES_LEGEND = (
    f"Rates {ITT_TAG}: intent-to-treat over every item, an abstention or unparseable answer scored as the wrong label "
    f"(a missed positive is a false negative, an unanswered negative a false positive). Rates {ANSWERED_TAG}: over the "
    f"answered items only. Headline: {ITT_TAG}."
)
"""Said under every table that shows rates in both views."""

LEGACY_RATE_KEYS: dict[str, tuple[str, str]] = {
    "accuracy": ("itt", "accuracy"),
    "selective_accuracy": ("answered", "accuracy"),
    "precision": ("answered", "precision"),
    "recall": ("itt", "recall"),
    "fnr": ("itt", "fnr"),
}
"""Flat keys older summaries carry, and the (view, rate) each has always equalled; new summaries keep writing them.
The flat `fpr` and `f1` of older summaries counted an unanswered negative as neither FP nor TN while counting an
unanswered positive as FN, a mix of both views: new summaries leave them out, and `with_rates` derives both views of
an older summary from its counts."""


def paired_rate_columns(header: str, itt_key: str, answered_key: str) -> list[tuple[str, str]]:
    """The two report columns of one rate, ITT first: ("FPR (ITT)", itt_key), ("FPR (answered)", answered_key)."""
    return [(f"{header} {ITT_TAG}", itt_key), (f"{header} {ANSWERED_TAG}", answered_key)]


@dataclass(frozen=True)
class Confusion:
    tp: int
    fp: int
    tn: int
    fn: int

    def rates(self) -> dict[str, Any]:
        """n, the confusion counts and every rate over them; f1 = 2tp / (2tp + fp + fn) is 0.0, not None, for a
        model that never flags a positive on a set that has positives."""
        tp, fp, tn, fn = self.tp, self.fp, self.tn, self.fn
        n = tp + fp + tn + fn
        return {
            "n": n,
            "confusion": {"tp": tp, "fp": fp, "tn": tn, "fn": fn},
            "accuracy": _ratio(tp + tn, n),
            "precision": _ratio(tp, tp + fp),
            "recall": _ratio(tp, tp + fn),
            "f1": _ratio(2 * tp, 2 * tp + fp + fn),
            "fpr": _ratio(fp, fp + tn),
            "fnr": _ratio(fn, tp + fn),
        }


@dataclass(frozen=True)
class AnswerCounts:
    """The answered confusion and the unanswered items (abstentions and format failures) by class: both rate views
    derive from these six counts."""

    answered: Confusion
    unanswered_positive: int
    unanswered_negative: int

    @classmethod
    def of(cls, outcomes: Iterable[Outcome]) -> AnswerCounts:
        tp = fp = tn = fn = unanswered_positive = unanswered_negative = 0
        for outcome in outcomes:
            if not outcome.answered:
                unanswered_positive += outcome.truth
                unanswered_negative += not outcome.truth
            elif outcome.truth:
                tp += bool(outcome.prediction)
                fn += not outcome.prediction
            else:
                fp += bool(outcome.prediction)
                tn += not outcome.prediction
        return cls(Confusion(tp, fp, tn, fn), unanswered_positive, unanswered_negative)

    @property
    def intent_to_treat(self) -> Confusion:
        """Every item, an unanswered one scored as the wrong label."""
        a = self.answered
        return Confusion(a.tp, a.fp + self.unanswered_negative, a.tn, a.fn + self.unanswered_positive)

    def rates(self) -> dict[str, Any]:
        return {
            "headline": HEADLINE_RATES,
            "itt": self.intent_to_treat.rates(),
            "answered": self.answered.rates(),
            "unanswered": {"positive": self.unanswered_positive, "negative": self.unanswered_negative},
        }


def binary_rates(outcomes: Iterable[Outcome]) -> dict[str, Any]:
    """Both views of a binary classifier's rates: `itt` (every item; an abstention or format failure is the wrong
    label) and `answered` (the answered items only), with `headline` naming the one a headline quotes."""
    return AnswerCounts.of(outcomes).rates()


def with_rates(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """A run's metrics with both rate views, also for summaries written before they existed: those derive them from
    the counts they already carry (their confusion's fn counts every positive not caught; n_answered gives the
    answered misses). Metrics without those counts (other environments) come back unchanged."""
    if "rates" in metrics:
        return dict(metrics)
    try:
        confusion = metrics["confusion"]
        tp, fp, tn = (int(confusion[key]) for key in ("tp", "fp", "tn"))
        n_answered, n_positive, n_negative = (int(metrics[key]) for key in ("n_answered", "n_positive", "n_negative"))
    except (KeyError, TypeError, ValueError):
        return dict(metrics)
    answered_fn = n_answered - tp - fp - tn
    counts = AnswerCounts(
        Confusion(tp, fp, tn, answered_fn),
        unanswered_positive=n_positive - tp - answered_fn,
        unanswered_negative=n_negative - fp - tn,
    )
    if min(answered_fn, counts.unanswered_positive, counts.unanswered_negative) < 0:
        return dict(metrics)
    return {**metrics, "rates": counts.rates()}


def classification_metrics(outcomes: Sequence[Outcome], *, costs: CostTable, n_bins: int = 10) -> dict[str, Any]:
    """Every metric of a binary classifier that may abstain: accuracy, PR/F1, error rates, calibration, AURC.

    Conventions (so every environment reports the same numbers):
    - `rates` holds accuracy, precision, recall, F1, FPR and FNR twice (binary_rates): `itt` over all n items,
      an abstention or format failure scored as the wrong label, and `answered` over the answered items. The
      headline is ITT (HEADLINE_RATES). The flat accuracy, selective_accuracy, precision, recall and fnr keep the
      meaning they always had (LEGACY_RATE_KEYS).
    - `confusion` keeps its older meaning: tp, fp and tn of the answered items, fn every positive not caught.
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
    n_positive = sum(1 for o in outcomes if o.truth)
    n_negative = n - n_positive
    rates = binary_rates(outcomes)
    tp, fp, tn = (rates["answered"]["confusion"][key] for key in ("tp", "fp", "tn"))

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
        "rates": rates,
        **{key: rates[view][rate] for key, (view, rate) in LEGACY_RATE_KEYS.items()},
        "abstention_rate": _ratio(n_abstained, n),
        "coverage": _ratio(n_answered, n),
        "format_failure_rate": _ratio(n_format_failures, n),
        "confusion": {"tp": tp, "fp": fp, "tn": tn, "fn": n_positive - tp},
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
