"""Package boundaries: the environment library never imports the orchestration layer, and no environment imports
another (they share through sv_shared, or a declared input wired in sv_shared.registry)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ENVS = Path(__file__).resolve().parents[1] / "envs"
ENV_PACKAGES = sorted(path.name for path in ENVS.glob("sv_env_*") if path.is_dir())


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, statically or through importlib.import_module with a literal name."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
    return names


def top_level(module: str) -> str:
    return module.split(".", 1)[0]


def test_the_checker_sees_every_import_form(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import dagster\nfrom secverify_dagster.runner import x\nimport importlib\n"
        "importlib.import_module('sv_env_network_logs.env')\nfrom . import sibling\n",
        encoding="utf-8",
    )
    assert {top_level(name) for name in imported_modules(sample)} == {
        "dagster",
        "secverify_dagster",
        "importlib",
        "sv_env_network_logs",
    }


@pytest.mark.parametrize("path", sorted(ENVS.rglob("*.py")), ids=lambda path: str(path.relative_to(ENVS)))
def test_envs_never_import_the_orchestration_layer(path: Path) -> None:
    forbidden = {top_level(name) for name in imported_modules(path)} & {
        "dagster",
        "secverify_dagster",
        "secverify",
        "verifiers",
        "inspect_ai",
    }
    assert not forbidden, f"{path} imports {forbidden}: envs/ is plain Python (interop adapters live in secverify/)"


def test_importing_an_environment_loads_no_interop_library() -> None:
    """The verifiers discovery hook names the adapter classes without importing them (or the library)."""
    code = (
        "import sys, sv_env_network_logs, sv_env_redteam_defense\n"
        "print(sorted(m for m in ('verifiers', 'inspect_ai', 'secverify') if m in sys.modules))\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "[]"


@pytest.mark.parametrize("package", ENV_PACKAGES)
def test_no_environment_imports_another(package: str) -> None:
    for path in sorted((ENVS / package).rglob("*.py")):
        others = {top_level(name) for name in imported_modules(path)} & (set(ENV_PACKAGES) - {package})
        assert not others, f"{path} imports {others}: share through sv_shared or a declared input"


def test_shared_code_imports_no_environment() -> None:
    """sv_shared is what environments share; it reaches them only by id, through the registry's lazy imports."""
    for path in sorted((ENVS / "sv_shared").rglob("*.py")):
        environments = {top_level(name) for name in imported_modules(path)} & set(ENV_PACKAGES)
        assert not environments, f"{path} imports {environments}"


def test_every_module_imports_first() -> None:
    """No import cycle hides behind import order: each module of the library imports in a clean module table."""
    modules = sorted(
        ".".join(path.relative_to(ENVS).with_suffix("").parts).removesuffix(".__init__")
        for path in ENVS.rglob("*.py")
        if path.name != "toolworker.py"  # run by the tools venv's python, never imported
    )
    code = (
        "import importlib, sys\n"
        "failed = []\n"
        "for name in sys.argv[1:]:\n"
        "    for loaded in [m for m in sys.modules if m.split('.')[0].startswith('sv_')]:\n"
        "        del sys.modules[loaded]\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ImportError as error:\n"
        "        failed.append(f'{name}: {error}')\n"
        "print('\\n'.join(failed))\n"
    )
    completed = subprocess.run([sys.executable, "-c", code, *modules], capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == ""
