"""Runs nothing can corrupt: any text is written, a failing sample is named and bounded, one process owns a run
folder, and a run killed midway resumes with nothing lost, duplicated or asked twice.

The multi-process tests start this file as a script (the `__main__` block at the end): an E1 eval whose model is a
scripted provider behind the real ModelClient and response cache, logging every call it starts and finishes."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import polars as pl
import pytest

from secverify_dagster.cli.main import main
from secverify_dagster.reports.environment_report import build_report
from secverify_dagster.resources.models import ChatRequest, Completion, ModelClient, ModelSpec, load_registry
from secverify_dagster.runner.datasets import embedded_dataset, select_items
from secverify_dagster.runner.eval_runner import EvalRunner
from secverify_dagster.runner.failures import MAX_ITEM_ATTEMPTS
from sv_shared.data.datasets import read_dataset, write_dataset
from sv_shared.data.files import FolderBusyError, exclusive, json_text
from sv_shared.execution.cache import JsonCache
from sv_shared.registry import get_environment
from sv_shared.runs.folder import RunFolder, RunRecordWarning

ENV = get_environment("e1")
HEURISTIC = load_registry()["heuristic"]
ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
SCRIPTED = ModelSpec(id="scripted", provider="openai_compatible", model="scripted", base_url="http://127.0.0.1:9")
ANSWER = '{"label": "Benign", "confidence": 0.6, "rationale": "scripted"}'


@pytest.fixture(scope="module")
def dataset():
    return embedded_dataset(ENV, split="test", seed=42)


def _prompt_key(request: ChatRequest) -> str:
    return hashlib.sha256(json.dumps(request.messages, sort_keys=True).encode()).hexdigest()[:16]


class ScriptedSession:
    """Answers every request with `answers.get(prompt key, ANSWER)` after `delay_s`; logs calls to `log` (one line
    "start KEY" before, "finish KEY" after, appended and flushed so a killed process leaves an exact record). The call
    numbered `block_at` writes `marker` and never returns: the process is killed while it waits."""

    def __init__(self, provider: ScriptedProvider) -> None:
        self.provider = provider

    async def complete(self, request: ChatRequest) -> Completion:
        provider = self.provider
        key = _prompt_key(request)
        provider.calls += 1
        provider.write(f"start {key}")
        if provider.block_at is not None and provider.calls == provider.block_at:
            Path(provider.marker).write_text("blocked")
            await asyncio.sleep(3600)
        await asyncio.sleep(provider.delay_s)
        provider.write(f"finish {key}")
        return Completion(text=provider.answers.get(key, ANSWER), finish_reason="stop")

    async def aclose(self) -> None:
        return None


class ScriptedProvider:
    mode = "async"

    def __init__(
        self,
        log: Path | None = None,
        *,
        answers: dict[str, str] | None = None,
        delay_s: float = 0.0,
        block_at: int | None = None,
        marker: str = "",
    ) -> None:
        self.log, self.answers, self.delay_s = log, answers or {}, delay_s
        self.block_at, self.marker, self.calls = block_at, marker, 0
        self.lines: list[str] = []

    def write(self, line: str) -> None:
        self.lines.append(line)
        if self.log is not None:
            with self.log.open("a") as handle:
                handle.write(f"{os.getpid()} {line}\n")

    def open_session(self) -> ScriptedSession:
        return ScriptedSession(self)


def _requests_by_item(items: Sequence[dict[str, Any]]) -> dict[str, str]:
    """prompt key → item id, for the requests the runner sends."""
    return {_prompt_key(ChatRequest(messages=ENV.episodes.messages(item))): item["flow_id"] for item in items}


def _log(path: Path) -> list[tuple[str, str]]:
    if not path.exists():
        return []
    return [tuple(line.split()[1:3]) for line in path.read_text().splitlines()]


# Any text is written


def test_json_text_writes_any_string_as_utf8_and_reads_it_back() -> None:
    values = ["x\ud800y", "\udfff", "café ✓ 😀", "\ud83d\ude00", {"k\udc80": ["\ud800", 1.5, None]}]
    for value in values:
        text = json_text(value)
        text.encode("utf-8")  # no UnicodeEncodeError
        expected = "😀" if value == "\ud83d\ude00" else value  # a surrogate pair is the character it encodes
        assert json.loads(text) == expected
    assert json_text("café") == '"café"'  # non-ASCII stays readable


def test_a_completion_with_lone_surrogates_is_scored_stored_and_cached(tmp_path: Path, dataset) -> None:
    """Before: the response cache raised UnicodeEncodeError (and results.jsonl would have), the eval died and every
    resume died on the same item."""
    items = select_items(ENV, dataset.frame, 6, 42)
    keys = {item_id: key for key, item_id in _requests_by_item(items).items()}
    broken = '{"label": "Malicious", "confidence": 0.9, "rationale": "exfil \ud800 beacon"}'
    answers = {keys[items[0]["flow_id"]]: broken, keys[items[1]["flow_id"]]: "\ud800"}
    cache = JsonCache(tmp_path / "cache.sqlite")
    client = ModelClient(SCRIPTED, ScriptedProvider(answers=answers), cache=cache)
    outcome = EvalRunner(ENV, SCRIPTED, evals_root=tmp_path, client=client).run(dataset, n=6, seed=42)
    assert outcome.status == "complete" and outcome.n_done == 6
    records = {record.id: record for record in RunFolder(outcome.run_dir).read_results()}
    # Stored exactly as scored: the text reads back unchanged, and the run folder is valid UTF-8.
    assert records[items[0]["flow_id"]].completion == broken
    assert records[items[0]["flow_id"]].parsed["rationale"] == "exfil \ud800 beacon"
    assert records[items[0]["flow_id"]].error is None
    assert records[items[1]["flow_id"]].error == "no_json_object"  # a lone surrogate is no answer: named
    (outcome.run_dir / "results.jsonl").read_bytes().decode("utf-8")
    # The cached answer is the same text: a resume scores what was scored.
    again = ModelClient(SCRIPTED, ScriptedProvider(), cache=cache)
    request = ChatRequest(messages=ENV.episodes.messages(items[0]), params=ENV.generation_params(), seed=42)
    (completion,) = again.complete_many([request])
    assert completion.cached and completion.text == broken
    cache.close()


# A failing sample is named, and given up after a bounded number of attempts


class FailingVerifier(type(ENV.verifier)):
    """E1's verifier, except that it raises on some items (a verifier bug a hostile answer triggers) and writes
    details JSON cannot hold for others."""

    def __init__(self, crash: set[str], unwritable: set[str]) -> None:
        self.__dict__.update(vars(ENV.verifier))
        self.crash, self.unwritable = crash, unwritable
        # The model's answers scored, by item; not the empty answer the summary counts an unscored item as.
        self.scored: Counter[str] = Counter()

    def score(self, item, completion):
        self.scored[item["flow_id"]] += completion != ""
        if item["flow_id"] in self.crash:
            raise RecursionError("maximum recursion depth exceeded while parsing the answer")
        scored = super().score(item, completion)
        if item["flow_id"] in self.unwritable:
            return dataclasses.replace(scored, details={"evidence": {(1, 2): "a key JSON cannot hold"}})
        return scored

    def score_many(self, items, completions):
        return [self.score(item, completion) for item, completion in zip(items, completions, strict=True)]


def test_a_sample_that_always_fails_is_named_then_given_up_and_the_run_completes(tmp_path: Path, dataset) -> None:
    items = select_items(ENV, dataset.frame, 10, 42)
    crash, unwritable = items[2]["flow_id"], items[7]["flow_id"]
    verifier = FailingVerifier({crash}, {unwritable})
    env = dataclasses.replace(ENV, verifier=verifier)
    runner = EvalRunner(env, HEURISTIC, evals_root=tmp_path)
    for session in range(1, MAX_ITEM_ATTEMPTS + 1):
        outcome = runner.run(dataset, n=10, seed=42)
        # The batch-mates of the failing samples are scored; the failures are named, never a crash.
        assert outcome.n_done == 8 and outcome.n_failures == 2
        assert outcome.status == ("complete" if session == MAX_ITEM_ATTEMPTS else "incomplete")
    assert outcome.given_up == tuple(item["flow_id"] for item in items if item["flow_id"] in (crash, unwritable))
    errors = RunFolder(outcome.run_dir).read_errors()
    assert [(e.id, e.kind) for e in errors if e.id == crash] == [(crash, "scoring")] * MAX_ITEM_ATTEMPTS
    assert [(e.id, e.kind) for e in errors if e.id == unwritable] == [(unwritable, "unwritable")] * MAX_ITEM_ATTEMPTS
    last = [e for e in errors if e.id == crash][-1].message
    assert last.startswith("RecursionError: maximum recursion depth") and "attempt 3 of 3; given up" in last
    summary = RunFolder(outcome.run_dir).read_summary()
    assert summary.n_items == 10 and summary.n_scored == 8
    # Not scored is not left out: both count as failures in the metrics, and the summary names them and why.
    assert summary.metrics["n"] == 10 and summary.metrics["format_errors"].get("not_scored") == 2
    assert [(why.id, why.kind, why.given_up, why.counted) for why in summary.unscored] == [
        (item["flow_id"], "scoring" if item["flow_id"] == crash else "unwritable", True, True)
        for item in items
        if item["flow_id"] in (crash, unwritable)
    ]
    # Given up is final: resuming again asks for nothing.
    before = verifier.scored.copy()
    assert runner.run(dataset, n=10, seed=42).status == "complete"
    assert verifier.scored == before


def test_failures_of_the_service_are_retried_on_every_resume_without_bound(tmp_path: Path, dataset) -> None:
    class Down:
        stats: ClassVar[dict[str, Any]] = {}

        def complete_many(self, requests):
            from secverify_dagster.resources.models import ProviderError

            return [ProviderError("HTTP 503", kind="server", retryable=True, status=503) for _ in requests]

        def close(self) -> None:
            return None

    for _ in range(MAX_ITEM_ATTEMPTS + 1):
        outcome = EvalRunner(ENV, HEURISTIC, evals_root=tmp_path, client=Down()).run(dataset, n=3, seed=42)
        assert outcome.status == "incomplete" and outcome.given_up == ()
    outcome = EvalRunner(ENV, HEURISTIC, evals_root=tmp_path).run(dataset, n=3, seed=42)
    assert outcome.status == "complete" and outcome.n_done == 3


# One process owns a run folder


def test_a_second_runner_waits_a_bounded_time_then_names_the_holder(tmp_path: Path, dataset) -> None:
    first = EvalRunner(ENV, HEURISTIC, evals_root=tmp_path).run(dataset, n=4, seed=42)
    folder = RunFolder(first.run_dir)
    told: list[str] = []
    with folder.lock(wait_s=1):
        started = time.monotonic()
        with pytest.raises(FolderBusyError, match=rf"in use by pid {os.getpid()} .*waited 0.3 s"):
            EvalRunner(ENV, HEURISTIC, evals_root=tmp_path).run(
                dataset, n=4, seed=42, lock_wait_s=0.3, on_lock_wait=told.append
            )
        assert 0.3 <= time.monotonic() - started < 2
        assert told and told[0].startswith(f"pid {os.getpid()} on ")
    # Released: the next runner resumes the complete run without waiting.
    assert EvalRunner(ENV, HEURISTIC, evals_root=tmp_path).run(dataset, n=4, seed=42, lock_wait_s=0).n_done == 4


def test_the_cli_explains_a_busy_run_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path))
    args = ["eval", "--env", "e1", "--model", "heuristic", "-n", "4", "--no-cache"]
    assert main(args) == 0
    (run_dir,) = (tmp_path / "evals" / f"{ENV.name}--heuristic").iterdir()
    with RunFolder(run_dir).lock(wait_s=1):
        assert main([*args, "--wait", "0.2"]) == 2
    printed = capsys.readouterr()
    assert f"waiting (up to 0.2 s) for pid {os.getpid()}" in printed.out
    assert f"secverify eval: run folder {run_dir} is in use by pid {os.getpid()}" in printed.err


def test_a_lock_held_by_a_process_killed_with_sigkill_is_free_at_once(tmp_path: Path) -> None:
    lock = tmp_path / "run" / ".lock"
    code = (
        "import sys, time; from pathlib import Path; from sv_shared.data.files import exclusive\n"
        "with exclusive(Path(sys.argv[1]), wait_s=0, what='x'):\n    print('held', flush=True); time.sleep(60)\n"
    )
    holder = subprocess.Popen([PYTHON, "-c", code, str(lock)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert holder.stdout.readline().strip() == "held"
        busy = pytest.raises(FolderBusyError, match=rf"in use by pid {holder.pid} .*python")
        with busy, exclusive(lock, wait_s=0, what="run folder"):
            pass
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=10)
        with exclusive(lock, wait_s=0, what="run folder"):  # no stale lock: free the moment its holder died
            pass
    finally:
        holder.kill()
        holder.wait()


def test_readers_keep_the_first_record_of_a_sample_written_twice(tmp_path: Path, dataset) -> None:
    """Before: a folder two processes had appended to held every sample twice, and `secverify report` and every later
    `secverify run` failed with "records_a holds id … more than once"."""
    first = EvalRunner(ENV, HEURISTIC, evals_root=tmp_path).run(dataset, n=5, seed=42)
    results = first.run_dir / "results.jsonl"
    lines = results.read_text(encoding="utf-8").splitlines()
    changed = [json.dumps({**json.loads(line), "reward": -1}) for line in lines]
    results.write_text("\n".join(lines + changed) + "\n", encoding="utf-8")
    with pytest.warns(RunRecordWarning, match=r"5 lines repeat a sample already recorded \(lines 6, 7, 8, 9, 10\)"):
        records = RunFolder(first.run_dir).read_results()
    assert [record.id for record in records] == [json.loads(line)["id"] for line in lines]
    assert all(record.reward != -1 for record in records)
    # A second model's run on the same items, so the report pairs them.
    other = tmp_path / f"{ENV.name}--heuristic-copy" / first.run_dir.name
    other.mkdir(parents=True)
    for name in ("results.jsonl", "summary.json", "metadata.json"):
        data = (first.run_dir / name).read_text(encoding="utf-8")
        if name == "metadata.json":
            data = json.dumps(json.loads(data) | {"model": {**json.loads(data)["model"], "id": "heuristic-copy"}})
        (other / name).write_text(data, encoding="utf-8")
    with pytest.warns(RunRecordWarning):
        report = build_report(ENV, tmp_path, tmp_path / "report")
    assert json.loads(report.json_path.read_text())["comparisons"][0]["n_paired"] == 5
    with pytest.warns(RunRecordWarning):
        resumed = EvalRunner(ENV, HEURISTIC, evals_root=tmp_path).run(dataset, n=5, seed=42)
    assert resumed.status == "complete" and resumed.summary.n_scored == 5


# Datasets and caches written by several writers at once


def test_dataset_artifacts_written_at_once_stay_whole(tmp_path: Path) -> None:
    """Before: every writer used the same temporary name, and a second writer's rename failed with
    FileNotFoundError (seen in two `secverify run` at once)."""
    path = tmp_path / "curated" / "test.parquet"
    frames = [
        pl.DataFrame({"id": [f"{writer}-{row}" for row in range(2000)], "x": [writer] * 2000}) for writer in range(6)
    ]
    failures: list[BaseException] = []

    def write(frame: pl.DataFrame) -> None:
        try:
            for _ in range(4):
                write_dataset(frame, path, {"writer": int(frame["x"][0])})
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=write, args=(frame,)) for frame in frames]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    frame = read_dataset(path)
    metadata = json.loads(path.with_suffix(".metadata.json").read_text())
    assert frame.height == 2000 and metadata["writer"] == frame["x"][0]  # the pair is one writer's
    assert sorted(p.name for p in path.parent.iterdir()) == [".lock", "test.metadata.json", "test.parquet"]


def test_processes_opening_a_new_response_cache_at_once_all_succeed(tmp_path: Path) -> None:
    """Before: one in five trials of four processes failed with "database is locked" (switching a new database
    to WAL does not wait for a busy one)."""
    code = (
        "import sys, time; from sv_shared.execution.cache import JsonCache\n"
        "time.sleep(max(0.0, float(sys.argv[2]) - time.time()))\n"
        "cache = JsonCache(sys.argv[1]); [cache.put('ns', f'k{i}', {'t': 'x\\ud800'}) for i in range(50)]\n"
        "print(cache.get('ns', 'k7')['t'] == 'x\\ud800')\n"
    )
    for trial in range(3):
        start = time.time() + 1.0
        path = tmp_path / f"cache{trial}.sqlite"
        children = [
            subprocess.Popen([PYTHON, "-c", code, str(path), str(start)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
            for _ in range(6)
        ]
        assert [child.communicate(timeout=60)[0].strip() for child in children] == ["True"] * 6


# Two processes, one run; kill -9 midway


def _start_eval(tmp_path: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [PYTHON, __file__, str(tmp_path), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "SECVERIFY_OUTPUTS": str(tmp_path)},
    )


def test_two_processes_running_the_same_eval_score_each_item_once(tmp_path: Path, dataset) -> None:
    """Before: both scored every item and appended (90 rows for 45 items, every model call made twice)."""
    go = tmp_path / "go"
    children = [_start_eval(tmp_path, "--n", "45", "--delay", "0.04", "--go", str(go)) for _ in range(2)]
    while not all((tmp_path / f"ready-{child.pid}").exists() for child in children):
        assert all(child.poll() is None for child in children), [child.communicate()[0] for child in children]
        time.sleep(0.05)
    go.write_text("go")
    outputs = [child.communicate(timeout=120)[0] for child in children]
    assert [child.returncode for child in children] == [0, 0], outputs
    assert "Traceback" not in "".join(outputs)
    assert sum("waited for pid" in output for output in outputs) == 1, outputs
    (run_dir,) = (tmp_path / "evals" / f"{ENV.name}--scripted").iterdir()
    ids = [json.loads(line)["id"] for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 45
    calls = Counter(key for event, key in _log(tmp_path / "calls.log") if event == "finish")
    assert len(calls) == 45 and set(calls.values()) == {1}  # no item generated (or scored) twice


def test_an_eval_killed_twice_resumes_with_nothing_lost_duplicated_or_asked_twice(tmp_path: Path, dataset) -> None:
    n = 12
    # Calls go one at a time in chunks of 4: kill 1 lands on call 6 (chunk 2, after call 5 answered and was cached);
    # kill 2 on the 4th call of the second session (chunk 3, after chunk 2 was written).
    for block_at in (6, 4):
        marker = tmp_path / f"blocked-{block_at}"
        child = _start_eval(tmp_path, "--n", str(n), "--block-at", str(block_at), "--marker", str(marker))
        while not marker.exists():
            assert child.poll() is None, child.communicate()[0]
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGKILL)
        child.communicate(timeout=30)
        assert child.returncode == -signal.SIGKILL
    child = _start_eval(tmp_path, "--n", str(n))
    output = child.communicate(timeout=120)[0]
    assert child.returncode == 0, output
    (run_dir,) = (tmp_path / "evals" / f"{ENV.name}--scripted").iterdir()
    ids = [json.loads(line)["id"] for line in (run_dir / "results.jsonl").read_text().splitlines()]
    expected = [item["flow_id"] for item in select_items(ENV, dataset.frame, n, 42)]
    assert sorted(ids) == sorted(expected)  # 0 lost, 0 duplicated
    log = _log(tmp_path / "calls.log")
    finished = Counter(key for event, key in log if event == "finish")
    started = Counter(key for event, key in log if event == "start")
    assert len(finished) == n and set(finished.values()) == {1}  # no answered call repeated
    assert sum(started.values()) == n + 2  # only the two calls in flight at the kills were asked again
    metadata = RunFolder(run_dir).read_metadata()
    assert metadata.status == "complete" and len(metadata.sessions) == 3


@pytest.mark.slow
def test_two_secverify_runs_on_a_fresh_outputs_folder_both_succeed(tmp_path: Path) -> None:
    """Before: `secverify run` on a fresh outputs folder failed ($DAGSTER_HOME missing: only the Makefile made it),
    and two at once failed on the shared dataset temporary file."""
    env = {key: value for key, value in os.environ.items() if key != "DAGSTER_HOME"}
    env["SECVERIFY_OUTPUTS"] = str(tmp_path)
    command = [str(Path(PYTHON).parent / "secverify"), "run", "--models", "heuristic", "-n", "6"]
    children = [
        subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for _ in range(2)
    ]
    outputs = [child.communicate(timeout=300)[0] for child in children]
    assert [child.returncode for child in children] == [0, 0], outputs
    assert not any("Traceback" in output or "FAILED" in output for output in outputs), outputs
    assert (tmp_path / "dagster_home" / "dagster.yaml").read_bytes() == (ROOT / "dagster.yaml").read_bytes()
    (run_dir,) = (tmp_path / "evals" / f"{ENV.name}--heuristic").iterdir()
    ids = [json.loads(line)["id"] for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 6
    # Each run wrote its own report (a second report never overwrites the first).
    report_dirs = sorted((tmp_path / "reports" / "e1" / "latest").iterdir())
    assert len(report_dirs) == 2
    for report_dir in report_dirs:
        assert json.loads((report_dir / "report.json").read_text())["models"] == ["heuristic"]


def _child(argv: Sequence[str]) -> int:
    """One E1 eval of the scripted model on outputs folder argv[0], with its calls logged to calls.log there."""
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--block-at", type=int, default=None)
    parser.add_argument("--marker", default="")
    parser.add_argument("--go", default=None)
    args = parser.parse_args(argv)
    dataset = embedded_dataset(ENV, split="test", seed=42)
    provider = ScriptedProvider(args.root / "calls.log", delay_s=args.delay, block_at=args.block_at, marker=args.marker)
    spec = dataclasses.replace(SCRIPTED, concurrency=1)
    with JsonCache(args.root / "cache" / "responses.sqlite") as cache:
        client = ModelClient(spec, provider, cache=None if args.go else cache)
        runner = EvalRunner(ENV, spec, evals_root=args.root / "evals", client=client)
        if args.go:
            (args.root / f"ready-{os.getpid()}").write_text("ready")
            while not Path(args.go).exists():
                time.sleep(0.01)
        waited: list[str] = []
        outcome = runner.run(dataset, n=args.n, seed=42, lock_wait_s=60, on_lock_wait=waited.append)
    with contextlib.suppress(IndexError):
        print(f"waited for {waited[0]}")
    print(outcome.status, outcome.n_done, len(provider.lines))
    return 0 if outcome.status == "complete" else 1


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
