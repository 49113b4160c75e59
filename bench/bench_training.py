"""Training throughput on the real SmolLM2-135M-Instruct (figures, not pass/fail).

1. SFT (TRL SFTTrainer through sv_shared.training.trainers.run_sft): steps/s and peak memory at batch 8 on E1
   reference examples (sv_shared.training.sft_data; prompts with the gold label as target when it is missing).
2. GRPO (GRPOTrainer through run_grpo, E1 rows and E1's verifier rewards): steps/s and peak memory at batch 4 with
   4 generations per prompt, and the tokens/s of the generation inside GRPO (completion tokens / time in the
   trainer's generate call, timed by wrapping GRPOTrainer._generate_single_turn).
3. Plain batched generation of the same model on the same prompts, same max_new_tokens and temperature
   (LocalModel.generate_batch, batches of 4 like GRPO's, and of 16): what generation costs outside the trainer.

SFT and GRPO run once per method (--methods; default full fine-tuning and LoRA r=16 on every linear layer, as the
E2/E3 recipes use), on the same examples, prompts and seed: whether LoRA pays on this machine is a measured ratio.

Each phase runs in its own process, so each peak (max RSS, or CUDA max allocated on a GPU) is that phase's own.

    python bench/bench_training.py [--sft-steps 5] [--grpo-steps 5] [--max-new-tokens 48] [--methods full lora]

Prints a table and writes outputs/bench/training.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sv_shared.config import outputs_dir
from sv_shared.registry import get_environment

MODEL_DIR = Path("models") / "smollm2-135m-instruct-hf"
ROWS = 64
METHODS = ("full", "lora")
LORA = {"r": 16, "alpha": 32, "dropout": 0.05, "target_modules": "all-linear"}
"""The E2/E3 recipes' adapter (configs/sft/e2.yaml)."""


def _method(method: str) -> dict[str, Any]:
    return {"method": "lora", "lora": LORA} if method == "lora" else {"method": "full"}


def _items(n: int) -> list[dict[str, Any]]:
    return get_environment("e1").data.load_source("embedded").to_dicts()[:n]


def _sft_examples(n: int) -> tuple[list[Any], str]:
    env = get_environment("e1")
    items = _items(n)
    try:
        from sv_shared.training.sft_data import build_sft_dataset

        return list(build_sft_dataset(env, items, min_reward=0.9).examples), "sft_data references"
    except ImportError:
        targets = [json.dumps({"label": item["label"], "confidence": 0.9}) for item in items]
        return [
            {"messages": [*env.episodes.messages(item), {"role": "assistant", "content": target}]}
            for item, target in zip(items, targets, strict=True)
        ], "gold-label targets"


def phase_sft(model_dir: Path, steps: int, batch: int, method: str) -> dict[str, Any]:
    from sv_shared.training.recipes import SftRecipe
    from sv_shared.training.trainers import run_sft

    examples, source = _sft_examples(batch * steps)
    recipe = SftRecipe.model_validate(
        {
            "name": "bench-sft",
            "stage": "sft",
            "base_model": "smollm2-135m-instruct",
            "envs": ["e1"],
            "learning_rate": 5.0e-5,
            "max_steps": steps,
            "per_device_train_batch_size": batch,
            "save_steps": 10_000,
            "max_length": 320,
            "min_reward": 0.9,
            **_method(method),
        }
    )
    with tempfile.TemporaryDirectory() as tmp:
        result = run_sft(recipe, base_model_dir=model_dir, examples=examples, output_dir=Path(tmp))
    losses = [entry["loss"] for entry in result.history if "loss" in entry]
    return {
        "method": method,
        "steps": result.steps,
        "batch": batch,
        "examples": source,
        "train_s": result.train_s,
        "steps_per_s": result.steps_per_s,
        "s_per_step": result.train_s / result.steps,
        "peak_memory_mb": result.peak_memory_mb,
        "peak_memory_kind": result.peak_memory_kind,
        "loss_first_last": [losses[0], losses[-1]] if losses else None,
    }


def phase_grpo(
    model_dir: Path, steps: int, batch: int, generations: int, max_new_tokens: int, method: str
) -> dict[str, Any]:
    import trl

    from sv_shared.training.recipes import RlftRecipe
    from sv_shared.training.rewards import grpo_prompt_rows, grpo_reward_functions
    from sv_shared.training.trainers import run_grpo

    timing = {"generate_s": 0.0, "completion_tokens": 0, "calls": 0, "sequences": 0}
    original = trl.GRPOTrainer._generate_single_turn

    def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        completion_ids, logprobs = original(self, *args, **kwargs)
        timing["generate_s"] += time.perf_counter() - started
        timing["completion_tokens"] += sum(len(ids) for ids in completion_ids)
        timing["sequences"] += len(completion_ids)
        timing["calls"] += 1
        return completion_ids, logprobs

    trl.GRPOTrainer._generate_single_turn = timed  # type: ignore[method-assign]
    env = get_environment("e1")
    prompts_needed = steps * batch // generations
    rows = grpo_prompt_rows(env, _items(prompts_needed))  # one epoch: GRPO sees exactly these prompts
    functions, weights = grpo_reward_functions({"e1": env})
    recipe = RlftRecipe.model_validate(
        {
            "name": "bench-grpo",
            "stage": "rlft-single",
            "envs": ["e1"],
            "init_from": "smollm2-135m-instruct",
            "num_generations": generations,
            "max_completion_length": max_new_tokens,
            "temperature": 1.0,
            "beta": 0.0,
            "learning_rate": 5.0e-6,
            "max_steps": steps,
            "per_device_train_batch_size": batch,
            "save_steps": 10_000,
            "items_per_env": prompts_needed,
            **_method(method),
        }
    )
    with tempfile.TemporaryDirectory() as tmp:
        result = run_grpo(
            recipe,
            base_model_dir=model_dir,
            rows=rows,
            reward_funcs=functions,
            reward_weights=weights,
            output_dir=Path(tmp),
        )
    logged = [entry for entry in result.history if "reward" in entry]
    return {
        "method": method,
        "steps": result.steps,
        "batch": batch,
        "generations": generations,
        "max_new_tokens": max_new_tokens,
        "train_s": result.train_s,
        "steps_per_s": result.steps_per_s,
        "s_per_step": result.train_s / result.steps,
        "peak_memory_mb": result.peak_memory_mb,
        "peak_memory_kind": result.peak_memory_kind,
        "generate_s": timing["generate_s"],
        "generate_share": timing["generate_s"] / result.train_s,
        "completion_tokens": timing["completion_tokens"],
        "sequences": timing["sequences"],
        "tokens_per_s": timing["completion_tokens"] / timing["generate_s"] if timing["generate_s"] else 0.0,
        "reward_mean": sum(entry["reward"] for entry in logged) / len(logged) if logged else None,
        "frac_reward_zero_std": [entry["frac_reward_zero_std"] for entry in logged],
        "prompts": [row["prompt"] for row in rows],
    }


def phase_plain(model_dir: Path, prompts: list[list[dict[str, str]]], generations: int, max_new_tokens: int) -> dict:
    import resource

    from secverify_dagster.resources.models.local_model import LocalModel
    from secverify_dagster.resources.models.types import ChatRequest

    model = LocalModel(model_dir)
    params = {"max_tokens": max_new_tokens, "temperature": 1.0}
    requests = [ChatRequest(prompt, params, seed=42) for prompt in prompts for _ in range(generations)]
    model.generate_batch(requests[:1])  # warm-up, like the trainer's first step pays its own
    out: dict[str, Any] = {"load_s": model.load_s}
    for batch in (generations, 4 * generations):
        started = time.perf_counter()
        tokens = 0
        for start in range(0, len(requests), batch):
            tokens += sum(c.usage.completion_tokens for c in model.generate_batch(requests[start : start + batch]))
        elapsed = time.perf_counter() - started
        out[f"batch_{batch}"] = {
            "sequences": len(requests),
            "completion_tokens": tokens,
            "generate_s": elapsed,
            "tokens_per_s": tokens / elapsed,
        }
    out["peak_memory_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def _run_phase(args: list[str]) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        out = Path(handle.name)
    try:
        subprocess.run([sys.executable, __file__, *args, "--out", str(out)], check=True)
        return json.loads(out.read_text(encoding="utf-8"))
    finally:
        out.unlink(missing_ok=True)


def _row(name: str, *cells: str) -> None:
    widths = (8, 7, 9, 8)
    print(f"{name:<50} " + " ".join(f"{cell:>{width}}" for cell, width in zip(cells, widths, strict=False)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sft-steps", type=int, default=5)
    parser.add_argument("--sft-batch", type=int, default=8)
    parser.add_argument("--grpo-steps", type=int, default=5)
    parser.add_argument("--grpo-batch", type=int, default=4)
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--method", choices=METHODS, default="full", help=argparse.SUPPRESS)
    parser.add_argument("--phase", choices=["sft", "grpo", "plain"], help=argparse.SUPPRESS)
    parser.add_argument("--prompts", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    model_dir = outputs_dir() / MODEL_DIR

    if args.phase:  # a child process: one phase, its result as JSON
        if args.phase == "sft":
            result = phase_sft(model_dir, args.sft_steps, args.sft_batch, args.method)
        elif args.phase == "grpo":
            result = phase_grpo(
                model_dir, args.grpo_steps, args.grpo_batch, args.generations, args.max_new_tokens, args.method
            )
        else:
            prompts = json.loads(Path(args.prompts).read_text(encoding="utf-8"))
            result = phase_plain(model_dir, prompts, args.generations, args.max_new_tokens)
        Path(args.out).write_text(json.dumps(result), encoding="utf-8")
        return

    from secverify_dagster.resources.models.local_model import export_hf_folder

    started = time.perf_counter()
    export_hf_folder(model_dir)
    export_s = time.perf_counter() - started
    common = ["--generations", str(args.generations), "--max-new-tokens", str(args.max_new_tokens)]
    sft_args = ["--phase", "sft", "--sft-steps", str(args.sft_steps), "--sft-batch", str(args.sft_batch)]
    grpo_args = ["--phase", "grpo", "--grpo-steps", str(args.grpo_steps), "--grpo-batch", str(args.grpo_batch)]
    sft = {method: _run_phase([*sft_args, "--method", method]) for method in args.methods}
    grpo = {method: _run_phase([*grpo_args, *common, "--method", method]) for method in args.methods}
    prompts = [run.pop("prompts") for run in grpo.values()]  # the same rows for every method
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as handle:
        json.dump(prompts[0], handle)
        prompts_file = handle.name
    try:
        plain = _run_phase(["--phase", "plain", "--prompts", prompts_file, *common])
    finally:
        os.unlink(prompts_file)

    import torch
    import transformers
    import trl

    report = {
        "model": str(model_dir),
        "export_s": export_s,
        "machine": {
            "cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "cuda": torch.cuda.is_available(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "trl": trl.__version__,
        },
        "sft": sft,
        "grpo": grpo,
        "plain_generation": plain,
    }
    small, large = plain[f"batch_{args.generations}"], plain[f"batch_{4 * args.generations}"]
    print(f"\nSmolLM2-135M-Instruct, {os.cpu_count()} CPUs, torch {torch.__version__}, trl {trl.__version__}")
    _row("phase", "steps/s", "s/step", "tokens/s", "peak MB")
    for method, run in sft.items():
        _row(
            f"SFT {method} (batch {run['batch']}, E1 {run['examples']})",
            f"{run['steps_per_s']:.3f}",
            f"{run['s_per_step']:.2f}",
            "",
            f"{run['peak_memory_mb']:.0f}",
        )
    for method, run in grpo.items():
        _row(
            f"GRPO {method} (batch {run['batch']}, {run['generations']} gens, {run['max_new_tokens']} new tokens)",
            f"{run['steps_per_s']:.3f}",
            f"{run['s_per_step']:.2f}",
            "",
            f"{run['peak_memory_mb']:.0f}",
        )
        _row(
            f"  generation inside GRPO {method} ({100 * run['generate_share']:.0f}% of step)",
            "",
            "",
            f"{run['tokens_per_s']:.1f}",
        )
    _row(
        f"plain generate_batch, batch {args.generations}",
        "",
        "",
        f"{small['tokens_per_s']:.1f}",
        f"{plain['peak_memory_mb']:.0f}",
    )
    _row(f"plain generate_batch, batch {4 * args.generations}", "", "", f"{large['tokens_per_s']:.1f}")
    for phase, runs in (("SFT", sft), ("GRPO", grpo)):
        if {"full", "lora"} <= set(runs):
            ratio = runs["full"]["s_per_step"] / runs["lora"]["s_per_step"]
            memory = runs["lora"]["peak_memory_mb"] / runs["full"]["peak_memory_mb"]
            report[f"{phase.lower()}_lora_speedup"] = ratio
            print(
                f"{phase}: LoRA runs {ratio:.2f}x the steps/s of full fine-tuning, at {memory:.0%} of its peak memory"
            )
    dest = outputs_dir() / "bench" / "training.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {dest}")


if __name__ == "__main__":
    main()
