"""secverify's records in the forms inspect takes: chat messages, generation settings and log-safe copies."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    GenerateConfig,
)
from inspect_ai.tool import ToolCall

from sv_shared.contracts import Message
from sv_shared.data.files import escape_lone_surrogates

GENERATION_KEYS = ("max_tokens", "temperature", "top_p", "seed")
"""Our generation parameters that GenerateConfig names alike (`stop` is inspect's `stop_seqs`)."""


def chat_messages(messages: Sequence[Message]) -> list[ChatMessage]:
    """OpenAI-form messages (an item's opening messages, an episode's transcript with its tool calls and results) as
    inspect ChatMessages. Our own conversion: inspect's `messages_from_openai` refuses openai < 3.4, and the
    `verifiers` extra pins openai 2.x in the same environment."""
    names: dict[str, str] = {}
    converted: list[ChatMessage] = []
    for message in messages:
        role, content = message["role"], str(message.get("content") or "")
        if role == "system":
            converted.append(ChatMessageSystem(content=content))
        elif role == "user":
            converted.append(ChatMessageUser(content=content))
        elif role == "assistant":
            calls = [tool_call(call) for call in message.get("tool_calls") or []]
            names.update((call.id, call.function) for call in calls)
            converted.append(ChatMessageAssistant(content=content, tool_calls=calls or None))
        elif role == "tool":
            call_id = str(message.get("tool_call_id") or "")
            converted.append(ChatMessageTool(content=content, tool_call_id=call_id, function=names.get(call_id)))
        else:
            raise ValueError(f"a chat message has role {role!r}; expected system, user, assistant or tool")
    return converted


def tool_call(call: Mapping[str, Any]) -> ToolCall:
    """An OpenAI tool call as inspect's ToolCall; arguments that are not a JSON object keep their text in the parse
    error, as inspect's providers keep it."""
    function = call.get("function") if isinstance(call.get("function"), Mapping) else {}
    raw = function.get("arguments")
    try:
        arguments = json.loads(raw) if isinstance(raw, str) and raw.strip() else dict(raw or {})
    except (ValueError, TypeError, RecursionError):
        arguments = None
    if not isinstance(arguments, dict):
        return ToolCall(
            id=str(call.get("id") or ""),
            function=str(function.get("name") or ""),
            arguments={},
            parse_error=f"arguments are not a JSON object: {raw!r}",
        )
    return ToolCall(id=str(call.get("id") or ""), function=str(function.get("name") or ""), arguments=arguments)


def openai_tool_call(call: ToolCall) -> dict[str, Any]:
    """An inspect ToolCall in OpenAI form, as our episodes parse it.

    inspect has already parsed the arguments and keeps only the error when they were not a JSON object; the error
    text (never valid JSON) goes through, so our episode records the call as malformed exactly as it would the raw
    arguments."""
    arguments = call.parse_error if call.parse_error is not None else json.dumps(call.arguments)
    return {"id": call.id, "type": "function", "function": {"name": call.function, "arguments": arguments}}


def generation_config(params: Mapping[str, Any], *, seed: int | None = None) -> GenerateConfig:
    """Our generation parameters (configs/envs/<env>.yaml `generation`) as the task's GenerateConfig, with the run's
    seed as the sampling seed our runner sends; `inspect eval --max-tokens/--temperature/--seed` override them."""
    mapped = {key: params[key] for key in GENERATION_KEYS if params.get(key) is not None}
    if seed is not None:
        mapped.setdefault("seed", seed)
    if params.get("stop"):
        mapped["stop_seqs"] = list(params["stop"])
    return GenerateConfig(**mapped)


def loggable_text(text: str) -> str:
    """Text a UTF-8 log can hold: a lone surrogate (model text may carry one) becomes its escape text."""
    return escape_lone_surrogates(text)


def log_safe(value: Any) -> Any:
    """A copy the log can hold: plain JSON types, dates and other objects as text, NaN and infinities as null, lone
    surrogates as escape text. Only the log reads it: scoring always uses the original item and verdict."""
    if isinstance(value, str):
        return loggable_text(value)
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {loggable_text(str(key)): log_safe(inner) for key, inner in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [log_safe(inner) for inner in value]
    return loggable_text(str(value))
