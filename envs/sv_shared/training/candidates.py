"""Which sampled candidate completions a synthetic batch keeps: the environment's verifier decides, and says why not.

A candidate is one completion a model sampled for one item at one temperature. It is kept only when

1. the verifier's parser reads it (else dropped as "schema:<the parser's error name>"),
2. in a label environment, its parsed verdict is the item's gold verdict ("disagrees_with_label"),
3. its reward reaches min_reward ("below_min_reward"), and
4. no earlier kept candidate of the same item has the same completion ("duplicate").

A label environment is one whose answers carry the environment's label column (E1 and E4 `label`, E3 `cwe`): the
gold verdict is that field of the item's reference answer as the parser reads it, so both sides are in the parser's
canonical form. Where the answer carries no such field (E2's violations), the reward alone decides.

Candidates are judged in a fixed order (temperature, sample, item id), so the same candidates keep the same ones.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from sv_shared.contracts import CompletionVerifier, Environment, Item

SCHEMA_PREFIX: Final = "schema:"
DISAGREES_WITH_LABEL: Final = "disagrees_with_label"
BELOW_MIN_REWARD: Final = "below_min_reward"
DUPLICATE: Final = "duplicate"


class CandidateError(ValueError):
    """Candidates this code cannot judge (an unknown item, a bad threshold, an environment without a completion
    verifier); the message says which."""


@dataclass(frozen=True)
class SampledCompletion:
    """One completion a model gave for an item, and the verifier's reward of it (as the eval runner recorded it)."""

    item_id: str
    temperature: float
    sample: int
    completion: str
    reward: float
    components: Mapping[str, float] = field(default_factory=dict)
    prompt: Sequence[Mapping[str, Any]] = ()
    run_id: str | None = None

    @property
    def candidate_id(self) -> str:
        return candidate_id(self.item_id, self.temperature, self.sample)


@dataclass(frozen=True)
class Candidate:
    """A sampled completion with the batch's verdict on it: kept, or the reason it was dropped."""

    sampled: SampledCompletion
    drop_reason: str | None

    @property
    def kept(self) -> bool:
        return self.drop_reason is None

    def as_line(self) -> dict[str, Any]:
        """A line of candidates.jsonl."""
        sampled = self.sampled
        return {
            "id": sampled.candidate_id,
            "item_id": sampled.item_id,
            "temperature": sampled.temperature,
            "sample": sampled.sample,
            "run_id": sampled.run_id,
            "completion": sampled.completion,
            "reward": sampled.reward,
            "components": dict(sampled.components),
            "kept": self.kept,
            "drop_reason": self.drop_reason,
        }

    def as_kept_example(self) -> dict[str, Any]:
        """A line of kept.jsonl (sv_shared.data.review_batches.KeptExample)."""
        sampled = self.sampled
        return {
            "id": sampled.candidate_id,
            "item_id": sampled.item_id,
            "prompt": [dict(message) for message in sampled.prompt],
            "completion": sampled.completion,
            "reward": sampled.reward,
            "temperature": sampled.temperature,
        }


def candidate_id(item_id: str, temperature: float, sample: int) -> str:
    """Unique per item, temperature and sample; no character a shell or a URL treats specially."""
    return f"{item_id}--t{float(temperature)}-s{sample}"


def completion_verifier(env: Environment) -> CompletionVerifier:
    """The environment's verifier when it scores one completion per item; dialogue environments are refused."""
    if not isinstance(env.verifier, CompletionVerifier):
        raise CandidateError(
            f"{env.env_id} ({env.name}) is a dialogue environment: its reward comes from a judged conversation with "
            "counterpart models, not from one completion, so candidates cannot be sampled and verified one turn at a "
            "time here; its SFT examples come from teacher dialogues (sv_shared.training.sft_data)"
        )
    return env.verifier


def gold_verdicts(env: Environment, items: Mapping[str, Item]) -> dict[str, Any]:
    """Each item's gold verdict in the parser's form, for label environments; empty where answers carry no label."""
    verifier = completion_verifier(env)
    label = env.data.label_column
    verdicts: dict[str, Any] = {}
    for item_id, item in items.items():
        reference = verifier.reference_answer(item)
        parsed = verifier.parse(reference).output if reference is not None else None
        if parsed is not None and label in parsed:
            verdicts[item_id] = parsed[label]
    return verdicts


def judge_candidates(
    env: Environment, items: Mapping[str, Item], sampled: Sequence[SampledCompletion], *, min_reward: float
) -> list[Candidate]:
    """Every sampled completion with its verdict, in judging order (temperature, sample, item id)."""
    if isinstance(min_reward, bool) or not isinstance(min_reward, int | float) or not 0.0 <= min_reward <= 1.0:
        raise CandidateError(f"min_reward must be a number in [0, 1], got {min_reward!r}")
    unknown = sorted({entry.item_id for entry in sampled} - set(items))
    if unknown:
        raise CandidateError(f"{env.env_id}: candidates answer items that are not in the batch: {unknown[:5]}")
    verifier = completion_verifier(env)
    label = env.data.label_column
    gold = gold_verdicts(env, items)
    seen: set[tuple[str, str]] = set()
    judged: list[Candidate] = []
    for entry in sorted(sampled, key=lambda e: (e.temperature, e.sample, e.item_id)):
        parsed = verifier.parse(entry.completion)
        reason: str | None
        if parsed.output is None:
            reason = f"{SCHEMA_PREFIX}{parsed.error or 'unparsed'}"
        elif entry.item_id in gold and parsed.output.get(label) != gold[entry.item_id]:
            reason = DISAGREES_WITH_LABEL
        elif not math.isfinite(entry.reward) or entry.reward < min_reward:
            reason = BELOW_MIN_REWARD
        elif (entry.item_id, entry.completion.strip()) in seen:
            reason = DUPLICATE
        else:
            reason = None
            seen.add((entry.item_id, entry.completion.strip()))
        judged.append(Candidate(entry, reason))
    return judged


def candidate_counts(candidates: Sequence[Candidate]) -> dict[str, Any]:
    """candidates, kept and dropped per reason, overall and per temperature (keys as "0.3", "1.0")."""

    def tally(group: Sequence[Candidate]) -> dict[str, Any]:
        dropped = Counter(candidate.drop_reason for candidate in group if candidate.drop_reason is not None)
        return {
            "candidates": len(group),
            "kept": sum(candidate.kept for candidate in group),
            "dropped": dict(sorted(dropped.items())),
        }

    temperatures = sorted({candidate.sampled.temperature for candidate in candidates})
    return {
        **tally(candidates),
        "by_temperature": {
            str(float(temperature)): tally([c for c in candidates if c.sampled.temperature == temperature])
            for temperature in temperatures
        },
    }
