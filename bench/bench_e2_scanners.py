"""E2 scanner adapters: cold and warm per-call cost, batched throughput, and the naive way (figures, not pass/fail).

For each adapter (semgrep, checkov through the tool worker, trivy):
1. cold: the first scan of one file in a fresh process (checkov: starting the worker and importing checkov);
2. warm single: one more single-file scan;
3. batched: one scan of N Kubernetes manifests and one of N Terraform modules (seconds per file);
and for comparison the naive way, one CLI subprocess per file (measured on a few files, reported per file).
It also checks that semgrep's `--experimental` engine reports exactly what the Python CLI reports on the corpus.

    python bench/bench_e2_scanners.py [--n 50] [--naive 4] [--out outputs/bench/e2_scanners.json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sv_env_config_verification.adapters.checkov import CheckovAdapter
from sv_env_config_verification.adapters.kubelinter import KubeLinterAdapter
from sv_env_config_verification.adapters.semgrep import SemgrepAdapter
from sv_env_config_verification.adapters.trivy import TrivyAdapter
from sv_shared.config import outputs_dir
from sv_shared.execution.toolenv import run_tool, tool_binary, write_configs
from sv_shared.execution.toolworker_client import ToolWorker

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "e2"


def corpus(n: int, seed: int = 7) -> tuple[dict[str, str], dict[str, str]]:
    """N distinct manifests and N distinct modules: the fixtures' vulnerable and secure twins, renamed, with
    random lines of the vulnerable ones dropped so the mix of findings varies."""
    rng = random.Random(seed)
    sources = {
        "k8s": [(FIXTURES / "k8s_vulnerable.yaml").read_text(), (FIXTURES / "k8s_secure.yaml").read_text()],
        "tf": [(FIXTURES / "tf_vulnerable.tf").read_text(), (FIXTURES / "tf_secure.tf").read_text()],
    }
    droppable = {
        "k8s": ("hostNetwork:", "hostPID:", "privileged:", "allowPrivilegeEscalation:", "runAsUser: 0", "hostIPC:"),
        "tf": ("acl    =", "publicly_accessible", "encrypted         =", "storage_encrypted"),
    }
    out: dict[str, dict[str, str]] = {"k8s": {}, "tf": {}}
    for kind, (vulnerable, secure) in sources.items():
        for index in range(n):
            text = vulnerable if index % 2 == 0 else secure
            if index % 2 == 0:
                drop = {marker for marker in droppable[kind] if rng.random() < 0.4}
                text = "\n".join(line for line in text.splitlines() if not any(m in line for m in drop)) + "\n"
            if kind == "k8s":
                text = text.replace("name: web", f"name: web-{index}").replace("name: debug", f"name: debug-{index}")
                out[kind][f"app-{index}.yaml"] = text
            else:
                text = text.replace('"logs"', f'"logs{index}"').replace("shop-", f"shop{index}-")
                out[kind][f"module-{index}/main.tf"] = text
    return out["k8s"], out["tf"]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def bench_adapter(adapter: Any, manifests: dict[str, str], modules: dict[str, str]) -> dict[str, Any]:
    first_name = next(iter(manifests))
    cold_s, _ = timed(lambda: adapter.scan({first_name: manifests[first_name]}))
    warm = [timed(lambda name=name: adapter.scan({name: manifests[name]}))[0] for name in list(manifests)[1:4]]
    k8s_s, k8s_results = timed(lambda: adapter.scan(manifests))
    tf_s, tf_results = timed(lambda: adapter.scan(modules))
    return {
        "cold_single_file_s": round(cold_s, 3),
        "warm_single_file_s": round(statistics.median(warm), 3),
        "batch_k8s_s": round(k8s_s, 3),
        "batch_k8s_per_file_ms": round(1000 * k8s_s / len(manifests), 1),
        "batch_tf_s": round(tf_s, 3),
        "batch_tf_per_file_ms": round(1000 * tf_s / len(modules), 1),
        "findings": sum(map(len, k8s_results.values())) + sum(map(len, tf_results.values())),
    }


def naive_per_file(tool: str, files: dict[str, str]) -> float:
    """Seconds per file when every file gets its own CLI subprocess (what the batching and the worker replace)."""
    binary = tool_binary("semgrep" if tool.startswith("semgrep") else tool)
    assert binary is not None, tool
    rules = str(SemgrepAdapter().rules_dir)
    total = 0.0
    with tempfile.TemporaryDirectory(prefix="sv-bench-naive-") as tmp:
        layout = write_configs(files, Path(tmp))
        for relative in layout:
            path = Path(tmp) / relative
            framework = "terraform" if path.suffix == ".tf" else "kubernetes"
            if tool == "semgrep-cli":
                args = [binary, "scan", "--config", rules, "--json", "--quiet", "--disable-version-check"]
                args += ["--metrics=off", str(path)]
            elif tool == "semgrep-experimental":
                args = [binary, "scan", "--experimental", "--config", rules, "--json", "--quiet"]
                args += ["--disable-version-check", "--metrics=off", str(path)]
            elif tool == "checkov":
                args = [binary, "-f", str(path), "--framework", framework, "--skip-download", "-o", "json", "--quiet"]
            else:
                args = [binary, "config", "--format", "json", "--quiet", "--skip-check-update", "--disable-telemetry"]
                args += ["--skip-version-check", "--cache-dir", str(Path(tmp) / "cache"), str(path.parent)]
            elapsed, completed = timed(lambda args=args: run_tool(args, timeout_s=300, cwd=tmp, tool=tool))
            if completed.returncode not in (0, 1):
                raise RuntimeError(f"{tool} exit {completed.returncode}: {completed.stderr[-300:]}")
            total += elapsed
    return total / len(files)


def semgrep_agreement(manifests: dict[str, str], modules: dict[str, str]) -> dict[str, Any]:
    files = {**manifests, **modules}
    fast_s, fast = timed(lambda: SemgrepAdapter(experimental=True).scan(files))
    slow_s, slow = timed(lambda: SemgrepAdapter(experimental=False).scan(files))

    def key(results: dict[str, list]) -> set[tuple[str, str, int | None]]:
        return {(name, f.rule_id, f.line) for name, findings in results.items() for f in findings}

    return {
        "files": len(files),
        "identical": key(fast) == key(slow),
        "findings": len(key(fast)),
        "experimental_s": round(fast_s, 3),
        "python_cli_s": round(slow_s, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=50, help="files per kind in the batched scans")
    parser.add_argument("--naive", type=int, default=4, help="files per kind for the one-subprocess-per-file runs")
    parser.add_argument("--out", type=Path, default=outputs_dir() / "bench" / "e2_scanners.json")
    args = parser.parse_args()

    manifests, modules = corpus(args.n)
    report: dict[str, Any] = {"n_per_kind": args.n, "adapters": {}, "naive_per_file_s": {}}
    with ToolWorker() as worker:
        adapters = {"semgrep": SemgrepAdapter(), "checkov": CheckovAdapter(worker), "trivy": TrivyAdapter()}
        for name, adapter in adapters.items():
            status = adapter.status()
            report["adapters"][name] = {"version": status.version, **bench_adapter(adapter, manifests, modules)}
            print(name, json.dumps(report["adapters"][name]))
    report["kube-linter"] = KubeLinterAdapter().status().reason or "available"

    naive_files = {**dict(list(manifests.items())[: args.naive]), **dict(list(modules.items())[: args.naive])}
    for tool in ("semgrep-cli", "semgrep-experimental", "checkov", "trivy"):
        report["naive_per_file_s"][tool] = round(naive_per_file(tool, naive_files), 3)
        print("naive", tool, report["naive_per_file_s"][tool], "s/file")
    report["semgrep_engines"] = semgrep_agreement(manifests, modules)
    print("semgrep engines", json.dumps(report["semgrep_engines"]))

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
