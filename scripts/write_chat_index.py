"""Write a local package index (PEP 503 "simple" pages over a folder of wheels) that uv can resolve from with no
network: `python scripts/write_chat_index.py WHEELS INDEX`.

verifiers builds its chat program with `uv sync --script` and forces UV_OFFLINE=false, so left alone every library
rollout asks the package index. `make setup` downloads the program's pinned closure (requirements-chat.lock) into
WHEELS; the test suite sets UV_DEFAULT_INDEX to this index's file:// URL (tests/conftest.py), and the rollouts resolve
from the downloaded wheels alone.
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path


def normalized(name: str) -> str:
    """A project name as PEP 503 spells its page."""
    return re.sub(r"[-_.]+", "-", name).lower()


def build_index(wheels: Path, index: Path) -> dict[str, list[str]]:
    """One page per project linking its wheels by file:// URL, and the root page; returns project → wheel names.
    Rewrites the index whole (written beside it, then renamed), so a reader never sees half of one."""
    projects: dict[str, list[Path]] = {}
    for wheel in sorted(wheels.glob("*.whl")):
        projects.setdefault(normalized(wheel.name.split("-", 1)[0]), []).append(wheel.resolve())
    if not projects:
        raise SystemExit(f"no wheels in {wheels}")
    staging = index.with_name(f".{index.name}.tmp")
    if staging.exists():
        _remove(staging)
    staging.mkdir(parents=True)
    for project, files in projects.items():
        links = "".join(f'<a href="{path.as_uri()}">{html.escape(path.name)}</a>\n' for path in files)
        (staging / project).mkdir()
        (staging / project / "index.html").write_text(f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n")
    root = "".join(f'<a href="{project}/">{project}</a>\n' for project in projects)
    (staging / "index.html").write_text(f"<!DOCTYPE html>\n<html><body>\n{root}</body></html>\n")
    if index.exists():
        _remove(index)
    staging.rename(index)
    return {project: [path.name for path in files] for project, files in projects.items()}


def _remove(folder: Path) -> None:
    for path in sorted(folder.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    folder.rmdir()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    projects = build_index(Path(argv[0]), Path(argv[1]))
    print(f"{argv[1]}: {len(projects)} projects")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
