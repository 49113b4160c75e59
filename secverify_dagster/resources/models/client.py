"""ModelClient: the one path every model call takes (cache, retries, concurrency, token and cost accounting).

    client = open_client(spec, cache=JsonCache(path))
    results = client.complete_many([ChatRequest(messages=[...], params={"max_tokens": 64})])
    # each result is a Completion or a ProviderError (after retries), in request order

API providers run on asyncio with at most spec.concurrency requests in flight; the local model runs in a
worker thread in batches of spec.batch_size; rule baselines run inline and are never cached. When the caller is
interrupted (Ctrl-C, SIGTERM, Dagster terminating the run) or cancelled, the local model's thread is told to stop and
ends at its next token, so the interrupt ends the call at once instead of waiting for every batch to finish.

API calls are retried here, with backoff (RetryPolicy), when the ProviderError is retryable: 408, 409, 429 (not
quota), 5xx, timeouts, refused or reset connections, and 200 replies that hold no answer (invalid_body, empty_reply:
replies.py). auth, quota, bad_request and internal are returned at once. Only answers are cached, so an item that
ends in an error is asked again on the next run.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from sv_shared.contracts import Baseline
from sv_shared.data.hashing import sha256_hex, stable_json
from sv_shared.execution.cache import JsonCache
from sv_shared.execution.retry import RetryPolicy, retry_async

from .replies import require_answer
from .types import ChatRequest, Completion, ModelSpec, ProviderError

CACHE_NAMESPACE = "completions"
_STAT_KEYS = (
    "requests",
    "cache_hits",
    "retries",
    "errors",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "latency_s_total",
)

Result = Completion | ProviderError


def effective_params(spec: ModelSpec, request: ChatRequest) -> dict[str, Any]:
    """The spec's defaults overlaid by the request's params; 'seed' is dropped (request.seed is the seed)."""
    merged = {**spec.params, **request.params}
    merged.pop("seed", None)
    return merged


def cache_key(spec: ModelSpec, request: ChatRequest) -> str:
    """sha256 over everything that determines the answer; not the observation (the messages carry it)."""
    return sha256_hex(
        stable_json(
            {
                "model_id": spec.id,
                "provider": spec.provider,
                "model": spec.model,
                "params": effective_params(spec, request),
                "messages": request.messages,
                "seed": request.seed,
                "tools": request.tools,
            }
        )
    )


def _internal_error(spec: ModelSpec, exc: BaseException) -> ProviderError:
    return ProviderError(f"{spec.id}: unexpected {type(exc).__name__}: {exc}", kind="internal")


class ModelClient:
    """Completes chat requests for one model spec. Thread-safe; complete_many may be called repeatedly."""

    def __init__(
        self,
        spec: ModelSpec,
        provider: Any,
        *,
        cache: JsonCache | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.spec = spec
        self.provider = provider
        self.cache = cache
        self.retry = retry or RetryPolicy()
        self._stats: dict[str, float] = dict.fromkeys(_STAT_KEYS, 0)
        self._stats["cost_usd"] = 0.0
        self._stats["latency_s_total"] = 0.0
        self._lock = threading.Lock()
        self._closed = False
        self._interrupted = threading.Event()
        self._active_stops: set[threading.Event] = set()

    def __repr__(self) -> str:
        return f"ModelClient(id={self.spec.id!r}, provider={self.spec.provider!r}, model={self.spec.model!r})"

    # -- accounting ----------------------------------------------------------------------------------
    @property
    def stats(self) -> dict[str, Any]:
        """Totals since the client was opened; tokens, cost and latency count fresh calls only."""
        with self._lock:
            stats = dict(self._stats)
        for key in ("requests", "cache_hits", "retries", "errors", "prompt_tokens", "completion_tokens"):
            stats[key] = int(stats[key])
        return stats

    def _add(self, **deltas: float) -> None:
        with self._lock:
            for key, delta in deltas.items():
                self._stats[key] += delta

    def _priced(self, completion: Completion) -> Completion:
        return dataclasses.replace(completion, cost_usd=self.spec.price.cost(completion.usage), cached=False)

    def _record_fresh(self, key: str | None, completion: Completion, store: bool) -> Completion:
        """Price a fresh completion, count it, and store it in the cache (with its cost) when store is set."""
        completion = self._priced(completion)
        self._add(
            prompt_tokens=completion.usage.prompt_tokens,
            completion_tokens=completion.usage.completion_tokens,
            cost_usd=completion.cost_usd,
            latency_s_total=completion.latency_s,
        )
        if store and self.cache is not None and key is not None:
            self.cache.put(CACHE_NAMESPACE, key, {**completion.to_dict(), "model_id": self.spec.id})
        return completion

    def _record_or_error(self, key: str, completion: Completion) -> Result:
        """_record_fresh for one of many requests: a failure there (the cache cannot be written) is this request's
        named error, not an exception that takes the other requests' answers with it."""
        try:
            return self._record_fresh(key, completion, store=True)
        except Exception as exc:
            return _internal_error(self.spec, exc)

    def _lookup(self, key: str, *, api: bool) -> Completion | None:
        """The cached completion, or None. For API providers an entry the provider path would now reject (an
        empty reply, stored before empty replies were retried) is a miss, so it is asked again."""
        if self.cache is None:
            return None
        stored = self.cache.get(CACHE_NAMESPACE, key)
        if stored is None:
            return None
        try:
            completion = Completion.from_dict(stored)
            if api:
                require_answer(self.spec.id, completion)
        except (KeyError, TypeError, ValueError, ProviderError):
            return None  # an unreadable or unanswered entry is a miss
        self._add(cache_hits=1)
        return dataclasses.replace(completion, cached=True, cost_usd=0.0)

    # -- public API ----------------------------------------------------------------------------------
    def complete_many(self, requests: Sequence[ChatRequest]) -> list[Result]:
        """One Completion or ProviderError per request, in request order. Blocks until all are done."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self._load_here()
            return asyncio.run(self.acomplete_many(requests))
        # Called from inside an event loop (an async Dagster op, a notebook): run ours on a separate thread.
        with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="model-client") as pool:
            return pool.submit(asyncio.run, self.acomplete_many(requests)).result()

    def _load_here(self) -> None:
        """Load a local model in the calling thread, where an interrupt reaches it, rather than in the worker
        thread, which would go on loading (≈ 20 s) after the caller was told to stop."""
        load = getattr(self.provider, "load", None)
        if load is None:
            return
        # A failure here is met again by complete_batches, which answers each request with it, named.
        with contextlib.suppress(Exception):
            load()

    def complete(self, request: ChatRequest) -> Completion:
        """One request; raises the ProviderError instead of returning it."""
        result = self.complete_many([request])[0]
        if isinstance(result, ProviderError):
            raise result
        return result

    async def acomplete_many(self, requests: Sequence[ChatRequest]) -> list[Result]:
        if self._closed:
            raise RuntimeError(f"{self!r} is closed")
        requests = [dataclasses.replace(r, params=effective_params(self.spec, r)) for r in requests]
        self._add(requests=len(requests))
        mode = getattr(self.provider, "mode", "async")
        results: list[Result | None] = [None] * len(requests)
        if mode == "inline":
            results[:] = self._run_inline(requests)
        else:
            keys = [cache_key(self.spec, request) for request in requests]
            pending = []
            for index, key in enumerate(keys):
                hit = self._lookup(key, api=mode == "async")
                if hit is None:
                    pending.append(index)
                else:
                    results[index] = hit
            if pending:
                if mode == "batch":
                    stop = self._stop_event()
                    try:
                        await asyncio.to_thread(self._run_batches, requests, keys, pending, results, stop)
                    except BaseException:
                        # Interrupted or cancelled: the event loop's shutdown joins the worker thread, so it must
                        # stop now rather than finish every batch nobody will read.
                        stop.set()
                        raise
                    finally:
                        with self._lock:
                            self._active_stops.discard(stop)
                else:
                    await self._run_async(requests, keys, pending, results)
        errors = sum(1 for result in results if isinstance(result, ProviderError))
        if errors:
            self._add(errors=errors)
        return list(results)  # type: ignore[arg-type]

    def interrupt(self) -> None:
        """Stop local generation in every thread using this client, now and from now on: each call in progress ends
        at its next token, later calls answer at once, every unfinished request with the named "generation
        stopped" error. For callers whose worker threads an interrupt does not reach (a pool of tool episodes)."""
        with self._lock:
            self._interrupted.set()
            for stop in self._active_stops:
                stop.set()

    def _stop_event(self) -> threading.Event:
        stop = threading.Event()
        with self._lock:
            if self._interrupted.is_set():
                stop.set()
            self._active_stops.add(stop)
        return stop

    def close(self) -> None:
        """Release the client (the cache belongs to the caller and stays open)."""
        self._closed = True

    def __enter__(self) -> ModelClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- execution modes -----------------------------------------------------------------------------
    def _run_inline(self, requests: Sequence[ChatRequest]) -> list[Result]:
        results: list[Result] = []
        for request in requests:
            try:
                results.append(self._record_fresh(None, self.provider.complete(request), store=False))
            except ProviderError as exc:
                results.append(exc)
            except Exception as exc:
                results.append(_internal_error(self.spec, exc))
        return results

    def _run_batches(
        self,
        requests: list[ChatRequest],
        keys: list[str],
        pending: list[int],
        results: list[Result | None],
        stop: threading.Event,
    ) -> None:
        subset = [requests[i] for i in pending]

        def on_batch(indices: list[int], batch_results: list[Result]) -> None:
            for local_index, result in zip(indices, batch_results, strict=True):
                index = pending[local_index]
                if isinstance(result, Completion):
                    result = self._record_or_error(keys[index], result)
                results[index] = result

        self.provider.complete_batches(subset, on_batch, stop=stop)

    async def _run_async(
        self, requests: list[ChatRequest], keys: list[str], pending: list[int], results: list[Result | None]
    ) -> None:
        try:
            session = self.provider.open_session()
        except ProviderError as exc:
            for index in pending:
                results[index] = exc
            return
        except Exception as exc:
            error = _internal_error(self.spec, exc)
            for index in pending:
                results[index] = error
            return
        semaphore = asyncio.Semaphore(max(1, self.spec.concurrency))

        def on_retry(_exc: BaseException, _number: int, _delay: float) -> None:
            self._add(retries=1)

        async def one(index: int) -> None:
            request = requests[index]
            attempts = 0

            async def call() -> Completion:
                nonlocal attempts
                attempts += 1
                return await session.complete(request)

            async with semaphore:
                try:
                    completion = await retry_async(
                        call,
                        policy=self.retry,
                        is_retryable=lambda exc: isinstance(exc, ProviderError) and exc.retryable,
                        retry_after=lambda exc: exc.retry_after if isinstance(exc, ProviderError) else None,
                        on_retry=on_retry,
                    )
                except ProviderError as exc:
                    if attempts > 1:
                        exc = ProviderError(
                            f"{exc.message} (gave up after {attempts} attempts)",
                            kind=exc.kind,
                            retryable=exc.retryable,
                            status=exc.status,
                            retry_after=exc.retry_after,
                        )
                    results[index] = exc
                    return
                except Exception as exc:
                    results[index] = _internal_error(self.spec, exc)
                    return
            results[index] = self._record_or_error(keys[index], completion)

        try:
            await asyncio.gather(*(one(index) for index in pending))
        finally:
            await session.aclose()


def make_provider(spec: ModelSpec, baselines: Mapping[str, Baseline] | None = None) -> Any:
    if spec.provider in ("openai", "openai_compatible"):
        from .openai_compat import OpenAICompatProvider

        return OpenAICompatProvider(spec)
    if spec.provider == "anthropic":
        from .anthropic_api import AnthropicProvider

        return AnthropicProvider(spec)
    if spec.provider == "local_transformers":
        from .local_transformers import LocalTransformersProvider

        return LocalTransformersProvider(spec)
    if spec.provider == "baseline":
        from .baseline import BaselineProvider

        if not baselines or spec.id not in baselines:
            offered = ", ".join(sorted(baselines or {})) or "none"
            raise ValueError(f"no baseline function for {spec.id!r}; the environment offers: {offered}")
        return BaselineProvider(spec, baselines[spec.id])
    raise ValueError(f"unknown provider {spec.provider!r} for model {spec.id!r}")


def open_client(
    spec: ModelSpec,
    *,
    cache: JsonCache | None,
    baselines: Mapping[str, Baseline] | None = None,
    retry: RetryPolicy | None = None,
) -> ModelClient:
    """A client for spec. Nothing is contacted or loaded before the first request; keys are read then."""
    return ModelClient(spec, make_provider(spec, baselines), cache=cache, retry=retry)


__all__ = ["CACHE_NAMESPACE", "ModelClient", "cache_key", "effective_params", "make_provider", "open_client"]
