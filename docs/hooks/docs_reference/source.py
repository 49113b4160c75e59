"""Finding code in the project's source by name: where a class, function or constant is defined, its literal value,
the object itself, and the project root and import paths they need.

Definitions are found by name (find_definition, constant), not by module path, so a module that moves does not break
the build.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
"""The project root (docs/hooks/docs_reference/ is three levels below it)."""

PACKAGES = ("secverify_dagster", "envs")
"""Where definitions are looked up by name (so a module may move without breaking the reference)."""


def ensure_paths() -> None:
    """Put the project root and envs/ first on sys.path, so the project's packages import."""
    for path in (ROOT, ROOT / "envs"):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))


def _module_name(path: Path) -> str:
    relative = path.relative_to(ROOT / "envs" if path.is_relative_to(ROOT / "envs") else ROOT).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _source_files() -> Iterator[Path]:
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


@cache
def find_definition(name: str) -> tuple[str, Path]:
    """The module (and file) that defines the class, function or module-level constant `name`, found in the source
    without importing anything; exactly one definition must exist."""
    pattern = re.compile(rf"^(?:class {name}\b|def {name}\(|{name}(?:: [^=]+)? = )", re.MULTILINE)
    found = [path for path in _source_files() if pattern.search(path.read_text(encoding="utf-8"))]
    if len(found) != 1:
        raise LookupError(f"expected one definition of {name!r} under {PACKAGES}, found {found}")
    return _module_name(found[0]), found[0]


def load_object(name: str) -> Any:
    """Import the one definition of `name` (see find_definition)."""
    ensure_paths()
    module, _ = find_definition(name)
    return getattr(importlib.import_module(module), name)


def constant(name: str, beside: str | None = None) -> Any:
    """The literal value of a module-level constant, read from the source (nothing imported); `beside` names another
    definition of the same module, for a name several modules define."""
    _, path = find_definition(beside or name)
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        if any(isinstance(target, ast.Name) and target.id == name for target in targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"{name} in {path} is not a literal constant")
