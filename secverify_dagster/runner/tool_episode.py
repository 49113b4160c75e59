"""Tool-using episodes (E2/E4 tools mode): the model calls the environment's tools over several turns."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from secverify_dagster.resources.models import ChatRequest, Completion, ProviderError
from secverify_dagster.runner.episodes import EpisodeKind, PlayedChunk
from secverify_dagster.runner.failures import provider_failure, runner_failure
from sv_shared.contracts import Item, PolicyReply
from sv_shared.runs.schema import ErrorRecord, ResultRecord, Usage


class ToolEpisode(EpisodeKind):
    """Multi-turn episodes, up to the model's concurrency at once; a provider failure abandons that episode."""

    mode = "tools"

    def play(self, batch: Sequence[Item], params: Mapping[str, Any], seed: int) -> PlayedChunk:
        local = self.spec.provider in ("local_transformers", "baseline")
        workers = 1 if local else max(1, self.spec.concurrency)
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="episode") as pool:
            try:
                outcomes = list(pool.map(lambda item: self._settled(item, params, seed, local), batch))
            except BaseException:
                # Interrupted (Terminate, Ctrl-C): an interrupt reaches this thread only, and leaving the pool
                # waits for its episodes, so their generation is stopped and the queued ones never start.
                self.client.interrupt()
                pool.shutdown(wait=True, cancel_futures=True)
                raise
        records = [outcome for outcome in outcomes if isinstance(outcome, ResultRecord)]
        errors = [outcome for outcome in outcomes if isinstance(outcome, ErrorRecord)]
        # Generation and verification interleave inside an episode; the whole episode counts as generation.
        return PlayedChunk(records, errors, time.perf_counter() - started, 0.0)

    def _settled(self, item: Item, params: Mapping[str, Any], seed: int, local: bool) -> ResultRecord | ErrorRecord:
        try:
            return self._episode(item, params, seed, local)
        except ProviderError as error:
            return provider_failure(self.item_id(item), error)
        except Exception as error:  # a tool or the episode's own code raised: this episode only is lost
            return runner_failure(self.item_id(item), "episode", error)

    def _episode(self, item: Item, params: Mapping[str, Any], seed: int, local: bool) -> ResultRecord:
        turns: list[Completion] = []

        def policy(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> PolicyReply:
            request = ChatRequest(
                messages=messages,
                params=dict(params),
                seed=seed,
                observation=self.env.episodes.observation(item),
                tools=tools,
            )
            (completion,) = self.client.complete_many([request])
            if isinstance(completion, ProviderError):
                raise completion
            turns.append(completion)
            return PolicyReply(text=completion.text, tool_calls=list(completion.tool_calls))

        # Local models have no function calling: they write tool calls as text lines.
        scored = self.env.episodes.rollout(item, policy, tool_protocol="text" if local else "native")
        return ResultRecord(
            **scored.to_record(),
            model=self.spec.id,
            prompt=self.env.episodes.messages(item),
            completion=turns[-1].text if turns else "",
            usage=Usage(
                prompt_tokens=sum(t.usage.prompt_tokens for t in turns),
                completion_tokens=sum(t.usage.completion_tokens for t in turns),
            ),
            latency_s=sum(t.latency_s for t in turns),
            cost_usd=sum(t.cost_usd for t in turns),
            cached=bool(turns) and all(t.cached for t in turns),
            turns=len(turns),
            finish_reason=turns[-1].finish_reason if turns else None,
        )
