"""Scratch filesystems: a size- and inode-capped tmpfs on the host that sandboxed runs bind their writable directories
from, so a run that fills its disk quota gets ENOSPC instead of filling the host's disk (scratch_usage tells)."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sv_shared.execution.sandbox_types import MIB, SandboxUnavailable

SCRATCH_PREFIX = "sv-scratch-"
_MS_NOSUID = 2
_MS_NODEV = 4
_MNT_DETACH = 2


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _mount_tmpfs(target: Path, size_bytes: int, inodes: int) -> None:
    options = f"size={size_bytes},nr_inodes={inodes},mode=0755".encode()
    if _libc().mount(b"tmpfs", os.fsencode(target), b"tmpfs", _MS_NOSUID | _MS_NODEV, options) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error), str(target))


def _unmount(target: Path) -> None:
    _libc().umount2(os.fsencode(target), _MNT_DETACH)


@contextlib.contextmanager
def scratch_filesystem(size_bytes: int, *, inodes: int = 16384, root: Path | None = None) -> Iterator[Path]:
    """A fresh tmpfs of at most size_bytes and `inodes` files, mounted on a new host directory and unmounted and
    removed on exit: the disk quota of runs whose writable directories are bound from it (a run that fills it gets
    ENOSPC instead of filling the host's disk; its pages also count against the writer's memory cgroup)."""
    path = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-", dir=root))
    try:
        _mount_tmpfs(path, size_bytes, inodes)
    except OSError as exc:
        path.rmdir()
        raise SandboxUnavailable(f"cannot mount a tmpfs scratch filesystem at {path}: {exc.strerror}") from exc
    try:
        yield path
    finally:
        _unmount(path)
        with contextlib.suppress(OSError):
            path.rmdir()


@dataclass(frozen=True)
class ScratchUsage:
    used_bytes: int
    size_bytes: int
    free_inodes: int

    @property
    def full(self) -> bool:
        """No room left for another block or another file: a writer has hit the quota."""
        return self.used_bytes >= self.size_bytes or self.free_inodes == 0


def scratch_usage(path: Path) -> ScratchUsage:
    stats = os.statvfs(path)
    return ScratchUsage(
        used_bytes=(stats.f_blocks - stats.f_bfree) * stats.f_frsize,
        size_bytes=stats.f_blocks * stats.f_frsize,
        free_inodes=stats.f_ffree,
    )


def remove_stale_scratch() -> None:
    """Unmount and remove scratch filesystems left by a process that died mid-run (their name carries its pid)."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return
    for line in lines:
        fields = line.split()
        if len(fields) < 5:
            continue
        mount_point = Path(fields[4].replace("\\040", " "))
        match = re.fullmatch(rf"{SCRATCH_PREFIX}(\d+)-\w+", mount_point.name)
        if match and not Path(f"/proc/{match.group(1)}").exists():
            _unmount(mount_point)
            with contextlib.suppress(OSError):
                mount_point.rmdir()


def probe_scratch() -> str | None:
    try:
        with scratch_filesystem(MIB, inodes=16):
            return None
    except SandboxUnavailable as exc:
        return f"{exc} (scratch filesystems cap the disk a run may fill)"
