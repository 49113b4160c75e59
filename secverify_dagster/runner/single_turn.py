"""Single-turn episodes: one request per item, answered and scored once."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from secverify_dagster.resources.models import ChatRequest, Completion, ProviderError
from secverify_dagster.runner.episodes import EpisodeKind, PlayedChunk
from secverify_dagster.runner.failures import provider_failure, runner_failure
from sv_shared.contracts import Item, ScoredSample
from sv_shared.runs.schema import ResultRecord, Usage


class SingleTurn(EpisodeKind):
    """One request per item, sent together (the local model batches them, API models run concurrently)."""

    mode = "single"

    def play(self, batch: Sequence[Item], params: Mapping[str, Any], seed: int) -> PlayedChunk:
        requests = [
            ChatRequest(
                messages=self.env.episodes.messages(item),
                params=dict(params),
                seed=seed,
                observation=self.env.episodes.observation(item),
            )
            for item in batch
        ]
        t0 = time.perf_counter()
        completions = self.client.complete_many(requests)
        t1 = time.perf_counter()
        answered = [
            (item, request, completion)
            for item, request, completion in zip(batch, requests, completions, strict=True)
            if not isinstance(completion, ProviderError)
        ]
        errors = [
            provider_failure(self.item_id(item), completion)
            for item, completion in zip(batch, completions, strict=True)
            if isinstance(completion, ProviderError)
        ]
        scores = self._score_each([item for item, _, _ in answered], [c.text for _, _, c in answered])
        records = []
        for (item, request, completion), scored in zip(answered, scores, strict=True):
            item_id = self.item_id(item)
            if isinstance(scored, Exception):
                errors.append(runner_failure(item_id, "scoring", scored))
                continue
            try:
                records.append(self._record(request, completion, scored))
            except Exception as error:  # the verifier's verdict is not a valid record (a non-number reward, …)
                errors.append(runner_failure(item_id, "scoring", f"invalid score: {type(error).__name__}: {error}"))
        return PlayedChunk(records, errors, t1 - t0, time.perf_counter() - t1)

    def _score_each(self, items: Sequence[Item], texts: Sequence[str]) -> list[ScoredSample | Exception]:
        """The verifier's verdicts in one batch; if the batch fails, each sample alone, so one bad answer (or a
        verifier bug it triggers) costs that sample only."""
        try:
            scores = list(self.env.verifier.score_many(items, texts))
            if len(scores) == len(items):
                return scores
        except Exception:  # isolated below: the failing sample gets its own error
            pass
        verdicts: list[ScoredSample | Exception] = []
        for item, text in zip(items, texts, strict=True):
            try:
                verdicts.append(self.env.verifier.score(item, text))
            except Exception as error:
                verdicts.append(error)
        return verdicts

    def _record(self, request: ChatRequest, completion: Completion, scored: ScoredSample) -> ResultRecord:
        return ResultRecord(
            **scored.to_record(),
            model=self.spec.id,
            prompt=request.messages,
            completion=completion.text,
            usage=Usage(
                prompt_tokens=completion.usage.prompt_tokens, completion_tokens=completion.usage.completion_tokens
            ),
            latency_s=completion.latency_s,
            cost_usd=completion.cost_usd,
            cached=completion.cached,
            finish_reason=completion.finish_reason,
        )
