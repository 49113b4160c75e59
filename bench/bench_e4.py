"""E4 benchmark (a figure, not pass/fail): verifier throughput, items/s.

One scored item = parse the email (MIME, charsets, HTML) + run every detector + parse the answer + all reward
components. Two figures:

- cold: every item is new to the environment (its detector cache is empty), so each score parses and analyses the
  email: the cost of scoring a fresh eval set;
- warm: items repeat (as when several completions of one item are scored: GRPO groups, re-scoring), so the
  environment's per-item detector cache answers and only the answer is parsed and scored.

The completions are a realistic mix: grounded evidence, evidence with ungrounded or off-type quotes, fenced JSON,
abstentions and malformed answers.

    python bench/bench_e4.py [--items 2000] [--warm 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time

import polars as pl

from sv_env_phishing_detection.detectors import analyze
from sv_shared.registry import get_environment


def _completions(items: list[dict], rng: random.Random) -> list[str]:
    """What models emit: grounded evidence, invented quotes, wrong types, fences, abstentions, broken JSON."""
    out = []
    for item in items:
        analysis = analyze(item["raw_email"])
        evidence = [{"type": kind, "quote": anchors[0]} for kind, anchors in analysis.indicators.items()]
        label = rng.choice([item["label"], item["label"], "Phishing", "Legitimate", "Abstain"])
        confidence = round(rng.random(), 2)
        shape = rng.randrange(6)
        if shape == 0:
            text = json.dumps({"label": label, "confidence": confidence, "evidence": evidence})
        elif shape == 1:
            invented = [*evidence[:1], {"type": "urgency", "quote": "act now or lose everything"}]
            text = json.dumps({"label": label, "confidence": confidence, "evidence": invented})
        elif shape == 2:
            text = f"```json\n{json.dumps({'label': label, 'confidence': confidence, 'evidence': evidence[:2]})}\n```"
        elif shape == 3:
            wrong = [{"type": "auth_failure", "quote": entry["quote"]} for entry in evidence[:2]]
            text = json.dumps({"label": label.lower(), "confidence": confidence, "evidence": wrong})
        elif shape == 4:
            text = '{"label": "Phishing", "confidence": 0.9, "evidence": [{"type": "urgency", "quote": "act'
        else:
            text = json.dumps({"label": label, "confidence": confidence, "evidence": [{"type": "bogus", "quote": "x"}]})
        out.append(text)
    return out


def bench_cold(items: list[dict], completions: list[str]) -> float:
    env = get_environment("e4")  # a fresh environment: an empty detector cache
    started = time.perf_counter()
    for item, completion in zip(items, completions, strict=True):
        env.verifier.score(item, completion)
    return len(items) / (time.perf_counter() - started)


def bench_warm(items: list[dict], completions: list[str], total: int) -> float:
    env = get_environment("e4")
    rng = random.Random(7)
    pool = [rng.randrange(len(items)) for _ in range(total)]
    for item, completion in zip(items, completions, strict=True):  # fill the cache, as the first pass of a run does
        env.verifier.score(item, completion)
    started = time.perf_counter()
    for index in pool:
        env.verifier.score(items[index], completions[index])
    return total / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=2_000, help="distinct emails for the cold figure")
    parser.add_argument("--warm", type=int, default=100_000, help="scores for the warm figure")
    args = parser.parse_args()

    env = get_environment("e4")
    embedded = env.data.load_source("embedded")
    synthetic = env.data.synthesize(max(0, args.items - embedded.height), seed=42)
    frame = pl.concat([embedded, synthetic])
    items = frame.sample(fraction=1.0, shuffle=True, seed=1).to_dicts()[: args.items]
    completions = _completions(items, random.Random(42))
    mean_kb = sum(len(item["raw_email"]) for item in items) / len(items) / 1024
    print(f"E4 verifier throughput on {os.cpu_count()} cores, {len(items)} emails (mean {mean_kb:.1f} KB):")
    print(f"  cold (parse email + detectors + answer + reward): {bench_cold(items, completions):,.0f} items/s")
    print(
        f"  warm (detector cache hit: answer + reward):       {bench_warm(items, completions, args.warm):,.0f} items/s"
    )
    print("  (target ≥ 2,000 items/s)")


if __name__ == "__main__":
    main()
