"""Verifiers: parse an answer and score it into a reward with named components.

A verifier is pure and deterministic given its injected tools (scanners, sandbox, judges, archives): no hidden I/O
decides a score. The same object scores evals and is the reward a trained policy maximises, so no answer may crash
it or earn reward the honest answer would not.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sv_shared.contracts.types import Item, ParseResult, ScoredSample

if TYPE_CHECKING:
    from sv_shared.execution.dialogue import Episode

RewardFunction = Callable[..., list[float | None]]
"""TRL's reward-function shape: (prompts, completions, **dataset columns) → one float (or None: not applicable) per
completion."""


class Verifier(ABC):
    """What every verifier offers: its version, the run's metrics, and what else its scores depend on."""

    version: str
    """Bumped whenever parsing or scoring changes, so stored scores can be told apart."""

    @abstractmethod
    def aggregate(self, records: Sequence[Mapping[str, Any]], items: Mapping[str, Item]) -> dict[str, Any]:
        """Metrics over scored records (as written to results.jsonl) and the items they answer."""

    def report_columns(self) -> list[tuple[str, str]]:
        """(header, metric key) pairs that reports and the CLI show for this environment, after the reward."""
        return []

    def provenance(self) -> dict[str, Any]:
        """What else a score depends on (scanner versions, rule-set hashes), for every run's metadata."""
        return {}


class CompletionVerifier(Verifier):
    """Scores one completion for one item (single-turn answers, and the final answers of tool-using episodes)."""

    @abstractmethod
    def parse(self, completion: str) -> ParseResult:
        """Parse a completion into the typed output, or a named format failure."""

    @abstractmethod
    def score(self, item: Item, completion: str) -> ScoredSample:
        """Verify a completion for an item: reward, components, parsed output."""

    def score_many(self, items: Sequence[Item], completions: Sequence[str]) -> list[ScoredSample]:
        """Score many completions; verifiers that batch their tools (scanners, sandboxes) override this."""
        return [self.score(item, completion) for item, completion in zip(items, completions, strict=True)]

    def reference_answer(self, item: Item) -> str | None:
        """The completion the item's gold label implies, written in the environment's output format; None when the
        gold cannot be written as an answer (the SFT data builds its reference examples from this, and keeps one
        only when `score` rewards it)."""
        return None

    def reward_function(self, component: str | None = None) -> RewardFunction:
        """This verifier as a TRL reward function: the dataset's columns rebuild each item, a completion is text or
        a conversation (its last message is the answer). `component` picks one reward component instead of the
        total, so a trainer can log (or weight) components apart."""

        def reward(prompts: Sequence[Any], completions: Sequence[Any], **columns: Any) -> list[float]:
            items = [
                {name: values[index] for name, values in columns.items() if isinstance(values, list | tuple)}
                for index in range(len(completions))
            ]
            scored = self.score_many(items, [_completion_text(completion) for completion in completions])
            if component is None:
                return [sample.reward for sample in scored]
            # A sample without that component (E3's detect items have no patch component) is None, which TRL
            # leaves out of the component's mean instead of diluting it with zeros.
            return [
                None if component not in sample.components else float(sample.components[component]) for sample in scored
            ]

        reward.__name__ = f"{type(self).__name__}_{component or 'reward'}"
        return reward


def _completion_text(completion: Any) -> str:
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion and isinstance(completion[-1], Mapping):
        return str(completion[-1].get("content") or "")
    raise TypeError(f"a completion is text or a list of messages, got {type(completion).__name__}")


class DialogueVerifier(Verifier):
    """Scores a finished dialogue (E5 attacks, E6 defenses) from its judged transcript."""

    @abstractmethod
    def parse_turn(self, text: str) -> ParseResult:
        """Parse one turn of the model under evaluation (an attack message, a defender reply)."""

    @abstractmethod
    def score_dialogue(self, episode: Episode, judge_id: str) -> ScoredSample:
        """Score a dialogue that ran to its end (its transcript is already redacted)."""
