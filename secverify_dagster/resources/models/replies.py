"""A provider's 200 body read into a Completion, or a named, retryable ProviderError when it holds no answer.

The providers read the raw body here instead of trusting the SDKs' parsed objects: the SDKs build those without
validation, so a truncated, non-JSON or choice-less body would surface as an AttributeError or a JSON error deep in
the SDK (and be scored as an empty answer or lost as an "internal" error). Here every such body is the same fault:

- invalid_body: not JSON, not an object, or missing what an answer needs (choices, a message, content blocks).
- empty_reply: a well-formed reply with no text and no tool calls although its finish reason says the model finished
  normally ("stop", Anthropic's "end_turn", or none). Hosted APIs send these on hiccups, so they are retried like a
  503, and only after the retries does the item end as a named error (asked again on the next run). The rule is the
  same for every API provider, OpenAI, Anthropic and self-hosted alike: a self-hosted model that stops at once, every
  time, ends as empty_reply instead of a scored empty answer. An empty reply that its finish reason explains ("length":
  cut off by max_tokens, reasoning included; "content_filter": filtered or refused) is the model's answer and is
  scored. Whitespace is text: a reply of " " is an answer.

The local model and rule baselines do not come through here: what they return is the model's answer, empty or not.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sv_shared.data.files import replace_lone_surrogates

from .types import Completion, ProviderError, Usage

EXPLAINED_EMPTY = frozenset({"length", "content_filter"})
"""Finish reasons (OpenAI vocabulary) under which an empty reply is the model's answer, not a provider fault."""

_ANTHROPIC_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
    "pause_turn": "pause",
}
_SNIPPET = 200


def invalid_body(model_id: str, reason: str) -> ProviderError:
    return ProviderError(
        f"{model_id}: invalid response body: {reason}", kind="invalid_body", retryable=True, status=200
    )


def _snippet(value: object) -> str:
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else repr(value)
    return text if len(text) <= _SNIPPET else text[:_SNIPPET] + "…"


def clean_text(text: str) -> str:
    """Text with lone surrogates (JSON may hold "\\ud800") as U+FFFD: UTF-8 cannot encode them, and the cache and
    run files that store a reply are UTF-8."""
    return replace_lone_surrogates(text)


def read_object(model_id: str, content: bytes) -> dict[str, Any]:
    """The body as a JSON object; invalid_body for anything else (bad UTF-8, truncated JSON, a list, a string)."""
    try:
        body = json.loads(content)
    except (ValueError, RecursionError) as exc:  # bad JSON or UTF-8; nesting deeper than the parser goes
        raise invalid_body(model_id, f"not JSON ({type(exc).__name__}): {_snippet(content)}") from None
    if not isinstance(body, dict):
        raise invalid_body(model_id, f"not a JSON object: {_snippet(content)}")
    return body


def _count(value: object) -> int:
    """A token count; anything but a non-negative number counts 0 (usage is accounting, not the answer)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value or value < 0:
        return 0
    return int(min(value, 2**53))


def _field(usage: object, name: str) -> int:
    return _count(usage.get(name)) if isinstance(usage, Mapping) else 0


def _upstream_error(body: Mapping[str, Any]) -> str:
    """Some gateways answer 200 with an error object instead of a completion: say what it said."""
    error = body.get("error")
    if isinstance(error, Mapping):
        return f" (the body holds an error: {_snippet(error.get('message', error))})"
    return ""


def require_answer(model_id: str, completion: Completion) -> Completion:
    """The completion, unless it is empty for no reason its finish reason gives (then empty_reply, retryable)."""
    if completion.text or completion.tool_calls or completion.finish_reason in EXPLAINED_EMPTY:
        return completion
    raise ProviderError(
        f"{model_id}: empty reply (no text, no tool calls, finish_reason={completion.finish_reason!r})",
        kind="empty_reply",
        retryable=True,
        status=200,
    )


def _openai_text(model_id: str, message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if content is None or isinstance(content, str):
        text = content or ""
    elif isinstance(content, list) and all(isinstance(part, Mapping) for part in content):
        # Content parts (some compatible servers): the text parts, in order.
        text = "".join(part["text"] for part in content if isinstance(part.get("text"), str))
    else:
        raise invalid_body(model_id, f"message content is {type(content).__name__}")
    refusal = message.get("refusal")
    # OpenAI puts a refusal beside a null content: it is the model's answer, scored like any other text.
    return clean_text(text or (refusal if isinstance(refusal, str) else ""))


def _tool_call(call_id: object, kind: object, name: str, arguments: str) -> dict[str, Any]:
    """One tool call in the OpenAI form, every string made storable."""
    return {
        "id": clean_text(call_id) if isinstance(call_id, str) else None,
        "type": kind if isinstance(kind, str) and kind else "function",
        "function": {"name": clean_text(name), "arguments": clean_text(arguments)},
    }


def _openai_tool_calls(model_id: str, message: Mapping[str, Any]) -> list[dict[str, Any]]:
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise invalid_body(model_id, f"tool_calls is {type(calls).__name__}")
    out = []
    for call in calls:
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise invalid_body(model_id, f"malformed tool call {_snippet(call)}")
        arguments = function.get("arguments")
        if arguments is None:
            arguments = ""
        elif not isinstance(arguments, str):
            arguments = json.dumps(arguments, sort_keys=True)
        out.append(_tool_call(call.get("id"), call.get("type"), function["name"], arguments))
    return out


def openai_completion(model_id: str, content: bytes, latency_s: float) -> Completion:
    """A chat.completions body (OpenAI, vLLM, transformers serve) as a Completion of its first choice."""
    body = read_object(model_id, content)
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        raise invalid_body(model_id, f"no choices{_upstream_error(body)}: {_snippet(content)}")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, Mapping) else None
    if not isinstance(message, Mapping):
        raise invalid_body(model_id, f"choice without a message: {_snippet(choice)}")
    finish_reason = choice.get("finish_reason")
    usage = body.get("usage")
    completion = Completion(
        text=_openai_text(model_id, message),
        usage=Usage(_field(usage, "prompt_tokens"), _field(usage, "completion_tokens")),
        latency_s=latency_s,
        tool_calls=_openai_tool_calls(model_id, message),
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
    )
    return require_answer(model_id, completion)


def anthropic_completion(model_id: str, content: bytes, latency_s: float) -> Completion:
    """A Messages API body as a Completion in the OpenAI provider's form (text, tool calls, finish reason)."""
    body = read_object(model_id, content)
    blocks = body.get("content")
    if not isinstance(blocks, list):
        raise invalid_body(model_id, f"no content blocks{_upstream_error(body)}: {_snippet(content)}")
    texts, tool_calls = [], []
    for block in blocks:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "text":
            if not isinstance(block.get("text"), str):
                raise invalid_body(model_id, f"text block without text: {_snippet(block)}")
            texts.append(block["text"])
        elif kind == "tool_use":
            if not isinstance(block.get("name"), str):
                raise invalid_body(model_id, f"tool_use block without a name: {_snippet(block)}")
            arguments = json.dumps(block.get("input"), sort_keys=True)
            tool_calls.append(_tool_call(block.get("id"), "function", block["name"], arguments))
        elif kind is None:
            raise invalid_body(model_id, f"malformed content block {_snippet(block)}")
        # thinking, redacted_thinking and server-tool blocks carry no answer
    usage = body.get("usage")
    prompt_tokens = sum(
        _field(usage, name) for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    stop_reason = body.get("stop_reason")
    completion = Completion(
        text=clean_text("".join(texts)),
        usage=Usage(prompt_tokens, _field(usage, "output_tokens")),
        latency_s=latency_s,
        tool_calls=tool_calls,
        finish_reason=_ANTHROPIC_STOP_REASONS.get(stop_reason, stop_reason) if isinstance(stop_reason, str) else None,
    )
    return require_answer(model_id, completion)
