"""Provider for rule baselines: an environment's function from an observation to a completion string."""

from __future__ import annotations

import time

from sv_shared.contracts import Baseline

from .types import ChatRequest, Completion, ModelSpec, ProviderError, Usage


class BaselineProvider:
    """Calls the baseline inline; no tokens, no cost, never cached (it is cheaper than a cache lookup)."""

    mode = "inline"

    def __init__(self, spec: ModelSpec, baseline: Baseline) -> None:
        if spec.provider != "baseline":
            raise ValueError(f"BaselineProvider cannot serve provider {spec.provider!r}")
        self.spec = spec
        self.baseline = baseline

    def __repr__(self) -> str:
        return f"BaselineProvider(id={self.spec.id!r})"

    def complete(self, request: ChatRequest) -> Completion:
        if request.observation is None:
            raise ProviderError(f"baseline {self.spec.id} needs request.observation", kind="bad_request")
        started = time.perf_counter()
        try:
            text = self.baseline(request.observation)
        except Exception as exc:
            raise ProviderError(
                f"baseline {self.spec.id} failed: {type(exc).__name__}: {exc}", kind="baseline"
            ) from exc
        if not isinstance(text, str):
            raise ProviderError(
                f"baseline {self.spec.id} returned {type(text).__name__}, expected str", kind="baseline"
            )
        return Completion(text=text, usage=Usage(), latency_s=time.perf_counter() - started, finish_reason="stop")
