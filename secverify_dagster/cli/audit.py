"""`secverify audit <run id | report | checkpoint> [--json]`: print the chain behind a published number.

Exit status: 0 when every link of the chain holds, 1 when one is missing or mismatched, 2 when the subject is
unknown (the message lists what can be audited).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from sv_shared.config import outputs_dir
from sv_shared.data.files import json_text

COMPLETE, INCOMPLETE, UNKNOWN = 0, 1, 2


def dagster_home() -> Path:
    """$DAGSTER_HOME, else outputs/dagster_home (where `secverify run` keeps its instance); nothing is created."""
    return Path(os.environ.get("DAGSTER_HOME") or outputs_dir() / "dagster_home")


def cmd_audit(args: argparse.Namespace) -> int:
    from secverify_dagster.audit.auditor import Auditor
    from secverify_dagster.audit.events import DagsterRecords, open_instance
    from secverify_dagster.audit.subjects import UnknownSubjectError

    home = dagster_home()
    try:
        instance = open_instance(home)
        unavailable = f"no Dagster instance at {home} (DAGSTER_HOME)"
    except Exception as error:  # a broken or unreachable instance: the artifacts are still audited, the links say why
        instance, unavailable = None, f"the Dagster instance at {home} cannot be opened: {error}"
    try:
        events = DagsterRecords(instance, unavailable=unavailable)
        auditor = Auditor(outputs_dir(), events)
        try:
            subject = auditor.resolve(args.subject)
        except UnknownSubjectError as error:
            print(f"secverify audit: {error}", file=sys.stderr)
            return UNKNOWN
        audit = auditor.audit(subject)
    finally:
        if instance is not None:
            instance.dispose()
    print(json_text(audit.as_dict(), indent=2, default=str) if args.json else audit.render(), flush=True)
    return COMPLETE if audit.complete else INCOMPLETE


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `audit` sub-command to the `secverify` parser's sub-commands."""
    audit = sub.add_parser(
        "audit",
        help="the chain behind an eval run, a report or a checkpoint: data, model, verifier, code, Dagster run",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    audit.add_argument(
        "subject",
        help="an eval run id (or <env name>--<model>/<run id>, or its folder), a report (<env>/<folder> under "
        "outputs/reports, its folder or report.json) or a checkpoint's model id",
    )
    audit.add_argument("--json", action="store_true", help="the chain as JSON instead of text")
    audit.set_defaults(func=cmd_audit)
