"""A weekly-memo writer for tests that run several at once in spawned processes: kept apart from the test modules so
a worker imports the memo's code only, not the tests' fixtures and their imports."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from secverify_dagster.cadences import WEEKLY_ENVS
from secverify_dagster.reports.weekly_memo import build_weekly_memo, memo_week, write_weekly_memo
from secverify_dagster.resources.models import load_registry


def write_memo_again_and_again(args: tuple[str, str, str, int, Any]) -> str:
    """Build a memo of the week (writers differ: their own writing time, their own environments), wait at the
    barrier for the other writers, then write it 200 times; returns its text."""
    outputs, folder, week, writer, start = args
    memo = build_weekly_memo(
        memo_week(week),
        Path(outputs),
        load_registry(include_checkpoints=False),
        env_ids=WEEKLY_ENVS[: 2 + 2 * writer],
        now=datetime(2026, 11, 23, 12, writer, tzinfo=UTC),
    )
    start.wait(timeout=120)
    for _ in range(200):
        write_weekly_memo(memo, Path(folder))
    return memo.markdown()
