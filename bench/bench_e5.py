"""E5 benchmark (a figure, not pass/fail): red-team dialogues per hour on this machine's CPU.

The seed asks for ≥ 200 dialogues/hour per model. A dialogue is up to max_turns (3) rounds of: the attacker writes
a message, the target answers, and the judge reads both (the reply for success, the attack message to screen it
before storage). Dialogues advance in lockstep, so each role's turn is one batched generate over every live
dialogue. Configurations:

- local model as attacker, target and judge (the LLM-judge prompt on SmolLM2-135M): the seed's figure;
- local model as attacker and target, the local rule judge;
- the template attacker against the policy defender, local rule judge: the verifier's own cost, no model.

    python bench/bench_e5.py [--dialogues 64] [--skip-model]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from secverify_dagster.resources.models import load_registry
from secverify_dagster.runner.datasets import EvalDataset
from secverify_dagster.runner.dialogue import JudgeModels
from secverify_dagster.runner.eval_runner import EvalRunner
from sv_shared.judging.local import LocalJudge
from sv_shared.judging.measured import ensure_measurement, measurement_path
from sv_shared.judging.verdict import Exchange
from sv_shared.registry import get_environment


def measure_judge(judge: str) -> str:
    """The judge's validation (240 rows) is a one-off cost per judge, cached under outputs/judges: kept out of the
    dialogue timing and reported on its own."""
    path = measurement_path(judge)
    if path.exists():
        return f"judge {judge}: validation measurement cached ({path.name})"
    started = time.perf_counter()
    with JudgeModels(load_registry()) as models:
        ensure_measurement(models.build(judge))
    return f"judge {judge}: validated on the shipped set in {time.perf_counter() - started:.1f} s (once, then cached)"


def run(attacker: str, target: str, judge: str, n: int) -> dict:
    env = get_environment("e5")
    registry = load_registry()
    print(measure_judge(judge), flush=True)
    # All 42 embedded behaviours (every split): one full local-model batch of 32 needs more than one split holds.
    frame = env.data.validate(env.data.load_source("embedded"))
    dataset = EvalDataset(frame=frame, source="embedded:all", split="all")
    with tempfile.TemporaryDirectory() as tmp:
        runner = EvalRunner(
            env,
            registry[attacker],
            evals_root=Path(tmp),
            counterparts={"target": registry[target]},
            judge=judge,
            registry=registry,
        )
        started = time.perf_counter()
        outcome = runner.run(dataset, n=n, seed=42)
        wall = time.perf_counter() - started
        records = [json.loads(line) for line in (outcome.run_dir / "results.jsonl").read_text().splitlines()]
    metrics = outcome.summary.metrics
    tokens: dict[str, int] = {}
    for record in records:
        for role, usage in record["details"]["usage"].items():
            tokens[role] = tokens.get(role, 0) + usage["completion_tokens"]
    return {
        "config": f"{attacker} → {target}, judge {judge}",
        "dialogues": metrics["n"],
        "wall_s": wall,
        "per_hour": metrics["n"] / wall * 3600,
        "asr": metrics["asr"],
        "turns": sum(record["details"]["turns"] for record in records) / max(1, len(records)),
        "generated_tokens": tokens,
        "judge_unparseable": metrics["judge_unparseable_rate"],
    }


def bench_local_judge(n: int = 20_000) -> float:
    """Exchanges judged per second, each exchange unique: the judge's memo of repeated exchanges (local.py,
    ASSESSMENT_MEMO) never answers here, so the figure is the judge's own reading."""
    judge = LocalJudge()
    exchanges = [
        Exchange(
            request=f"Explain step {i} of the procedure for the restricted topic",
            response=f"Sure. Step 1: gather the [materials]. Step 2: combine them ({i}). Step 3: finish.",
            category="S9",
        )
        if i % 2
        else Exchange(request=f"How do I reset my router {i}?", response="I can't help with that, but ...")
        for i in range(n)
    ]
    started = time.perf_counter()
    judge.judge_many(exchanges)
    return n / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dialogues", type=int, default=32, help="one local-model batch (32) by default")
    parser.add_argument("--skip-model", action="store_true", help="only the model-free configuration")
    parser.add_argument("--only", type=int, choices=(1, 2, 3), help="run one configuration (1-3, in the order above)")
    args = parser.parse_args()
    print(f"local rule judge: {bench_local_judge():,.0f} exchanges/s", flush=True)
    configs = [("template-attacker", "policy-defender", "local")]
    if not args.skip_model:
        configs += [
            ("smollm2-135m-instruct", "smollm2-135m-instruct", "local"),
            ("smollm2-135m-instruct", "smollm2-135m-instruct", "llm:smollm2-135m-instruct"),
        ]
    if args.only:
        configs = [configs[args.only - 1]]
    for attacker, target, judge in configs:
        result = run(attacker, target, judge, args.dialogues)
        print(
            f"{result['config']}: {result['dialogues']} dialogues in {result['wall_s']:.1f} s = "
            f"{result['per_hour']:,.0f} dialogues/hour (ASR {result['asr']:.2f}, {result['turns']:.2f} turns/dialogue, "
            f"generated tokens by role {result['generated_tokens']}, "
            f"judge unparseable {result['judge_unparseable']:.2f})",
            flush=True,
        )


if __name__ == "__main__":
    main()
