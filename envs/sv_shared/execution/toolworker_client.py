"""Client for the long-lived scanner worker (toolworker.py), used from the project's own environment.

Why a worker: checkov in-process answers a Kubernetes file in ≈ 20-30 ms once imported, against ≈ 3 s per CLI call.
The client starts the worker lazily with the tools environment's python, serialises requests (one worker handles
one request at a time; the client is safe to share between threads), applies a deadline to every request, and on
a timeout or crash kills the worker's process group and raises ScannerError naming the tool. The next request starts
a fresh worker, so a hostile file costs one batch, never the run.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import os
import queue
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from sv_shared.execution.toolenv import ScannerError, kill_process_group, tool_env, tool_home, tools_python

WORKER_SCRIPT = Path(__file__).with_name("toolworker.py")
_EOF = object()


class ToolWorker:
    """One worker process behind a lock; started on first use and restarted after it dies or is killed."""

    def __init__(
        self,
        *,
        python: Path | None = None,
        request_timeout_s: float = 300.0,
        memory_limit_mb: int = 4096,
        name: str = "toolworker",
    ) -> None:
        self._python = python
        self.request_timeout_s = request_timeout_s
        self.memory_limit_mb = memory_limit_mb
        self.name = name
        self.starts = 0
        self._lock = threading.RLock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._responses: queue.Queue[object] = queue.Queue()
        self._stderr: deque[str] = deque(maxlen=200)
        self._ids = itertools.count(1)

    def __repr__(self) -> str:
        return f"ToolWorker(pid={self.pid}, starts={self.starts})"

    @property
    def pid(self) -> int | None:
        """The live worker's pid, or None when none is running."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def _start(self) -> subprocess.Popen[bytes]:
        python = self._python or tools_python()
        proc = subprocess.Popen(
            [os.fspath(python), "-I", os.fspath(WORKER_SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=tool_home(),
            env=tool_env({"SECVERIFY_WORKER_MEMORY_MB": str(self.memory_limit_mb)}),
            start_new_session=True,
        )
        self._responses = queue.Queue()
        self._stderr.clear()
        assert proc.stdout is not None and proc.stderr is not None
        threading.Thread(target=_pump_lines, args=(proc.stdout, self._responses), daemon=True).start()
        threading.Thread(target=_pump_stderr, args=(proc.stderr, self._stderr), daemon=True).start()
        self._proc = proc
        self.starts += 1
        return proc

    def _ensure(self) -> subprocess.Popen[bytes]:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            proc = self._start()
        return proc

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        kill_process_group(proc)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()

    def _stderr_tail(self) -> str:
        text = " | ".join(line for line in list(self._stderr)[-8:] if line)
        return text[-800:]

    def request(
        self,
        op: str,
        payload: Mapping[str, Any] | None = None,
        *,
        timeout_s: float | None = None,
        tool: str | None = None,
    ) -> dict[str, Any]:
        """Send one request and return its result; ScannerError (naming `tool`, default the op) on any failure."""
        label = tool or op
        deadline_s = self.request_timeout_s if timeout_s is None else timeout_s
        with self._lock:
            try:
                proc = self._ensure()
            except OSError as exc:
                raise ScannerError(label, f"could not start the tool worker: {exc}") from exc
            request_id = next(self._ids)
            line = json.dumps({**(payload or {}), "id": request_id, "op": op}, ensure_ascii=True) + "\n"
            try:
                assert proc.stdin is not None
                proc.stdin.write(line.encode("ascii"))
                proc.stdin.flush()
            except (BrokenPipeError, OSError) as exc:
                status = proc.poll()
                self._stop()
                raise ScannerError(label, f"tool worker is gone (exit {status}): {exc}; {self._stderr_tail()}") from exc
            deadline = time.monotonic() + deadline_s
            while True:
                remaining = deadline - time.monotonic()
                try:
                    item = self._responses.get(timeout=max(remaining, 0.0)) if remaining > 0 else None
                except queue.Empty:
                    item = None
                if item is None:
                    self._stop()
                    raise ScannerError(
                        label,
                        f"no answer within {deadline_s:g} s; worker killed, the next request starts a new one",
                        timed_out=True,
                    )
                if item is _EOF:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(timeout=2)
                    status = proc.poll()
                    self._stop()
                    raise ScannerError(label, f"tool worker died (exit {status}) during {op}: {self._stderr_tail()}")
                if not isinstance(item, dict) or item.get("id") != request_id:
                    continue  # a stale or unreadable line; the answer to this request is still to come
                if not item.get("ok"):
                    raise ScannerError(label, str(item.get("error") or "the worker reported an unknown error"))
                result = item.get("result")
                return result if isinstance(result, dict) else {"result": result}

    def version(self, *, timeout_s: float = 60.0) -> dict[str, Any]:
        """Versions of python and the tools inside the worker (starts it if needed)."""
        return self.request("version", timeout_s=timeout_s, tool="toolworker")

    def checkov(
        self,
        framework: str,
        files: Mapping[str, str],
        *,
        timeout_s: float | None = None,
        file_timeout_s: float = 20.0,
    ) -> dict[str, dict[str, Any]]:
        """Failed checkov checks per file name: {name: {"failed": [...], "error": str | None, ...}}."""
        result = self.request(
            "checkov",
            {"framework": framework, "files": dict(files), "file_timeout_s": file_timeout_s},
            timeout_s=timeout_s,
            tool="checkov",
        )
        return dict(result.get("files") or {})

    def bandit(
        self, files: Mapping[str, str], *, timeout_s: float | None = None, file_timeout_s: float = 20.0
    ) -> dict[str, dict[str, Any]]:
        """bandit issues per Python file name: {name: {"issues": [...], "error": str | None}}."""
        result = self.request(
            "bandit", {"files": dict(files), "file_timeout_s": file_timeout_s}, timeout_s=timeout_s, tool="bandit"
        )
        return dict(result.get("files") or {})

    def close(self) -> None:
        """Stop the worker (it also exits by itself when this process closes its stdin)."""
        with self._lock:
            self._stop()

    def __enter__(self) -> ToolWorker:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _pump_lines(stream: IO[bytes], sink: queue.Queue[object]) -> None:
    """Reader thread: protocol lines to the queue, then an EOF marker (the worker exited or was killed)."""
    try:
        for raw in stream:
            try:
                sink.put(json.loads(raw))
            except ValueError:
                continue
    except (OSError, ValueError):
        pass
    finally:
        sink.put(_EOF)


def _pump_stderr(stream: IO[bytes], sink: deque[str]) -> None:
    """Drain stderr so the worker never blocks on a full pipe; keep the tail for error messages."""
    with contextlib.suppress(OSError, ValueError):
        for raw in stream:
            sink.append(raw.decode("utf-8", "replace").rstrip())


_shared_lock = threading.Lock()
_shared: dict[int, ToolWorker] = {}


def shared_worker() -> ToolWorker:
    """The process-wide worker the adapters use by default (one per process: a forked child gets its own)."""
    pid = os.getpid()
    with _shared_lock:
        worker = _shared.get(pid)
        if worker is None:
            worker = _shared[pid] = ToolWorker()
            atexit.register(worker.close)
        return worker
