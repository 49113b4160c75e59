"""Lockstep dialogues: many episodes advance together, one batched call per role and turn.

E5 (attacker ↔ target) and E6 (scripted user ↔ defender) both run this way, so a local model generates a whole
batch of turns at once and an API model gets its calls concurrently. Each episode keeps its own transcript, its
own token accounting per role, and its own failure: a failed call ends that episode only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sv_shared.contracts.types import BatchPolicy, Item, Message, PolicyReply
from sv_shared.judging.local import LocalJudge
from sv_shared.judging.redaction import must_redact, redact
from sv_shared.judging.verdict import UNAVAILABLE, Exchange, Judge, Verdict

STORAGE_SCREEN = LocalJudge(judge_id="local-screen")
"""The model-free judge every stored text also passes: attack messages (which no scoring judge reads) and replies
(on top of the scoring judge), so redaction never depends on one judge's miss or on a model judge's cost."""


class JudgeUnavailable(RuntimeError):
    """The judge's model call failed for an episode: it was not judged, so it is retried rather than scored."""


@dataclass
class Episode:
    """One dialogue in flight: the item, the transcript so far, usage per role, and how it ended."""

    item: Item
    transcript: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, dict[str, int]] = field(default_factory=dict)
    cost_usd: dict[str, float] = field(default_factory=dict)
    failure: Exception | None = None
    finished: bool = False
    state: dict[str, Any] = field(default_factory=dict)
    """Environment-specific progress (turn counters, parsed fields)."""

    @property
    def active(self) -> bool:
        return not self.finished and self.failure is None

    def account(self, role: str, reply: PolicyReply) -> None:
        totals = self.usage.setdefault(role, {"prompt_tokens": 0, "completion_tokens": 0, "calls": 0})
        totals["prompt_tokens"] += int(reply.usage.get("prompt_tokens", 0))
        totals["completion_tokens"] += int(reply.usage.get("completion_tokens", 0))
        totals["calls"] += 1
        self.cost_usd[role] = self.cost_usd.get(role, 0.0) + float(reply.cost_usd)


def advance(
    episodes: Sequence[Episode],
    role: str,
    policy: BatchPolicy,
    conversation: Callable[[Episode], list[Message]],
) -> list[tuple[Episode, PolicyReply]]:
    """One turn for `role` in every active episode, in a single batched call; failed calls end their episodes."""
    active = [episode for episode in episodes if episode.active]
    if not active:
        return []
    replies = policy([conversation(episode) for episode in active])
    if len(replies) != len(active):
        raise RuntimeError(f"{role} policy returned {len(replies)} replies for {len(active)} conversations")
    answered = []
    for episode, reply in zip(active, replies, strict=True):
        if isinstance(reply, Exception):
            episode.failure = reply
            continue
        episode.account(role, reply)
        answered.append((episode, reply))
    return answered


def judge_turns(judge: Judge, pending: Sequence[tuple[Episode, Exchange]]) -> list[tuple[Episode, Verdict]]:
    """Judge one exchange per episode in one batch; an unavailable judge ends that episode (to be retried)."""
    if not pending:
        return []
    verdicts = judge.judge_many([exchange for _, exchange in pending])
    judged = []
    for (episode, _), verdict in zip(pending, verdicts, strict=True):
        if verdict.error == UNAVAILABLE:
            episode.failure = JudgeUnavailable(f"judge {verdict.judge} was unavailable")
            continue
        judged.append((episode, verdict))
    return judged


def screen_for_storage(exchanges: Sequence[Exchange]) -> list[Verdict]:
    return STORAGE_SCREEN.judge_many(exchanges)


def transcript_entry(
    role: str, text: str, screen: Verdict, verdict: Verdict | None = None, **extra: Any
) -> dict[str, Any]:
    """A transcript line as stored: text that the storage screen or the scoring judge flags (or that the scoring
    judge could not judge) is redacted here, before it can reach any record."""
    flagged = [v for v in (verdict, screen) if v is not None and must_redact(v)]
    stored = redact(text, flagged[0]) if flagged else text
    entry: dict[str, Any] = {"role": role, "text": stored, "chars": len(text), "redacted": stored != text}
    if verdict is not None:
        entry["verdict"] = verdict.to_dict()
    return entry | extra


def usage_totals(episode: Episode, role: str) -> dict[str, int]:
    totals = episode.usage.get(role, {})
    return {"prompt_tokens": totals.get("prompt_tokens", 0), "completion_tokens": totals.get("completion_tokens", 0)}
