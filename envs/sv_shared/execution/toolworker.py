"""A long-lived scanner worker, run with the TOOLS environment's python: `.venv-tools/bin/python -I toolworker.py`.

Why: checkov costs ≈ 3 s per CLI call (interpreter start and check registry import) but ≈ 20-30 ms per Kubernetes
file once its runners are imported (measured here). This process imports a tool once, on first use, and then answers
JSON-lines requests on stdin with JSON-lines responses on stdout:

    {"id": 1, "op": "checkov", "framework": "kubernetes" | "terraform", "files": {name: content}, "file_timeout_s": 20}
    {"id": 2, "op": "bandit", "files": {name: content}}
    {"id": 3, "op": "version"}        {"id": 4, "op": "ping"}        {"id": 5, "op": "sleep", "seconds": 1.0}

    -> {"id": 1, "ok": true, "result": {...}}  or  {"id": 1, "ok": false, "error": "..."}

Only the standard library is imported at start-up (this file must run in an environment the project does not
control); tools are imported lazily by their op. New ops are methods named `op_<name>`.

Hostile input must not hang or kill the worker: every file is written to a private temporary directory, scanned
under a per-file alarm (a Python-level hang becomes a per-file error), the address space is capped (a memory blow-up
becomes MemoryError, not the OOM killer), and stdout is reserved for the protocol (anything a tool prints goes to
stderr). A hang in C code is the client's to handle: it kills the process group and starts a new worker.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import resource
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

PROTOCOL_VERSION = 1
DEFAULT_FILE_TIMEOUT_S = 20.0
MAX_SLEEP_S = 600.0
# Address-space cap: checkov expanding a YAML alias bomb reached 8.5 GB here before this existed.
MEMORY_LIMIT_MB = int(os.environ.get("SECVERIFY_WORKER_MEMORY_MB", "4096"))
_SAFE_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
_SUFFIXES = {"kubernetes": (".yaml", ".yml", ".json"), "terraform": (".tf", ".tf.json"), "python": (".py",)}


class FileTimeout(Exception):
    """Raised by the alarm handler inside a scan that ran past its per-file budget."""


@contextlib.contextmanager
def alarm(seconds: float) -> Iterator[None]:
    """Raise FileTimeout in the main thread after `seconds` (pure-Python hangs only; C code is the client's job)."""

    def _expired(signum: int, frame: object) -> None:
        raise FileTimeout(f"scan ran past {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, _expired)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def safe_name(name: str, kind: str) -> str:
    """A basename the tool will recognise: no directories or dot-files, the kind's suffix."""
    base = _SAFE_CHARS.sub("_", name.replace("\\", "/").rsplit("/", 1)[-1]).strip("_")[-100:] or "config"
    if base.startswith("."):
        base = "f" + base
    suffixes = _SUFFIXES[kind]
    if not base.lower().endswith(suffixes):
        base += suffixes[0]
    return base


def write_file(directory: Path, index: int, name: str, content: str, kind: str) -> Path:
    """<directory>/<index>/<safe name>, one folder per file so no tool joins two files into one module."""
    target = directory / f"{index:05d}" / safe_name(name, kind)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        data = content.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        data = content.encode("utf-8", "replace")
    target.write_bytes(data)
    return target


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _severity_name(value: Any) -> str | None:
    if value is None:
        return None
    return str(getattr(value, "name", value))


class Worker:
    """Dispatches requests to `op_<name>` methods; keeps imported tools between requests."""

    def __init__(self) -> None:
        self._checkov: dict[str, Any] | None = None
        self._bandit: dict[str, Any] | None = None
        self.started = time.monotonic()
        self.requests = 0

    def ops(self) -> list[str]:
        return sorted(name[3:] for name in dir(self) if name.startswith("op_"))

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """One response for one request; never raises (an exception becomes {"ok": false})."""
        request_id = request.get("id")
        op = request.get("op")
        method: Callable[[dict[str, Any]], Any] | None = None
        if isinstance(op, str):
            method = getattr(self, f"op_{op}", None)
        if method is None:
            return {"id": request_id, "ok": False, "error": f"unknown op {op!r}; known: {', '.join(self.ops())}"}
        self.requests += 1
        try:
            return {"id": request_id, "ok": True, "result": method(request)}
        except MemoryError:
            return {"id": request_id, "ok": False, "error": f"{op}: out of memory (limit {MEMORY_LIMIT_MB} MB)"}
        except BaseException as exc:  # a tool's failure is an answer, not the end of the worker
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            return {"id": request_id, "ok": False, "error": f"{op}: {detail}"[:4000]}

    # -- ops ------------------------------------------------------------------------------------------------------

    def op_ping(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"pid": os.getpid(), "requests": self.requests}

    def op_sleep(self, request: dict[str, Any]) -> dict[str, Any]:
        """Diagnostics: block for a while (how the client's timeout and restart are exercised)."""
        seconds = min(float(request.get("seconds", 0.0)), MAX_SLEEP_S)
        time.sleep(max(seconds, 0.0))
        return {"slept": seconds}

    def op_version(self, request: dict[str, Any]) -> dict[str, Any]:
        return {
            "protocol": PROTOCOL_VERSION,
            "python": sys.version.split()[0],
            "pid": os.getpid(),
            "ops": self.ops(),
            "checkov": _version("checkov"),
            "bandit": _version("bandit"),
            "memory_limit_mb": MEMORY_LIMIT_MB,
        }

    def _load_checkov(self) -> dict[str, Any]:
        if self._checkov is None:
            os.environ.setdefault("CHECKOV_PARALLELIZATION_TYPE", "none")
            os.environ.setdefault("LOG_LEVEL", "ERROR")
            runner_filter = importlib.import_module("checkov.runner_filter").RunnerFilter
            self._checkov = {
                "RunnerFilter": runner_filter,
                "kubernetes": importlib.import_module("checkov.kubernetes.runner").Runner,
                "terraform": importlib.import_module("checkov.terraform.runner").Runner,
            }
        return self._checkov

    def op_checkov(self, request: dict[str, Any]) -> dict[str, Any]:
        """Failed checks per file, each file scanned on its own (results depend on that file's content only)."""
        framework = request.get("framework")
        if framework not in ("kubernetes", "terraform"):
            raise ValueError(f"framework must be 'kubernetes' or 'terraform', got {framework!r}")
        files = request.get("files") or {}
        budget = float(request.get("file_timeout_s") or DEFAULT_FILE_TIMEOUT_S)
        checkov = self._load_checkov()
        runner_cls, runner_filter = checkov[framework], checkov["RunnerFilter"]
        results: dict[str, dict[str, Any]] = {}
        with tempfile.TemporaryDirectory(prefix="sv-checkov-") as tmp:
            for index, (name, content) in enumerate(files.items()):
                path = write_file(Path(tmp), index, name, content, framework)
                started = time.perf_counter()
                try:
                    with alarm(budget):
                        report = runner_cls().run(
                            root_folder=None, files=[str(path)], runner_filter=runner_filter(framework=[framework])
                        )
                except FileTimeout as exc:
                    results[name] = {"failed": [], "error": f"checkov {framework}: {exc}"}
                    continue
                except MemoryError:
                    results[name] = {"failed": [], "error": f"checkov {framework}: out of memory"}
                    continue
                except Exception as exc:
                    results[name] = {"failed": [], "error": f"checkov {framework}: {type(exc).__name__}: {exc}"[:2000]}
                    continue
                reports = report if isinstance(report, list) else [report]
                failed = [_checkov_record(check) for rep in reports for check in rep.failed_checks]
                parse_errors = [err for rep in reports for err in getattr(rep, "parsing_errors", [])]
                results[name] = {
                    "failed": failed,
                    "passed": sum(len(rep.passed_checks) for rep in reports),
                    "error": "checkov could not parse the file" if parse_errors else None,
                    "seconds": round(time.perf_counter() - started, 4),
                }
        return {"files": results, "checkov": _version("checkov")}

    def op_bandit(self, request: dict[str, Any]) -> dict[str, Any]:
        """bandit's issues per Python file (in-process: ≈ 2.4 ms per file against ≈ 160 ms per CLI call)."""
        if self._bandit is None:
            self._bandit = {
                "config": importlib.import_module("bandit.core.config"),
                "manager": importlib.import_module("bandit.core.manager"),
            }
        files = request.get("files") or {}
        budget = float(request.get("file_timeout_s") or DEFAULT_FILE_TIMEOUT_S)
        results: dict[str, dict[str, Any]] = {}
        with tempfile.TemporaryDirectory(prefix="sv-bandit-") as tmp:
            for index, (name, content) in enumerate(files.items()):
                path = write_file(Path(tmp), index, name, content, "python")
                manager = self._bandit["manager"].BanditManager(self._bandit["config"].BanditConfig(), "file")
                try:
                    with alarm(budget):
                        manager.discover_files([str(path)])
                        manager.run_tests()
                except FileTimeout as exc:
                    results[name] = {"issues": [], "error": f"bandit: {exc}"}
                    continue
                issues = [
                    {
                        "test_id": issue.test_id,
                        "test_name": issue.test,
                        "severity": str(issue.severity),
                        "confidence": str(issue.confidence),
                        "line": issue.lineno,
                        "message": issue.text,
                        "cwe": getattr(getattr(issue, "cwe", None), "id", None),
                    }
                    for issue in manager.get_issue_list()
                ]
                skipped = [reason for _, reason in getattr(manager, "skipped", [])]
                results[name] = {"issues": issues, "error": "; ".join(skipped) or None}
        return {"files": results, "bandit": _version("bandit")}


def _checkov_record(check: Any) -> dict[str, Any]:
    line_range = list(getattr(check, "file_line_range", None) or [])
    return {
        "check_id": check.check_id,
        "bc_check_id": getattr(check, "bc_check_id", None),
        "check_name": check.check_name,
        "guideline": getattr(check, "guideline", None),
        "severity": _severity_name(getattr(check, "severity", None)),
        "resource": getattr(check, "resource", None),
        "line_range": [int(value) for value in line_range[:2]],
    }


def _limit_memory(megabytes: int) -> None:
    if megabytes <= 0:
        return
    limit = megabytes * 1024 * 1024
    with contextlib.suppress(ValueError, OSError):
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def main() -> int:
    """Serve requests until stdin closes (the client went away); stdout carries protocol lines only."""
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8", newline="\n")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    _limit_memory(MEMORY_LIMIT_MB)
    worker = Worker()
    for raw in sys.stdin.buffer:
        line = raw.decode("utf-8", "replace").strip()
        if not line:
            continue
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise ValueError("a request must be a JSON object")
        except ValueError as exc:
            response: dict[str, Any] = {"id": None, "ok": False, "error": f"bad request: {exc}"}
        else:
            response = worker.handle(request)
        protocol.write(json.dumps(response, ensure_ascii=True, default=str) + "\n")
        protocol.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
