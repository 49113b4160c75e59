"""Parsing Python from many threads at once: E3 scores samples on a thread pool, and CPython 3.11's AST constructor
shares its recursion counter between threads (bare ast.parse fails this race with "AST constructor recursion depth
mismatch", as it once did in CI)."""

from __future__ import annotations

import gc
import threading

from sv_shared.execution.python_ast import SourcePositions, parse_python, source_lines, try_parse_python

SOURCE = "\n".join(
    f"def f{i}(x):\n    return [(a, {{'k': b}}) for a in x for b in a if a != {i!r}]" for i in range(300)
)


class _Finalized:
    """Garbage whose finalizer runs Python code, so the collector can switch threads in the middle of a parse."""

    def __del__(self) -> None:
        sum(range(50))


def test_many_threads_parse_at_once_without_a_spurious_system_error() -> None:
    errors: list[BaseException] = []

    def parse_repeatedly() -> None:
        for _ in range(20):
            garbage = [_Finalized() for _ in range(50)]
            for obj in garbage:
                obj.cycle = obj  # type: ignore[attr-defined]
            del garbage
            try:
                parse_python(SOURCE)
            except Exception as exc:
                errors.append(exc)

    thresholds = gc.get_threshold()
    gc.set_threshold(50, 2, 2)
    try:
        threads = [threading.Thread(target=parse_repeatedly) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        gc.set_threshold(*thresholds)
    assert errors == []


def test_source_that_does_not_parse_is_none_not_an_exception() -> None:
    assert try_parse_python("def broken(:\n") is None
    assert try_parse_python("x = 1\x00") is None
    assert try_parse_python("(" * 5_000 + ")" * 5_000) is None
    assert try_parse_python("x = 1\n") is not None


def test_positions_are_string_indexes_of_utf8_columns_on_python_lines() -> None:
    source = "a = 'é'\x0c\nb = \"ü\"\r\nc = 3"
    assert source_lines(source) == ["a = 'é'\x0c\n", 'b = "ü"\r\n', "c = 3"]
    tree = parse_python(source)
    positions = SourcePositions(source)
    spans = [source[slice(*positions.span(node.value))] for node in tree.body]  # type: ignore[attr-defined]
    assert spans == ["'é'", '"ü"', "3"]
    assert positions.index(99, 0) == len(source)
