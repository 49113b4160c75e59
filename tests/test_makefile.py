"""The Makefile's targets expand to the commands the README and the docs promise (dry run: nothing is executed).

The README promises `make run`, `make test`, `make docs` and `make docs-serve`; docs/reference/make.md the eval targets
and their variables."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _dry_run(*args: str) -> str:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    result = subprocess.run(["make", "-n", *args], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    return result.stdout


@pytest.mark.parametrize("env_id", ["e1", "e2", "e3", "e4", "e5", "e6"])
def test_every_eval_target_runs_the_eval_command(env_id: str) -> None:
    assert f"secverify eval --env {env_id} " in _dry_run(f"eval-{env_id}")


def test_eval_target_passes_models_n_target_and_judge() -> None:
    out = _dry_run(
        "eval-e5", "MODELS=template-attacker smollm2-135m-instruct", "N=8", "TARGET=refuse-all", "JUDGE=local"
    )
    assert '--models "template-attacker smollm2-135m-instruct" -n 8 --seed 42' in out
    assert "--target refuse-all" in out and "--judge local" in out
    assert "--include-tools" in _dry_run("eval-e2", "INCLUDE_TOOLS=true")


def test_the_two_commands_run_the_main_job_and_the_test_suite() -> None:
    assert "secverify run" in _dry_run("run")
    assert "-m pytest" in _dry_run("test")


def test_docs_targets_build_strict_into_outputs_and_serve_on_loopback() -> None:
    build = _dry_run("docs")
    assert "mkdocs build --strict --site-dir outputs/site" in build
    serve = _dry_run("docs-serve")
    assert "mkdocs serve" in serve and "127.0.0.1:8000" in serve
