"""`secverify memo [--week 2026-W48] [--out DIR]`: write the weekly memo (reward deltas, notable regressions, new
synthetic volumes, outstanding risks) from the records under outputs/, as the weekly report run does."""

from __future__ import annotations

import argparse
from pathlib import Path

from sv_shared.config import outputs_dir


def cmd_memo(args: argparse.Namespace) -> int:
    from secverify_dagster.reports.weekly_memo import build_weekly_memo, memo_week, write_weekly_memo
    from secverify_dagster.resources.models import load_registry

    memo = build_weekly_memo(memo_week(args.week), outputs_dir(), load_registry())
    path = write_weekly_memo(memo, Path(args.out) if args.out else None)
    print(f"weekly memo {memo.week.label}: {path}", flush=True)
    print(
        f"{len(memo.regressed)} regressions, {len(memo.collapsed)} collapsed policies, {len(memo.volumes)} new "
        f"synthetic volumes, {len(memo.risks)} outstanding risks",
        flush=True,
    )
    if memo.regressed:
        print(f"regressed since last week: {', '.join(memo.regressed)}", flush=True)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `memo` sub-command to the secverify parser."""
    memo = sub.add_parser(
        "memo",
        help="write the weekly memo to docs-internal/reports/<ISO week>.md",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    memo.add_argument("--week", help="the ISO week (2026-W48); default: the current one")
    memo.add_argument(
        "--out", help="the folder to write <ISO week>.md into (default: $SECVERIFY_MEMOS, else docs-internal/reports)"
    )
    memo.set_defaults(func=cmd_memo)
