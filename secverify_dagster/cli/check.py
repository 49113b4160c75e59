"""`secverify check`: the regression gate over outputs/evals, for CI (`make check`). Exit 1 when a model regressed."""

from __future__ import annotations

import argparse
import json
import sys

from secverify_dagster.reports.regression_gate import CORE_METRIC, MAX_RELATIVE_DROP, GateVerdict, gate
from sv_shared.config import outputs_dir
from sv_shared.registry import ENV_IDS

REGRESSED = 1
NOTHING_TO_CHECK = 2
"""A model named with --models has no complete run on the environments checked (a typo must not pass the gate)."""


def _number(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


HEADER = ("env", "model", "previous run", "current run", "n", CORE_METRIC, "change", "95% CI of change", "verdict")


def _cells(verdict: GateVerdict) -> tuple[str, ...]:
    interval = "-" if verdict.ci_low is None else f"[{verdict.ci_low:+.3f}, {_number(verdict.ci_high, '+.3f')}]"
    return (
        verdict.env_id,
        verdict.model_id,
        verdict.previous_run or "-",
        verdict.current_run,
        str(verdict.n_paired),
        f"{_number(verdict.mean_previous, '.3f')} → {_number(verdict.mean_current, '.3f')}",
        _number(verdict.relative_change, "+.1%"),
        interval,
        "REGRESSED" if verdict.regressed else "ok",
    )


def _print_table(verdicts: list[GateVerdict]) -> None:
    rows = [HEADER, *(_cells(verdict) for verdict in verdicts)]
    widths = [max(len(row[column]) for row in rows) for column in range(len(HEADER))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    print()
    for verdict in verdicts:
        print(f"{verdict.env_id} × {verdict.model_id}: {verdict.reason}")


def cmd_check(args: argparse.Namespace) -> int:
    models = [model for value in args.models for model in value.replace(",", " ").split() if model]
    evals_root = outputs_dir() / "evals"
    verdicts = gate(evals_root, args.env or None, models or None, require_significance=args.require_significance)
    missing = sorted(set(models) - {verdict.model_id for verdict in verdicts})
    if args.json:
        print(json.dumps([verdict.as_dict() for verdict in verdicts], indent=2))
    elif verdicts:
        _print_table(verdicts)
    else:
        print(f"no complete eval runs under {evals_root}: nothing to gate")
    if missing:
        print(f"secverify check: no complete run of {', '.join(missing)} under {evals_root}", file=sys.stderr)
        return NOTHING_TO_CHECK
    regressed = [verdict for verdict in verdicts if verdict.regressed]
    if regressed and not args.json:
        kind = "a significant drop" if args.require_significance else "a drop"
        print(f"\n{len(regressed)} regressed ({kind} of {CORE_METRIC} beyond {MAX_RELATIVE_DROP:.0%})")
    return REGRESSED if regressed else 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `secverify check` to the CLI's sub-commands."""
    check = sub.add_parser(
        "check",
        help=f"regression gate: exit 1 when a model's latest run dropped more than {MAX_RELATIVE_DROP * 100:.0f}%% "
        "against its previous comparable run (the seed's rule; the 95%% CI is shown beside it)",
    )
    check.add_argument(
        "--require-significance",
        action="store_true",
        help="fail only a drop whose paired-bootstrap 95%% CI lies entirely below 0 (stricter about noise, so a "
        "large drop on a few items passes)",
    )
    check.add_argument("--env", action="append", choices=ENV_IDS, default=[], help="environment (repeatable)")
    check.add_argument("--models", action="append", default=[], help='space/comma-separated ids, e.g. "a b"')
    check.add_argument("--json", action="store_true", help="the verdicts as JSON")
    check.set_defaults(func=cmd_check)
