"""SmolLM2 exported as a transformers folder and served by `transformers serve` on loopback, for the slow tests of
the OpenAI-compatible path (our client, verifiers and inspect_ai rollouts). One server per test session."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

STARTUP_TIMEOUT_S = 300.0
OPENAI_FOR_INSPECT = Path(sys.prefix) / "openai3"
"""openai 3.x installed apart (Makefile): inspect's OpenAI-compatible providers refuse the openai<3 verifiers needs."""
ONE_TORCH_THREAD = {"OMP_NUM_THREADS": "1"}
"""Environment for a process that runs SmolLM2 (the server, inspect's `hf` provider). A second thread decodes no
faster on 2 cores, and while anything else runs (the other xdist worker, the CLI under test) torch's threads wait on
each other: measured here, 48 tokens took 3 s with one thread and 8-33 s with two beside one busy process."""


@dataclass(frozen=True)
class ServedModel:
    base_url: str
    """http://127.0.0.1:<port>/v1"""
    model: str
    """The exported folder: the name requests must give (the server is pinned to it)."""
    log: Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def transformers_cli() -> list[str]:
    script = Path(sys.executable).parent / "transformers"
    if script.exists():
        return [str(script)]
    found = shutil.which("transformers")
    if found is None:
        pytest.skip("the transformers CLI is not installed (pip install 'transformers[serving]')")
    return [found]


def inspect_environment(served: ServedModel, service: str = "local") -> dict[str, str]:
    """Environment for an `inspect eval --model openai-api/<service>/<model>` subprocess against the served model:
    the service's URL and (required, unused) key, and openai 3.x ahead of the environment's own on the path."""
    if not (OPENAI_FOR_INSPECT / "openai").is_dir():
        pytest.fail(f"{OPENAI_FOR_INSPECT} is missing: `make setup` installs openai 3.x there for inspect's providers")
    prefix = service.upper()
    python_path = os.pathsep.join(filter(None, [str(OPENAI_FOR_INSPECT), os.environ.get("PYTHONPATH")]))
    return {
        **os.environ,
        f"{prefix}_BASE_URL": served.base_url,
        f"{prefix}_API_KEY": "none",
        "PYTHONPATH": python_path,
        "INSPECT_DISPLAY": "none",
    }


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """This process's torch on one thread for a while (see ONE_TORCH_THREAD), as the server runs: the in-process
    model then also sums in the server's order, so greedy replies can be compared token for token."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def export_smollm2(dest: Path) -> Path:
    from secverify_dagster.resources.models.local_model import export_hf_folder

    return export_hf_folder(dest / "smollm2-135m-instruct")


def serve(folder: Path, log_dir: Path) -> Iterator[ServedModel]:
    """Start `transformers serve` on the folder, wait for /health, yield it, and stop it afterwards."""
    port = free_port()
    log_path = log_dir / "serve.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", **ONE_TORCH_THREAD}
    command = [*transformers_cli(), "serve", str(folder), "--host", "127.0.0.1", "--port", str(port)]
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        started = time.perf_counter()
        while True:
            if process.poll() is not None:
                pytest.fail(f"transformers serve exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.perf_counter() - started > STARTUP_TIMEOUT_S:
                pytest.fail(f"transformers serve not up after {STARTUP_TIMEOUT_S} s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.5)
        print(f"transformers serve answered /health after {time.perf_counter() - started:.1f} s")
        yield ServedModel(f"http://127.0.0.1:{port}/v1", str(folder), log_path)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)
