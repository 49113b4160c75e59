"""Provider faults, end to end: a real E1 eval against a loopback server that fails on a schedule.

The server (127.0.0.1 only) speaks OpenAI chat completions and the Anthropic Messages API. For each prompt the test
gives the actions for its first, second, ... request (429 with and without Retry-After, 5xx, a hang past the client
timeout, a reset or cut connection, 200 bodies that are not JSON, have no choices or are empty); after them the prompt
is answered. The eval runs through `EvalRunner` with registry specs pointed at the server, and the test checks what a
user relies on: every item ends scored or as a named provider error, transient faults are retried within the run, a
prompt that got an answer is never sent again (within the run, on resume, on a re-run), and no item is lost or
duplicated.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from secverify_dagster.resources.models import ModelSpec, RetryPolicy, load_registry, open_client
from secverify_dagster.runner.datasets import EvalDataset, embedded_dataset, select_items
from secverify_dagster.runner.eval_runner import EvalOutcome, EvalRunner
from sv_shared.registry import get_environment
from sv_shared.runs.folder import RunFolder

ENV = get_environment("e1")
POLICY = RetryPolicy(attempts=4, base_delay_s=0.05, max_delay_s=0.2, jitter=0.1, max_retry_after_s=1.0)
ANSWERS = frozenset({"ok", "length_empty"})
"""Actions that answer the prompt: after one of them the prompt must never be sent again."""
CLIENT_TIMEOUT_S = 2.0
"""Generous against a loaded machine: an answer slower than this would be retried and counted as a repeat."""


@dataclass(frozen=True)
class Served:
    """One request the server saw: its prompt, what it did, when, and whether a good answer was written."""

    prompt: str
    action: str
    at: float
    answered: bool


class FaultServer:
    """Chat completions (/v1/chat/completions) and Messages (/v1/messages) on 127.0.0.1, failing on a schedule.

    Actions: "ok"; "429", "429:<Retry-After s>", "429ms:<retry-after-ms>", "529", "500", "502", "503", "400";
    "timeout" (no answer for longer than the client waits), "reset" (TCP reset, no answer), "cut" (the body stops
    half-way and the connection closes); 200 replies with no answer: "invalid_json", "html" (a gateway's page),
    "no_choices" (no choices / no content blocks), "error_200" (an error object instead of a reply), "empty" (no
    text, stopped normally), "null" (content null), "thinking_only" (Anthropic: a thinking block, no text); and
    "length_empty" (no text, cut off by max_tokens: an answer, not a fault).
    """

    def __init__(self, hang_s: float) -> None:
        self.schedule: dict[str, list[str]] = {}
        self.served: list[Served] = []
        self.hang_s = hang_s
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                server.serve(self, body)

            def send(self, status: int, data: bytes, content_type: str = "application/json", **headers: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name.replace("_", "-"), value)
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> FaultServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    # -- what the test reads -------------------------------------------------------------------------
    def requests_for(self, prompt: str) -> list[Served]:
        with self._lock:
            return [entry for entry in self.served if entry.prompt == prompt]

    def sent_after_an_answer(self) -> list[Served]:
        """Requests for a prompt that had already been answered: what a resume or a retry must never send."""
        answered: set[str] = set()
        repeats = []
        with self._lock:
            for entry in self.served:
                if entry.prompt in answered:
                    repeats.append(entry)
                if entry.answered:
                    answered.add(entry.prompt)
        return repeats

    @staticmethod
    def answer_for(prompt: str) -> str:
        """The good answer to a prompt, tagged with it so a record holding another prompt's answer shows."""
        tag = hashlib.sha256(prompt.encode()).hexdigest()[:8]
        return json.dumps({"label": "Benign", "confidence": 0.7, "rationale": f"tag {tag}"})

    # -- serving -------------------------------------------------------------------------------------
    def serve(self, handler: Any, body: dict[str, Any]) -> None:
        anthropic = handler.path.endswith("/messages")
        prompt = last_user_text(body)
        with self._lock:
            attempt = self._seen[prompt]
            self._seen[prompt] += 1
            planned = self.schedule.get(prompt, [])
            action = planned[attempt] if attempt < len(planned) else "ok"
            # Logged on arrival: a hung request's client has given up and moved on long before it ends.
            entry = len(self.served)
            self.served.append(Served(prompt, action, time.monotonic(), answered=False))
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            if self._act(handler, action, prompt, anthropic):
                with self._lock:
                    self.served[entry] = dataclasses.replace(self.served[entry], answered=True)

    def _act(self, handler: Any, action: str, prompt: str, anthropic: bool) -> bool:
        """Carry out one action; True when a good answer was written."""
        name, _, arg = action.partition(":")
        if name == "timeout":
            self._stop.wait(self.hang_s)
            handler.close_connection = True
            return False
        if name == "reset":
            handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            handler.close_connection = True
            return False
        if name == "cut":
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", "4096")
            handler.end_headers()
            handler.wfile.write(b'{"id": "cut", "choices": [{"mess')
            handler.wfile.flush()
            handler.close_connection = True
            return False
        if name in ("429", "429ms", "529", "500", "502", "503", "400"):
            status = 429 if name == "429ms" else int(name)
            headers = {"retry_after_ms": arg} if name == "429ms" else {"Retry_After": arg} if arg else {}
            error = {"type": "error", "error": {"type": "api_error", "message": f"injected {action}"}}
            handler.send(status, json.dumps(error).encode(), **headers)
            return False
        if name == "invalid_json":
            handler.send(200, b'{"id": "x", "choices": [{"message": {"content": "tru')
            return False
        if name == "html":
            handler.send(200, b"<html><body><h1>502 Bad Gateway</h1></body></html>", content_type="text/html")
            return False
        if name == "error_200":
            handler.send(200, json.dumps({"error": {"message": "upstream overloaded", "code": 503}}).encode())
            return False
        reply = self._reply(name, prompt, anthropic)
        handler.send(200, json.dumps(reply).encode())
        return name in ANSWERS

    def _reply(self, name: str, prompt: str, anthropic: bool) -> dict[str, Any]:
        text = "" if name in ("empty", "null", "thinking_only", "length_empty") else self.answer_for(prompt)
        usage = {"prompt_tokens": 120, "completion_tokens": 20}
        if anthropic:
            blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if name == "empty" or text else []
            if name == "thinking_only":
                blocks = [{"type": "thinking", "thinking": "...", "signature": "sig"}]
            reply = {
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "content": blocks,
                "stop_reason": "max_tokens" if name == "length_empty" else "end_turn",
                "usage": {"input_tokens": 120, "output_tokens": 20},
            }
            if name == "no_choices":
                del reply["content"]
            return reply
        message = {"role": "assistant", "content": None if name == "null" else text}
        choice = {"index": 0, "message": message, "finish_reason": "length" if name == "length_empty" else "stop"}
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "choices": [] if name == "no_choices" else [choice],
            "usage": usage,
        }


def last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            content = message["content"]
            return content if isinstance(content, str) else "".join(block.get("text", "") for block in content)
    return ""


@pytest.fixture
def server() -> Iterator[FaultServer]:
    fake = FaultServer(hang_s=CLIENT_TIMEOUT_S + 0.5).start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture(scope="module")
def dataset() -> EvalDataset:
    return embedded_dataset(ENV, split="test", seed=42)


def registry_spec(provider: str, server: FaultServer, monkeypatch: pytest.MonkeyPatch) -> ModelSpec:
    """A registry model of this provider, pointed at the server the way a user points it at theirs."""
    spec = next(spec for spec in load_registry().values() if spec.provider == provider and spec.supports_env("e1"))
    if provider == "openai_compatible":
        assert spec.base_url_env, "the registry's vLLM models take their endpoint from a variable"
        monkeypatch.setenv(spec.base_url_env, f"{server.base}/v1")
        if spec.api_key_env:
            monkeypatch.delenv(spec.api_key_env, raising=False)
    else:
        spec = dataclasses.replace(spec, base_url=server.base)
        monkeypatch.setenv(spec.api_key_env or "ANTHROPIC_API_KEY", "sk-ant-loopback-test")
    return dataclasses.replace(spec, timeout_s=CLIENT_TIMEOUT_S, concurrency=8)


def prompts_of(dataset: EvalDataset, n: int) -> tuple[list[str], list[str]]:
    """(item ids, their prompts) in the order the runner selects them; every prompt must be distinct."""
    items = select_items(ENV, dataset.frame, n, 42)
    ids = [item[ENV.data.id_column] for item in items]
    prompts = [last_user_text({"messages": ENV.episodes.messages(item)}) for item in items]
    assert len(set(prompts)) == len(prompts) == n
    return ids, prompts


def run_eval(spec: ModelSpec, dataset: EvalDataset, root: Path, n: int) -> EvalOutcome:
    client = open_client(spec, cache=None, retry=POLICY)
    try:
        return EvalRunner(ENV, spec, evals_root=root, client=client, chunk_size=16).run(dataset, n=n, seed=42)
    finally:
        client.close()


def expected_requests(actions: list[str]) -> int:
    """Requests a prompt takes within one run: its faults and the answer, bounded by the attempts; 400 is final."""
    faults = 0
    for action in actions:
        if action in ANSWERS:
            break
        faults += 1
        if action == "400":
            return 1
    return min(faults + 1, POLICY.attempts)


def check_run_folder(outcome: EvalOutcome, ids: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """(scored records by id, final error kind by id): each item exactly once, scored or a named error."""
    assert outcome.run_dir is not None
    folder = RunFolder(outcome.run_dir)
    records = folder.read_results()
    scored = {record.id: record for record in records}
    assert len(scored) == len(records), "an item was scored twice"
    errors: dict[str, str] = {}
    for error in folder.read_errors():
        errors[error.id] = error.kind  # errors.jsonl is a log: an item's latest line is its state
    open_errors = {item_id: kind for item_id, kind in errors.items() if item_id not in scored}
    assert set(scored) | set(open_errors) == set(ids), "an item was lost"
    assert set(scored) <= set(ids)
    return scored, open_errors


OPENAI_SCHEDULE: dict[int, list[str]] = {
    0: ["429"],
    1: ["429:0.3"],
    2: ["429ms:200"],
    3: ["500"],
    4: ["502"],
    5: ["503"],
    6: ["timeout"],
    7: ["reset"],
    8: ["cut"],
    9: ["invalid_json"],
    10: ["html"],
    11: ["no_choices"],
    12: ["error_200"],
    13: ["empty"],
    14: ["null"],
    15: ["503", "invalid_json", "reset"],
    16: ["empty", "timeout", "429"],
    17: ["length_empty"],
    # more faults than attempts: named errors after this run, answered on resume
    18: ["503"] * 4,
    19: ["invalid_json"] * 4,
    20: ["empty"] * 4,
    21: ["reset"] * 4,
    22: ["429"] * 4,
    23: ["400"],
}
OPENAI_GIVE_UP = {
    18: "server",
    19: "invalid_body",
    20: "empty_reply",
    21: "unreachable",
    22: "rate_limit",
    23: "bad_request",
}


def test_e1_eval_through_openai_compatible_faults(
    server: FaultServer, dataset: EvalDataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = registry_spec("openai_compatible", server, monkeypatch)
    n = dataset.frame.height
    ids, prompts = prompts_of(dataset, n)
    server.schedule = {prompts[index]: actions for index, actions in OPENAI_SCHEDULE.items()}

    first = run_eval(spec, dataset, tmp_path, n)
    assert first.status == "incomplete"
    scored, open_errors = check_run_folder(first, ids)
    assert open_errors == {ids[index]: kind for index, kind in OPENAI_GIVE_UP.items()}
    assert first.n_provider_errors == len(OPENAI_GIVE_UP) and len(scored) == n - len(OPENAI_GIVE_UP)
    sent = {prompt: len(server.requests_for(prompt)) for prompt in prompts}
    assert sent == {prompt: expected_requests(OPENAI_SCHEDULE.get(index, [])) for index, prompt in enumerate(prompts)}
    session = first.metadata.sessions[-1].client
    assert session["retries"] == sum(sent.values()) - n and session["errors"] == len(OPENAI_GIVE_UP)
    # Retry-After was waited for, not the (shorter) backoff
    for index, least_s in ((1, 0.3), (2, 0.2)):
        first_try, second_try = server.requests_for(prompts[index])
        assert second_try.at - first_try.at >= least_s - 0.02
    # each scored item holds its own prompt's answer; the empty answer max_tokens cut off is scored as empty
    for index, item_id in enumerate(ids):
        if item_id in scored:
            expected = "" if index == 17 else server.answer_for(prompts[index])
            assert scored[item_id].completion == expected
    assert scored[ids[17]].parsed is None

    resumed = run_eval(spec, dataset, tmp_path, n)
    assert resumed.status == "complete" and resumed.run_dir == first.run_dir
    scored, open_errors = check_run_folder(resumed, ids)
    assert len(scored) == n and not open_errors
    resent = Counter(entry.prompt for entry in server.served) - Counter(sent)
    assert resent == Counter({prompts[index]: 1 for index in OPENAI_GIVE_UP})

    again = run_eval(spec, dataset, tmp_path, n)
    assert again.status == "complete" and again.metadata.sessions[-1].client["requests"] == 0
    assert len(server.served) == sum(sent.values()) + len(OPENAI_GIVE_UP)
    assert server.sent_after_an_answer() == []
    assert Counter(entry.prompt for entry in server.served if entry.answered) == Counter(prompts)


ANTHROPIC_SCHEDULE: dict[int, list[str]] = {
    0: ["empty"],
    1: ["no_choices"],
    2: ["thinking_only"],
    3: ["invalid_json", "529", "empty"],
    4: ["length_empty"],
    5: ["empty"] * 4,
}


def test_e1_eval_through_anthropic_empty_replies(
    server: FaultServer, dataset: EvalDataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = registry_spec("anthropic", server, monkeypatch)
    n = 8
    ids, prompts = prompts_of(dataset, n)
    server.schedule = {prompts[index]: actions for index, actions in ANTHROPIC_SCHEDULE.items()}

    first = run_eval(spec, dataset, tmp_path, n)
    scored, open_errors = check_run_folder(first, ids)
    assert open_errors == {ids[5]: "empty_reply"}
    sent = {prompt: len(server.requests_for(prompt)) for prompt in prompts}
    assert sent == {
        prompt: expected_requests(ANTHROPIC_SCHEDULE.get(index, [])) for index, prompt in enumerate(prompts)
    }
    assert scored[ids[4]].completion == ""  # max_tokens explains the empty answer: scored, not retried
    assert all(scored[ids[index]].completion == server.answer_for(prompts[index]) for index in (0, 1, 2, 3, 6, 7))
    assert all(entry.prompt for entry in server.served)  # the Messages API body was read, not guessed

    resumed = run_eval(spec, dataset, tmp_path, n)
    assert resumed.status == "complete"
    assert len(server.served) == sum(sent.values()) + 1
    assert server.sent_after_an_answer() == []
