"""`secverify report`: an environment's report for a cadence, built from the run folders under outputs/evals."""

from __future__ import annotations

import argparse

from sv_shared.config import outputs_dir
from sv_shared.registry import ENV_IDS, get_environment


def cmd_report(args: argparse.Namespace) -> int:
    from secverify_dagster.reports.environment_report import build_report, report_dir
    from secverify_dagster.reports.scope import report_scope
    from secverify_dagster.resources.models import load_registry

    env = get_environment(args.env)
    scope = report_scope(env, args.cadence, period=args.period)
    out_dir = report_dir(outputs_dir() / "reports" / env.env_id, scope)
    parents = {model_id: spec.parent for model_id, spec in load_registry().items() if spec.parent}
    report = build_report(env, outputs_dir() / "evals", out_dir, scope=scope, parents=parents)
    print(f"{scope.describe()}: {', '.join(report.models) or 'no models'} → {report.markdown_path}", flush=True)
    print(f"html: {report.html_path}", flush=True)
    if report.regressed:
        print(f"regressed since the previous period: {', '.join(report.regressed)}", flush=True)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `report` sub-command to the secverify parser."""
    from secverify_dagster.reports.scope import CADENCES

    report = sub.add_parser("report", help="build an environment's report (latest runs, or a cadence's period)")
    report.add_argument("--env", required=True, choices=ENV_IDS)
    report.add_argument(
        "--cadence",
        default="latest",
        choices=CADENCES,
        help="latest (default): the newest runs, never mixing N; weekly, biweekly, monthly: that cadence's slice in "
        "a period, with each model's change since the previous period",
    )
    report.add_argument(
        "--period", help="the period to report (2026-W48, 2026-11-23, 2026-11); default: the current one"
    )
    report.set_defaults(func=cmd_report)
