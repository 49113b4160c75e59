"""Records of the model layer: requests, completions, provider errors and the registry's model spec."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

Provider = Literal["openai", "anthropic", "openai_compatible", "local_transformers", "baseline"]
PROVIDERS: tuple[str, ...] = get_args(Provider)


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion to make.

    params are generation parameters (temperature, max_tokens, top_p, ...) merged over the spec's defaults;
    seed is sent to providers that take one. observation is what a rule baseline reads; it is not part of the
    cache key (the messages are derived from it).
    """

    messages: list[dict[str, Any]]
    params: dict[str, Any] = field(default_factory=dict)
    seed: int = 42
    observation: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}


@dataclass(frozen=True)
class Completion:
    """A model's answer. cost_usd is 0 when it came from the cache (cached=True)."""

    text: str
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    cost_usd: float = 0.0
    cached: bool = False
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "usage": self.usage.to_dict(),
            "latency_s": self.latency_s,
            "cost_usd": self.cost_usd,
            "cached": self.cached,
            "tool_calls": list(self.tool_calls),
            "finish_reason": self.finish_reason,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Completion:
        usage = data.get("usage") or {}
        return cls(
            text=str(data["text"]),
            usage=Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
            latency_s=float(data.get("latency_s", 0.0)),
            cost_usd=float(data.get("cost_usd", 0.0)),
            cached=bool(data.get("cached", False)),
            tool_calls=list(data.get("tool_calls") or []),
            finish_reason=data.get("finish_reason"),
        )


class ProviderError(Exception):
    """A provider call that failed (after retries, when the client returns it).

    kind is one of: rate_limit, quota, server, timeout, unreachable, auth, bad_request, invalid_body (a 200 whose
    body is no answer: not JSON, no choices), empty_reply (a 200 with nothing in it that its finish reason does not
    explain), local, baseline, internal. retryable says whether trying again may succeed: the client retries those
    within the run, and a run retries the item on resume. retry_after (seconds) is the server's Retry-After when it
    sent one.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        retryable: bool = False,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return (
            f"ProviderError(kind={self.kind!r}, status={self.status!r}, retryable={self.retryable!r}, "
            f"message={self.message!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild_provider_error,
            (self.message, self.kind, self.retryable, self.status, self.retry_after),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "status": self.status,
            "retryable": self.retryable,
            "message": self.message,
        }


def _rebuild_provider_error(
    message: str, kind: str, retryable: bool, status: int | None, retry_after: float | None
) -> ProviderError:
    return ProviderError(message, kind=kind, retryable=retryable, status=status, retry_after=retry_after)


class Price(dict):
    """List price in USD per million tokens. A dict (so it serialises as JSON) with attribute access."""

    def __init__(self, input_per_mtok: float = 0.0, output_per_mtok: float = 0.0) -> None:
        if input_per_mtok < 0 or output_per_mtok < 0:
            raise ValueError("prices must be >= 0")
        super().__init__(input_per_mtok=float(input_per_mtok), output_per_mtok=float(output_per_mtok))

    @property
    def input_per_mtok(self) -> float:
        return self["input_per_mtok"]

    @property
    def output_per_mtok(self) -> float:
        return self["output_per_mtok"]

    def cost(self, usage: Usage) -> float:
        return (usage.prompt_tokens * self.input_per_mtok + usage.completion_tokens * self.output_per_mtok) / 1e6


@dataclass(frozen=True)
class ModelSpec:
    """One entry of configs/models.yaml. Holds the NAME of the key's environment variable, never a key."""

    id: str
    provider: str
    model: str
    params: dict[str, Any] = field(default_factory=dict)
    price: Price = field(default_factory=Price)
    api_key_env: str | None = None
    base_url: str | None = None
    base_url_env: str | None = None
    concurrency: int = 4
    batch_size: int = 1
    envs: list[str] = field(default_factory=list)
    family: str = ""
    description: str = ""
    license: str = ""
    timeout_s: float = 120.0
    parent: str | None = None
    """A training checkpoint's parent model (registry id); None for a configured model."""
    stage: str | None = None
    """A training checkpoint's stage (sft, rlft-single, rlft-mixed, rlft-joint); None for a configured model."""
    promoted: bool = False
    """Whether the model may be chosen by default: every configured model, and a checkpoint only after a passing
    safety scan and an approval (sv_shared.training.promotion). A spec built by hand is not promoted."""

    def supports_env(self, env_id: str | None) -> bool:
        return env_id is None or not self.envs or env_id in self.envs

    def public_dict(self) -> dict[str, Any]:
        """The spec as plain data (no secrets are held, but endpoints are left out too)."""
        return {
            "id": self.id,
            "provider": self.provider,
            "model": self.model,
            "params": dict(self.params),
            "price": dict(self.price),
            "family": self.family,
            "license": self.license,
        }
