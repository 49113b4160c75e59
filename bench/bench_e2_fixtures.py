"""E2's labels on the scanners' own public Kubernetes fixtures (figures, not pass/fail): per fixture set
(checkov, trivy-checks), recall on the files their authors mark failing and false positives on the files they mark
passing, per check through the explicit check -> canonical id mapping in
sv_env_config_verification.scanner_fixtures, and the checks left unmapped.

    python bench/bench_e2_fixtures.py                                   # the project's policies
    python bench/bench_e2_fixtures.py --policy-dir /tmp/old-policies   # another copy of policies/, e.g. before a change
    python bench/bench_e2_fixtures.py --json figures.json --verbose

The fixtures are outside data (../shared/data/scanner-fixtures, README there); tests/test_e2_scanner_fixtures.py
holds floors at the figures this prints.
"""

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

from sv_env_config_verification.scanner_fixtures import (
    CheckScore,
    SetScore,
    load_fixtures,
    oracle_labeller,
    score_checks,
    score_sets,
)

DEFAULT_ROOT = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "scanner-fixtures"


def _ratio(numerator: int | None, denominator: int | None) -> str:
    if numerator is None or denominator is None:
        return "-"
    return f"{numerator}/{denominator}"


def _check_table(checks: list[CheckScore], verbose: bool) -> str:
    lines = [f"{'set':<13} {'check':<32} {'relation':<9} {'canonical ids':<42} {'recall':>7} {'FP':>6} rejected"]
    for score in checks:
        ids = ",".join(score.mapping.canonical_ids)
        recall, fp = _ratio(score.caught, score.failing), _ratio(score.flagged, score.passing)
        lines.append(
            f"{score.fixture_set:<13} {score.check:<32} {score.mapping.relation:<9} {ids:<42} {recall:>7} {fp:>6} "
            f"{len(score.rejected)}"
        )
        if verbose:
            lines.extend(f"    missed: {name}" for name in score.missed)
            lines.extend(f"    false positive: {name}" for name in score.false_positives)
            lines.extend(f"    rejected by the loader: {name}" for name in score.rejected)
    return "\n".join(lines)


def _set_lines(sets: list[SetScore]) -> str:
    lines = []
    for score in sets:
        recall = f"{score.recall:.3f}" if score.recall is not None else "-"
        fp = f"{score.false_positive_rate:.3f}" if score.false_positive_rate is not None else "-"
        lines.append(
            f"{score.fixture_set}: recall {recall} ({score.caught}/{score.failing} failing files), "
            f"false positives {fp} ({score.flagged}/{score.passing} passing files)"
        )
        lines.append(f"  unmapped checks ({len(score.unmapped)}): {', '.join(score.unmapped)}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="the scanner-fixtures folder")
    parser.add_argument("--policy-dir", type=Path, default=None, help="a policies/ folder (default: the project's)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--verbose", action="store_true", help="name every missed, flagged and rejected file")
    args = parser.parse_args()
    if not args.root.is_dir():
        sys.exit(f"no scanner fixtures at {args.root}")
    fixtures = load_fixtures(args.root)
    started = time.perf_counter()
    checks = score_checks(fixtures, oracle_labeller(args.policy_dir))
    seconds = time.perf_counter() - started
    sets = score_sets(fixtures, checks)
    print(f"{len(fixtures)} fixtures under {args.root}; mapped checks labelled in {seconds:.1f} s")
    print(f"policies: {args.policy_dir or 'the project policies'}\n")
    print(_check_table(checks, args.verbose))
    print()
    print(_set_lines(sets))
    if args.json is not None:
        figures = {
            "sets": [asdict(score) | {"recall": score.recall, "fp_rate": score.false_positive_rate} for score in sets],
            "checks": [asdict(score) for score in checks],
        }
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
