"""Report folders appear whole or not at all.

A report is built in a hidden sibling of its folder (`.<name>.building`) and renamed into place once every file is
written, so a reader never meets a folder holding part of a report, and a writer killed halfway leaves only the hidden
folder. Its writer holds a lock on that folder while it lives (flock on the folder itself: released by the kernel
when the process ends, however it ends), so the next writer in the same place removes a dead writer's leftovers and
never a live writer's work. Reserving a name and sweeping leftovers are done under a lock on the parent folder, so
writers starting at the same second each get a name of their own.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import shutil
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from sv_shared.data.files import FolderBusyError

STAGING_SUFFIX = ".building"

_reserved: dict[Path, int] = {}
"""Staging folders this process reserved (reserve_report_dir) and has not built yet → the descriptor of its lock."""
_reserved_lock = threading.Lock()


def staging_dir(out_dir: Path) -> Path:
    """Where the report for `out_dir` is built before it is published."""
    return out_dir.parent / f".{out_dir.name}{STAGING_SUFFIX}"


@contextlib.contextmanager
def _folder_locked(folder: Path) -> Iterator[None]:
    handle = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)


def _held_elsewhere(folder: Path) -> bool:
    """Whether a live writer holds the folder's lock (a descriptor of this process counts as another writer)."""
    try:
        handle = os.open(folder, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(handle)
    return False


def remove_abandoned(root: Path) -> list[Path]:
    """Remove the staging folders under root whose writer has ended; returns them. Call with root locked."""
    removed = []
    for staging in sorted(root.glob(f".*{STAGING_SUFFIX}")):
        if staging.is_dir() and not _held_elsewhere(staging):
            shutil.rmtree(staging, ignore_errors=True)
            removed.append(staging)
    return removed


def _claim(staging: Path) -> int:
    """Create the staging folder and lock it; FileExistsError when it exists (a live writer's, after a sweep)."""
    staging.mkdir()
    handle = os.open(staging, os.O_RDONLY)
    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return handle


def reserve_report_dir(root: Path, now: datetime | None = None) -> Path:
    """A name of its own for one report under root (`<UTC date>T<time>Z[-N]`), reserved for this process: the folder
    does not exist until build_report publishes it. Dead writers' leftovers under root are removed first."""
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H%M%SZ")
    root.mkdir(parents=True, exist_ok=True)
    with _folder_locked(root):
        remove_abandoned(root)
        for attempt in range(1, 1000):
            out_dir = root / (stamp if attempt == 1 else f"{stamp}-{attempt}")
            if out_dir.exists() or staging_dir(out_dir).exists():
                continue
            handle = _claim(staging_dir(out_dir))
            with _reserved_lock:
                _reserved[staging_dir(out_dir)] = handle
            return out_dir
    raise FileExistsError(f"no free report folder for {stamp} under {root}")


@contextlib.contextmanager
def building(out_dir: Path) -> Iterator[Path]:
    """The folder to write the report for out_dir into; on success it becomes out_dir in one rename (an existing
    out_dir is replaced), on failure it is removed. FolderBusyError when another live writer builds out_dir."""
    staging = staging_dir(out_dir)
    with _reserved_lock:
        handle = _reserved.pop(staging, None)
    if handle is None:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        with _folder_locked(out_dir.parent):
            remove_abandoned(out_dir.parent)
            try:
                handle = _claim(staging)
            except FileExistsError:
                raise FolderBusyError(f"the report {out_dir} is being written by another process") from None
    try:
        yield staging
        _publish(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        os.close(handle)


def _publish(staging: Path, out_dir: Path) -> None:
    try:
        os.rename(staging, out_dir)  # atomic; replaces out_dir only when it is an empty folder
    except OSError as error:
        if error.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
        # A report written again into the same folder (an export): the old one moves aside, then goes.
        previous = out_dir.parent / f".{out_dir.name}.replaced-{secrets.token_hex(4)}"
        os.rename(out_dir, previous)
        os.rename(staging, out_dir)
        shutil.rmtree(previous, ignore_errors=True)
