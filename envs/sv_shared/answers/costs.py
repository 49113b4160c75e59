"""Asymmetric error costs shared by the rewards and the metrics of the classification environments."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CostTable:
    """Cost of each kind of outcome; correct answers cost nothing.

    A missed attack (false negative) costs the most, a false alarm less, abstaining less than any wrong answer.
    """

    miss: float
    false_alarm: float
    abstain: float

    def __post_init__(self) -> None:
        if not 0 <= self.abstain < self.false_alarm <= self.miss:
            raise ValueError(
                "costs must satisfy 0 <= abstain < false_alarm <= miss "
                f"(got abstain={self.abstain}, false_alarm={self.false_alarm}, miss={self.miss})"
            )

    def cost(self, truth: bool, prediction: bool | None, *, abstained: bool) -> float:
        """Cost of one outcome; prediction None without abstention is a format failure, costed as a wrong answer."""
        if abstained:
            return self.abstain
        if prediction is None:
            return self.miss if truth else self.false_alarm
        if prediction == truth:
            return 0.0
        return self.miss if truth else self.false_alarm
