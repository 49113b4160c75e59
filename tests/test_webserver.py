"""Dagster's real webserver loads the code location and serves the asset graph over GraphQL (loopback only)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

QUERY = "{ assetNodes { assetKey { path } dependencyKeys { path } } }"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_webserver_serves_the_lineage(tmp_path: Path) -> None:
    port = _free_port()
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path), "SECVERIFY_OUTPUTS": str(tmp_path / "outputs")}
    server = subprocess.Popen(
        [sys.executable, "-m", "dagster_webserver", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=Path(__file__).resolve().parents[1],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 90
        nodes = None
        while time.monotonic() < deadline and nodes is None:
            if server.poll() is not None:
                pytest.fail(f"webserver exited: {server.stderr.read().decode()[-2000:]}")
            try:
                response = httpx.post(f"http://127.0.0.1:{port}/graphql", json={"query": QUERY}, timeout=5)
                nodes = response.json()["data"]["assetNodes"]
            except (httpx.HTTPError, KeyError, TypeError, ValueError):
                time.sleep(1)
        assert nodes is not None, "webserver did not answer within 90 s"
        parents = {
            "/".join(node["assetKey"]["path"]): {"/".join(dep["path"]) for dep in node["dependencyKeys"]}
            for node in nodes
        }
        assert {"e1/raw_embedded", "e1/curated_splits", "e1/synthetic", "e1/eval_results", "e1/report"} <= set(parents)
        # The UI's lineage: per-environment evals, and the E5 <-> E6 feedback as declared edges.
        assert parents["e4/eval_results"] == {"e4/curated_splits"}
        assert "e6/eval_results" in parents["e5/synthetic"] and "e5/eval_results" in parents["e6/synthetic"]
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
