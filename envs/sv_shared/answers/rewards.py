"""Reward components (pure functions) and their combination.

Each component lies in [0, 1], higher is better, with weights from configs/envs/<env>.yaml. An environment's reward is
the weighted mean of its gain components, minus, for each component its config names a penalty (`reward_penalties`),
weight × (1 − component): a perfect answer earns exactly 1.0, a penalized shortfall takes reward away. A completion
that fails to parse scores 0 on every component, so it earns the least any answer can (−Σ penalty weights).

Why penalties (E1, E4, issue 26): on a split where 60% of items are benign, a weighted mean of [0, 1] components that
pays 1 for every right answer pays "always benign" at least 0.6, and it also paid a wrong answer for its format, its
calibration and the cost it did not incur (a false alarm kept 0.7 of the cost component). Then skill was a thin band
above the base rate (always "Benign" 0.67, the rule baseline 0.85 on E1's test split) and a policy that collapsed to
the majority answer sat in a comfortable optimum. With the asymmetric cost taken away instead of paid, an error costs
what the cost table says, and no answer-independent strategy earns half the reward.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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
    """Non-negative weights by component name, and the components among them that are penalties.

    Gains are combined as their weighted mean (shares w/Σw over the gains); each penalty then subtracts its weight
    times (1 − component). Without penalties this is the plain weighted mean, rewards in [0, 1]."""

    weights: Mapping[str, float]
    penalties: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "penalties", frozenset(self.penalties))
        if any(weight < 0 for weight in self.weights.values()):
            raise ValueError(f"reward weights must be non-negative: {dict(self.weights)}")
        unknown = sorted(self.penalties - set(self.weights))
        if unknown:
            raise ValueError(f"reward penalties {unknown} are not reward components ({sorted(self.weights)})")
        if sum(self.gains.values()) <= 0:
            raise ValueError("the reward's gain weights must not all be zero")
        self.normalized()  # weights whose shares cannot sum to exactly 1.0 fail here, when the config is read

    @property
    def gains(self) -> dict[str, float]:
        """The weights of the components that are not penalties, in config order."""
        return {name: weight for name, weight in self.weights.items() if name not in self.penalties}

    def terms(self) -> list[tuple[str, float, bool]]:
        """(component, signed weight, penalty?) in the order the reward sums them: each gain's share, then each
        penalty's weight negated, applied to (1 − component). A weighted rubric with these weights (a penalty's
        reward function giving 1 − component) sums to `combine`, bit for bit."""
        gains = [(name, share, False) for name, share in self.normalized().items()]
        return gains + [(name, -self.weights[name], True) for name in self.weights if name in self.penalties]

    def combine(self, components: Mapping[str, float]) -> float:
        """Σ share·gain − Σ weight·(1 − penalty component), summed term by term in `terms()` order; a configured
        component that is missing is an error.

        Summed as a weighted rubric computes it (verifiers' Trace.reward): the same completion then earns
        bit-identical rewards here and through the interop layer (secverify.interop)."""
        missing = set(self.weights) - set(components)
        if missing:
            raise KeyError(f"reward components missing: {sorted(missing)}")
        return sum(weight * term_value(components[name], penalty) for name, weight, penalty in self.terms())

    @property
    def floor(self) -> float:
        """The least reward an answer can earn: every gain 0, every penalty whole (a format failure)."""
        return -sum(self.weights[name] for name in self.penalties)

    def normalized(self) -> dict[str, float]:
        """Each gain weight over their sum, in config order: what one gain can add to a reward of at most 1.

        Where those shares' float sum in config order is not exactly 1.0, the last non-zero share becomes 1 minus the
        sum of those before it: w/Σw alone can sum past 1 (0.6, 0.3, 0.1 give 1.0000000000000002), and a perfect
        answer must earn exactly 1.0, never more. Float products and sums are monotone, so gains in [0, 1] then
        always give a weighted mean in [0, 1]. Where the weights already sum to exactly 1.0 the shares are the
        weights."""
        gains = self.gains
        total = sum(gains.values())
        shares = {name: weight / total for name, weight in gains.items()}
        if sum(shares.values()) == 1.0:
            return shares
        last = [name for name, share in shares.items() if share > 0][-1]
        before = list(shares).index(last)
        shares[last] = max(0.0, 1.0 - sum(list(shares.values())[:before]))
        if sum(shares.values()) != 1.0:
            raise ValueError(
                f"reward weights {dict(gains)} are too far apart to combine exactly: the last non-zero one "
                "is below float precision of their sum"
            )
        return shares


def term_value(component: float, penalty: bool) -> float:
    """What a term of the reward multiplies its weight by: the component, or for a penalty its shortfall."""
    return 1.0 - component if penalty else component


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


def configured_reward(config: Any, section: str = "reward_weights") -> RewardWeights:
    """An environment config's reward: the weights of its `section` (E3 has a second one for detect items) and,
    among them, the components its `reward_penalties` names."""
    weights = getattr(config, section).as_mapping()
    return RewardWeights(weights, frozenset(config.reward_penalties) & set(weights))


def reward_floor(config: Mapping[str, Any]) -> float:
    """The least reward an answer can earn under an environment config given as plain values (a run's metadata):
    minus the weights of its reward_penalties, 0 without any. What an item a run gave up counts as: never more than
    the worst answer, so a policy gains nothing by making its hard items fail."""
    weights = config.get("reward_weights") or {}
    return -sum(float(weights.get(name, 0.0)) for name in config.get("reward_penalties") or ())
