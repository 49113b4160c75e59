"""The tool-using episode: a policy answers, may call scanners within an enforced budget, and ends with a JSON answer.

The policy is any callable `(messages, tools) -> reply`, where `tools` is the OpenAI tool list in the native
protocol and None in the text protocol, and the reply is a string, a mapping with "text" and "tool_calls", or an
object with `.text` / `.tool_calls` (the model layer's Completion). No model code is imported here.

Budget (configs/envs/e2.yaml `tools`): at most `max_turns` policy replies and `max_tool_calls` executed calls per
episode. A call beyond the call budget is refused with a message telling the model to answer, and counted; a
malformed call (bad JSON, unknown tool or scanner) is answered with its error and counted as invalid (it uses up
budget, as a real call would). The episode ends at the first reply without a call, or when the turn budget runs
out; the final reply's text is what the verifier scores. The transcript keeps every call and result.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sv_env_config_verification import prompts
from sv_env_config_verification.config import ToolSettings
from sv_env_config_verification.tools import ToolBox, ToolCall, parse_native_calls, parse_text_calls, tool_specs
from sv_shared.contracts import Message

Policy = Callable[[list[Message], list[dict[str, Any]] | None], Any]
REFUSED = "refused: the episode's budget of {limit} scanner calls is spent; reply with your final JSON answer now"


@dataclass(frozen=True)
class Budget:
    max_turns: int
    max_tool_calls: int

    def __post_init__(self) -> None:
        if self.max_turns < 1 or self.max_tool_calls < 0:
            raise ValueError(f"budget needs max_turns >= 1 and max_tool_calls >= 0, got {self}")

    @classmethod
    def from_config(cls, settings: ToolSettings) -> Budget:
        return cls(max_turns=settings.max_turns, max_tool_calls=settings.max_tool_calls)


@dataclass
class Episode:
    """One tool-using episode: the transcript, the final completion and the tool accounting."""

    messages: list[Message]
    final: str = ""
    turns: int = 0
    tool_calls: int = 0
    refused_calls: int = 0
    invalid_calls: int = 0
    turn_budget_exhausted: bool = False
    calls: list[dict[str, Any]] = field(default_factory=list)
    tool_time_s: float = 0.0

    def summary(self) -> dict[str, Any]:
        """The accounting that goes into a scored sample's details["tools"]."""
        return {
            "turns": self.turns,
            "tool_calls": self.tool_calls,
            "refused_calls": self.refused_calls,
            "invalid_calls": self.invalid_calls,
            "turn_budget_exhausted": self.turn_budget_exhausted,
            "tool_time_s": round(self.tool_time_s, 4),
            "calls": self.calls,
        }


def _reply(raw: Any) -> tuple[str, list[Mapping[str, Any]]]:
    if isinstance(raw, str):
        return raw, []
    if isinstance(raw, Mapping):
        return str(raw.get("text") or ""), list(raw.get("tool_calls") or [])
    return str(getattr(raw, "text", "") or ""), list(getattr(raw, "tool_calls", None) or [])


def run_episode(
    observation: Mapping[str, Any],
    policy: Policy,
    toolbox: ToolBox,
    *,
    budget: Budget,
    protocol: str = "native",
) -> Episode:
    """Drive `policy` on one item until it answers or the turn budget ends."""
    messages = prompts.build_tool_messages(
        observation,
        protocol=protocol,
        tools=toolbox.tools,
        max_tool_calls=budget.max_tool_calls,
        max_turns=budget.max_turns,
    )
    episode = Episode(messages=messages)
    specs = tool_specs(toolbox.tools) if protocol == "native" else None
    for turn in range(1, budget.max_turns + 1):
        text, native = _reply(policy(list(messages), specs))
        episode.turns = turn
        calls: Sequence[ToolCall]
        if protocol == "native":
            calls = parse_native_calls(native, start=len(episode.calls))
            assistant: Message = {"role": "assistant", "content": text}
            if calls:
                assistant["tool_calls"] = [
                    {"id": call.id, "type": "function", "function": dict(raw.get("function") or {})}
                    for call, raw in zip(calls, native, strict=True)
                ]
            messages.append(assistant)
        else:
            calls = parse_text_calls(text, start=len(episode.calls))
            messages.append({"role": "assistant", "content": text})
        episode.final = text
        if not calls:
            return episode
        results = [execute_call(episode, toolbox, call, budget) for call in calls]
        if protocol == "native":
            messages.extend(
                {"role": "tool", "tool_call_id": call.id, "content": result}
                for call, result in zip(calls, results, strict=True)
            )
        else:
            lines = [
                f"TOOL RESULT {call.name} {call.arguments.get('tool', '')}: {result}"
                for call, result in zip(calls, results, strict=True)
            ]
            messages.append({"role": "user", "content": "\n".join(lines)})
    episode.turn_budget_exhausted = True
    return episode


def execute_call(episode: Episode, toolbox: ToolBox, call: ToolCall, budget: Budget) -> str:
    """Run one scanner call under the episode's budget (refused once it is spent) and account for it; the result text
    the model reads. Also what the `verifiers` scan tool runs per call (secverify.interop)."""
    record: dict[str, Any] = {**call.to_dict(), "arguments": _short(call.arguments)}
    if episode.tool_calls >= budget.max_tool_calls:
        episode.refused_calls += 1
        result = REFUSED.format(limit=budget.max_tool_calls)
        record.update(status="refused")
    else:
        episode.tool_calls += 1
        started = time.perf_counter()
        result, found = toolbox.run(call)
        episode.tool_time_s += time.perf_counter() - started
        invalid = toolbox.check(call) is not None
        episode.invalid_calls += invalid
        record.update(status="invalid" if invalid else ("error" if found < 0 else "ok"), findings=max(found, 0))
    episode.calls.append(record)
    return result


def _short(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments as recorded in the call log: a passed file is summarized by its size (the transcript has it)."""
    return {
        key: (f"<{len(value)} chars>" if key == "content" and isinstance(value, str) else value)
        for key, value in arguments.items()
    }
