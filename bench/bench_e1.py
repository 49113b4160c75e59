"""E1 benchmarks (figures, not pass/fail).

1. Verifier throughput: parse + reward per completion, over a realistic mix of answers (items/s).
2. Local-model rollouts: raw batched `generate` of SmolLM2 on E1 prompts vs the whole eval (prompting, generation,
   parsing, scoring, writing artifacts), and where the difference goes.

    python bench/bench_e1.py [--verifier-only] [--n 64] [--batch 32]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from sv_shared.registry import get_environment


def _completions(items: list[dict], rng: random.Random) -> list[str]:
    """What models really emit: clean JSON, fenced JSON with prose, lower-case labels, and malformed answers."""
    shapes = [
        lambda label, c: json.dumps({"label": label, "confidence": c, "rationale": "rejected handshakes"}),
        lambda label, c: f'Here is my answer:\n```json\n{{"label": "{label}", "confidence": {c}}}\n```',
        lambda label, c: f'{{"label": "{label.lower()}", "confidence": {c}, "rationale": "beacon"}} done',
        lambda label, c: f'{{"label": "{label}", "confidence": "{c}"}}',
        lambda label, c: '{"label": "Malicious", "confidence": 0.9, "rationale": "port sc',
        lambda label, c: "The flow appears benign.",
    ]
    out = []
    for item in items:
        label = rng.choice([item["label"], "Benign", "Malicious", "Abstain"])
        out.append(rng.choice(shapes)(label, round(rng.random(), 2)))
    return out


def bench_verifier(env, items: list[dict], total: int = 100_000) -> float:
    rng = random.Random(42)
    pool = [rng.choice(items) for _ in range(total)]
    completions = _completions(pool, rng)
    started = time.perf_counter()
    for item, completion in zip(pool, completions, strict=True):
        env.verifier.score(item, completion)
    elapsed = time.perf_counter() - started
    return total / elapsed


def bench_rollouts(env, dataset, n: int, batch: int, repeats: int) -> dict:
    import torch

    from secverify_dagster.resources.models import load_registry
    from secverify_dagster.resources.models.local_model import load_local_model
    from secverify_dagster.runner.datasets import select_items
    from secverify_dagster.runner.eval_runner import EvalRunner
    from sv_shared.execution.cache import JsonCache

    spec = load_registry()["smollm2-135m-instruct"]
    t0 = time.perf_counter()
    local = load_local_model(spec.model)
    model, tokenizer = local.model, local.tokenizer
    load_s = time.perf_counter() - t0
    items = select_items(env, dataset.frame, n, 42)
    params = env.generation_params()
    prompts = [
        tokenizer.apply_chat_template(env.episodes.messages(item), tokenize=False, add_generation_prompt=True)
        for item in items
    ]

    def raw_generate() -> float:
        started = time.perf_counter()
        for start in range(0, len(prompts), batch):
            encoded = tokenizer(
                prompts[start : start + batch], return_tensors="pt", padding=True, add_special_tokens=False
            )
            with torch.inference_mode():
                model.generate(
                    **encoded,
                    max_new_tokens=params["max_tokens"],
                    min_new_tokens=params["max_tokens"],
                    do_sample=False,
                    pad_token_id=local.pad_id,
                )
        return time.perf_counter() - started

    def whole_eval():
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            # A fresh response cache: every sample is generated, and its write is part of the measured cost.
            cache = JsonCache(Path(tmp) / "responses.sqlite")
            outcome = EvalRunner(env, spec, evals_root=Path(tmp), cache=cache, chunk_size=batch).run(dataset, n=n)
            cache.close()
            return time.perf_counter() - started, outcome

    # Warm up once, then alternate the two measurements and keep the best of each: this VM's timings are noisy.
    raw_generate()
    raw_runs, eval_runs = [], []
    for _ in range(repeats):
        raw_runs.append(raw_generate())
        eval_runs.append(whole_eval())
    raw_s = min(raw_runs)
    eval_s, outcome = min(eval_runs, key=lambda run: run[0])
    timings = outcome.metadata.timings
    return {
        "model_load_s": round(load_s, 1),
        "raw_generate_items_per_hour": round(n / raw_s * 3600),
        "eval_items_per_hour": round(n / eval_s * 3600),
        "eval_vs_raw": round(raw_s / eval_s, 3),
        "raw_runs_s": [round(r, 1) for r in raw_runs],
        "eval_runs_s": [round(r[0], 1) for r in eval_runs],
        "eval_breakdown_s": {k: timings[k] for k in ("generate_s", "score_s", "write_s", "wall_s")},
        "completion_tokens": outcome.metadata.usage.completion_tokens,
        "format_failure_rate": outcome.summary.metrics["format_failure_rate"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--verifier-only", action="store_true")
    parser.add_argument("--n", type=int, default=64, help="items for the rollout benchmark")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    from secverify_dagster.runner.datasets import embedded_dataset

    env = get_environment("e1")
    dataset = embedded_dataset(env, split="train", seed=42)
    items = dataset.frame.to_dicts()
    print(f"E1 verifier throughput (parse + reward): {bench_verifier(env, items):,.0f} items/s  (target ≥ 20,000)")
    if args.verifier_only:
        return
    figures = bench_rollouts(env, dataset, args.n, args.batch, args.repeats)
    print(f"E1 rollouts, SmolLM2-135M on CPU, batch {args.batch}, n={args.n}:")
    for name, value in figures.items():
        print(f"  {name}: {value}")
    print("  (target: eval ≥ 80% of raw generation; seed asks ≥ 2,000 trajectories/hour/model)")


if __name__ == "__main__":
    main()
