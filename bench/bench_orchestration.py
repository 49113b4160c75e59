"""Orchestration benchmarks (figures, not pass/fail).

1. Definitions load time: `python -c "import secverify_dagster.definitions"` in a fresh interpreter (what every run
   worker, code server and `secverify` command pays), median of --repeats, and the packages that take the most of
   it (`python -X importtime`, cumulative time of each top-level package where it is first imported).
2. The weekly sweep on the embedded default, as a deployment runs it: a temporary instance with the project's
   dagster.yaml (queued run coordinator and its tag limits, the default run launcher: one process per run) and the
   project's code location served by a gRPC code server, as the daemon loads it. The weekly_sweep schedule's Monday
   tick requests its runs (E1–E4, N=10, every model reachable here: the local model and the rule baselines), the
   queued-run daemon's iteration launches them, and every run really executes. Measured: the wall time from the
   tick to the last run's end, and the share of it that is not eval work: eval work is the runner's own wall time
   (timings in each run folder's metadata.json), everything else (the tick, the queue, run process start, the
   definitions import of each run, asset and check bookkeeping) is orchestration.
   Runs go one at a time by default (--max-concurrent-runs 1), so that each second of the wall is either eval work
   or orchestration. With dagster.yaml's 2 runs at once (--max-concurrent-runs 2) the baselines' runs go beside the
   local model's, and orchestration is what the wall takes beyond the slowest run's eval work.
   --in-process also runs the same requests with execute_in_process in this process (`secverify run`'s path).

The data lineage of E1–E4 is materialized first on the temporary outputs folder, outside the timings; every model
answers from a cold response cache.

    python bench/bench_orchestration.py [--repeats 5] [--max-concurrent-runs 1] [--in-process] [--no-sweep]

Prints the figures and writes outputs/bench/orchestration.json.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from sv_shared.config import outputs_dir, project_root
from sv_shared.data.files import write_json_atomic

WEEKLY_TAG = {"secverify/cadence": "weekly"}
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def definitions_load(repeats: int) -> dict[str, Any]:
    """Seconds to import the definitions in a fresh interpreter, and the heaviest packages of one import."""
    command = [sys.executable, "-c", "import secverify_dagster.definitions"]
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(command, check=True, cwd=project_root(), capture_output=True)
        times.append(time.perf_counter() - started)
    traced = subprocess.run(
        [sys.executable, "-X", "importtime", *command[1:]],
        check=True,
        cwd=project_root(),
        capture_output=True,
        text=True,
    )
    first_import: dict[str, float] = {}
    for line in traced.stderr.splitlines():
        found = re.match(r"import time:\s+\d+ \|\s+(\d+) \|\s+(\S+)$", line)
        if found and "." not in found[2]:
            first_import.setdefault(found[2], int(found[1]) / 1e6)
    heaviest = sorted(first_import.items(), key=lambda item: -item[1])[:8]
    return {
        "runs_s": [round(t, 3) for t in times],
        "median_s": round(statistics.median(times), 3),
        "packages_s": heaviest,
    }


@contextmanager
def temporary_instance(root: Path, max_concurrent_runs: int) -> Iterator[Any]:
    """A Dagster home under root with the project's dagster.yaml (max_concurrent_runs set), and outputs/
    under root, for this process and every process it starts."""
    import dagster as dg

    home = root / "dagster_home"
    home.mkdir(parents=True)
    config = yaml.safe_load((project_root() / "dagster.yaml").read_text(encoding="utf-8"))
    config["concurrency"]["runs"]["max_concurrent_runs"] = max_concurrent_runs
    # Shutting down waits for the code server's process: nothing writes to the folder once it is removed.
    config["code_servers"] = {"wait_for_local_processes_on_shutdown": True}
    (home / "dagster.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    saved = {name: os.environ.get(name) for name in ("DAGSTER_HOME", "SECVERIFY_OUTPUTS")}
    os.environ["DAGSTER_HOME"] = str(home)
    os.environ["SECVERIFY_OUTPUTS"] = str(root / "outputs")
    try:
        with dg.DagsterInstance.get() as instance:
            yield instance
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def prepare_data(root: Path) -> Path:
    """E1–E4's data lineage materialized under root/outputs/datasets (copied into each measured outputs folder)."""
    from secverify_dagster.cadences import WEEKLY_ENVS
    from secverify_dagster.definitions import defs

    with temporary_instance(root, max_concurrent_runs=1) as instance:
        for env_id in WEEKLY_ENVS:
            started = time.perf_counter()
            result = defs.resolve_job_def(f"{env_id}_data_job").execute_in_process(
                instance=instance, run_config=QUIET, raise_on_error=False
            )
            if not result.success:
                raise SystemExit(f"{env_id}_data_job failed: the sweep needs its curated splits")
            print(f"  {env_id} data lineage ready in {time.perf_counter() - started:.1f} s", flush=True)
    return root / "outputs" / "datasets"


def _seeded(instance: Any, root: Path, datasets: Path, models: list[str] | None) -> None:
    """Model sets seeded (default: the whole registry's runnable pairs, as `secverify run` and the new-model sensor
    do; the sweep asks only for each environment's partitions), data in place."""
    from secverify_dagster.partitions import add_model_partitions, registry_pairs
    from secverify_dagster.resources.models import load_registry

    shutil.copytree(datasets, root / "outputs" / "datasets")
    registry = load_registry()
    add_model_partitions(instance, registry_pairs({model: registry[model] for model in models or registry}))


def eval_work_s(evals_root: Path) -> dict[tuple[str, str], float]:
    """(environment, model id) → the runner's own seconds (its wall and summary timings) in that run folder."""
    from sv_shared.runs.folder import RunFolder

    work: dict[tuple[str, str], float] = {}
    for metadata in evals_root.glob("*/*/metadata.json"):
        record = RunFolder(metadata.parent).read_metadata()
        timings = record.timings or {}
        key = (record.env, record.model.id)
        work[key] = work.get(key, 0.0) + timings.get("wall_s", 0.0) + timings.get("summary_s", 0.0)
    return work


def _run_work(work: dict[tuple[str, str], float], model: str, selection: Any) -> float:
    """The eval work of one Dagster run: its environments' run folders of its model."""
    return sum(work.get((key.path[0], model), 0.0) for key in selection or ())


def _last_monday_tick(now: datetime) -> datetime:
    monday = (now - timedelta(days=now.weekday())).replace(hour=6, minute=0, second=0, microsecond=0)
    return monday if monday <= now else monday - timedelta(days=7)


def sweep_launched(root: Path, datasets: Path, models: list[str] | None, max_concurrent_runs: int) -> dict[str, Any]:
    """The weekly tick and its runs through the queue and the default run launcher, as the daemon drives them."""
    import dagster._daemon  # noqa: F401  (dagster's scheduler module imports the daemon package first)
    from dagster._core.storage.dagster_run import FINISHED_STATUSES, RunsFilter
    from dagster._core.test_utils import create_test_daemon_workspace_context, freeze_time
    from dagster._core.workspace.load_target import ModuleTarget
    from dagster._daemon.daemon import get_default_daemon_logger
    from dagster._daemon.run_coordinator.queued_run_coordinator_daemon import QueuedRunCoordinatorDaemon
    from dagster._scheduler.scheduler import launch_scheduled_runs

    with temporary_instance(root, max_concurrent_runs) as instance:
        _seeded(instance, root, datasets, models)
        target = ModuleTarget("secverify_dagster.definitions", "defs", str(project_root()), "secverify")
        started = time.perf_counter()
        with create_test_daemon_workspace_context(target, instance) as workspace:
            (entry,) = workspace.create_request_context().get_code_location_entries().values()
            if entry.code_location is None:
                raise SystemExit(f"the code location did not load: {entry.load_error}")
            code_server_s = time.perf_counter() - started
            (repository,) = entry.code_location.get_repositories().values()
            now = datetime.now(UTC)
            with freeze_time(_last_monday_tick(now) - timedelta(hours=18)):
                instance.start_schedule(repository.get_schedule("weekly_sweep"))
            ticked = time.perf_counter()
            list(launch_scheduled_runs(workspace, get_default_daemon_logger("SchedulerDaemon"), now, {}))
            tick_s = time.perf_counter() - ticked
            started_at = time.time()
            daemon = QueuedRunCoordinatorDaemon(interval_seconds=instance.run_coordinator.dequeue_interval_seconds)
            logging.getLogger("dagster.daemon").setLevel(logging.WARNING)  # not a line per queue check
            while True:
                list(daemon.run_iteration(workspace))
                runs = instance.get_run_records(RunsFilter(tags=WEEKLY_TAG))
                if runs and all(record.dagster_run.status in FINISHED_STATUSES for record in runs):
                    break
                time.sleep(instance.run_coordinator.dequeue_interval_seconds)
            wall_s = time.perf_counter() - ticked
        work = eval_work_s(root / "outputs" / "evals")
        rows = []
        previous_end = started_at
        for record in sorted(runs, key=lambda record: record.start_time or 0.0):
            model = record.dagster_run.tags["dagster/partition"]
            start, end = record.start_time or previous_end, record.end_time or previous_end
            rows.append(
                {
                    "model": model,
                    "provider": record.dagster_run.tags.get("secverify/provider"),
                    "envs": ",".join(key.path[0] for key in record.dagster_run.asset_selection or ()),
                    "status": record.dagster_run.status.value,
                    # Serial runs: from the tick's end or the previous run's end (the queue, the run process and
                    # its code load); runs side by side have no such gap.
                    "before_start_s": round(start - previous_end, 2) if max_concurrent_runs == 1 else None,
                    "run_s": round(end - start, 2),
                    "eval_work_s": round(_run_work(work, model, record.dagster_run.asset_selection), 2),
                }
            )
            previous_end = end
    return _figures(wall_s, rows, max_concurrent_runs > 1) | {
        "tick_s": round(tick_s, 2),
        "code_server_start_s": round(code_server_s, 2),
    }


def sweep_in_process(root: Path, datasets: Path, models: list[str] | None) -> dict[str, Any]:
    """The same tick's requests executed one after another in this process (`secverify run`'s path)."""
    import dagster as dg

    from secverify_dagster.definitions import defs
    from secverify_dagster.resources.dagster_resources import ModelRegistryResource
    from secverify_dagster.resources.vllm import VllmResource
    from secverify_dagster.schedules.sweeps import weekly_sweep

    with temporary_instance(root, max_concurrent_runs=1) as instance:
        _seeded(instance, root, datasets, models)
        eval_job = defs.resolve_implicit_global_asset_job_def()
        started = time.perf_counter()
        resources = {"models": ModelRegistryResource(), "vllm": VllmResource()}
        with dg.build_schedule_context(
            instance=instance, scheduled_execution_time=_last_monday_tick(datetime.now(UTC)), resources=resources
        ) as context:
            requests = weekly_sweep(context)
        tick_s = time.perf_counter() - started
        durations = []
        for request in requests:
            began = time.perf_counter()
            result = eval_job.execute_in_process(
                instance=instance,
                partition_key=request.partition_key,
                asset_selection=list(request.asset_selection or []),
                run_config={**QUIET, **request.run_config},
                tags=request.tags,
                raise_on_error=False,
            )
            durations.append((request, time.perf_counter() - began, result.success))
        wall_s = time.perf_counter() - started
        work = eval_work_s(root / "outputs" / "evals")
    rows = [
        {
            "model": request.partition_key,
            "provider": request.tags.get("secverify/provider"),
            "envs": ",".join(key.path[0] for key in request.asset_selection or ()),
            "status": "SUCCESS" if success else "FAILURE",
            "before_start_s": 0.0,
            "run_s": round(seconds, 2),
            "eval_work_s": round(_run_work(work, request.partition_key or "", request.asset_selection), 2),
        }
        for request, seconds, success in durations
    ]
    return _figures(wall_s, rows, concurrent=False) | {"tick_s": round(tick_s, 2)}


def _figures(wall_s: float, rows: list[dict[str, Any]], concurrent: bool) -> dict[str, Any]:
    """Serial runs: every second of the wall is eval work or orchestration. Concurrent runs: the orchestration that
    counts is what lengthens the wall, so it is measured against the eval work no schedule can beat: the slowest run,
    or a provider's runs one after another where the run queue admits one at a time (the local model's), whichever is
    longer (the other runs go on beside them)."""
    work = sum(row["eval_work_s"] for row in rows)
    floor = _eval_floor(rows) if concurrent else work
    return {
        "wall_s": round(wall_s, 2),
        "eval_work_s": round(work, 2),
        "eval_floor_s": round(floor, 2),
        "orchestration_s": round(wall_s - floor, 2),
        "orchestration_share": round((wall_s - floor) / wall_s, 4) if wall_s else None,
        "runs": rows,
    }


def _eval_floor(rows: list[dict[str, Any]]) -> float:
    limits = _provider_limits()
    by_provider: dict[str, float] = {}
    for row in rows:
        by_provider[row["provider"]] = by_provider.get(row["provider"], 0.0) + row["eval_work_s"]
    serial = [seconds / limits[provider] for provider, seconds in by_provider.items() if provider in limits]
    return max([*(row["eval_work_s"] for row in rows), *serial], default=0.0)


def _provider_limits() -> dict[str, int]:
    """The run queue's limit per provider tag (dagster.yaml)."""
    config = yaml.safe_load((project_root() / "dagster.yaml").read_text(encoding="utf-8"))
    limits = config["concurrency"]["runs"]["tag_concurrency_limits"]
    return {
        limit["value"]: int(limit["limit"])
        for limit in limits
        if limit["key"] == "secverify/provider" and isinstance(limit.get("value"), str)
    }


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _print_sweep(name: str, figures: dict[str, Any]) -> None:
    floor = (
        ""
        if figures["eval_floor_s"] == figures["eval_work_s"]
        else f" (floor: slowest run or one-at-a-time provider {figures['eval_floor_s']:.1f} s)"
    )
    print(
        f"\n{name}: wall {figures['wall_s']:.1f} s · eval work {figures['eval_work_s']:.1f} s{floor} · orchestration "
        f"{figures['orchestration_s']:.1f} s ({100 * figures['orchestration_share']:.1f} %) · tick "
        f"{figures['tick_s']:.2f} s"
    )
    header = f"  {'model':<24} {'provider':<20} {'envs':>11} {'wait s':>7} {'run s':>8} {'eval s':>8} {'in-run s':>8}"
    print(header + "  status   (wait: queue, run process start and code load; in-run: run minus eval work)")
    for row in figures["runs"]:
        in_run = row["run_s"] - row["eval_work_s"]
        print(
            f"  {row['model']:<24} {row['provider'] or '-':<20} {row['envs']:>11} {_seconds(row['before_start_s']):>7} "
            f"{row['run_s']:>8.1f} {row['eval_work_s']:>8.1f} {in_run:>8.1f}  {row['status']}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5, help="fresh-interpreter imports of the definitions")
    parser.add_argument("--max-concurrent-runs", type=int, default=1, help="runs at once in the measured sweep")
    parser.add_argument("--in-process", action="store_true", help="also run the sweep in-process, for comparison")
    parser.add_argument("--no-sweep", action="store_true", help="only the definitions load time")
    parser.add_argument("--models", nargs="+", help="model partitions the sweep sees (default: the whole registry)")
    args = parser.parse_args()

    report: dict[str, Any] = {"cpus": os.cpu_count(), "load_average_before": list(os.getloadavg())}
    print(f"definitions load ({args.repeats} fresh interpreters) ...", flush=True)
    report["definitions_load"] = load = definitions_load(args.repeats)
    print(f"  median {load['median_s']:.2f} s (runs {load['runs_s']})")
    print(
        "  heaviest packages (first import, cumulative s): " + ", ".join(f"{n} {s:.2f}" for n, s in load["packages_s"])
    )
    if not args.no_sweep:
        with tempfile.TemporaryDirectory(prefix="secverify-bench-orchestration-") as scratch:
            print("E1–E4 data lineage (not timed) ...", flush=True)
            datasets = prepare_data(Path(scratch) / "data")
            print(f"weekly sweep, queued and launched ({args.max_concurrent_runs} run(s) at once) ...", flush=True)
            report["weekly_sweep_launched"] = sweep_launched(
                Path(scratch) / "launched", datasets, args.models, args.max_concurrent_runs
            )
            report["weekly_sweep_launched"]["max_concurrent_runs"] = args.max_concurrent_runs
            _print_sweep("weekly sweep, launched", report["weekly_sweep_launched"])
            if args.in_process:
                print("\nweekly sweep, in-process ...", flush=True)
                report["weekly_sweep_in_process"] = sweep_in_process(
                    Path(scratch) / "in_process", datasets, args.models
                )
                _print_sweep("weekly sweep, in-process", report["weekly_sweep_in_process"])
    report["load_average_after"] = list(os.getloadavg())
    print(
        f"\nload average before {report['load_average_before']}, after {report['load_average_after']} "
        f"({report['cpus']} CPUs; other processes share them)"
    )
    out = outputs_dir() / "bench" / "orchestration.json"
    write_json_atomic(out, report)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
