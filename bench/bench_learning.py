"""Evidence that training learns: base → SFT → RLFT on held-out items, with a reward-hacking check on the result.

For each environment: train its SFT recipe (configs/sft/<env>.yaml) and its RLFT recipe (configs/rlft/<env>.yaml,
which continues the SFT checkpoint) through the asset graph (`secverify train`), evaluate the base model and both
checkpoints on the curated test split (items no training step saw; seed 42, the same items for all three), and
compare them with the paired bootstrap. Then the trained policy's answers are checked against the reward-hacking
suite's cheap strategies (bench/bench_reward_hacking.py): how often its answer is what a cheap strategy would have
said, and whether its reward beats the best cheap strategy's only by being right; each model's answers against the
split's labels (balanced accuracy, collapse: sv_shared.answers.collapse); each model against the best constant
strategy on the same items (paired bootstrap: a gain counts only when it beats answering the same thing every time);
both runs' learning curves (sv_shared.training.learning_curves), GRPO's groups without reward spread, peak memory;
and every model's and the best constant's mean reward per template of the test split (E1: one source host's flows of
one scenario, sv_env_network_logs.templates; E4: label and scenario), which says where a model gains or loses.

    python bench/bench_learning.py [--envs e1 e4] [--base smollm2-135m-instruct]

Prints a table and writes outputs/bench/learning.json.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl
from bench_reward_hacking import Seen, detection_strategies, e4_strategies

from secverify_dagster.pipeline import SCAN_FAILED, run_training
from secverify_dagster.resources.models import load_registry
from secverify_dagster.runner.datasets import EvalDataset
from secverify_dagster.runner.eval_runner import EvalRunner
from secverify_dagster.training.parents import latest_checkpoint
from secverify_dagster.training.paths import TrainingError, TrainingPaths
from sv_env_network_logs.templates import template_keys
from sv_shared.answers.collapse import profile_line
from sv_shared.answers.constant_answers import constant_answers
from sv_shared.answers.statistics import align_paired, paired_bootstrap
from sv_shared.config import outputs_dir
from sv_shared.contracts import Environment
from sv_shared.data.datasets import read_dataset
from sv_shared.data.files import write_json_atomic
from sv_shared.registry import get_environment
from sv_shared.runs.folder import RunFolder
from sv_shared.training.learning_curves import curve_rows, curve_summary

SEED = 42
HONEST = {"e1": "heuristic", "e4": "phish-rules"}


def _template_column(env_id: str, frame: pl.DataFrame) -> pl.Series:
    """Each test item's template: what the split holds out whole, so a per-template reward reads generalisation."""
    if env_id == "e1":
        return frame.select(template_keys(frame)).to_series()
    return frame.select(pl.concat_str([pl.col("label"), pl.col("scenario")], separator="/")).to_series()


def by_template(
    env: Environment, frame: pl.DataFrame, runs: Mapping[str, Sequence[Mapping[str, Any]]], constant: Sequence[Mapping]
) -> list[dict[str, Any]]:
    """Per template of the split, largest first: its item count and each model's and the best constant's mean."""
    templates = dict(zip(frame[env.data.id_column].cast(pl.String), _template_column(env.env_id, frame), strict=True))
    sums: dict[str, dict[str, list[float]]] = {}
    for name, records in {**runs, "best constant": constant}.items():
        for record in records:
            template = templates[str(record["id"])]
            sums.setdefault(template, {}).setdefault(name, []).append(float(record["reward"]))
    rows = [
        {
            "template": template,
            "n": len(next(iter(rewards.values()))),
            **{name: round(sum(values) / len(values), 3) for name, values in rewards.items()},
        }
        for template, rewards in sums.items()
    ]
    return sorted(rows, key=lambda row: (-row["n"], row["template"]))


def evaluate(
    env: Environment, model_id: str, dataset: EvalDataset, registry: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The model's scored samples on every item of the dataset (a complete run, resumed if one exists), and its
    answers against the split's labels (sv_shared.answers.collapse)."""
    paths = TrainingPaths.default()
    cache = paths.response_cache()
    try:
        runner = EvalRunner(env, registry[model_id], evals_root=paths.evals, cache=cache, registry=dict(registry))
        outcome = runner.run(dataset, n=dataset.frame.height, seed=SEED)
    finally:
        cache.close()
    if outcome.status != "complete" or outcome.run_dir is None:
        raise RuntimeError(f"{model_id} on {env.env_id}: {outcome.status} ({outcome.reason})")
    folder = RunFolder(outcome.run_dir)
    return [record.as_dict() for record in folder.read_results()], folder.read_summary().metrics["answers"]


def compare(records_a: Sequence[Mapping[str, Any]], records_b: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    ids, a, b = align_paired(records_a, records_b)
    return {"n_paired": len(ids), **paired_bootstrap(a, b, seed=SEED).to_dict()}


def _answer(completion: str) -> tuple[str, float] | None:
    try:
        parsed = json.loads(completion)
        return str(parsed["label"]), round(float(parsed["confidence"]), 3)
    except (ValueError, KeyError, TypeError):
        return None


def best_constant(env: Environment, items: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], list[dict]]:
    """The best answer-independent strategy on these items (sv_shared.answers.constant_answers): its name and mean
    reward, and its per-item records to pair with a model's."""
    labels = sorted({str(item[env.data.label_column]) for item in items})
    scored = {
        name: env.verifier.score_many(list(items), [answer] * len(items))
        for name, answer in constant_answers(labels, with_evidence=env.env_id == "e4").items()
    }
    name, samples = max(scored.items(), key=lambda pair: sum(sample.reward for sample in pair[1]))
    mean = sum(sample.reward for sample in samples) / len(samples)
    return {"name": name, "mean_reward": mean}, [{"id": sample.item_id, "reward": sample.reward} for sample in samples]


def hacking_check(env: Environment, items: Sequence[Mapping[str, Any]], records: Sequence[Mapping[str, Any]]) -> dict:
    """How the trained policy's answers relate to the cheap strategies on the same items."""
    by_id = {str(record["id"]): record for record in records}
    items = [item for item in items if str(item[env.data.id_column]) in by_id]
    labels = [item[env.data.label_column] for item in items]
    strategies = (
        detection_strategies(labels, "Benign", "Malicious", evidence=False)
        if env.env_id == "e1"
        else e4_strategies(labels)
    )
    honest = env.baselines[HONEST[env.env_id]]
    observations = [env.episodes.observation(item) for item in items]
    honest_answers = [honest(observation) for observation in observations]
    policy = [_answer(by_id[str(item[env.data.id_column])]["completion"] or "") for item in items]
    rows = {}
    for name, strategy in strategies.items():
        answers = [strategy(Seen(env, obs, h)) for obs, h in zip(observations, honest_answers, strict=True)]
        scored = env.verifier.score_many(list(items), answers)
        pairs = [(mine, _answer(theirs)) for mine, theirs in zip(policy, answers, strict=True)]
        same = sum(1 for mine, theirs in pairs if mine is not None and mine == theirs)
        same_label = sum(
            1 for mine, theirs in pairs if mine is not None and theirs is not None and mine[0] == theirs[0]
        )
        rows[name] = {
            "mean_reward": sum(s.reward for s in scored) / len(scored),
            "same_answer_share": same / len(items),
            "same_label_share": same_label / len(items),
        }
    parsed = [answer for answer in policy if answer is not None]
    policy_reward = sum(float(by_id[str(item[env.data.id_column])]["reward"]) for item in items) / len(items)
    best = max(rows.items(), key=lambda row: row[1]["mean_reward"])
    closest = max(rows.items(), key=lambda row: (row[1]["same_label_share"], row[1]["same_answer_share"]))
    flags = []
    if closest[1]["same_label_share"] >= 0.95:
        flags.append(f"labels match the cheap strategy {closest[0]!r} on {closest[1]['same_label_share']:.0%} of items")
    return {
        "flags": flags,
        "policy_reward": policy_reward,
        "parsed_share": len(parsed) / len(items),
        "best_cheap_strategy": {"name": best[0], **best[1]},
        "closest_cheap_strategy": {"name": closest[0], **closest[1]},
        "strategies": rows,
    }


def _has_checkpoint(paths: TrainingPaths, kind: str, recipe: str) -> bool:
    try:
        latest_checkpoint(paths, kind, recipe)
    except TrainingError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=["e1", "e4"])
    parser.add_argument("--base", default="smollm2-135m-instruct")
    parser.add_argument("--reuse", action="store_true", help="use a recipe's latest checkpoint when it has one")
    args = parser.parse_args()
    paths = TrainingPaths.default()
    results: dict[str, Any] = {}
    for env_id in args.envs:
        env = get_environment(env_id)
        timings = {}
        for kind in ("sft", "rlft"):
            started = time.perf_counter()
            if args.reuse and _has_checkpoint(paths, kind, env_id):
                continue
            status = run_training(kind, env_id)
            if status not in (0, SCAN_FAILED):
                raise SystemExit(f"training {kind}/{env_id} failed")
            timings[f"{kind}_s"] = round(time.perf_counter() - started, 1)
        sft, _ = latest_checkpoint(paths, "sft", env_id)
        rlft, _ = latest_checkpoint(paths, "rlft", env_id)
        zero_spread = [
            entry["frac_reward_zero_std"]
            for entry in rlft.metrics.get("history", [])
            if "frac_reward_zero_std" in entry
        ]
        registry = load_registry()
        test_path = paths.datasets(env_id) / "curated" / "test.parquet"
        dataset = EvalDataset(frame=read_dataset(test_path), source=str(test_path), split="test")
        started = time.perf_counter()
        evaluated = {
            name: evaluate(env, model, dataset, registry)
            for name, model in (("base", args.base), ("sft", sft.model_id), ("rlft", rlft.model_id))
        }
        runs = {name: records for name, (records, _) in evaluated.items()}
        answers = {name: profile for name, (_, profile) in evaluated.items()}
        timings["evals_s"] = round(time.perf_counter() - started, 1)
        means = {name: sum(r["reward"] for r in records) / len(records) for name, records in runs.items()}
        constant, constant_records = best_constant(env, dataset.frame.to_dicts())
        results[env_id] = {
            "models": {"base": args.base, "sft": sft.model_id, "rlft": rlft.model_id},
            "n_test_items": dataset.frame.height,
            "dataset_hash": dataset.hash,
            "mean_reward": means,
            "sft_vs_base": compare(runs["sft"], runs["base"]),
            "rlft_vs_sft": compare(runs["rlft"], runs["sft"]),
            "rlft_vs_base": compare(runs["rlft"], runs["base"]),
            # A gain counts only against the best answer-independent strategy, on the same items.
            "best_constant_strategy": constant,
            "vs_best_constant": {name: compare(records, constant_records) for name, records in runs.items()},
            "answers": answers,
            "hacking_check": hacking_check(env, dataset.frame.to_dicts(), runs["rlft"]),
            "by_template": by_template(env, dataset.frame, runs, constant_records),
            "learning_curves": {
                name: curve_summary(curve_rows(manifest.metrics.get("history") or []))
                for name, manifest in (("sft", sft), ("rlft", rlft))
            },
            "rlft_spread": rlft.metrics.get("spread"),
            "peak_memory_mb": {"sft": sft.metrics.get("peak_memory_mb"), "rlft": rlft.metrics.get("peak_memory_mb")},
            "training": {"sft": sft.metrics, "rlft": rlft.metrics},
            # GRPO learns only from groups whose rewards differ: the share of steps in which no group's did.
            "rlft_steps_without_reward_spread": (
                sum(1 for share in zero_spread if share >= 1.0) / len(zero_spread) if zero_spread else None
            ),
            "timings": timings,
        }
        row = results[env_id]
        print(f"\n{env_id}: {dataset.frame.height} held-out test items (dataset {dataset.hash[:12]})")
        print(f"  mean reward  base {means['base']:.3f} → SFT {means['sft']:.3f} → RLFT {means['rlft']:.3f}")
        for pair in ("sft_vs_base", "rlft_vs_sft", "rlft_vs_base"):
            c = row[pair]
            interval = f"[{c['ci_low']:+.3f}, {c['ci_high']:+.3f}]"
            print(f"  {pair:13s} Δ {c['delta']:+.3f}  95% CI {interval}  p {c['p_value']:.3f}")
        constant = row["best_constant_strategy"]
        for name, c in row["vs_best_constant"].items():
            interval = f"[{c['ci_low']:+.3f}, {c['ci_high']:+.3f}]"
            print(
                f"  {name + ' vs best constant':28s} Δ {c['delta']:+.3f}  95% CI {interval}  p {c['p_value']:.3f}"
                f"  ({constant['name']!r}: {constant['mean_reward']:.3f})"
            )
        for name, summary in row["learning_curves"].items():
            print(f"  {name} learning curve: {summary}")
        print(f"  GRPO groups: {row['rlft_spread']}; peak memory MB {row['peak_memory_mb']}")
        for name, profile in answers.items():
            print(f"  {name}: {profile['collapse'] + ' | ' if profile['collapsed'] else ''}{profile_line(profile)}")
        check = row["hacking_check"]
        closest = check["closest_cheap_strategy"]
        print(
            f"  hacking check: parsed {check['parsed_share']:.2f}; closest cheap strategy {closest['name']!r} "
            f"({closest['same_label_share']:.2f} same labels, {closest['same_answer_share']:.2f} same answers); "
            f"best cheap strategy {check['best_cheap_strategy']['name']!r} "
            f"{check['best_cheap_strategy']['mean_reward']:.3f} vs policy {check['policy_reward']:.3f}"
        )
        print(f"  flags: {'; '.join(check['flags']) or 'none'}")
        print("  mean reward per test template (items | base, SFT, RLFT, best constant):")
        for entry in row["by_template"]:
            print(
                f"    {entry['template']:40s} {entry['n']:3d} | {entry['base']:+.3f} {entry['sft']:+.3f} "
                f"{entry['rlft']:+.3f} {entry['best constant']:+.3f}"
            )
        print(f"  GRPO steps whose groups all had equal rewards: {row['rlft_steps_without_reward_spread']}")
        print(f"  timings {timings}")
    out = outputs_dir() / "bench" / "learning.json"
    write_json_atomic(out, results, default=str)
    print(f"\n→ {out}")


if __name__ == "__main__":
    main()
