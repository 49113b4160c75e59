"""The scorer: an environment's own verifier behind inspect's Scorer protocol, and the run metrics it reports."""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from typing import Any

import anyio
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, mean, metric, scorer, stderr
from inspect_ai.solver import TaskState

from secverify.interop.inspect.messages import log_safe, loggable_text
from sv_shared.answers.metrics import metric_value
from sv_shared.contracts import CompletionVerifier, Environment, Item, ScoredSample

ITEM_ID = "sv_item_id"
"""Sample metadata key of the item a sample poses (the scorer scores that original item, not the log's copy)."""
VERDICT = "sv_verdict"
"""Store key of a tool episode's verdict: the episode scored itself, as `rollout` does for our runner."""


def score_of(record: Mapping[str, Any], answer: str | None) -> Score:
    """A verdict (ScoredSample.to_record()) as a Score: value = reward and every component (inspect computes metrics
    per key), explanation = the named error, metadata = the record (what results.jsonl holds of it)."""
    components = record["components"]
    return Score(
        value={"reward": float(record["reward"]), **{name: float(value) for name, value in components.items()}},
        answer=None if answer is None else loggable_text(answer),
        explanation=record.get("error"),
        metadata=log_safe(record),
    )


def verifier_scorer(env: Environment, items: Mapping[str, Item]) -> Scorer:
    """The environment's CompletionVerifier on the sample's final completion; a tool episode's solver has already
    scored the episode (its verdict is in the store) and that verdict is taken as is, as the runner takes it."""
    verifier = env.verifier
    if not isinstance(verifier, CompletionVerifier):
        raise TypeError(
            f"{env.name} is scored per dialogue, not per completion (see secverify.interop.inspect.dialogue)"
        )
    # Verifiers are not promised to be thread-safe (scanners, sandboxes): samples are scored one at a time, as the
    # runner scores one batch at a time.
    one_at_a_time = threading.Lock()

    def verdict(item: Item, completion: str) -> ScoredSample:
        with one_at_a_time:
            return verifier.score(item, completion)

    @scorer(metrics=[], name=env.name)
    def secverify_verifier() -> Scorer:
        async def score(state: TaskState, target: Target) -> Score:
            completion = state.output.completion
            episode = state.store.get(VERDICT)
            if episode is not None:
                return score_of(episode, completion)
            scored = await anyio.to_thread.run_sync(verdict, items[state.metadata[ITEM_ID]], completion)
            return score_of(scored.to_record(), completion)

        return score

    return secverify_verifier()


def run_metrics(env: Environment, items: Mapping[str, Item]) -> list[Metric | dict[str, list[Metric]]]:
    """reward: mean and stderr (inspect's); each component's mean; the verifier's report columns."""
    return [{"reward": [mean(), stderr()]}, component_means(), report_columns(env, items)]


@metric(name="components")
def component_means() -> Metric:
    """The mean of each reward component over the samples that have it (E3's detect-only items have no patch
    component: a missing component is left out of its mean, as our trainer's component rewards leave it)."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        totals: dict[str, list[float]] = {}
        for sample in scores:
            value = sample.score.value
            if isinstance(value, Mapping):
                for name, component in value.items():
                    if name != "reward":
                        totals.setdefault(name, []).append(float(component))
        return {name: math.fsum(values) / len(values) for name, values in totals.items()}

    return compute


def report_columns(env: Environment, items: Mapping[str, Item]) -> Metric:
    """The verifier's own run metrics (`verifier.aggregate`, what a run's summary.json holds) reduced to the columns
    its reports show. It costs milliseconds per hundred samples; inspect recomputes it for the progress display
    no more often than ten times its cost."""
    keys = [key for _, key in env.verifier.report_columns()]

    # A factory without arguments: inspect logs a metric's arguments, and the environment is no log value.
    @metric(name="secverify")
    def secverify() -> Metric:
        def compute(scores: list[SampleScore]) -> dict[str, float]:
            records = [sample.score.metadata for sample in scores if sample.score.metadata]
            answered = {str(record["id"]): items[str(record["id"])] for record in records if str(record["id"]) in items}
            metrics = env.verifier.aggregate(records, answered)
            values = {key: metric_value(metrics, key) for key in keys}
            return {key: float(value) for key, value in values.items() if _finite(value)}

        return compute

    return secverify()


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
