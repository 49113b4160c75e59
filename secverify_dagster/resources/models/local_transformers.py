"""Provider for local_transformers specs: batches through the process-wide LocalModel of local_model.py."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from .types import ChatRequest, Completion, ModelSpec, ProviderError


class LocalTransformersProvider:
    """Runs a local_transformers spec; the model loads on first use and is shared in the process."""

    mode = "batch"

    def __init__(self, spec: ModelSpec) -> None:
        if spec.provider != "local_transformers":
            raise ValueError(f"LocalTransformersProvider cannot serve provider {spec.provider!r}")
        self.spec = spec

    def __repr__(self) -> str:
        return f"LocalTransformersProvider(id={self.spec.id!r}, model={self.spec.model!r})"

    def model(self):  # -> LocalModel, imported lazily (torch and transformers are heavy)
        from .local_model import load_local_model

        return load_local_model(self.spec.model)

    def load(self) -> None:
        """Load the model now (once per process), in the calling thread."""
        self.model()

    def complete_batches(
        self,
        requests: Sequence[ChatRequest],
        on_batch: Callable[[list[int], list[Completion | ProviderError]], None],
        *,
        stop: threading.Event | None = None,
    ) -> None:
        """Generate all requests in batches of spec.batch_size; on_batch gets each batch's indices, results.

        A failing batch (out of memory, a template error) turns into ProviderErrors for that batch only. Once
        `stop` is set the batch in progress ends at its next token and it and every batch after it are answered
        with a "stopped" ProviderError, at once: no cut-off text is passed on as an answer.
        """
        from .local_model import GenerationStopped

        try:
            model = self.model()
            batches = model.plan_batches(requests, self.spec.batch_size)
        except Exception as exc:
            error = ProviderError(f"{self.spec.id}: local model unavailable: {type(exc).__name__}: {exc}", kind="local")
            on_batch(list(range(len(requests))), [error] * len(requests))
            return
        stopped: ProviderError | None = None
        for indices in batches:
            results: list[Completion | ProviderError]
            if stopped is None:
                try:
                    results = list(model.generate_batch([requests[i] for i in indices], stop=stop))
                except GenerationStopped as exc:
                    stopped = ProviderError(f"{self.spec.id}: generation stopped: {exc}", kind="local")
                except Exception as exc:
                    error = ProviderError(
                        f"{self.spec.id}: generation failed: {type(exc).__name__}: {exc}", kind="local"
                    )
                    results = [error] * len(indices)
            if stopped is not None:
                results = [stopped] * len(indices)
            on_batch(indices, results)
