"""E3 figure: the weak-PRNG rule (CWE-338, rules/weak_prng.py) on code nobody here wrote, and on CWE-338 cases.

1. False positives on the Python standard library: every .py file under the running interpreter's stdlib folder
   (site-packages left out), read in place. Nothing there hands a weak PRNG value to a secret, so every hit is a false
   positive; each is listed. Files that are not Python 3 (lib2to3's Python 2 samples, bad-encoding tests) are counted
   and left out.
2. Recall and false positives on tests/fixtures/e3_prng: positive cases (a weak PRNG value reaching a token, password,
   key, salt, nonce, session id, OTP ...; the sink lines marked `# expect: CWE-338`) and benign counterparts (shuffles,
   test data, jitter, MIME boundaries, temp names, secrets-module tokens). bandit runs on the same cases (B311, the
   random module's calls, is its CWE-338 test), so "beyond bandit" is measured, not assumed.
3. With --semgrep-rules DIR, a semgrep rule folder (e.g. the name-based rule this one replaced, from git history)
   is measured on both sets the same way.

    .venv/bin/python bench/bench_e3_prng_rule.py [--stdlib DIR] [--semgrep-rules DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sysconfig
import time
from pathlib import Path
from typing import Any

from sv_env_code_vulnerability.rules import weak_prng
from sv_env_code_vulnerability.scanners import BanditAdapter, CodeScanner, PythonRulesAdapter, SemgrepCodeAdapter

CASES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "e3_prng"
MARKER = "# expect: CWE-338"


def stdlib_files(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*.py") if "site-packages" not in path.relative_to(root).parts)


def cases() -> dict[str, tuple[str, set[int]]]:
    """Case name ("positive/p01_...py") -> (source, the lines marked as sinks)."""
    found: dict[str, tuple[str, set[int]]] = {}
    for path in sorted(CASES.glob("*/*.py")):
        text = path.read_text(encoding="utf-8")
        marked = {number for number, line in enumerate(text.splitlines(), 1) if MARKER in line}
        found[f"{path.parent.name}/{path.name}"] = (text, marked)
    return found


def cwe_338_lines(scanner: CodeScanner, files: dict[str, str]) -> tuple[dict[str, set[int]], dict[str, str]]:
    """Lines of each file where the scanner reports CWE-338, and the files it could not scan."""
    findings, errors = scanner.scan_detailed(files)
    lines = {name: {f.line or 0 for f in findings.get(name, []) if f.canonical_id == weak_prng.CWE} for name in files}
    return lines, errors


def case_figures(lines: dict[str, set[int]], marked: dict[str, set[int]]) -> dict[str, Any]:
    positives = [name for name in marked if name.startswith("positive/")]
    negatives = [name for name in marked if name.startswith("negative/")]
    found = [name for name in positives if lines[name]]
    exact = [name for name in positives if lines[name] == marked[name]]
    flagged = [name for name in negatives if lines[name]]
    return {
        "positives": len(positives),
        "recall": round(len(found) / len(positives), 3) if positives else None,
        "positives_found": len(found),
        "positives_with_exactly_the_marked_lines": len(exact),
        "missed": sorted(set(positives) - set(found)),
        "negatives": len(negatives),
        "false_positives": len(flagged),
        "flagged_negatives": sorted(flagged),
    }


def on_cases(scanners: dict[str, CodeScanner]) -> dict[str, Any]:
    """Per scanner: recall and false positives on the cases; the rule against bandit, case by case."""
    loaded = cases()
    files = {name: text for name, (text, _) in loaded.items()}
    marked = {name: lines for name, (_, lines) in loaded.items()}
    report: dict[str, Any] = {}
    by_scanner: dict[str, dict[str, set[int]]] = {}
    for label, scanner in scanners.items():
        lines, errors = cwe_338_lines(scanner, files)
        by_scanner[label] = lines
        report[label] = {**case_figures(lines, marked), "scan_errors": errors}
    if "rule" in by_scanner and "bandit" in by_scanner:
        rule, bandit = by_scanner["rule"], by_scanner["bandit"]
        positives = [name for name in marked if name.startswith("positive/")]
        report["rule_beyond_bandit"] = {
            "positives_only_the_rule_finds": sorted(n for n in positives if rule[n] and not bandit[n]),
            "positives_only_bandit_finds": sorted(n for n in positives if bandit[n] and not rule[n]),
            "positives_where_bandit_flags_a_marked_sink_line": sum(bool(bandit[n] & marked[n]) for n in positives),
        }
    return report


def on_stdlib(root: Path, scanners: dict[str, CodeScanner]) -> dict[str, Any]:
    """Per scanner: hits per 1,000 standard-library files, each hit listed."""
    paths = stdlib_files(root)
    files = {str(path.relative_to(root)): path.read_text(encoding="utf-8", errors="replace") for path in paths}
    report: dict[str, Any] = {"root": str(root), "files": len(files)}
    for label, scanner in scanners.items():
        started = time.perf_counter()
        lines, errors = cwe_338_lines(scanner, files)
        hits = sorted(f"{name}:{line}" for name, found in lines.items() for line in found)
        report[label] = {
            "seconds": round(time.perf_counter() - started, 1),
            "files_not_scanned": len(errors),
            "hits": len(hits),
            "false_positives_per_1000_files": round(1000 * len(hits) / len(files), 2) if files else None,
            "hit_list": hits,
        }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stdlib", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--semgrep-rules", type=Path, default=None, help="a semgrep rule folder to measure as well")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    stdlib_scanners: dict[str, CodeScanner] = {"rule": PythonRulesAdapter()}
    case_scanners: dict[str, CodeScanner] = {"rule": PythonRulesAdapter(), "bandit": BanditAdapter()}
    if args.semgrep_rules is not None:
        stdlib_scanners["semgrep_rules"] = SemgrepCodeAdapter(args.semgrep_rules, timeout_s=900)
        case_scanners["semgrep_rules"] = SemgrepCodeAdapter(args.semgrep_rules)
    report = {"stdlib": on_stdlib(args.stdlib, stdlib_scanners), "cases": on_cases(case_scanners)}
    text = json.dumps(report, indent=2)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
