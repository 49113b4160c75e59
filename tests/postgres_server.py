"""A real PostgreSQL server for tests: a fresh cluster in its own temporary folder, listening on 127.0.0.1 only, on a
free port, stopped and removed afterwards.

PostgreSQL refuses to run as root, so when the tests run as root the server runs as the unprivileged `nobody`; its
folder is made under the system temporary directory (pytest's own folders are private to root)."""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg2
from psycopg2 import sql
from psycopg2.extensions import connection

POSTGRES_LIBS = Path("/usr/lib/postgresql")
"""Where Debian's `postgresql` package puts each server version (<version>/bin/initdb, pg_ctl, postgres)."""
SERVER_USER = "nobody"
START_ATTEMPTS = 3
"""A free port can be taken by another process between choosing it and binding it: try again on a new one."""


class PostgresUnavailable(RuntimeError):
    """The PostgreSQL server binaries are missing, or the server would not start (the message holds its log)."""


@dataclass(frozen=True)
class PostgresServer:
    port: int
    user: str
    password: str
    folder: Path
    host: str = "127.0.0.1"

    def connect(self, database: str = "postgres") -> connection:
        return psycopg2.connect(host=self.host, port=self.port, user=self.user, password=self.password, dbname=database)

    def create_database(self, name: str) -> str:
        link = self.connect()
        try:
            link.autocommit = True  # CREATE DATABASE cannot run inside a transaction
            with link.cursor() as cursor:
                cursor.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        finally:
            link.close()
        return name

    def dagster_env(self, database: str) -> dict[str, str]:
        """The variables deploy/postgres/dagster.yaml reads its connection from."""
        return {
            "DAGSTER_PG_HOST": self.host,
            "DAGSTER_PG_PORT": str(self.port),
            "DAGSTER_PG_USER": self.user,
            "DAGSTER_PG_PASSWORD": self.password,
            "DAGSTER_PG_DB": database,
        }


def postgres_bin_dir() -> Path:
    """The newest installed server version's bin folder."""
    found = sorted(POSTGRES_LIBS.glob("*/bin/initdb"), key=lambda path: int(path.parent.parent.name))
    if not found:
        raise PostgresUnavailable(
            f"no PostgreSQL server under {POSTGRES_LIBS}: install the Debian package `postgresql` (make setup does)"
        )
    return found[-1].parent


def _server_user() -> dict[str, Any]:
    """subprocess arguments that drop root to SERVER_USER; nothing when the tests already run unprivileged."""
    if os.geteuid() != 0:
        return {}
    account = pwd.getpwnam(SERVER_USER)
    return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _run(command: list[str], folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=folder, capture_output=True, text=True, timeout=120, check=False, **_server_user()
    )


def _init_cluster(bin_dir: Path, folder: Path, user: str, password: str) -> Path:
    data = folder / "data"
    password_file = folder / "password"
    password_file.write_text(password, encoding="utf-8")
    if os.geteuid() == 0:
        account = pwd.getpwnam(SERVER_USER)
        for path in (folder, password_file):
            os.chown(path, account.pw_uid, account.pw_gid)
    command = [str(bin_dir / "initdb"), "-D", str(data), "-U", user, "--auth=scram-sha-256"]
    # --no-sync: a throwaway cluster need not be flushed to disk.
    done = _run([*command, f"--pwfile={password_file}", "-E", "UTF8", "--locale=C", "--no-sync"], folder)
    password_file.unlink()
    if done.returncode != 0:
        raise PostgresUnavailable(f"initdb failed ({done.returncode}): {done.stderr.strip()}")
    return data


def _start(bin_dir: Path, data: Path, folder: Path) -> int:
    """Start the server on a free loopback port; its port."""
    log = folder / "server.log"
    for _ in range(START_ATTEMPTS):
        port = _free_port()
        # A throwaway cluster: durability settings off, for speed.
        options = f"-h 127.0.0.1 -p {port} -k {folder} -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        done = _run(
            [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60", "-o", options, "start"], folder
        )
        if done.returncode == 0:
            return port
    tail = log.read_text(encoding="utf-8", errors="replace")[-2000:] if log.exists() else done.stderr
    raise PostgresUnavailable(f"PostgreSQL did not start in {START_ATTEMPTS} attempts; last log:\n{tail}")


def _stop(bin_dir: Path, data: Path, folder: Path) -> None:
    done = _run([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "-t", "30", "stop"], folder)
    pid_file = data / "postmaster.pid"
    if done.returncode != 0 and pid_file.exists():
        # The server this helper started did not stop in time: end it by its own process id.
        os.kill(int(pid_file.read_text().split()[0]), signal.SIGKILL)


@contextmanager
def running_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server on 127.0.0.1 for the duration of the block; removed with its data afterwards."""
    bin_dir = postgres_bin_dir()
    folder = Path(tempfile.mkdtemp(prefix="sv-postgres-"))
    try:
        user, password = "secverify", secrets.token_urlsafe(16)
        data = _init_cluster(bin_dir, folder, user, password)
        port = _start(bin_dir, data, folder)
        try:
            yield PostgresServer(port=port, user=user, password=password, folder=folder)
        finally:
            _stop(bin_dir, data, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
