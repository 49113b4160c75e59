"""Verifiers: parse an answer and score it into a reward with named components.

A verifier is pure and deterministic given its injected tools (scanners, sandbox, judges, archives): no hidden I/O
decides a score. The same object scores evals and is the reward a trained policy maximises, so no answer may crash
it or earn reward the honest answer would not.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sv_shared.contracts.types import Item, ParseResult, ScoredSample

if TYPE_CHECKING:
    from sv_shared.execution.dialogue import Episode

EPISODE_SECTIONS: frozenset[str] = frozenset(
    {"env_id", "name", "generation", "target_generation", "eval", "data", "synthetic", "checks", "dialogue", "tools"}
)
"""Config sections that shape what the model was shown or did (its items, prompt, generation, tools, counterparts):
a re-score of stored answers cannot reflect a change to them."""

EPISODE_DETAILS: tuple[str, ...] = ("tools", "transcript")
"""What a tool-using episode adds to its final answer's verdict (the tool accounting and the transcript): a re-score
keeps them as stored, since no tool is called again."""


class StoredRecordError(ValueError):
    """A stored record that lacks what re-scoring it needs (written by an older verifier): re-run the eval."""


def rescored_sample(record: Mapping[str, Any], reward: float, components: Mapping[str, float]) -> ScoredSample:
    """A stored record with a new reward and components; its parsed answer, error and details are kept as stored."""
    return ScoredSample(
        item_id=stored_value(record, "id"),
        reward=reward,
        components=dict(components),
        parsed=record.get("parsed"),
        error=record.get("error"),
        details=dict(stored_value(record, "details")),
    )


def stored_value(record: Mapping[str, Any], *path: str) -> Any:
    """A value of a stored record (results.jsonl mapping) by its path; StoredRecordError names what is missing."""
    value: Any = record
    for depth, key in enumerate(path):
        if not isinstance(value, Mapping) or key not in value:
            raise StoredRecordError(
                f"record {record.get('id')!r} has no {'.'.join(path[: depth + 1])}: it was written by an older "
                "verifier and cannot be re-scored; re-run the eval"
            )
        value = value[key]
    return value


RewardFunction = Callable[..., list[float | None]]
"""TRL's reward-function shape: (prompts, completions, **dataset columns) → one float (or None: not applicable) per
completion."""


class Verifier(ABC):
    """What every verifier offers: its version, the run's metrics, and what else its scores depend on."""

    version: str
    """Bumped whenever parsing or scoring changes, so stored scores can be told apart."""

    answers_are_labels: bool = False
    """Whether every answer names one label of a fixed set (E1, E4): then the run's metrics carry the answer profile
    (`metrics["answers"]`, sv_shared.answers.collapse) and a policy can collapse onto one label."""

    reward_floor: float = 0.0
    """The least reward an answer can earn, what a format failure earns: 0, or minus the penalty weights where the
    reward has penalties (E1, E4). Rewards lie in [reward_floor, 1]."""

    @abstractmethod
    def aggregate(self, records: Sequence[Mapping[str, Any]], items: Mapping[str, Item]) -> dict[str, Any]:
        """Metrics over scored records (as written to results.jsonl) and the items they answer."""

    def report_columns(self) -> list[tuple[str, str]]:
        """(header, metric key) pairs that reports and the CLI show for this environment, after the reward."""
        return []

    def provenance(self) -> dict[str, Any]:
        """What else a score depends on (scanner versions, rule-set hashes), for every run's metadata."""
        return {}

    def rescorable(self, section: str) -> bool:
        """Whether `rescore` honours a change to this top-level config section: every section but those that shape
        the episode itself (EPISODE_SECTIONS)."""
        return section not in EPISODE_SECTIONS

    @abstractmethod
    def rescore(self, item: Item, record: Mapping[str, Any]) -> ScoredSample:
        """The verdict this verifier gives a stored sample (a results.jsonl record) without calling any model, judge
        or tool of the episode again: exactly what an eval under this verifier's config would have recorded."""

    def rescore_many(self, items: Sequence[Item], records: Sequence[Mapping[str, Any]]) -> list[ScoredSample]:
        """Re-score many stored samples; verifiers that batch their tools override this."""
        return [self.rescore(item, record) for item, record in zip(items, records, strict=True)]


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

    def rescore(self, item: Item, record: Mapping[str, Any]) -> ScoredSample:
        return self.rescore_many([item], [record])[0]

    def rescore_many(self, items: Sequence[Item], records: Sequence[Mapping[str, Any]]) -> list[ScoredSample]:
        """The stored (final) answers scored again (one batch, as the eval scored them); a tool episode keeps its
        stored tool accounting and transcript (EPISODE_DETAILS), as its rollout adds them to the verdict."""
        texts = [stored_value(record, "completion") for record in records]
        return [
            replace(scored, details={**scored.details, **_episode_details(record)})
            for scored, record in zip(self.score_many(items, texts), records, strict=True)
        ]

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


def _episode_details(record: Mapping[str, Any]) -> dict[str, Any]:
    details = record.get("details") or {}
    return {key: details[key] for key in EPISODE_DETAILS if key in details}


def _completion_text(completion: Any) -> str:
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion and isinstance(completion[-1], Mapping):
        return str(completion[-1].get("content") or "")
    raise TypeError(f"a completion is text or a list of messages, got {type(completion).__name__}")


class DialogueVerifier(Verifier):
    """Scores a finished dialogue (E5 attacks, E6 defenses) from its judged transcript.

    Its `rescore` recomputes the reward from what the record stores of the judged dialogue (success, novelty,
    outcome, coverage): the transcript is redacted, so the judge cannot read it again, and must not."""

    @abstractmethod
    def parse_turn(self, text: str) -> ParseResult:
        """Parse one turn of the model under evaluation (an attack message, a defender reply)."""

    @abstractmethod
    def score_dialogue(self, episode: Episode, judge_id: str) -> ScoredSample:
        """Score a dialogue that ran to its end (its transcript is already redacted)."""
