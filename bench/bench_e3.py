"""E3 benchmarks (figures, not pass/fail): patch verifications per second on this machine, and sandbox overhead.

1. Sandbox overhead per run: the same trusted project's pytest run directly (no sandbox) and through the harness
   (bubblewrap + cgroups + pristine test files + report parsing), and bwrap starting /bin/true.
2. Verification throughput (apply + sandboxed pytest + bandit + semgrep + reward) through `score_many`, with the
   verifier's thread pool and one scanner batch per call: every completion is a reference fix with a unique comment,
   so the patched code is new to the scanner and test-run caches each time (the original and reference code are
   cached after the first round, as in a real eval). Reported per worker count, with a cold scanner cache for the
   first round.

    python bench/bench_e3.py [--rounds 3] [--workers 1 2] [--out outputs/bench/e3.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sv_env_code_vulnerability import data
from sv_env_code_vulnerability.env import build
from sv_env_code_vulnerability.harness import HARNESS_CONFTEST_SOURCE, Harness, write_project
from sv_env_code_vulnerability.scanners import CodeScanners
from sv_env_code_vulnerability.schema import HARNESS_CONFTEST, item_files, item_list
from sv_env_code_vulnerability.verify import answer_json
from sv_shared.config import outputs_dir
from sv_shared.execution.cache import JsonCache
from sv_shared.execution.patching import apply_patch_to_files
from sv_shared.execution.sandbox import Sandbox, SandboxLimits
from sv_shared.registry import load_env_config


def _median_s(samples: list[float]) -> float:
    return round(statistics.median(samples), 4)


def bench_overhead(item: dict[str, Any], repeats: int) -> dict[str, float]:
    """Wall time of one pytest run of a trusted embedded item (our own code, so it may run unsandboxed here) with
    the harness's pytest arguments: a plain subprocess vs the harness, and bwrap starting /bin/true."""
    files = item_files(item)
    tests = item_list(item, "test_files")
    harness = Harness(SandboxLimits(timeout_s=20))
    plain: list[float] = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="sv-e3-bench-") as tmp:
            write_project(Path(tmp), {**files, HARNESS_CONFTEST: HARNESS_CONFTEST_SOURCE})
            args = harness.pytest_args(tests)
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-c", os.devnull, *args],
                cwd=tmp,
                capture_output=True,
                check=False,
                env={"PATH": os.environ["PATH"], "HOME": tmp, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
            )
            plain.append(time.perf_counter() - started)
    sandboxed = []
    for _ in range(repeats):
        started = time.perf_counter()
        report = harness.run(files, tests)
        sandboxed.append(time.perf_counter() - started)
        assert report.ok, report.error
    bare = []
    sandbox = Sandbox()
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="sv-e3-bench-") as tmp:
            started = time.perf_counter()
            sandbox.run(["/bin/true"], workdir=Path(tmp), limits=SandboxLimits(timeout_s=10))
            bare.append(time.perf_counter() - started)
    return {
        "pytest_unsandboxed_s": _median_s(plain),
        "pytest_in_harness_s": _median_s(sandboxed),
        "sandbox_overhead_per_run_s": round(_median_s(sandboxed) - _median_s(plain), 4),
        "bwrap_true_s": _median_s(bare),
    }


def _completions(items: list[dict[str, Any]], nonce: str) -> list[tuple[dict[str, Any], str]]:
    """A reference fix per item plus one unique comment line, so the patched module is new to the cache."""
    pairs = []
    for item in items:
        patch = item["reference_patch"]
        module = item["module_path"]
        fixed = json.loads(item["files"])
        after = apply_patch_to_files(patch, fixed).updated(fixed)
        after[module] = after[module] + f"# bench {nonce}\n"
        diff = data.make_diff({module: fixed[module]}, {module: after[module]})
        pairs.append((item, answer_json(diff, item["cwe"], "bench")))
    return pairs


def bench_throughput(items: list[dict[str, Any]], workers: int, rounds: int, cache_dir: Path) -> dict[str, Any]:
    config = load_env_config("e3")
    config = config.model_copy(update={"verifier": config.verifier.model_copy(update={"workers": workers})})
    cache = JsonCache(cache_dir / f"scanners-{workers}.sqlite")
    env = build(config, scanners=CodeScanners(cache=cache))
    per_round = []
    stages: dict[str, list[float]] = {"sandbox_s": [], "apply_s": []}
    for index in range(rounds):
        pairs = _completions(items, f"{workers}-{index}-{time.time_ns()}")
        started = time.perf_counter()
        scored = env.verifier.score_many([item for item, _ in pairs], [completion for _, completion in pairs])
        elapsed = time.perf_counter() - started
        assert all(sample.reward > 0.95 for sample in scored), [s.error for s in scored if s.reward <= 0.95]
        per_round.append({"items": len(pairs), "seconds": round(elapsed, 3), "per_s": round(len(pairs) / elapsed, 2)})
        for sample in scored:
            for stage in stages:
                stages[stage].append(float(sample.details["timings"].get(stage, 0.0)))
    files = {
        f"{i}/{item['module_path']}": f"# scan {time.time_ns()}\n" + json.loads(item["files"])[item["module_path"]]
        for i, item in enumerate(items)
    }
    started = time.perf_counter()
    CodeScanners(cache=None).scan(files)
    scan_batch_s = time.perf_counter() - started
    cache.close()
    warm = per_round[1:] or per_round
    return {
        "workers": workers,
        "rounds": per_round,
        "cold_cache_per_s": per_round[0]["per_s"],
        "warm_cache_per_s": round(sum(r["items"] for r in warm) / sum(r["seconds"] for r in warm), 2),
        "median_sandbox_run_s": _median_s(stages["sandbox_s"]),
        "median_apply_s": round(statistics.median(stages["apply_s"]), 5),
        "scan_batch_s": round(scan_batch_s, 3),
        "scan_per_file_ms": round(1000 * scan_batch_s / len(files), 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5, help="runs per overhead measurement")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--out", type=Path, default=outputs_dir() / "bench" / "e3.json")
    args = parser.parse_args()

    items = data.load_embedded().to_dicts()
    result: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "items_per_round": len(items),
    }
    result["overhead"] = bench_overhead(items[0], args.repeats)
    print("sandbox overhead:", json.dumps(result["overhead"]))
    with tempfile.TemporaryDirectory(prefix="sv-e3-bench-cache-") as tmp:
        result["throughput"] = []
        for workers in args.workers:
            figures = bench_throughput(items, workers, args.rounds, Path(tmp))
            result["throughput"].append(figures)
            print(f"workers={workers}:", json.dumps({k: v for k, v in figures.items() if k != "rounds"}))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
