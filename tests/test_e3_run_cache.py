"""E3's test-run cache: an identical trustworthy run is answered from the first one, anything that changes the run
misses, and runs without a trustworthy verdict are always run again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from sv_env_code_vulnerability.env import build
from sv_env_code_vulnerability.harness import Harness
from sv_env_code_vulnerability.run_cache import TestRunCache
from sv_shared.execution.sandbox import SandboxLimits, sandbox_status
from sv_shared.registry import load_env_config

STATUS = sandbox_status()
pytestmark = pytest.mark.skipif(not STATUS.available, reason=STATUS.describe())

TESTS = ["tests/test_prices.py"]
PROJECT = {
    "prices.py": "def total(prices):\n    return sum(prices)\n",
    "tests/test_prices.py": "from prices import total\n\n\ndef test_total():\n    assert total([1, 2]) == 3\n",
}


def _harness(path: Path, timeout_s: float = 20.0) -> Harness:
    return Harness(SandboxLimits(timeout_s=timeout_s), runs=TestRunCache(path))


def _rows(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT count(*) FROM cache").fetchone()[0])


def test_the_same_run_is_answered_from_the_first_and_any_change_runs_again(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    first = _harness(path).run(PROJECT, TESTS)
    assert first.ok and not first.cached and first.outcomes == {"tests/test_prices.py::test_total": "passed"}
    again = _harness(path).run(PROJECT, TESTS)  # another harness (another process, later): same file
    assert again.cached and again.outcomes == first.outcomes and again.wall_s == first.wall_s
    assert again.summary()["cached"] is True

    broken = PROJECT | {"prices.py": "def total(prices):\n    return sum(prices) + 1\n"}
    changed = _harness(path).run(broken, TESTS)
    assert not changed.cached and changed.outcomes == {"tests/test_prices.py::test_total": "failed"}
    tighter = _harness(path, timeout_s=19.0).run(PROJECT, TESTS)  # other limits: another run
    assert not tighter.cached
    assert _rows(path) == 3


def test_runs_without_a_trustworthy_verdict_are_never_kept(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    forged = PROJECT | {"prices.py": "import os\nos._exit(0)\n"}  # the worker dies importing the module
    reports = [_harness(path).run(forged, TESTS) for _ in range(2)]
    assert all(not report.ok and not report.cached for report in reports)
    assert reports[0].error is not None and reports[0].error.startswith(("forgery_attempt:", "test_run_invalid:"))
    assert _rows(path) == 0


def test_a_row_that_does_not_read_back_is_a_miss(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    _harness(path).run(PROJECT, TESTS)
    with sqlite3.connect(path) as conn:
        conn.execute('UPDATE cache SET value = \'{"outcomes": {}, "from": "an older version"}\'')
    report = _harness(path).run(PROJECT, TESTS)
    assert report.ok and not report.cached


def test_the_verifier_keeps_runs_unless_its_config_turns_the_cache_off() -> None:
    config = load_env_config("e3")
    assert build(config).verifier.harness.runs is not None
    off = config.model_copy(update={"verifier": config.verifier.model_copy(update={"persistent_cache": False})})
    assert build(off).verifier.harness.runs is None
