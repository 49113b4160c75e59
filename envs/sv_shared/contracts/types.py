"""The records environments and the runner exchange: items, messages, parsed answers, scored samples, replies."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Message = dict[str, Any]
"""One chat message in OpenAI form: {"role": ..., "content": ...}."""

Item = dict[str, Any]
"""One corpus row as a plain dict (its schema is the environment's)."""


@dataclass(frozen=True)
class ParseResult:
    """A completion parsed into the environment's typed output, or the named reason it could not be."""

    output: dict[str, Any] | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class ScoredSample:
    """The verifier's verdict on one completion: total reward, its named components, and why it failed if it did."""

    item_id: str
    reward: float
    components: dict[str, float]
    parsed: dict[str, Any] | None
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_record(self) -> dict[str, Any]:
        return {
            "id": self.item_id,
            "reward": self.reward,
            "components": self.components,
            "parsed": self.parsed,
            "error": self.error,
            "details": self.details,
        }


@dataclass(frozen=True)
class PolicyReply:
    """One model turn as an environment sees it: text, and tool calls in OpenAI's function-calling shape."""

    text: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    """Tokens this turn cost ({"prompt_tokens", "completion_tokens"}), so dialogue environments can account per
    episode when many episodes share one batched call."""
    cost_usd: float = 0.0


Policy = Callable[[list[Message], list[dict[str, Any]] | None], PolicyReply]
"""A model as a multi-turn environment drives it: messages (and tool specs, or None) in, one reply out."""

BatchPolicy = Callable[[Sequence[list[Message]]], list["PolicyReply | Exception"]]
"""A model driven in lockstep by a dialogue environment: many conversations in, one reply each, in order.

A failed call gives the provider's exception in that conversation's place (the others go on)."""

Baseline = Callable[[Mapping[str, Any]], str]
"""A rule baseline: from an item's observation (what a model sees) to a completion string."""
