"""The orchestration package's shape: modules per package and the depth of its internal import graph.

Prints, for `secverify_dagster` (or the package folder given), how many modules each package holds and the longest
chain of module-level imports between its own modules (A imports B imports C ... : depth = modules on the chain).
Imports inside functions are left out: they run late, on purpose, and do not shape what loads with what.

    python bench/bench_layout.py [PACKAGE_DIR]
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def module_name(path: Path, package_dir: Path) -> str:
    parts = [package_dir.name, *path.relative_to(package_dir).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_level_imports(path: Path, name: str, is_package: bool) -> set[str]:
    """Names imported by statements at module level (not inside functions or classes), relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own_package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = own_package.split(".")[: len(own_package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def package_files(package_dir: Path) -> dict[str, Path]:
    return {module_name(p, package_dir): p for p in sorted(package_dir.rglob("*.py"))}


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    files = package_files(package_dir)
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        imported = module_level_imports(path, name, path.name == "__init__.py")
        graph[name] = {target for target in imported if target in files and target != name}
    return graph


def longest_chain(graph: dict[str, set[str]]) -> list[str]:
    @cache
    def chain_from(module: str, seen: frozenset[str]) -> tuple[str, ...]:
        best: tuple[str, ...] = ()
        for target in sorted(graph[module] - seen):
            candidate = chain_from(target, seen | {target})
            if len(candidate) > len(best):
                best = candidate
        return (module, *best)

    return list(max((chain_from(m, frozenset({m})) for m in sorted(graph)), key=len, default=()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package_dir", nargs="?", type=Path, default=ROOT / "secverify_dagster")
    args = parser.parse_args(argv)
    files = package_files(args.package_dir.resolve())
    graph = import_graph(args.package_dir.resolve())
    per_package = Counter(
        name if path.name == "__init__.py" else name.rpartition(".")[0] for name, path in files.items()
    )
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in args.package_dir.rglob("*.py"))
    print(f"{len(graph)} modules, {lines} lines")
    for package, count in sorted(per_package.items()):
        print(f"  {package:<45} {count:>3} modules")
    chain = longest_chain(graph)
    print(f"longest module-level import chain: {len(chain)} modules")
    print("  " + "\n  → ".join(chain))
    return 0


if __name__ == "__main__":
    sys.exit(main())
