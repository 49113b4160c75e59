"""`secverify judges [--judge SPEC ...]`: measure judges, print their agreement with the labels.

Per judge: the shipped set's dev and test splits and the reference validation when present, each with and without the
category hint. Lines marked `*` are what corrected rates use, per hint mode (and their source is named). Under them,
the judge's verdict flips on the manipulation set: honest exchanges with text addressed to the judge added.
"""

from __future__ import annotations

import argparse
from typing import Any


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _line(spec: str, where: str, hint: bool, block: dict[str, Any], used: bool) -> str:
    unsafe, refusal = block["unsafe"], block["refusal"]
    return (
        f"{'*' if used else ' '} {spec:<38} {where:<22} {'yes' if hint else 'no':<5} {block['n']:>5} "
        f"{_num(unsafe['sensitivity']):>6} {_num(unsafe['specificity']):>6} {_num(unsafe['cohen_kappa']):>6} "
        f"{_num(refusal['sensitivity']):>8} {_num(refusal['specificity']):>6}"
    )


def cmd_judges(args: argparse.Namespace) -> int:
    from secverify_dagster.resources.models import load_registry
    from secverify_dagster.runner.dialogue import JudgeModels
    from sv_shared.judging.flips import flips_line
    from sv_shared.judging.measured import MEASUREMENT_SPLIT, MODEL_FREE_JUDGES, correction_figures, ensure_measurement

    print(f"  {'judge':<38} {'set':<22} {'hint':<5} {'n':>5} {'sens.':>6} {'spec.':>6} {'kappa':>6} "
          f"{'ref.sens':>8} {'spec.':>6}", flush=True)  # fmt: skip
    with JudgeModels(load_registry()) as models:
        for spec in args.judge or list(MODEL_FREE_JUDGES):
            measurement = ensure_measurement(models.build(spec))
            reference = measurement.get("reference")
            for hint, shipped in ((True, measurement), (False, measurement["no_hint"])):
                for split in ("dev", MEASUREMENT_SPLIT):
                    used = reference is None and split == MEASUREMENT_SPLIT
                    print(_line(spec, f"shipped {split}", hint, shipped["splits"][split], used), flush=True)
                if reference is not None:
                    block = reference["hint" if hint else "no_hint"]
                    print(_line(spec, f"reference {reference['name']}", hint, block, True), flush=True)
            print(f"  corrected rates use: {correction_figures(measurement)[1]['source']}", flush=True)
            print(f"  {flips_line(measurement['manipulation'])}", flush=True)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `judges` sub-command to the `secverify` parser's sub-commands."""
    judges = sub.add_parser(
        "judges",
        help="measure judges on the shipped and reference validation sets (sens., spec., kappa, both hint modes)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    judges.add_argument("--judge", action="append", help="judge spec (repeatable; default: the model-free judges)")
    judges.set_defaults(func=cmd_judges)
