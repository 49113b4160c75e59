"""The sandbox's vocabulary: the limits of a run, what a run did, whether the sandbox can run here, its two errors,
and the fixed names every part uses (the work dir, the sandbox user, the cgroup). sandbox.py runs commands;
cgroups.py and scratch.py hold the kernel-side parts (per-run cgroups, capped scratch filesystems)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

KilledReason = Literal["timeout", "memory", "pids", "output", "cpu"]

SANDBOX_WORKDIR = "/workspace"
SANDBOX_UID = 65534
SANDBOX_GID = 65534
CGROUP_NAME = "secverify"
KIB = 1024
MIB = 1024 * 1024


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot run here (bwrap, cgroups, root or a tool is missing); nothing was executed."""


class SandboxError(RuntimeError):
    """The sandbox failed to start for this run (bwrap or cgroup set-up error); the command did not run."""


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits for one run; the defaults suit a small project's pytest suite on a 2-core machine.

    max_output_bytes is what is kept of each stream; a stream that passes kill_output_bytes gets the run killed
    (killed_reason "output"), so a process printing forever costs at most that much reading.
    cpu_s (soft RLIMIT_CPU; the hard limit is one second more) defaults to the timeout rounded up plus one second: it is
    per process, the wall clock is the real bound.
    kill_on_pids_limit ends the run as soon as a fork is refused, so a fork bomb costs a fraction of a second, not
    the whole timeout.
    """

    timeout_s: float = 30.0
    memory_bytes: int = 512 * MIB
    max_pids: int = 64
    cpu_s: int | None = None
    file_size_bytes: int = 16 * MIB
    max_open_files: int = 256
    max_output_bytes: int = 64 * KIB
    kill_output_bytes: int = 1 * MIB
    tmpfs_bytes: int = 64 * MIB
    kill_on_pids_limit: bool = True

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise ValueError(f"SandboxLimits.timeout_s must be > 0, got {self.timeout_s}")
        if self.memory_bytes < 16 * MIB:
            raise ValueError(f"SandboxLimits.memory_bytes must be >= 16 MiB, got {self.memory_bytes}")
        if self.max_pids < 4:
            raise ValueError(f"SandboxLimits.max_pids must be >= 4 (bwrap needs some), got {self.max_pids}")
        if self.cpu_s is not None and self.cpu_s < 1:
            raise ValueError(f"SandboxLimits.cpu_s must be >= 1, got {self.cpu_s}")
        if min(self.file_size_bytes, self.max_open_files, self.max_output_bytes, self.tmpfs_bytes) < 1:
            raise ValueError("SandboxLimits sizes and counts must be >= 1")
        if self.kill_output_bytes < self.max_output_bytes:
            raise ValueError("SandboxLimits.kill_output_bytes must be >= max_output_bytes")

    @property
    def effective_cpu_s(self) -> int:
        """RLIMIT_CPU in seconds."""
        return self.cpu_s if self.cpu_s is not None else math.ceil(self.timeout_s) + 1


@dataclass(frozen=True)
class SandboxResult:
    """What one sandboxed run did. stdout/stderr are decoded UTF-8 (errors replaced), cut at max_output_bytes.

    killed_reason names the limit that stopped or bounded the run: "output" (we killed it for printing too much),
    "memory" (the kernel OOM-killed a process in the run's cgroup), "pids" (a fork was refused at max_pids),
    "cpu" (RLIMIT_CPU's SIGXCPU / SIGKILL ended the command; a command killing itself with SIGKILL reads the same),
    "timeout" (wall clock; timed_out is then True too).
    """

    returncode: int
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool
    killed_reason: KilledReason | None
    wall_s: float
    peak_memory_bytes: int | None = None

    @property
    def ok(self) -> bool:
        """True when the command exited 0 without hitting any limit."""
        return self.returncode == 0 and self.killed_reason is None


@dataclass(frozen=True)
class SandboxStatus:
    """Whether the sandbox can run here and, if not, exactly what is missing (each entry says how to fix it)."""

    available: bool
    missing: tuple[str, ...]
    bwrap: str | None
    bwrap_version: str | None
    memory_cgroup: Path | None
    pids_cgroup: Path | None
    memsw: bool
    notes: tuple[str, ...] = field(default=())

    def describe(self) -> str:
        """One human-readable paragraph for logs and error messages."""
        if self.available:
            extra = f" ({'; '.join(self.notes)})" if self.notes else ""
            return f"sandbox available: {self.bwrap_version} at {self.bwrap}, cgroups {self.memory_cgroup}{extra}"
        return "sandbox unavailable: " + "; ".join(self.missing)
