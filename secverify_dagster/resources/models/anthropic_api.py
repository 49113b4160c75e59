"""Anthropic Messages API through the official `anthropic` SDK (its retries off: the model client owns them).

Requests arrive in OpenAI chat form; system messages are split out, tool calls and tool results become
tool_use and tool_result blocks, and the answer is returned in the same form as the OpenAI provider's.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from sv_shared.answers.parsing import decode_json

from .openai_compat import map_sdk_error, redacted
from .registry import resolve_base_url
from .replies import anthropic_completion
from .types import ChatRequest, Completion, ModelSpec, ProviderError

DEFAULT_MAX_TOKENS = 1024
"""The Messages API requires max_tokens; used when neither the spec nor the environment sets one."""

# Named arguments of messages.create this layer passes through from params.
_CREATE_PARAMS = {
    "metadata",
    "service_tier",
    "thinking",
    "output_config",
    "inference_geo",
    "speed",
    "container",
}
# Sampling parameters the API accepts that this SDK version no longer names: sent in the request body.
_BODY_PARAMS = {"temperature", "top_p", "top_k"}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, list):
        return [dict(part) for part in content]
    text = _text(content)
    return [{"type": "text", "text": text}] if text else []


def convert_messages(messages: Sequence[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """(system prompt, Anthropic messages) from OpenAI-form messages; consecutive same-role turns merged."""
    system: list[str] = []
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role in ("system", "developer"):
            system.append(_text(content))
        elif role == "user":
            add("user", _blocks(content))
        elif role == "assistant":
            blocks = _blocks(content)
            for call in message.get("tool_calls") or []:
                function = call.get("function", {})
                arguments = function.get("arguments") or "{}"
                # The model's own arguments, read by the answer rules: one a rule refuses (NaN, a huge number, deep
                # nesting) is sent back as text rather than raising here or making the request body invalid JSON.
                parsed = decode_json(arguments)[0] if isinstance(arguments, str) else dict(arguments)
                if not isinstance(parsed, dict):
                    parsed = {"_raw": arguments}
                blocks.append({"type": "tool_use", "id": call.get("id"), "name": function.get("name"), "input": parsed})
            add("assistant", blocks)
        elif role == "tool":
            add(
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": message.get("tool_call_id"),
                        "content": _text(content),
                    }
                ],
            )
        else:
            raise ProviderError(f"unsupported message role {role!r} for the Anthropic API", kind="bad_request")
    return ("\n\n".join(part for part in system if part) or None), out


def convert_tools(tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    converted = []
    for tool in tools:
        if tool.get("type") == "function" and "function" in tool:
            function = tool["function"]
            converted.append(
                {
                    "name": function["name"],
                    "description": function.get("description", ""),
                    "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
                }
            )
        else:
            converted.append(dict(tool))
    return converted


def convert_tool_choice(choice: Any) -> Any:
    if choice == "auto":
        return {"type": "auto"}
    if choice == "required":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    if isinstance(choice, dict) and choice.get("type") == "function":
        return {"type": "tool", "name": choice["function"]["name"]}
    return choice


def build_request_kwargs(spec: ModelSpec, request: ChatRequest) -> dict[str, Any]:
    params = {key: value for key, value in request.params.items() if value is not None}
    system, messages = convert_messages(request.messages)
    limit = params.get("max_tokens", params.get("max_completion_tokens")) or DEFAULT_MAX_TOKENS
    kwargs: dict[str, Any] = {"model": spec.model, "messages": messages, "max_tokens": int(limit)}
    if system:
        kwargs["system"] = system
    if request.tools:
        kwargs["tools"] = convert_tools(request.tools)
    if "tool_choice" in params:
        kwargs["tool_choice"] = convert_tool_choice(params["tool_choice"])
    stop = params.get("stop")
    if stop:
        kwargs["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    for name in _CREATE_PARAMS & params.keys():
        kwargs[name] = params[name]
    body = {name: params[name] for name in _BODY_PARAMS & params.keys()}
    if body:
        kwargs["extra_body"] = body
    # seed, reasoning_effort, presence/frequency penalties: no Anthropic equivalent, not sent.
    return kwargs


class AnthropicSession:
    def __init__(self, spec: ModelSpec, api_key: str, base_url: str | None) -> None:
        import anthropic

        self._anthropic = anthropic
        self.spec = spec
        self._secret = api_key
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, max_retries=0, timeout=spec.timeout_s
        )

    def __repr__(self) -> str:
        return f"AnthropicSession(model={self.spec.model!r})"

    async def complete(self, request: ChatRequest) -> Completion:
        kwargs = build_request_kwargs(self.spec, request)
        started = time.perf_counter()
        try:
            # The raw body, read and validated here (replies.py): the SDK's parse does not validate.
            raw = await self._client.messages.with_raw_response.create(**kwargs)
            content = await raw.read()
        except self._anthropic.AnthropicError as exc:
            raise map_sdk_error(exc, self._secret, self._anthropic) from None
        try:
            return anthropic_completion(self.spec.id, content, time.perf_counter() - started)
        except ProviderError as error:
            raise redacted(error, self._secret) from None

    async def aclose(self) -> None:
        await self._client.close()


class AnthropicProvider:
    mode = "async"

    def __init__(self, spec: ModelSpec) -> None:
        if spec.provider != "anthropic":
            raise ValueError(f"AnthropicProvider cannot serve provider {spec.provider!r}")
        self.spec = spec

    def __repr__(self) -> str:
        return f"AnthropicProvider(id={self.spec.id!r}, model={self.spec.model!r})"

    def open_session(self) -> AnthropicSession:
        env = self.spec.api_key_env or "ANTHROPIC_API_KEY"
        key = os.environ.get(env)
        if not key:
            raise ProviderError(f"{env} is not set", kind="auth")
        return AnthropicSession(self.spec, key, resolve_base_url(self.spec))
