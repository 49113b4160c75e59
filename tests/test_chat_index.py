"""The local index verifiers' chat program is built from in the suite: every locked wheel is on it, uv is sent to it,
and it is written whole."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from file_modules import load_file_module

ROOT = Path(__file__).resolve().parents[1]
build = load_file_module(ROOT / "scripts" / "write_chat_index.py")


def _locked() -> dict[str, str]:
    lines = (ROOT / "requirements-chat.lock").read_text(encoding="utf-8").splitlines()
    pins = (line.split("==") for line in lines if line and not line.startswith("#"))
    return {build.normalized(name): version for name, version in pins}


def test_the_suite_sends_uv_to_the_index_make_setup_wrote_with_every_locked_wheel() -> None:
    index = Path(sys.prefix) / "chat-index"
    assert os.environ["UV_DEFAULT_INDEX"] == index.as_uri()
    for project, version in _locked().items():
        page = (index / project / "index.html").read_text(encoding="utf-8")
        assert re.search(rf">[^<]*-{re.escape(version)}-[^<]*\.whl<", page), (project, version)
    assert not {"UV_INDEX", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_FIND_LINKS"} & set(os.environ)


def test_pages_link_each_project_s_wheels_and_a_rebuild_replaces_the_index(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for name in ("Typing_Extensions-4.16.0-py3-none-any.whl", "mcp-2.0.0-py3-none-any.whl"):
        (wheels / name).write_bytes(b"")
    index = tmp_path / "index"
    (index / "stale").mkdir(parents=True)
    assert build.build_index(wheels, index) == {
        "mcp": ["mcp-2.0.0-py3-none-any.whl"],
        "typing-extensions": ["Typing_Extensions-4.16.0-py3-none-any.whl"],
    }
    assert sorted(path.name for path in index.iterdir()) == ["index.html", "mcp", "typing-extensions"]
    page = (index / "typing-extensions" / "index.html").read_text(encoding="utf-8")
    assert (wheels / "Typing_Extensions-4.16.0-py3-none-any.whl").as_uri() in page
    assert not any(path.name.startswith(".") for path in tmp_path.iterdir())
