"""`secverify triage <run id | run dir> [--out PATH] [--lowest N]`: write a run's trajectory page and print where it
is, with its samples per triage category.

Exit status: 0 when the page is written, 2 when the run cannot be found or read (the message says why).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sv_shared.config import outputs_dir

WRITTEN, UNKNOWN = 0, 2


class UnknownRunError(LookupError):
    """No eval run, or more than one, answers to the name given."""


def find_run_dir(text: str, evals_root: Path) -> Path:
    """A run folder from its path, `<env name>--<model>/<run id>`, or run id (the view runs under evals/views/ too)."""
    path = Path(text)
    if (path / "metadata.json").is_file():
        return path
    runs = sorted(metadata.parent for metadata in evals_root.glob("*/*/metadata.json"))
    runs += sorted(metadata.parent for metadata in evals_root.glob("views/*/*/*/metadata.json"))
    matches = [run for run in runs if text in (run.name, f"{run.parent.name}/{run.name}")]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise UnknownRunError(
            f"{text!r} names {len(matches)} eval runs; name one as <env name>--<model>/<run id> or by its folder: "
            + ", ".join(str(run) for run in matches)
        )
    raise UnknownRunError(f"no eval run {text!r}: not a run folder, and no run of that id under {evals_root}")


def cmd_triage(args: argparse.Namespace) -> int:
    from secverify_dagster.reports.trajectories import write_run_page
    from sv_shared.registry import get_environment
    from sv_shared.runs.folder import RunFolder
    from sv_shared.runs.schema import RunRecordError

    try:
        run_dir = find_run_dir(args.run, outputs_dir() / "evals")
        env = get_environment(RunFolder(run_dir).read_metadata().env)
        page = write_run_page(env, run_dir, out=args.out, lowest=args.lowest)
    except (UnknownRunError, RunRecordError, FileNotFoundError) as error:
        print(f"secverify triage: {error}", file=sys.stderr)
        return UNKNOWN
    (run,) = page.runs
    shown = min(args.lowest, len(run.samples))
    print(f"{page.path}", flush=True)
    print(f"{len(run.samples)} samples scored, {shown} lowest-reward shown", flush=True)
    for category, count in page.counts.items():
        print(f"  {category:<12} {count}", flush=True)
    return WRITTEN


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `triage` sub-command to the `secverify` parser's sub-commands."""
    from secverify_dagster.reports.trajectories import DEFAULT_LOWEST

    triage = sub.add_parser(
        "triage",
        help="a run's trajectory page: lowest-reward samples with prompt, answer, rewards, tools, verdicts, category",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    triage.add_argument("run", help="an eval run id, <env name>--<model>/<run id>, or the run's folder")
    triage.add_argument(
        "--out", type=Path, help="where to write the page (default: trajectories.html in the run folder)"
    )
    triage.add_argument(
        "--lowest",
        type=_positive,
        default=DEFAULT_LOWEST,
        help=f"samples shown, lowest reward first (default {DEFAULT_LOWEST})",
    )
    triage.set_defaults(func=cmd_triage)
