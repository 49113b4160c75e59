"""Scoring and aggregation shared by the detection environments (E1 network logs, E4 phishing).

An answer names a label (the positive class is the attack / phish), a confidence, or abstains.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sv_shared.answers.collapse import answer_profile
from sv_shared.answers.costs import CostTable
from sv_shared.answers.metrics import Outcome, classification_metrics, paired_rate_columns, reward_summary
from sv_shared.answers.rewards import RewardWeights, classification_components, failed_components
from sv_shared.contracts.types import ParseResult

ABSTAIN = "Abstain"

DETECTION_REPORT_COLUMNS: tuple[tuple[str, str], ...] = (
    *paired_rate_columns("accuracy", "rates.itt.accuracy", "rates.answered.accuracy"),
    *paired_rate_columns("F1", "rates.itt.f1", "rates.answered.f1"),
    *paired_rate_columns("FNR", "rates.itt.fnr", "rates.answered.fnr"),
    *paired_rate_columns("FPR", "rates.itt.fpr", "rates.answered.fpr"),
    ("abstain", "abstention_rate"),
    ("format fail", "format_failure_rate"),
    ("ECE", "ece"),
    ("Brier", "brier"),
    ("AURC", "aurc"),
    ("cost-wtd error", "cost_weighted_error"),
    ("balanced acc.", "answers.balanced_accuracy"),
    ("distinct answers", "answers.distinct_answers"),
    ("agrees w/ constant", "answers.best_constant.agreement"),
)
"""(header, metric key) of the detection and calibration metrics every detection report shows: each rate in both views
(intent-to-treat first, the headline; then over the answered items), see metrics.RATES_LEGEND."""


@dataclass(frozen=True)
class DetectionTask:
    """The label vocabulary and costs of one detection environment."""

    positive_label: str
    negative_label: str
    costs: CostTable
    weights: RewardWeights

    def outcome(self, truth_label: str, parsed: Mapping[str, Any] | None) -> Outcome:
        truth = truth_label == self.positive_label
        if parsed is None:
            return Outcome(truth=truth, prediction=None, abstained=False, confidence=None)
        label = parsed["label"]
        if label == ABSTAIN:
            return Outcome(truth=truth, prediction=None, abstained=True, confidence=float(parsed["confidence"]))
        return Outcome(
            truth=truth,
            prediction=label == self.positive_label,
            abstained=False,
            confidence=float(parsed["confidence"]),
        )

    def components(self, truth_label: str, parsed: ParseResult) -> dict[str, float]:
        """Reward components of a parsed answer; a parse failure zeroes them all."""
        if not parsed.ok or parsed.output is None:
            return failed_components(list(self.weights.weights))
        outcome = self.outcome(truth_label, parsed.output)
        return classification_components(
            truth=outcome.truth,
            prediction=outcome.prediction,
            abstained=outcome.abstained,
            confidence=outcome.confidence or 0.0,
            costs=self.costs,
        )

    def aggregate(
        self, records: Sequence[Mapping[str, Any]], truth_labels: Mapping[str, str], *, seed: int = 42
    ) -> dict[str, Any]:
        """Metrics of a run: detection and calibration metrics, reward summary, format failures by reason, and the
        answer profile (answers vs the split's labels, balanced accuracy, collapse: collapse.py)."""
        outcomes = [self.outcome(truth_labels[record["id"]], record.get("parsed")) for record in records]
        metrics = classification_metrics(outcomes, costs=self.costs)
        metrics["reward"] = reward_summary([float(record["reward"]) for record in records], seed=seed)
        metrics["components"] = {
            name: (sum(float(r["components"].get(name, 0.0)) for r in records) / len(records) if records else None)
            for name in self.weights.weights
        }
        metrics["format_errors"] = dict(sorted(Counter(str(r["error"]) for r in records if r.get("error")).items()))
        parsed = [record.get("parsed") for record in records]
        metrics["answers"] = answer_profile(
            [answer["label"] if answer else None for answer in parsed],
            [truth_labels[record["id"]] for record in records],
            [float(answer["confidence"]) if answer and answer["label"] != ABSTAIN else None for answer in parsed],
        )
        return metrics
