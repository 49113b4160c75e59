"""The sandbox's per-run cgroups (v1 memory and pids): finding the hierarchies, probing that they are writable,
removing runs' cgroups a dead process left, and one run's cgroups (RunCgroups: created with limits, read for peak
memory and refused forks, emptied with SIGKILL, removed)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
import uuid
from pathlib import Path

from sv_shared.execution.sandbox_types import CGROUP_NAME, SandboxError, SandboxLimits, SandboxStatus


def cgroup_v1_mounts() -> dict[str, Path]:
    """Mount points of cgroup v1 hierarchies by controller, read from /proc/self/mountinfo."""
    mounts: dict[str, Path] = {}
    try:
        text = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return mounts
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        right_fields = right.split()
        left_fields = left.split()
        if len(right_fields) < 3 or right_fields[0] != "cgroup" or len(left_fields) < 5:
            continue
        mount_point = Path(left_fields[4].replace("\\040", " "))
        for option in right_fields[2].split(","):
            mounts.setdefault(option, mount_point)
    return mounts


def probe_cgroup(root: Path, controller: str) -> str | None:
    """Create and remove a probe cgroup under root/secverify; None when that works, else the reason."""
    probe = root / CGROUP_NAME / f"probe-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        probe.mkdir(parents=True)
        probe.rmdir()
    except OSError as exc:
        return f"cgroup v1 {controller} controller at {root} is not writable ({exc.strerror})"
    return None


def remove_stale_cgroups(parent: Path) -> None:
    """Remove empty per-run cgroups left by a process that died mid-run (their name carries its pid)."""
    if not parent.is_dir():
        return
    for child in parent.iterdir():
        match = re.fullmatch(r"run-(\d+)-[0-9a-f]+", child.name)
        if not match or Path(f"/proc/{match.group(1)}").exists():
            continue
        with contextlib.suppress(OSError):
            child.rmdir()  # fails, harmlessly, while processes remain in it


def _read_int_field(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


class RunCgroups:
    """The per-run memory and pids cgroups: created with limits, emptied with SIGKILL, removed."""

    def __init__(self, status: SandboxStatus, limits: SandboxLimits) -> None:
        assert status.memory_cgroup is not None and status.pids_cgroup is not None
        run_id = f"run-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.memory = status.memory_cgroup / run_id
        self.pids = status.pids_cgroup / run_id
        self.created: list[Path] = []
        try:
            for path in (self.memory, self.pids):
                path.mkdir(parents=True)
                self.created.append(path)
            (self.memory / "memory.limit_in_bytes").write_text(str(limits.memory_bytes))
            if status.memsw:
                (self.memory / "memory.memsw.limit_in_bytes").write_text(str(limits.memory_bytes))
            (self.memory / "memory.swappiness").write_text("0")
            (self.pids / "pids.max").write_text(str(limits.max_pids))
        except OSError as exc:
            self.remove()
            raise SandboxError(f"cannot set up the run's cgroups: {exc}") from exc

    @property
    def procs_files(self) -> tuple[str, str]:
        return str(self.memory / "cgroup.procs"), str(self.pids / "cgroup.procs")

    def oom_kills(self) -> int:
        return _read_int_field(self.memory / "memory.oom_control", "oom_kill")

    def pids_refused(self) -> int:
        return _read_int_field(self.pids / "pids.events", "max")

    def peak_memory(self) -> int | None:
        return _read_int(self.memory / "memory.max_usage_in_bytes")

    def pids_now(self) -> set[int]:
        try:
            return {int(p) for p in (self.pids / "cgroup.procs").read_text().split()}
        except OSError:
            return set()

    def kill_all(self, deadline_s: float = 5.0) -> None:
        """SIGKILL every process in the run until both cgroups are empty (a fork bomb refills, so loop)."""
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            pids: set[int] = set()
            for path in self.created:
                try:
                    pids.update(int(p) for p in (path / "cgroup.procs").read_text().split())
                except OSError:
                    continue
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)

    def remove(self) -> None:
        """rmdir both cgroups, retrying briefly while killed tasks finish exiting."""
        for path in list(self.created):
            for _ in range(200):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
            self.created.remove(path)
