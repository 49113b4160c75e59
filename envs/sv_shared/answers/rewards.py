"""Reward components (pure functions) and their weighted combination.

Each component lies in [0, 1]; an environment's reward is the weighted mean of its components, with weights from
configs/envs/<env>.yaml. A completion that fails to parse scores 0 on every component.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sv_shared.answers.costs import CostTable


def reward_accuracy(correct: bool) -> float:
    """1 for the right label, 0 otherwise (an abstention is not right)."""
    return 1.0 if correct else 0.0


def reward_calibration(confidence: float, correct: bool) -> float:
    """1 − (confidence − correctness)², one minus the Brier score: high when confident and right or unsure and wrong.

    A proper scoring rule: its expected value is highest when the confidence is the answer's real chance of being
    right. The absolute error (1 − |confidence − correctness|) is not: it pays confidence 1 on every answer that is
    right more often than not, so a policy trained on it would report 0 or 1 and learn no calibration."""
    return 1.0 - (confidence - (1.0 if correct else 0.0)) ** 2


def reward_asymmetric_cost(cost: float, costs: CostTable) -> float:
    """1 − cost / worst cost: a miss scores 0, a false alarm more, an abstention more still, a right answer 1."""
    return 1.0 - cost / costs.miss


def reward_format(parsed_ok: bool) -> float:
    return 1.0 if parsed_ok else 0.0


@dataclass(frozen=True)
class RewardWeights:
    """Non-negative weights by component name; the reward is their weighted mean."""

    weights: Mapping[str, float]

    def __post_init__(self) -> None:
        if any(weight < 0 for weight in self.weights.values()):
            raise ValueError(f"reward weights must be non-negative: {dict(self.weights)}")
        if sum(self.weights.values()) <= 0:
            raise ValueError("reward weights must not all be zero")
        self.normalized()  # weights whose shares cannot sum to exactly 1.0 fail here, when the config is read

    def combine(self, components: Mapping[str, float]) -> float:
        """Weighted mean over the configured components; a configured component that is missing is an error.

        Summed as Σ (w/Σw)·c in config order, the sum a weighted rubric computes (verifiers' Trace.reward): the same
        completion then earns bit-identical rewards here and through the interop layer (secverify.interop)."""
        missing = set(self.weights) - set(components)
        if missing:
            raise KeyError(f"reward components missing: {sorted(missing)}")
        return sum(weight * components[name] for name, weight in self.normalized().items())

    def normalized(self) -> dict[str, float]:
        """Each weight over their sum, in config order: what one component can add to a reward of at most 1.

        Where those shares' float sum in config order is not exactly 1.0, the last non-zero share becomes 1 minus the
        sum of those before it: w/Σw alone can sum past 1 (0.6, 0.3, 0.1 give 1.0000000000000002), and a perfect
        answer must earn exactly 1.0, never more. Float products and sums are monotone, so components in [0, 1] then
        always give a reward in [0, 1]. Where the weights already sum to 1.0 (E1, E3) the shares are the weights."""
        total = sum(self.weights.values())
        shares = {name: weight / total for name, weight in self.weights.items()}
        if sum(shares.values()) == 1.0:
            return shares
        last = [name for name, share in shares.items() if share > 0][-1]
        before = list(shares).index(last)
        shares[last] = max(0.0, 1.0 - sum(list(shares.values())[:before]))
        if sum(shares.values()) != 1.0:
            raise ValueError(
                f"reward weights {dict(self.weights)} are too far apart to combine exactly: the last non-zero one "
                "is below float precision of their sum"
            )
        return shares


def classification_components(
    *, truth: bool, prediction: bool | None, abstained: bool, confidence: float, costs: CostTable
) -> dict[str, float]:
    """Components for a parsed answer to a binary detection item (positive = attack / phish).

    Calibration scores committed answers only: an abstention earns none, so abstaining can never beat a right answer.
    """
    correct = (not abstained) and prediction == truth
    cost = costs.cost(truth, prediction, abstained=abstained)
    return {
        "accuracy": reward_accuracy(correct),
        "calibration": 0.0 if abstained else reward_calibration(confidence, correct),
        "asymmetric_cost": reward_asymmetric_cost(cost, costs),
        "format": reward_format(True),
    }


def failed_components(names: Mapping[str, float] | list[str]) -> dict[str, float]:
    """All-zero components for a completion that could not be parsed."""
    return dict.fromkeys(names, 0.0)
