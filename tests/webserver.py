"""Dagster's real webserver for tests: `dagster_webserver -w workspace.yaml` on a free loopback port, ended after.

It runs in its own process session, so the code server and run workers it starts are ended with it. Starting it
does not wait: the test can prepare its data while the webserver loads the code location, then wait for it.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx
from process_session import stop_session

PROJECT_ROOT = Path(__file__).resolve().parents[1]
START_ATTEMPTS = 3
"""A free port can be taken by another process before the webserver binds it (after loading the code location):
then it starts again on a new one."""


class WebserverUnavailable(RuntimeError):
    """The webserver exited or did not answer in time; the message holds the end of its log."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Webserver:
    """One webserver process serving the project's workspace on 127.0.0.1 with the given environment."""

    def __init__(self, env: Mapping[str, str], log: Path) -> None:
        self._env = dict(env)
        self._log = log
        self._process: subprocess.Popen[bytes] | None = None
        self.url = ""
        self._start()

    def _start(self) -> None:
        if self._process is not None:
            self.stop()
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        with self._log.open("ab") as sink:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "dagster_webserver", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
                cwd=PROJECT_ROOT,
                env=self._env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait_ready(self, timeout_s: float = 120.0) -> str:
        """Its base URL once GraphQL answers, which is after the code location has loaded."""
        deadline = time.monotonic() + timeout_s
        for _ in range(START_ATTEMPTS):
            while time.monotonic() < deadline and self._process.poll() is None:
                try:
                    reply = httpx.post(f"{self.url}/graphql", json={"query": "{ version }"}, timeout=5)
                    if reply.json()["data"]["version"]:
                        return self.url
                except (httpx.HTTPError, KeyError, TypeError, ValueError):
                    time.sleep(0.5)
            if self._process.poll() is None or "address already in use" not in self._tail().lower():
                break
            self._start()
        code = self._process.poll()
        state = f"exited with {code}" if code is not None else f"did not answer within {timeout_s:.0f} s"
        raise WebserverUnavailable(f"webserver on {self.url} {state}:\n{self._tail()}")

    def _tail(self) -> str:
        return self._log.read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        """End the webserver, then whatever it started that is still running in its session."""
        process = self._process
        if process is None:
            return
        stop_session(process, wait_s=20)


@contextmanager
def running_webserver(env: Mapping[str, str], log: Path) -> Iterator[Webserver]:
    """A webserver started with `env` (DAGSTER_HOME, SECVERIFY_OUTPUTS …), its output in `log`; call wait_ready()
    before using it. Stopped when the block ends."""
    server = Webserver(env, log)
    try:
        yield server
    finally:
        server.stop()
