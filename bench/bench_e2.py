"""E2 verification throughput (figures, not pass/fail).

1. cold: the full oracle (OPA + semgrep + checkov + trivy, whichever are available) over the embedded corpus with an
   empty scanner cache, in batches: configs/s;
2. warm: the same configs again (every scanner answer a cache hit): configs/s;
3. naive: one subprocess per tool per config (semgrep, checkov and trivy CLIs; OPA in-process), measured on a few
   configs and reported per config, and the cold speed-up over it;
4. scoring: the tool-oracle baseline's answers scored with score_many (parse + patch apply + re-scan), items/s.

    python bench/bench_e2.py [--naive 3]
"""

import argparse
import tempfile
import time
from pathlib import Path

from sv_env_config_verification import data
from sv_env_config_verification.adapters.opa import OpaAdapter
from sv_env_config_verification.env import build
from sv_env_config_verification.oracle import Oracle
from sv_shared.execution.cache import JsonCache
from sv_shared.execution.toolenv import run_tool, tool_binary, write_configs
from sv_shared.registry import load_env_config

ROOT = Path(__file__).resolve().parents[1]
SEMGREP_RULES = ROOT / "envs" / "sv_env_config_verification" / "rules" / "semgrep"


def naive_seconds_per_config(configs: list[tuple[str, str]]) -> float:
    """One CLI call per tool per config, the way a first script would do it."""
    opa = OpaAdapter()
    started = time.perf_counter()
    for name, content in configs:
        with tempfile.TemporaryDirectory() as tmp:
            [relative] = write_configs({name: content}, Path(tmp))
            path = Path(tmp) / relative
            run_tool(
                [
                    str(tool_binary("semgrep")),
                    "scan",
                    "--config",
                    str(SEMGREP_RULES),
                    "--json",
                    "--quiet",
                    "--disable-version-check",
                    "--metrics=off",
                    str(path),
                ],
                timeout_s=300,
                tool="semgrep",
            )
            run_tool(
                [str(tool_binary("checkov")), "-f", str(path), "-o", "json", "--quiet", "--skip-download"],
                timeout_s=300,
                tool="checkov",
            )
            run_tool(
                [
                    str(tool_binary("trivy")),
                    "config",
                    "--quiet",
                    "--skip-check-update",
                    "--format",
                    "json",
                    str(path.parent),
                ],
                timeout_s=300,
                tool="trivy",
            )
            opa.scan({name: content})
    return (time.perf_counter() - started) / len(configs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--naive", type=int, default=3, help="configs for the naive measurement")
    args = parser.parse_args()

    frame = data.load_embedded()
    configs = [(row["filename"], row["content"]) for row in frame.iter_rows(named=True)]
    with tempfile.TemporaryDirectory() as tmp:
        oracle = Oracle(cache=JsonCache(Path(tmp) / "scanners.sqlite"))
        print(f"tools: {oracle.versions()}")
        started = time.perf_counter()
        oracle.scan_many(configs)
        cold = len(configs) / (time.perf_counter() - started)
        started = time.perf_counter()
        oracle.scan_many(configs)
        warm = len(configs) / (time.perf_counter() - started)

        env = build(load_env_config("e2"), oracle=oracle)
        items = frame.to_dicts()
        answer = env.baselines["tool-oracle"]
        completions = [answer(env.episodes.observation(item)) for item in items]
        started = time.perf_counter()
        env.verifier.score_many(items, completions)
        scoring = len(items) / (time.perf_counter() - started)

    naive = naive_seconds_per_config(configs[: args.naive])
    print(f"cold oracle (all scanners, batched): {cold:,.1f} configs/s over {len(configs)} configs")
    print(f"warm oracle (cache hits):             {warm:,.0f} configs/s   (target ≥ 1,000)")
    print(f"naive (one subprocess per tool per config): {naive:.2f} s/config = {1 / naive:.2f} configs/s")
    print(f"cold speed-up over naive: {cold * naive:,.0f}×   (target ≥ 10×)")
    print(
        f"scoring tool-oracle answers (parse + patch + re-scan): {scoring:,.1f} items/s "
        f"= {scoring * 3600:,.0f} trajectories/h of verifier capacity (seed: ≥ 500/h)"
    )


if __name__ == "__main__":
    main()
