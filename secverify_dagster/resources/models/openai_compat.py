"""OpenAI chat completions: OpenAI itself, vLLM and `transformers serve`, through the official `openai` SDK.

The SDK's own retries are off (max_retries=0): the model client owns retries, so each is counted and backs
off once.
"""

from __future__ import annotations

import email.utils
import os
import time
from collections.abc import Mapping
from typing import Any

from .registry import resolve_base_url
from .replies import openai_completion
from .types import ChatRequest, Completion, ModelSpec, ProviderError

PLACEHOLDER_KEY = "sk-no-key-required"
"""Sent to servers that take no key (local vLLM, transformers serve); the SDK refuses to start without one."""

# Parameters chat.completions.create takes by name; anything else goes in extra_body (vLLM's top_k, min_p,
# ...).
_CREATE_PARAMS = {
    "audio",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "max_completion_tokens",
    "max_tokens",
    "metadata",
    "modalities",
    "n",
    "parallel_tool_calls",
    "prediction",
    "presence_penalty",
    "prompt_cache_key",
    "reasoning_effort",
    "response_format",
    "safety_identifier",
    "service_tier",
    "stop",
    "store",
    "temperature",
    "tool_choice",
    "top_logprobs",
    "top_p",
    "user",
    "verbosity",
}
# Client-side settings that are never sent.
_LOCAL_ONLY = {"seed", "timeout_s"}
# Sampling controls reasoning models (gpt-5, o-series) reject; they answer 400 to any value but the default.
_REASONING_UNSUPPORTED = {
    "stop",
    "temperature",
    "top_p",
    "presence_penalty",
    "frequency_penalty",
    "logprobs",
    "top_logprobs",
    "logit_bias",
}


def is_reasoning_model(model: str) -> bool:
    """OpenAI models that take max_completion_tokens and only default sampling: gpt-5*, o1*, o3*, o4*."""
    name = model.rsplit("/", 1)[-1].lower()
    return name.startswith(("gpt-5", "o1", "o3", "o4"))


def build_request_kwargs(spec: ModelSpec, request: ChatRequest) -> dict[str, Any]:
    """Keyword arguments for chat.completions.create from a request whose params are already merged."""
    params = {key: value for key, value in request.params.items() if key not in _LOCAL_ONLY and value is not None}
    kwargs: dict[str, Any] = {"model": spec.model, "messages": request.messages, "seed": request.seed}
    if request.tools:
        kwargs["tools"] = request.tools
    max_tokens = params.pop("max_tokens", None)
    max_completion_tokens = params.pop("max_completion_tokens", None)
    limit = max_completion_tokens if max_completion_tokens is not None else max_tokens
    reasoning = spec.provider == "openai" and is_reasoning_model(spec.model)
    if reasoning:
        for name in _REASONING_UNSUPPORTED:
            params.pop(name, None)
        if limit is not None:
            kwargs["max_completion_tokens"] = int(limit)
    elif limit is not None:
        # OpenAI deprecated max_tokens in favour of max_completion_tokens; vLLM and transformers
        # serve read max_tokens.
        kwargs["max_completion_tokens" if spec.provider == "openai" else "max_tokens"] = int(limit)
    extra_body: dict[str, Any] = {}
    for name, value in params.items():
        if name in _CREATE_PARAMS:
            kwargs[name] = value
        elif spec.provider == "openai_compatible":
            extra_body[name] = value  # vLLM reads top_k, min_p, repetition_penalty, ... from the body
        # api.openai.com answers 400 to unknown fields: anything else is not sent to it
    if extra_body:
        kwargs["extra_body"] = extra_body
    return kwargs


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from retry-after-ms or Retry-After (seconds, fractional allowed, or an HTTP date)."""
    if not headers:
        return None
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def redact(text: str, secret: str | None) -> str:
    if secret and len(secret) >= 4 and secret != PLACEHOLDER_KEY:
        return text.replace(secret, "***")
    return text


def redacted(error: ProviderError, secret: str | None) -> ProviderError:
    """The error with the key taken out of its message (a gateway may echo the key in a 200 error body too)."""
    return ProviderError(
        redact(error.message, secret),
        kind=error.kind,
        retryable=error.retryable,
        status=error.status,
        retry_after=error.retry_after,
    )


def _status_error(status: int, message: str, headers: Mapping[str, str] | None, body: object) -> ProviderError:
    code = None
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping):
            code = error.get("code") or error.get("type")
    if status == 429:
        if code in ("insufficient_quota", "billing_hard_limit_reached"):
            return ProviderError(message, kind="quota", retryable=False, status=status)
        return ProviderError(
            message, kind="rate_limit", retryable=True, status=status, retry_after=parse_retry_after(headers)
        )
    if status in (401, 403):
        return ProviderError(message, kind="auth", retryable=False, status=status)
    if status == 408:
        return ProviderError(
            message, kind="timeout", retryable=True, status=status, retry_after=parse_retry_after(headers)
        )
    if status == 409 or status >= 500:
        return ProviderError(
            message, kind="server", retryable=True, status=status, retry_after=parse_retry_after(headers)
        )
    return ProviderError(message, kind="bad_request", retryable=False, status=status)


def map_sdk_error(exc: BaseException, secret: str | None, sdk: Any) -> ProviderError:
    """Map an openai/anthropic SDK exception (same hierarchy in both) to a ProviderError, key redacted."""
    message = redact(f"{type(exc).__name__}: {exc}", secret)
    if isinstance(exc, sdk.APITimeoutError):
        return ProviderError(message, kind="timeout", retryable=True)
    if isinstance(exc, sdk.APIConnectionError):
        return ProviderError(message, kind="unreachable", retryable=True)
    if isinstance(exc, sdk.APIStatusError):
        return _status_error(exc.status_code, message, exc.response.headers, getattr(exc, "body", None))
    if isinstance(exc, sdk.APIResponseValidationError):
        return ProviderError(message, kind="invalid_body", retryable=True, status=exc.status_code)
    return ProviderError(message, kind="internal", retryable=False)


class OpenAISession:
    """One SDK client bound to the current event loop; closed at the end of the batch."""

    def __init__(self, spec: ModelSpec, api_key: str, base_url: str | None) -> None:
        import openai

        self._openai = openai
        self.spec = spec
        self._secret = api_key
        self._client = openai.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=spec.timeout_s)

    def __repr__(self) -> str:
        return f"OpenAISession(model={self.spec.model!r})"

    async def complete(self, request: ChatRequest) -> Completion:
        kwargs = build_request_kwargs(self.spec, request)
        started = time.perf_counter()
        try:
            # The raw body, read and validated here (replies.py): the SDK's parse does not validate.
            raw = await self._client.chat.completions.with_raw_response.create(**kwargs)
        except self._openai.OpenAIError as exc:
            raise map_sdk_error(exc, self._secret, self._openai) from None
        try:
            return openai_completion(self.spec.id, raw.content, time.perf_counter() - started)
        except ProviderError as error:
            raise redacted(error, self._secret) from None

    async def aclose(self) -> None:
        await self._client.close()


class OpenAICompatProvider:
    """Provider for `openai` (api.openai.com unless base_url is set) and `openai_compatible` (vLLM, serve)."""

    mode = "async"

    def __init__(self, spec: ModelSpec) -> None:
        if spec.provider not in ("openai", "openai_compatible"):
            raise ValueError(f"OpenAICompatProvider cannot serve provider {spec.provider!r}")
        self.spec = spec

    def __repr__(self) -> str:
        return f"OpenAICompatProvider(id={self.spec.id!r}, model={self.spec.model!r})"

    def _api_key(self) -> str:
        env = self.spec.api_key_env
        key = os.environ.get(env) if env else None
        if key:
            return key
        if self.spec.provider == "openai":
            raise ProviderError(f"{env or 'OPENAI_API_KEY'} is not set", kind="auth")
        return PLACEHOLDER_KEY

    def open_session(self) -> OpenAISession:
        """Read the key and endpoint now (call time) and open an SDK client; ProviderError if unusable."""
        base_url = resolve_base_url(self.spec)
        if self.spec.provider == "openai_compatible" and not base_url:
            hint = f"set {self.spec.base_url_env}" if self.spec.base_url_env else "set base_url in the registry"
            raise ProviderError(
                f"no endpoint for {self.spec.id}: {hint} to a vLLM/OpenAI-compatible server",
                kind="unreachable",
            )
        return OpenAISession(self.spec, self._api_key(), base_url)
