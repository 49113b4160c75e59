"""Loading a script, benchmark or hook by its path: scripts/, bench/ and docs/hooks/ are not packages."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def load_file_module(path: Path, name: str | None = None) -> ModuleType:
    """The Python file at path as a module (named after the file unless a name is given)."""
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
