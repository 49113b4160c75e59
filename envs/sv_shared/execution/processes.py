"""Which process is this, is that one still running, and ending with a parent that has gone.

A `ProcessIdentity` (pid, host, start time) names a process in records other processes read later (a Dagster run's
tags, a report being written): `still_running` tells a live holder from a dead one, and a pid the system has since
given to another process from the one recorded (the start time differs). `end_with_parent` makes a worker process
that holds a model end within seconds of its parent, however the parent ended (SIGKILL included): nothing else would
stop it, since a process whose parent dies is simply adopted and runs on.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PARENT_POLL_S = 0.25
"""How often a worker looks for its parent: the delay between the parent's death and the worker's notice."""

ORPHAN_GRACE_S = 10.0
"""How long an orphaned worker may take to end by its own signal handlers before it is ended at once."""


def _proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state first), or None where there is no such file."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # The command name is in parentheses and may itself hold spaces or parentheses: split after the last one.
    return text[text.rfind(")") + 2 :].split()


def start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (Linux), or None where the system does not say."""
    fields = _proc_stat(pid)
    return int(fields[19]) if fields and len(fields) > 19 else None


@dataclass(frozen=True)
class ProcessIdentity:
    pid: int
    host: str
    started: int | None
    """Start time in clock ticks since boot (None where unknown): tells this process from a later one with its pid."""

    @classmethod
    def current(cls) -> ProcessIdentity:
        return cls(os.getpid(), socket.gethostname(), start_ticks(os.getpid()))

    def on_this_host(self) -> bool:
        return self.host == socket.gethostname()

    def still_running(self) -> bool | None:
        """True while the process runs, False once it has ended (or its pid belongs to another process now), None
        when that cannot be known from here (it ran on another host)."""
        if not self.on_this_host():
            return None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # it exists, under another user
        fields = _proc_stat(self.pid)
        if fields is None:
            return True  # no /proc here: the pid exists, which is all that can be known
        if fields[0] in ("Z", "X"):
            return False  # ended; its parent has not collected it yet
        return self.started is None or start_ticks(self.pid) == self.started

    def as_text(self) -> str:
        return f"{self.pid}@{self.host}" + (f"#{self.started}" if self.started is not None else "")

    @classmethod
    def from_text(cls, text: str) -> ProcessIdentity:
        """Reads as_text's form; ValueError on anything else."""
        pid_text, at, rest = text.partition("@")
        host, _, started = rest.partition("#")
        if not at or not pid_text.isdigit() or not host or (started and not started.isdigit()):
            raise ValueError(f"not a process identity: {text!r}")
        return cls(int(pid_text), host, int(started) if started else None)


_lifeline_lock = threading.Lock()
_lifeline_parent: int | None = None
_on_orphaned: list[Callable[[], None]] = []


def end_with_parent(parent_pid: int, *, on_orphaned: Callable[[], None] | None = None) -> None:
    """From now on, end this process within seconds once `parent_pid` is no longer its parent (the parent ended).

    When that happens each on_orphaned callback runs (e.g. to stop work in threads at once), then the process is
    sent SIGTERM, so its own handlers end it as a termination would (a Dagster run worker records the run as
    failed), and after ORPHAN_GRACE_S it exits regardless. Once per process; later calls only add their callback.
    The parent is polled by pid rather than given a parent-death signal: that signal fires when the thread that
    started the process ends, which in a server is any time."""
    global _lifeline_parent
    with _lifeline_lock:
        if on_orphaned is not None:
            _on_orphaned.append(on_orphaned)
        if _lifeline_parent is not None:
            return
        _lifeline_parent = parent_pid
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="end-with-parent", daemon=True).start()


def _watch_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(PARENT_POLL_S)
    print(f"pid {os.getpid()}: parent process {parent_pid} has ended; ending this worker", file=sys.stderr, flush=True)
    with _lifeline_lock:
        callbacks = list(_on_orphaned)
    for callback in callbacks:
        try:
            callback()
        except Exception as error:  # the process must still end: a callback's failure is only reported
            print(f"pid {os.getpid()}: {callback!r} failed: {error!r}", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(ORPHAN_GRACE_S)
    os._exit(1)
