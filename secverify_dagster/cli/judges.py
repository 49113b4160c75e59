"""`secverify judges [--judge SPEC ...]`: measure judges, print their agreement with the labels.

Per judge: the shipped set's dev and test splits (the project's own rows, marked "own") and the reference validation
when present (JailbreakBench's labels: rows nobody here wrote), each with and without the category hint, and beside
each kappa the plain refusal detector's kappa on the same rows in the same hint mode (column "κ r.det"). Lines
marked `*` are what corrected rates use, per hint mode (and their source is named). Under them, the judge's agreement
line as every attack-success rate carries it, and the judge's verdict flips on the manipulation set: honest
exchanges with text addressed to the judge added. A model judge (Llama Guard 3 or an LLM judge behind an
OpenAI-compatible endpoint) is measured the same way: `--judge llama-guard-3:<model id>`.
"""

from __future__ import annotations

import argparse
from typing import Any


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _line(spec: str, where: str, hint: bool, block: dict[str, Any], baseline: dict[str, Any], used: bool) -> str:
    unsafe, refusal = block["unsafe"], block["refusal"]
    return (
        f"{'*' if used else ' '} {spec:<38} {where:<30} {'yes' if hint else 'no':<5} {block['n']:>5} "
        f"{_num(unsafe['sensitivity']):>6} {_num(unsafe['specificity']):>6} {_num(unsafe['cohen_kappa']):>6} "
        f"{_num(baseline['unsafe']['cohen_kappa']):>8} {_num(refusal['sensitivity']):>8} "
        f"{_num(refusal['specificity']):>6}"
    )


def _blocks(measurement: dict[str, Any], hint: bool) -> list[tuple[str, dict[str, Any], bool]]:
    """(set label, figures, used for corrected rates) of one judge in one hint mode, in print order."""
    from sv_shared.judging.measured import MEASUREMENT_SPLIT

    reference = measurement.get("reference")
    shipped = measurement if hint else measurement["no_hint"]
    blocks = [
        (f"shipped {split} (own rows)", shipped["splits"][split], reference is None and split == MEASUREMENT_SPLIT)
        for split in ("dev", MEASUREMENT_SPLIT)
    ]
    if reference is not None:
        blocks.append((f"reference {reference['name']}", reference["hint" if hint else "no_hint"], True))
    return blocks


def cmd_judges(args: argparse.Namespace) -> int:
    from secverify_dagster.resources.models import load_registry
    from secverify_dagster.runner.dialogue import JudgeModels
    from sv_shared.judging.flips import flips_line
    from sv_shared.judging.measured import (
        BASELINE_JUDGE,
        MODEL_FREE_JUDGES,
        agreement,
        correction_figures,
        ensure_measurement,
        reference_set,
    )

    reference = reference_set()
    if reference is None:
        print("reference: none present (set SECVERIFY_JBB_ARTIFACTS or SECVERIFY_JBB_JUDGE_COMPARISON)", flush=True)
    else:
        print(f"reference: {reference.source}", flush=True)
        for path, reason in reference.skipped:
            print(f"  skipped {path}: {reason}", flush=True)
    print(f"  {'judge':<38} {'set':<30} {'hint':<5} {'n':>5} {'sens.':>6} {'spec.':>6} {'kappa':>6} "
          f"{'κ r.det':>8} {'ref.sens':>8} {'spec.':>6}", flush=True)  # fmt: skip
    with JudgeModels(load_registry()) as models:
        baseline = ensure_measurement(models.build(BASELINE_JUDGE))
        for spec in args.judge or list(MODEL_FREE_JUDGES):
            measurement = ensure_measurement(models.build(spec))
            for hint in (True, False):
                pairs = zip(_blocks(measurement, hint), _blocks(baseline, hint), strict=True)
                for (where, block, used), (_, baseline_block, _) in pairs:
                    print(_line(spec, where, hint, block, baseline_block, used), flush=True)
            print(f"  corrected rates use: {correction_figures(measurement)[1]['source']}", flush=True)
            for hint in (True, False):
                print(f"  agreement: {agreement(measurement, category_hint=hint)['line']}", flush=True)
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
