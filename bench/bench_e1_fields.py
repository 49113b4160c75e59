"""E1 `heuristic` on flows with fewer fields (figures, not pass/fail).

For each embedded split (train, the one it is fitted on; dev; test) and each combination of missing field groups
(all 2^4 subsets of views.py's no-bytes, no-packets, no-state, no-service), then with only the endpoints recorded
(hosts, ports, protocol, service: what the public IoT-23-derived benchmark shows) and with the endpoints and Zeek's
conn_state: mean reward, accuracy, F1 and balanced accuracy (intent-to-treat: an abstention is a wrong answer),
abstention and recall per true class, and on the answered flows the mean confidence, ECE and Brier score beside
"brier@1", the Brier the same labels would score at confidence 1 (a Brier above it means stating certainty would earn
more calibration reward), through the environment's own verifier (sv_env_network_logs.figures). Each
split's header gives the best answer-independent strategy's reward (one label at one confidence for every flow, or
always abstaining), the bar tests/test_reward_skill.py holds the baseline above on test.

With --iot23 PATH (a local IoT-23 mirror: the hub export's parquet/CSV/JSONL or raw conn.log.labeled files, as
data.load_iot23 reads them) it also prints the same views of a seeded sample of --per-class flows of each label
from it: outside data nobody here wrote, where the baseline's train-fitted confidences meet another distribution.

    python bench/bench_e1_fields.py [--split train|dev|test|all] [--seed 42] [--iot23 PATH [--per-class 50]]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from sv_env_network_logs.data import load_iot23
from sv_env_network_logs.figures import SPLITS, ViewFigures, measure, views_of
from sv_shared.contracts import Environment
from sv_shared.registry import get_environment

CONSTANT_LABELS = ("Malicious", "Benign", "Abstain")
CONFIDENCES = [step / 20 for step in range(21)]
COLUMNS = (
    "reward",
    "accuracy",
    "f1",
    "bal_acc",
    "abst_B",
    "abst_M",
    "recall_B",
    "recall_M",
    "conf",
    "ece",
    "brier",
    "brier@1",
)


def best_constant(env: Environment, frame: pl.DataFrame) -> tuple[str, float]:
    items = frame.to_dicts()
    rewards = {}
    for label in CONSTANT_LABELS:
        for confidence in CONFIDENCES:
            text = json.dumps({"label": label, "confidence": confidence, "rationale": "same for every flow"})
            rewards[f"{label}@{confidence:g}"] = sum(env.verifier.score(item, text).reward for item in items) / len(
                items
            )
    return max(rewards.items(), key=lambda pair: pair[1])


def cells(figures: ViewFigures) -> list[float | None]:
    per_class = [figures.abstention.get(label) for label in ("Benign", "Malicious")]
    recalls = [figures.recall.get(label) for label in ("Benign", "Malicious")]
    calibration = [figures.mean_confidence, figures.ece, figures.brier, figures.brier_at_certainty]
    return [figures.reward, figures.accuracy, figures.f1, figures.balanced_accuracy, *per_class, *recalls, *calibration]


def render(rows: list[ViewFigures]) -> str:
    width = max(len(row.view) for row in rows)
    lines = [f"{'view':{width}s} " + " ".join(f"{column:>8s}" for column in COLUMNS)]
    for row in rows:
        values = " ".join("       –" if value is None else f"{value:8.3f}" for value in cells(row))
        lines.append(f"{row.view:{width}s} {values}")
    return "\n".join(lines)


def outside_sample(path: Path, per_class: int, seed: int) -> pl.DataFrame:
    """Up to `per_class` flows of each label from a local IoT-23 mirror, drawn with `seed`."""
    flows = load_iot23(path)
    return pl.concat(
        [
            part.sample(min(per_class, part.height), seed=seed)
            for _, part in flows.group_by("label", maintain_order=True)
        ]
    ).sort("flow_id")


def print_views(env: Environment, name: str, frame: pl.DataFrame) -> None:
    labels = dict(frame["label"].value_counts().sort("label").rows())
    constant, reward = best_constant(env, frame)
    print(f"\n{name}: {frame.height} flows {labels}; best constant {constant} earns {reward:.3f}")
    answer = env.baselines["heuristic"]
    print(render([measure(env, answer, viewed, split=name, view=view) for view, viewed in views_of(frame)]))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="all", choices=(*SPLITS, "all"))
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--iot23", type=Path, help="a local IoT-23 mirror to sample outside flows from")
    parser.add_argument("--per-class", type=int, default=50)
    args = parser.parse_args(argv)
    env = get_environment("e1")
    splits = env.data.curate([env.data.load_source("embedded")], seed=args.seed)
    print("split sizes: " + ", ".join(f"{name} {part.height}" for name, part in splits.items()))
    for split in SPLITS if args.split == "all" else (args.split,):
        print_views(env, split, splits[split])
    if args.iot23 is not None:
        print_views(env, f"IoT-23 sample ({args.iot23.name})", outside_sample(args.iot23, args.per_class, args.seed))


if __name__ == "__main__":
    main()
