"""A persistent JSON cache on SQLite, shared by the model layer and the scanners.

Values are JSON objects stored under (namespace, key). Every `put` is committed at once, so a crashed run
keeps everything it finished; the database runs in WAL mode so several processes can read while one writes, and a
writer waits for another (up to timeout_s) instead of failing. Values are stored as JSON text by the one rule of
sv_shared.data.files: any text can be stored (a lone surrogate in a model's answer is kept as its JSON escape and
reads back unchanged). A row that cannot be decoded (hand-edited, truncated, from an incompatible version) is a miss,
never a crash.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sv_shared.data.files import exclusive, json_text

_SCHEMA = """
CREATE TABLE IF NOT EXISTS cache (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (namespace, key)
)
"""


class JsonCache:
    """Dict-valued cache in one SQLite file; safe to share between threads (one connection behind a lock)."""

    def __init__(self, path: Path | str, *, timeout_s: float = 30.0) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = sqlite3.connect(
            self.path, timeout=timeout_s, check_same_thread=False, isolation_level=None
        )
        # Switching a new database to WAL does not wait for a busy database: two processes opening a new cache at
        # once would see "database is locked". Setting it up is serialized by a file lock instead.
        lock = self.path.with_name(self.path.name + ".lock")
        with self._lock, exclusive(lock, wait_s=timeout_s, what=f"response cache {self.path}"):
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(_SCHEMA)

    def __repr__(self) -> str:
        return f"JsonCache({str(self.path)!r})"

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError(f"{self!r} is closed")
        return self._conn

    def get(self, namespace: str, key: str) -> dict[str, Any] | None:
        """The stored object, or None when absent or unreadable."""
        with self._lock:
            row = self._db.execute(
                "SELECT value FROM cache WHERE namespace = ? AND key = ?", (namespace, key)
            ).fetchone()
        if row is None:
            return None
        try:
            value = json.loads(row[0])
        except (TypeError, ValueError, RecursionError):
            return None
        return value if isinstance(value, dict) else None

    def put(self, namespace: str, key: str, value: dict[str, Any]) -> None:
        """Store (or replace) a JSON object; committed before returning."""
        if not isinstance(value, dict):
            raise TypeError(f"JsonCache stores dicts, got {type(value).__name__}")
        text = json_text(value, sort_keys=True, allow_nan=False)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO cache (namespace, key, value, created_at) VALUES (?, ?, ?, ?)",
                (namespace, key, text, time.time()),
            )

    def delete(self, namespace: str, key: str | None = None) -> int:
        """Remove one entry, or a whole namespace when key is None; returns the number of rows removed."""
        with self._lock:
            if key is None:
                cursor = self._db.execute("DELETE FROM cache WHERE namespace = ?", (namespace,))
            else:
                cursor = self._db.execute("DELETE FROM cache WHERE namespace = ? AND key = ?", (namespace, key))
            return cursor.rowcount

    def count(self, namespace: str | None = None) -> int:
        with self._lock:
            if namespace is None:
                return int(self._db.execute("SELECT COUNT(*) FROM cache").fetchone()[0])
            return int(self._db.execute("SELECT COUNT(*) FROM cache WHERE namespace = ?", (namespace,)).fetchone()[0])

    def namespaces(self) -> Iterator[str]:
        with self._lock:
            rows = self._db.execute("SELECT DISTINCT namespace FROM cache ORDER BY namespace").fetchall()
        return iter([row[0] for row in rows])

    def __len__(self) -> int:
        return self.count()

    def __contains__(self, item: tuple[str, str]) -> bool:
        namespace, key = item
        return self.get(namespace, key) is not None

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> JsonCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        # A cache crosses process boundaries as its path; the receiving side opens its own connection.
        return {"path": str(self.path)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(Path(state["path"]))  # type: ignore[misc]
