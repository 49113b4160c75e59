"""Writing the shipped embedded corpora: deterministic JSON lines, and the build scripts' shared last step.

Every scripts/build_*.py renders its files in memory from its source data (scripts/corpus_sources/, or for E2 the
shipped files themselves) and hands them to check_or_write, through build_main or, for all corpora at once,
scripts/render_corpora.py. check_or_write either writes them or (with --check) compares them byte for byte with
the shipped files, so writing and checking cannot disagree on what "up to date" means.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any


def jsonl_text(rows: Iterable[Mapping[str, Any]]) -> str:
    """Rows as JSON lines, keys sorted and non-ASCII kept as is: the same rows always give the same bytes, so a
    rebuild leaves an unchanged corpus's file untouched and a changed one diffs line by line."""
    return "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)


def stale_files(files: Mapping[Path, str]) -> list[Path]:
    """The files that are missing or whose bytes are not their text's UTF-8."""
    return [path for path, text in files.items() if not path.is_file() or path.read_bytes() != text.encode("utf-8")]


def check_or_write(files: Mapping[Path, str], *, check: bool, script: str) -> int:
    """The build scripts' tail, returning the exit status. check=True writes nothing and returns 1, naming the stale
    files and the `script` that rebuilds them, when any shipped file differs from its rendered text; otherwise the
    stale files are written (unchanged ones keep their timestamps) and 0 is returned."""
    stale = stale_files(files)
    if check:
        if stale:
            print(f"out of date: {', '.join(map(str, stale))}; run python {script}", file=sys.stderr)
            return 1
        print(f"up to date: {len(files)} file(s)")
        return 0
    for path in stale:
        # Bytes, not write_text: "\n" stays "\n" on every platform, so the file is exactly what --check compares.
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(files[path].encode("utf-8"))
        print(f"wrote {path} ({files[path].count(chr(10))} lines)")
    if not stale:
        print(f"up to date: {len(files)} file(s)")
    return 0


def build_main(
    description: str | None,
    render: Callable[[], Mapping[Path, str]],
    *,
    script: str,
    argv: Sequence[str] | None = None,
) -> int:
    """A build script's whole main: parse --check, then render the files (only then, so --help answers at once) and
    check or write them."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the shipped files instead of writing")
    args = parser.parse_args(argv)
    return check_or_write(render(), check=args.check, script=script)
