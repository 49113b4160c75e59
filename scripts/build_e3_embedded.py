"""Write envs/sv_env_code_vulnerability/data/embedded_items.jsonl: the hand-written E3 corpus, validated.

The items are data: scripts/corpus_sources/e3_code_vulnerability/<name>.yaml, one small Python project each:
    cwe          the weakness, "CWE-89"
    module       the vulnerable module's file name, "users.py"
    source       the vulnerable module
    fix          the reference fix, as replacements in the module: [{old, new}], each old occurring exactly once
    functional   tests/test_functional.py: passes on the vulnerable and the fixed module
    exploit      tests/test_exploit.py: fails on the vulnerable module, passes on the fixed one
This script applies the fixes, derives the reference diff, discovers the test node ids (a sandboxed run of the fixed
project), validates every item with the harness (functional tests pass and exploit tests fail on the vulnerable code;
every test passes with the reference fix), scans the vulnerable code with bandit and semgrep, and writes the rows
sorted by item_id. An item that fails validation stops the build.

    .venv/bin/python scripts/build_e3_embedded.py
    .venv/bin/python scripts/build_e3_embedded.py --check   # exit 1 if the file differs from what this script writes

Exploit tests never touch the network: SSRF items test the URL validation with an injected opener, XXE items parse
local strings, command injection items check for a marker file in a temporary directory, ReDoS items time a child
process.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

import yaml

from sv_env_code_vulnerability import data
from sv_env_code_vulnerability.env import build
from sv_shared.data.embedded import build_main
from sv_shared.registry import load_env_config

SOURCES = Path(__file__).resolve().parent / "corpus_sources" / "e3_code_vulnerability"
FUNCTIONAL, EXPLOIT = "tests/test_functional.py", "tests/test_exploit.py"


def candidates() -> list[data.Candidate]:
    """The source items as candidates: vulnerable project, fixed project, test roles."""
    out: list[data.Candidate] = []
    for path in sorted(SOURCES.glob("*.yaml")):
        item = yaml.safe_load(path.read_text(encoding="utf-8"))
        fixed = item["source"]
        for replacement in item["fix"]:
            if fixed.count(replacement["old"]) != 1:
                raise SystemExit(f"{path.name}: fix text must occur exactly once in the module: {replacement['old']!r}")
            fixed = fixed.replace(replacement["old"], replacement["new"])
        tests = {FUNCTIONAL: item["functional"], EXPLOIT: item["exploit"]}
        out.append(
            data.Candidate(
                name=path.stem,
                cwe=item["cwe"],
                module_path=item["module"],
                files={item["module"]: item["source"], **tests},
                fixed_files={item["module"]: fixed, **tests},
                functional_files=(FUNCTIONAL,),
                exploit_files=(EXPLOIT,),
                source_corpus=data.EMBEDDED_CORPUS,
                source_meta={"name": path.stem, "author": "secverify"},
            )
        )
    return out


def files() -> dict[Path, str]:
    """The shipped file and its contents; exits with the reasons when an item fails validation."""
    started = time.perf_counter()
    verifier = build(load_env_config("e3")).verifier
    frame, rejected = data.build_repair_items(candidates(), verifier)
    for name, problems in rejected.items():
        print(f"REJECTED {name}:", *problems, sep="\n  ", file=sys.stderr)
    if rejected:
        raise SystemExit(1)
    counts = frame.group_by("cwe").len().sort("cwe").rows()
    print(f"built {frame.height} items in {time.perf_counter() - started:.1f} s: {counts}")
    return {data.embedded_path(): data.items_text(frame)}


def main(argv: Sequence[str] | None = None) -> int:
    return build_main(__doc__, files, script="scripts/build_e3_embedded.py", argv=argv)


if __name__ == "__main__":
    sys.exit(main())
