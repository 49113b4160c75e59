"""Write envs/sv_env_code_vulnerability/data/payload_variants.jsonl: which payload variants of every shipped E3 repair
item the harness shows meaningful (exploit_variants.py), so that scoring a shipped item never validates them itself.

Every validation runs the item's vulnerable code and its reference fix against probe copies of its exploit tests (two
sandboxed runs per item, in a fresh cache: nothing is taken from an earlier validation). A row's key covers the item,
the payload and the harness code, so after an edit to any of them the old row is not found and the verifier validates
that item itself (slower, never wrong); `--check` names the items whose row is missing or stale.

    .venv/bin/python scripts/validate_e3_payload_variants.py           # validate every shipped item (a few minutes)
    .venv/bin/python scripts/validate_e3_payload_variants.py --check   # exit 1 when a row is missing or stale (fast)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import polars as pl

from sv_env_code_vulnerability import data
from sv_env_code_vulnerability.env import build
from sv_env_code_vulnerability.exploit_variants import (
    SHIPPED_PATH,
    ExploitTests,
    ExploitVariants,
    shipped_rows,
    validation_key,
)
from sv_env_code_vulnerability.verify import CodeVulnerabilityVerifier
from sv_shared.data.embedded import check_or_write
from sv_shared.registry import load_env_config

SCRIPT = "scripts/validate_e3_payload_variants.py"


def shipped_tests(verifier: CodeVulnerabilityVerifier) -> list[ExploitTests]:
    """The test facts of every shipped repair item with a reference fix (the items a scoring draws a variant for)."""
    items = data.load_embedded().filter(pl.col("task") == "repair").sort("item_id").to_dicts()
    return [verifier.exploit_tests(item) for item in items if verifier.prepare(item).reference_lines]


def stale_items(tests: Sequence[ExploitTests]) -> list[str]:
    """Items without a row under their current key, and rows that name no shipped item's key."""
    shipped = {row["key"]: row["item_id"] for row in shipped_rows()}
    current = {validation_key(t): t.item_id for t in tests}
    missing = [item_id for key, item_id in current.items() if key not in shipped]
    extra = [item_id for key, item_id in shipped.items() if key not in current]
    return sorted({*missing, *extra})


def render(verifier: CodeVulnerabilityVerifier, tests: Sequence[ExploitTests]) -> str:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        variants = ExploitVariants(verifier.harness, cache_path=Path(scratch) / "variants.sqlite", shipped={})
        with ThreadPoolExecutor(max_workers=max(1, verifier.workers)) as pool:
            valid = list(pool.map(variants.valid, tests))
    rows = [
        {"item_id": t.item_id, "key": validation_key(t), "valid": found} for t, found in zip(tests, valid, strict=True)
    ]
    with_variants = sum(1 for found in valid if found)
    print(f"validated {len(rows)} items in {time.perf_counter() - started:.1f} s; {with_variants} have a valid variant")
    return "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="name missing or stale rows instead of validating")
    args = parser.parse_args(argv)
    verifier = build(load_env_config("e3")).verifier
    assert isinstance(verifier, CodeVulnerabilityVerifier)
    tests = shipped_tests(verifier)
    if args.check:
        stale = stale_items(tests)
        if stale:
            named = ", ".join(stale[:5]) + (", ..." if len(stale) > 5 else "")
            print(f"{len(stale)} stale or missing rows ({named}); run python {SCRIPT}", file=sys.stderr)
            return 1
        print(f"up to date: {len(tests)} items")
        return 0
    return check_or_write({SHIPPED_PATH: render(verifier, tests)}, check=False, script=SCRIPT)


if __name__ == "__main__":
    sys.exit(main())
