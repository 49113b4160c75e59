"""Python source as an AST, safely from many threads, and AST positions as string indexes.

CPython 3.11 keeps the AST constructor's recursion counter in per-interpreter state, not per thread, so two threads
that call ``ast.parse`` together can fail with "SystemError: AST constructor recursion depth mismatch" (CPython
gh-106905 and the reports around it). E3 scores samples on a thread pool and parses exploit tests and patches in
each, so every parse in the project goes through one lock. Parsing takes milliseconds; the lock costs nothing that
matters beside a sandboxed test run.
"""

from __future__ import annotations

import ast
import itertools
import re
import threading

_PARSE_LOCK = threading.Lock()
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def parse_python(source: str | bytes) -> ast.Module:
    """ast.parse under the process-wide lock; raises as ast.parse does."""
    with _PARSE_LOCK:
        return ast.parse(source)


def try_parse_python(source: str | bytes) -> ast.Module | None:
    """The module, or None for source that does not parse (a syntax error, a NUL byte, nesting too deep, too big)."""
    try:
        return parse_python(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def source_lines(source: str) -> list[str]:
    """Lines as the tokenizer numbers them, each with its ending. Only \\n, \\r\\n and \\r end a line there;
    str.splitlines also breaks at form feeds and other separators, which would shift every position after them."""
    return _LINE.findall(source)


class SourcePositions:
    """String indexes of AST positions in one source (line numbers 1-based, columns UTF-8 byte offsets)."""

    def __init__(self, source: str) -> None:
        self.lines = source_lines(source)
        self.starts = [0, *itertools.accumulate(len(line) for line in self.lines)]

    def index(self, lineno: int, col: int) -> int:
        """The string index of (lineno, col); a position past the last line is the end of the source."""
        if lineno - 1 >= len(self.lines):
            return self.starts[-1]
        line = self.lines[lineno - 1]
        return self.starts[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8", "ignore"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        """(start, end) string indexes of a node that carries positions (an expression or a statement)."""
        return (
            self.index(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            self.index(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
        )
