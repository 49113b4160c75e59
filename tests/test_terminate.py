"""Runs stop when told: a local model stops generating within a token of being told, an interrupted Dagster step
ends at once (its run recorded as failed), and a worker process holding a model ends with its parent.

Real processes on a tiny random model over SmolLM2's tokenizer (tests/tiny_models.py): what is measured is how long
stopping takes, which does not depend on the model's size. Run as a script, this module is the worker those tests
start (`python tests/test_terminate.py <role> ...`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
STOPPED_WITHIN_S = 10.0
"""How soon a process told to stop must be gone (it generates for minutes when nobody stops it)."""
MAX_TOKENS = 1000
"""Per reply: the tiny model never ends a reply early, so each batch takes seconds."""


def _tiny_spec(folder: Path):
    from secverify_dagster.resources.models import load_registry

    return dataclasses.replace(load_registry()["smollm2-135m-instruct"], id="tiny-local", model=str(folder))


def _requests(count: int, max_tokens: int):
    from secverify_dagster.resources.models import ChatRequest

    return [
        ChatRequest(messages=[{"role": "user", "content": f"item {i}"}], params={"max_tokens": max_tokens})
        for i in range(count)
    ]


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sys.path.insert(0, str(Path(__file__).parent))
    from tiny_models import save_tiny_model, smollm2_tokenizer

    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "model", smollm2_tokenizer())


def _wait_for_line(path: Path, text: str, process: subprocess.Popen, timeout_s: float = 120.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith(text):
                return line
        if process.poll() is not None:
            raise AssertionError(f"worker exited with {process.returncode}:\n{path.read_text(errors='replace')}")
        time.sleep(0.05)
    process.kill()
    raise AssertionError(f"no {text!r} line within {timeout_s:.0f} s:\n{path.read_text(errors='replace')}")


def _once_generating(model: object, timeout_s: float = 60.0) -> None:
    """Return once `model` is generating: told to stop after this, a batch cannot have finished (each takes about a
    second at 1,000 tokens; a fixed sleep let a fast machine finish one before the stop)."""
    deadline = time.monotonic() + timeout_s
    while not model.generating:  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, "generation never started"
        time.sleep(0.005)


def _gone_within(pid: int, timeout_s: float) -> float | None:
    """Seconds until the process no longer runs (a zombie counts as gone), or None if it still runs after timeout_s."""
    from sv_shared.execution.processes import ProcessIdentity

    identity = ProcessIdentity(pid, socket.gethostname(), None)
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if identity.still_running() is False:
            return time.monotonic() - started
        time.sleep(0.05)
    return None


# In one process


def test_a_stopped_generation_ends_within_a_token_and_returns_no_cut_off_answer(tiny_folder: Path) -> None:
    from secverify_dagster.resources.models.local_model import GenerationStopped, load_local_model

    model = load_local_model(str(tiny_folder))
    stop = threading.Event()
    outcome: dict[str, object] = {}

    def generate() -> None:
        started = time.perf_counter()
        try:
            outcome["result"] = model.generate_batch(_requests(8, MAX_TOKENS), stop=stop)
        except GenerationStopped as error:
            outcome["stopped"] = error
        outcome["seconds"] = time.perf_counter() - started

    worker = threading.Thread(target=generate)
    worker.start()
    _once_generating(model)
    time.sleep(0.1)
    told = time.perf_counter()
    stop.set()
    worker.join(timeout=STOPPED_WITHIN_S)
    assert not worker.is_alive(), "generation went on after it was told to stop"
    assert "stopped" in outcome and "result" not in outcome
    assert time.perf_counter() - told < 2.0
    with pytest.raises(GenerationStopped):
        model.generate_batch(_requests(1, 4), stop=stop)  # told before it starts: nothing is generated
    assert model.generate_batch(_requests(1, 4))[0].usage.completion_tokens >= 1  # others still generate


def test_the_provider_answers_every_request_after_a_stop_with_a_named_error(tiny_folder: Path) -> None:
    from secverify_dagster.resources.models import ProviderError
    from secverify_dagster.resources.models.local_transformers import LocalTransformersProvider

    provider = LocalTransformersProvider(dataclasses.replace(_tiny_spec(tiny_folder), batch_size=2))
    stop = threading.Event()
    stop.set()
    answered: dict[int, object] = {}
    provider.complete_batches(
        _requests(5, 8), lambda indices, results: answered.update(zip(indices, results, strict=True)), stop=stop
    )
    assert sorted(answered) == [0, 1, 2, 3, 4]
    for result in answered.values():
        assert isinstance(result, ProviderError) and "generation stopped" in result.message


def test_interrupting_a_client_stops_generation_in_every_thread_that_uses_it(tiny_folder: Path) -> None:
    """Tool episodes generate in a pool of threads an interrupt does not reach: the client stops them all."""
    from secverify_dagster.resources.models import ModelClient, ProviderError
    from secverify_dagster.resources.models.local_model import load_local_model
    from secverify_dagster.resources.models.local_transformers import LocalTransformersProvider

    spec = dataclasses.replace(_tiny_spec(tiny_folder), batch_size=2)
    client = ModelClient(spec, LocalTransformersProvider(spec))
    answers: list[object] = []
    worker = threading.Thread(target=lambda: answers.extend(client.complete_many(_requests(4, MAX_TOKENS))))
    worker.start()
    _once_generating(load_local_model(str(tiny_folder)))  # the process-wide model the provider generates with
    told = time.perf_counter()
    client.interrupt()
    worker.join(timeout=STOPPED_WITHIN_S)
    assert not worker.is_alive() and time.perf_counter() - told < 3.0
    assert len(answers) == 4 and all(
        isinstance(answer, ProviderError) and "generation stopped" in answer.message for answer in answers
    )
    # From now on nothing is generated: an episode's next turn ends at once, named.
    (later,) = client.complete_many(_requests(1, MAX_TOKENS))
    assert isinstance(later, ProviderError) and "generation stopped" in later.message


# Real processes


def test_an_interrupted_dagster_step_stops_its_model_and_records_the_run_as_failed(
    tiny_folder: Path, tmp_path: Path
) -> None:
    """SIGTERM is what a run worker gets when its run is terminated (Dagster turns it into an interrupt of the
    step): the step's local model stops, and the process ends in seconds, not after every batch."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    log = tmp_path / "worker.log"
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    with log.open("w") as sink:
        worker = subprocess.Popen(
            [PYTHON, __file__, "dagster-step", str(tiny_folder)],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    _wait_for_line(log, "generating", worker)
    time.sleep(1.0)
    told = time.monotonic()
    worker.send_signal(signal.SIGTERM)
    try:
        worker.wait(timeout=STOPPED_WITHIN_S + 30)
    except subprocess.TimeoutExpired:
        worker.kill()
        raise AssertionError(f"the step was still running {STOPPED_WITHIN_S + 30:.0f} s after SIGTERM") from None
    # Interpreter exit (torch's teardown) is included; on a busy machine it takes seconds of its own.
    assert time.monotonic() - told < STOPPED_WITHIN_S, log.read_text()
    import dagster as dg

    with dg.DagsterInstance.from_config(str(home)) as instance:
        (run,) = instance.get_runs()
    assert run.status == dg.DagsterRunStatus.FAILURE
    assert "step stopped after" not in log.read_text()  # the step did not run to its end


@pytest.mark.parametrize("parent_signal", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_model_worker_ends_within_seconds_of_its_parent(
    tiny_folder: Path, tmp_path: Path, parent_signal: signal.Signals
) -> None:
    """A worker process started by another (as Dagster starts run workers) that holds a local model does not go on
    generating for a parent that is gone, however the parent ended."""
    log = tmp_path / "parent.log"
    with log.open("w") as sink:
        parent = subprocess.Popen(
            [PYTHON, __file__, "parent", str(tiny_folder)], cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT
        )
    line = _wait_for_line(log, "worker generating", parent)
    worker_pid = int(line.split()[-1])
    try:
        time.sleep(0.5)
        parent.send_signal(parent_signal)
        parent.wait(timeout=30)
        took = _gone_within(worker_pid, STOPPED_WITHIN_S)
        assert took is not None, f"worker {worker_pid} still running {STOPPED_WITHIN_S:.0f} s after its parent ended"
        assert "parent process" in log.read_text()  # it said why it ended
    finally:
        for pid in (worker_pid, parent.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


# The worker roles


def _generate_forever(folder: str) -> None:
    from secverify_dagster.resources.models import open_client

    client = open_client(_tiny_spec(Path(folder)), cache=None)
    client.complete_many(_requests(1, 2))
    print(f"worker generating {os.getpid()}", flush=True)
    while True:
        client.complete_many(_requests(64, MAX_TOKENS))


def _dagster_step(folder: str) -> None:
    import dagster as dg

    from secverify_dagster.resources.models import open_client

    @dg.asset
    def generated() -> None:
        client = open_client(_tiny_spec(Path(folder)), cache=None)
        client.complete_many(_requests(1, 2))
        print("generating", flush=True)
        started = time.monotonic()
        client.complete_many(_requests(512, MAX_TOKENS))
        print(f"step stopped after {time.monotonic() - started:.1f} s", flush=True)

    job = dg.Definitions(assets=[generated]).resolve_implicit_global_asset_job_def()
    job.execute_in_process(instance=dg.DagsterInstance.get(), raise_on_error=False)


def _parent(folder: str) -> None:
    import multiprocessing

    worker = multiprocessing.get_context("spawn").Process(target=_generate_forever, args=(folder,))
    worker.start()
    worker.join()


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=["parent", "dagster-step"])
    parser.add_argument("folder")
    args = parser.parse_args()
    {"parent": _parent, "dagster-step": _dagster_step}[args.role](args.folder)
