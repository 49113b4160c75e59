"""Writing files that nothing can corrupt: JSON text that always encodes, atomic replacement, one owner at a time.

Every writer of run folders, datasets, caches and reports goes through here, so the rules hold everywhere:

- Text never breaks a write. JSON is written as UTF-8 with non-ASCII characters kept as they are, except a lone
  surrogate ("\\ud800": json.loads accepts it and model text can hold one, but it has no UTF-8 encoding), which is
  written as its JSON escape. The file stays valid UTF-8 and json.loads reads back the very string that was written:
  nothing is replaced or dropped. (A high surrogate followed by a low one reads back as the character the pair
  encodes, as in any UTF-16 reader.)
- A file is replaced, never rewritten in place: it is written under a unique temporary name in its folder, flushed
  to disk and renamed over the target, so a reader or a second writer sees the old file or a whole new one.
- One process owns a folder at a time: an exclusive `fcntl.flock` on a lock file. The kernel releases it when its
  holder exits, crashes or is killed (kill -9 included), so a stale lock never blocks anyone. A waiter waits a
  bounded time and then fails with a message naming the holder, which writes who it is into the lock file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import socket
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_lone_surrogates(text: str) -> str:
    """Each lone surrogate (model text and JSON may hold one; UTF-8 cannot) written as its escape text, \\ud800."""
    return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def replace_lone_surrogates(text: str) -> str:
    """Each lone surrogate as U+FFFD, for stores that hold plain UTF-8 text (Arrow rows, caches, library traces)."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def json_text(
    value: Any,
    *,
    indent: int | None = None,
    sort_keys: bool = False,
    default: Callable[[Any], Any] | None = None,
    allow_nan: bool = True,
) -> str:
    """`json.dumps(value, ensure_ascii=False)` whose text always encodes as UTF-8 (lone surrogates escaped)."""
    text = json.dumps(
        value, ensure_ascii=False, indent=indent, sort_keys=sort_keys, default=default, allow_nan=allow_nan
    )
    # json.dumps only emits a surrogate inside a string literal, where its escape means the same string.
    return escape_lone_surrogates(text)


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary path in `path`'s folder to write; on success it is flushed and renamed over `path`.

    The temporary name keeps the suffix (writers such as matplotlib choose the format by it) and starts with a dot
    (globs for the real files do not see it). On failure it is removed and `path` is left as it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}{path.suffix}"
    # O_EXCL: the name is this writer's alone; mode 0o666 lets the umask decide, as for any new file.
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    try:
        yield tmp
        with tmp.open("rb+") as written:
            os.fsync(written.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` in one step (see `replacing`)."""
    with replacing(path) as tmp:
        tmp.write_bytes(data)


def write_text_atomic(path: Path, text: str) -> None:
    """Replace `path` with UTF-8 `text` in one step; "\\n" is written as it is on every platform."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: Path, value: Any, *, indent: int | None = 2, **options: Any) -> None:
    """Replace `path` with `value` as JSON text (see `json_text`) and a final newline."""
    write_text_atomic(path, json_text(value, indent=indent, **options) + "\n")


def append_bytes(path: Path, data: bytes) -> None:
    """Append with one O_APPEND write per chunk the kernel accepts, flushed to disk before returning."""
    handle = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(handle, view) :]
        os.fsync(handle)
    finally:
        os.close(handle)


class FolderBusyError(RuntimeError):
    """Another process holds the folder's lock and did not release it within the wait."""


def _holder_line() -> str:
    # The interpreter and script by name ("python secverify eval --env e1 …"), on one line, shortened.
    words = [Path(word).name if index < 2 else word for index, word in enumerate(sys.orig_argv)]
    command = " ".join(" ".join(words).split())
    return json_text(
        {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": command if len(command) <= 200 else command[:200] + "…",
            "since": datetime.now(UTC).isoformat(timespec="seconds"),
        }
    )


UNKNOWN_HOLDER = "another process"
"""Who holds a lock whose holder line cannot be read (not yet written: the holder writes it just after locking)."""

NAMING_WAIT_S = 0.5
"""How long a waiter waits for the holder's line before telling on_wait it waits for an unnamed holder."""


def describe_holder(lock_path: Path) -> str:
    """Who holds (or last held) a lock, as its holder wrote it: pid, host, command and since when."""
    try:
        holder = json.loads(lock_path.read_text(encoding="utf-8"))
        return f"pid {holder['pid']} on {holder['host']} ({holder['command']}, since {holder['since']})"
    except (OSError, ValueError, KeyError, TypeError):
        return UNKNOWN_HOLDER


@contextlib.contextmanager
def exclusive(
    lock_path: Path,
    *,
    wait_s: float,
    what: str,
    on_wait: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """Hold an exclusive lock on `lock_path` (created if needed) for the block.

    Waits up to wait_s for a holder to finish; on_wait is told once who is being waited for. Past the wait,
    FolderBusyError names the holder. Locks are per open file, so two threads or runners of one process exclude each
    other as two processes do."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    handle = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + wait_s
        delay = 0.02
        told = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = describe_holder(lock_path)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise FolderBusyError(
                        f"{what} is in use by {holder}; waited {wait_s:g} s. Try again when it has finished "
                        f"(a killed holder releases it at once; lock file {lock_path})"
                    ) from None
                # A holder that has just locked writes its line a moment later: wait briefly to name it.
                naming_over = wait_s - remaining >= NAMING_WAIT_S
                if on_wait is not None and not told and (holder != UNKNOWN_HOLDER or naming_over):
                    on_wait(holder)
                    told = True
                time.sleep(min(delay, remaining))
                delay = min(delay * 2, 0.5)
        os.ftruncate(handle, 0)
        os.pwrite(handle, (_holder_line() + "\n").encode("utf-8"), 0)
        yield
    finally:
        # Closing the descriptor releases the lock; the file stays, so no one can lock a file another just removed.
        os.close(handle)
