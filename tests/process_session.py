"""Ending a process a test started in its own session (start_new_session=True), with whatever it spawned."""

from __future__ import annotations

import os
import signal
import subprocess
from contextlib import suppress


def stop_session(process: subprocess.Popen[bytes], *, wait_s: float) -> None:
    """Ask the process to end, kill it after wait_s, then kill anything still running in its session (a browser's
    renderers, a webserver's code server and run workers)."""
    process.terminate()
    try:
        process.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
