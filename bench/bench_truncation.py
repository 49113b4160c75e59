"""Truncation and throughput of the local model per environment: the old budget without answer-end stopping
(BEFORE) against the configured (or the suggested) budget with it (AFTER), and the budget the complete answers call
for.

A reply is cut when it hit its token budget (finish_reason "length") before its answer ended (for JSON environments
before the answer object closed, for free text (E6) before the model ended its turn, i.e. mid-sentence) although it
does end within the generous --probe budget. A reply that does not end even there (a repetition loop, prose that
never becomes an answer) is counted apart as `never`: a model failure no budget fixes. Without --probe, a reply cut
in a repetition loop counts under `never`, not as a cut (sv_shared.answers.completion.cut_by_budget).

Each environment's first-turn prompts of its embedded test split (E5/E6: the opening turn of each dialogue) are
generated greedily, once per setting: on a shared CPU the timings are single runs. `padded` is the share of the
decoding slots (rows × steps) spent on rows that had already finished: transformers pads a finished row and keeps
computing it until its whole batch ends.

    .venv/bin/python bench/bench_truncation.py --envs e1 --n 32 --before e1=40 --probe 256
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass
from typing import Any

from secverify_dagster.resources.models.local_model import DEFAULT_SOURCE, load_local_model
from secverify_dagster.resources.models.types import ChatRequest, Completion
from secverify_dagster.runner.datasets import embedded_dataset
from sv_shared.answers.completion import (
    AnswerEnd,
    answer_end_of,
    answer_end_params,
    cut_by_budget,
    ends_in_loop,
    json_answer_complete,
)
from sv_shared.registry import get_environment

QUANTILE = 0.98
MARGIN = 1.15
"""The budget is the QUANTILE of complete answers' lengths times MARGIN, rounded up to a multiple of 8."""


@dataclass(frozen=True)
class Measure:
    setting: str
    budget: int
    items: int
    cut: int
    never: int
    seconds: float
    tokens: int
    slots: int
    """Decoding steps × rows over the batches: a finished row is padded, still computed, until its batch ends."""

    def row(self, env_id: str) -> str:
        return (
            f"{env_id:4} {self.setting:7} {self.budget:6d} {self.items:5d} {self.cut:4d} {self.cut / self.items:6.1%} "
            f"{self.never:5d} "
            f"{self.items / self.seconds:7.3f} {self.tokens / self.seconds:8.1f} {self.seconds:7.1f} "
            f"{1 - self.tokens / max(1, self.slots):6.1%}"
        )


def build_requests(messages: list[Any], params: dict[str, Any]) -> list[ChatRequest]:
    return [ChatRequest(messages=list(conversation), params=dict(params)) for conversation in messages]


def answer_ended(completion: Completion, end: AnswerEnd) -> bool:
    """Whether the reply's answer ended within its budget (stopped on its own, or its JSON answer is complete)."""
    if completion.finish_reason != "length":
        return True
    return end is AnswerEnd.JSON_OBJECT and json_answer_complete(completion.text)


def measure(
    model: Any,
    env_id: str,
    messages: list[Any],
    params: dict[str, Any],
    setting: str,
    batch_size: int,
    ends_at_probe: list[bool] | None,
) -> tuple[Measure, list[Completion]]:
    """One greedy pass over the prompts with params (max_tokens is the budget); ends_at_probe[i]: whether item i's
    answer ended within the probe budget (None: no probe was run)."""
    requests = build_requests(messages, params)
    started = time.perf_counter()
    completions = model.complete_batch(requests, batch_size=batch_size)
    seconds = time.perf_counter() - started
    # Stopping or not, a reply is judged by the environment's answer end.
    end = answer_end_of(answer_end_params(env_id))
    if ends_at_probe is None:
        cut = sum(cut_by_budget(c.text, c.finish_reason, end) for c in completions)
        never = sum(c.finish_reason == "length" and ends_in_loop(c.text) for c in completions)
    else:
        ended = [answer_ended(c, end) for c in completions]
        cut = sum(not done and ref for done, ref in zip(ended, ends_at_probe, strict=True))
        never = sum(not ref for ref in ends_at_probe)
    counts = [completion.usage.completion_tokens for completion in completions]
    slots = sum(len(batch) * max(counts[i] for i in batch) for batch in model.plan_batches(requests, batch_size))
    budget = int(params["max_tokens"])
    return Measure(setting, budget, len(completions), cut, never, seconds, sum(counts), slots), completions


def complete_lengths(completions: list[Completion]) -> list[int]:
    """Token counts of the replies that ended on their own (answer complete or end of turn) within the budget."""
    return sorted(c.usage.completion_tokens for c in completions if c.finish_reason != "length")


def suggested_budget(completions: list[Completion]) -> int | None:
    lengths = complete_lengths(completions)
    if not lengths:
        return None
    at = lengths[min(len(lengths) - 1, math.ceil(QUANTILE * len(lengths)) - 1)]
    return 8 * math.ceil(at * MARGIN / 8)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=["e1", "e2", "e3", "e4", "e5", "e6"])
    parser.add_argument("--n", type=int, default=32, help="items per environment (at most the test split)")
    parser.add_argument("--before", nargs="*", default=[], help="env=budget: the old budgets (BEFORE)")
    parser.add_argument("--probe", type=int, default=0, help="a generous budget to measure answer lengths at")
    parser.add_argument(
        "--after",
        choices=["configured", "suggested"],
        default="configured",
        help="AFTER's budget: the environment's configured one, or the one the probe suggests (needs --probe)",
    )
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()
    before = {key: int(value) for key, value in (pair.split("=", 1) for pair in args.before)}
    model = load_local_model(DEFAULT_SOURCE)
    # One short generation first, so no setting pays the first call's one-time costs.
    model.complete_batch(build_requests([[{"role": "user", "content": "Hi"}]], {"max_tokens": 4}))
    print("env  setting budget items  cut   rate never  items/s tokens/s       s padded")
    for env_id in args.envs:
        env = get_environment(env_id)
        frame = embedded_dataset(env, split="test", seed=42).frame.head(args.n)
        messages = [env.episodes.messages(item) for item in frame.iter_rows(named=True)]
        configured = dict(env.generation_params())
        stopping = answer_end_params(env_id)

        ends_at_probe = None
        after_budget = int(configured["max_tokens"])
        if args.probe:
            params = {**configured, "max_tokens": args.probe, **stopping}
            result, completions = measure(model, env_id, messages, params, "probe", args.batch_size, None)
            end = answer_end_of(stopping)
            ends_at_probe = [answer_ended(completion, end) for completion in completions]
            suggested = suggested_budget(completions)
            print(result.row(env_id), f"suggested budget {suggested}", flush=True)
            if args.after == "suggested" and suggested is not None:
                after_budget = suggested
            print(f"     complete answers' lengths: {json.dumps(complete_lengths(completions))}", flush=True)
        if env_id in before:
            params = {**configured, "max_tokens": before[env_id]}
            result, _ = measure(model, env_id, messages, params, "BEFORE", args.batch_size, ends_at_probe)
            print(result.row(env_id), flush=True)
        params = {**configured, "max_tokens": after_budget, **stopping}
        result, _ = measure(model, env_id, messages, params, "AFTER", args.batch_size, ends_at_probe)
        print(result.row(env_id), flush=True)


if __name__ == "__main__":
    main()
