"""ModelClient against a real loopback HTTP server imitating OpenAI chat and Anthropic messages."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from secverify_dagster.resources.models import (
    CACHE_NAMESPACE,
    ChatRequest,
    Completion,
    JsonCache,
    ModelSpec,
    Price,
    ProviderError,
    RetryPolicy,
    cache_key,
    effective_params,
    open_client,
)
from secverify_dagster.resources.models.replies import anthropic_completion, openai_completion
from sv_shared.execution.retry import retry_async

FAST = RetryPolicy(attempts=5, base_delay_s=0.01, max_delay_s=0.05, jitter=0.1)
SECRET = "sk-test-9f8e7d6c5b4a-SECRET"


class FakeLLMServer:
    """Threaded HTTP server on 127.0.0.1; `plan` holds one action per incoming request, consumed in order.

    Actions: "429" or "429:<retry-after seconds>", "500", "529", "400", "401" (echoes the bearer key back in
    the error, as some providers do; "200_key" does the same with status 200), "hang" (answers nothing for
    hang_s), and 200 replies that hold no answer: "invalid_json" (a cut-off body), "no_choices" (no choices / no
    content blocks), "empty" (no text, stopped normally); "surrogate" answers text with a lone surrogate. Once the
    plan is empty every request succeeds.
    """

    def __init__(self) -> None:
        self.plan: list[str] = []
        self.requests: list[dict[str, Any]] = []
        self.usage = (1000, 200)
        self.delay_s = 0.0
        self.hang_s = 5.0
        self.inflight = 0
        self.max_inflight = 0
        self.lock = threading.Lock()
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._send(200, {"object": "list", "data": []})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with server.lock:
                    server.requests.append(
                        {
                            "path": self.path,
                            "headers": {k.lower(): v for k, v in self.headers.items()},
                            "body": body,
                        }
                    )
                    action = server.plan.pop(0) if server.plan else "ok"
                    server.inflight += 1
                    server.max_inflight = max(server.max_inflight, server.inflight)
                try:
                    server.handle(self, action, body)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    with server.lock:
                        server.inflight -= 1

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                self._send_raw(status, json.dumps(payload).encode(), headers)

            def _send_raw(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        self.handler = Handler
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    @property
    def openai_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeLLMServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def posts(self, path_suffix: str = "") -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].endswith(path_suffix)]

    def handle(self, handler: Any, action: str, body: dict[str, Any]) -> None:
        anthropic = handler.path.endswith("/messages")
        if action == "hang":
            self.release.wait(self.hang_s)
            return
        if action.startswith("429"):
            _, _, after = action.partition(":")
            headers = {"Retry-After": after} if after else {}
            handler._send(429, self._error("rate_limit_error", "slow down", anthropic), headers)
            return
        if action in ("500", "529", "400"):
            kind = {"500": "api_error", "529": "overloaded_error", "400": "invalid_request_error"}[action]
            handler._send(int(action), self._error(kind, f"fake {action}", anthropic))
            return
        if action in ("401", "200_key"):
            key = handler.headers.get("Authorization", "").removeprefix("Bearer ") or handler.headers.get("x-api-key")
            status = int(action.partition("_")[0])
            handler._send(status, self._error("authentication_error", f"Incorrect API key provided: {key}", anthropic))
            return
        if action == "invalid_json":
            handler._send_raw(200, b'{"id": "cut-off", "choices": [{"message": {"content": "tru')
            return
        if self.delay_s:
            time.sleep(self.delay_s)
        reply = self._anthropic_ok(body) if anthropic else self._openai_ok(body)
        if action == "no_choices":
            reply.pop("content" if anthropic else "choices")
        elif action in ("empty", "surrogate"):
            text = "" if action == "empty" else "bad \ud800 text"
            if anthropic:
                reply["content"] = [{"type": "text", "text": text}] if text else []
            else:
                reply["choices"][0]["message"]["content"] = text or None
        handler._send(200, reply)

    @staticmethod
    def _error(kind: str, message: str, anthropic: bool) -> dict[str, Any]:
        if anthropic:
            return {"type": "error", "error": {"type": kind, "message": message}}
        return {"error": {"message": message, "type": kind, "code": None}}

    @staticmethod
    def _last_user(body: dict[str, Any]) -> str:
        for message in reversed(body.get("messages", [])):
            if message.get("role") == "user":
                content = message["content"]
                return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
        return ""

    def _openai_ok(self, body: dict[str, Any]) -> dict[str, Any]:
        prompt, completion = self.usage
        message: dict[str, Any] = {"role": "assistant", "content": f"echo:{self._last_user(body)}"}
        finish = "stop"
        if body.get("tools"):
            name = body["tools"][0]["function"]["name"]
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": name, "arguments": '{"port": 22}'},
                    }
                ],
            }
            finish = "tool_calls"
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", ""),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }

    def _anthropic_ok(self, body: dict[str, Any]) -> dict[str, Any]:
        prompt, completion = self.usage
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", ""),
            "content": [{"type": "text", "text": f"echo:{self._last_user(body)}"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": prompt, "output_tokens": completion},
        }


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    fake = FakeLLMServer().start()
    try:
        yield fake
    finally:
        fake.stop()


def compat_spec(server: FakeLLMServer, **overrides: Any) -> ModelSpec:
    fields: dict[str, Any] = {
        "id": "fake-vllm",
        "provider": "openai_compatible",
        "model": "org/fake-model",
        "params": {"temperature": 0, "seed": 42},
        "price": Price(2.5, 10.0),
        "base_url": server.openai_url,
        "concurrency": 4,
        "timeout_s": 5.0,
    }
    fields.update(overrides)
    return ModelSpec(**fields)


def request(text: str = "hello", **params: Any) -> ChatRequest:
    return ChatRequest(
        messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": text}],
        params={"max_tokens": 32, **params},
    )


# --- success, accounting ---------------------------------------------------------------------------
def test_completion_usage_and_exact_cost(server: FakeLLMServer) -> None:
    client = open_client(compat_spec(server), cache=None, retry=FAST)
    results = client.complete_many([request("a"), request("b"), request("c")])
    assert [r.text for r in results] == ["echo:a", "echo:b", "echo:c"]  # order preserved
    one = results[0]
    assert isinstance(one, Completion) and not one.cached
    assert one.usage.prompt_tokens == 1000 and one.usage.completion_tokens == 200
    assert one.finish_reason == "stop" and one.latency_s > 0
    assert one.cost_usd == pytest.approx((1000 * 2.5 + 200 * 10.0) / 1e6, rel=1e-12)
    stats = client.stats
    assert stats["requests"] == 3 and stats["errors"] == 0 and stats["retries"] == 0
    assert stats["prompt_tokens"] == 3000 and stats["completion_tokens"] == 600
    assert stats["cost_usd"] == pytest.approx(3 * 0.0045, rel=1e-12)
    body = server.posts("/chat/completions")[0]["body"]
    assert body["model"] == "org/fake-model" and body["seed"] == 42 and body["temperature"] == 0
    assert body["max_tokens"] == 32 and "tools" not in body
    # a placeholder key is sent to servers that need none
    assert server.posts()[0]["headers"]["authorization"] == "Bearer sk-no-key-required"


def test_order_preserved_under_concurrency(server: FakeLLMServer) -> None:
    server.delay_s = 0.02
    client = open_client(compat_spec(server, concurrency=8), cache=None, retry=FAST)
    texts = [f"q{i}" for i in range(20)]
    assert [r.text for r in client.complete_many([request(t) for t in texts])] == [f"echo:{t}" for t in texts]


def test_tool_calls_are_returned(server: FakeLLMServer) -> None:
    tools = [{"type": "function", "function": {"name": "block_port", "parameters": {"type": "object"}}}]
    req = ChatRequest(messages=[{"role": "user", "content": "block it"}], params={}, tools=tools)
    result = open_client(compat_spec(server), cache=None, retry=FAST).complete_many([req])[0]
    assert result.text == "" and result.finish_reason == "tool_calls"
    assert result.tool_calls == [
        {"id": "call_1", "type": "function", "function": {"name": "block_port", "arguments": '{"port": 22}'}}
    ]
    assert server.posts()[0]["body"]["tools"] == tools


# --- retries ---------------------------------------------------------------------------------------
def test_retries_429_500_and_timeout_then_success(server: FakeLLMServer) -> None:
    server.plan = ["429", "500", "hang"]
    client = open_client(compat_spec(server, timeout_s=0.3), cache=None, retry=FAST)
    result = client.complete_many([request("x")])[0]
    assert isinstance(result, Completion), result
    assert result.text == "echo:x"
    assert len(server.posts()) == 4
    assert client.stats["retries"] == 3 and client.stats["errors"] == 0


def test_retry_after_is_honoured(server: FakeLLMServer) -> None:
    server.plan = ["429:0.4"]
    client = open_client(compat_spec(server), cache=None, retry=FAST)  # backoff alone would wait ~0.01 s
    started = time.perf_counter()
    result = client.complete_many([request()])[0]
    assert isinstance(result, Completion)
    assert time.perf_counter() - started >= 0.39
    assert client.stats["retries"] == 1


def test_gives_up_after_configured_attempts(server: FakeLLMServer) -> None:
    server.plan = ["500"] * 10
    client = open_client(compat_spec(server), cache=None, retry=RetryPolicy(attempts=3, base_delay_s=0.01))
    result = client.complete_many([request()])[0]
    assert isinstance(result, ProviderError)
    assert result.kind == "server" and result.retryable and result.status == 500
    assert "gave up after 3 attempts" in str(result)
    assert len(server.posts()) == 3
    assert client.stats["retries"] == 2 and client.stats["errors"] == 1


def test_bad_request_is_not_retried(server: FakeLLMServer) -> None:
    server.plan = ["400"]
    client = open_client(compat_spec(server), cache=None, retry=FAST)
    result = client.complete_many([request()])[0]
    assert isinstance(result, ProviderError)
    assert (result.kind, result.status, result.retryable) == ("bad_request", 400, False)
    assert len(server.posts()) == 1
    assert client.stats["retries"] == 0 and client.stats["errors"] == 1


def test_unreachable_server_is_a_provider_error() -> None:
    spec = ModelSpec(id="nowhere", provider="openai_compatible", model="m", base_url="http://127.0.0.1:9/v1")
    client = open_client(spec, cache=None, retry=RetryPolicy(attempts=2, base_delay_s=0.01))
    result = client.complete_many([request()])[0]
    assert isinstance(result, ProviderError) and result.kind == "unreachable"
    assert client.stats["retries"] == 1


def test_missing_endpoint_is_a_provider_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SV_NOWHERE_BASE_URL", raising=False)
    spec = ModelSpec(id="nowhere", provider="openai_compatible", model="m", base_url_env="SV_NOWHERE_BASE_URL")
    result = open_client(spec, cache=None).complete_many([request()])[0]
    assert isinstance(result, ProviderError) and "SV_NOWHERE_BASE_URL" in str(result)


# --- concurrency -----------------------------------------------------------------------------------
def test_concurrency_bound_is_respected(server: FakeLLMServer) -> None:
    server.delay_s = 0.15
    client = open_client(compat_spec(server, concurrency=3), cache=None, retry=FAST)
    results = client.complete_many([request(f"q{i}") for i in range(12)])
    assert all(isinstance(r, Completion) for r in results)
    assert server.max_inflight == 3


async def test_complete_many_inside_a_running_event_loop(server: FakeLLMServer) -> None:
    client = open_client(compat_spec(server), cache=None, retry=FAST)
    assert client.complete_many([request("loop")])[0].text == "echo:loop"
    assert (await client.acomplete_many([request("async")]))[0].text == "echo:async"


# --- cache -----------------------------------------------------------------------------------------
def test_cache_hit_skips_the_server(server: FakeLLMServer, tmp_path: Path) -> None:
    cache = JsonCache(tmp_path / "cache.sqlite")
    spec = compat_spec(server)
    first = open_client(spec, cache=cache, retry=FAST).complete_many([request("same")])[0]
    assert len(server.posts()) == 1 and not first.cached
    client = open_client(spec, cache=cache, retry=FAST)
    second = client.complete_many([request("same"), request("other")])
    assert len(server.posts()) == 2  # only "other" went out
    assert second[0].cached and second[0].text == first.text and second[0].cost_usd == 0.0
    assert second[0].usage == first.usage
    stats = client.stats
    assert stats["cache_hits"] == 1 and stats["requests"] == 2
    assert stats["cost_usd"] == pytest.approx(first.cost_usd, rel=1e-12)  # only the fresh call is paid
    stored = cache.get("completions", cache_key(spec, request("same")))
    assert stored is not None and stored["cost_usd"] == pytest.approx(first.cost_usd)  # original cost is kept
    cache.close()
    # survives reopening (a new process would see the same)
    reopened = JsonCache(tmp_path / "cache.sqlite")
    third = open_client(spec, cache=reopened, retry=FAST).complete_many([request("same")])[0]
    assert third.cached and len(server.posts()) == 2
    reopened.close()


def test_cache_key_covers_params_seed_tools_but_not_observation(server: FakeLLMServer) -> None:
    spec = compat_spec(server)
    base = request()
    assert cache_key(spec, base) == cache_key(spec, ChatRequest(base.messages, base.params, observation={"x": 1}))
    assert cache_key(spec, base) != cache_key(spec, ChatRequest(base.messages, {**base.params, "temperature": 0.7}))
    assert cache_key(spec, base) != cache_key(spec, ChatRequest(base.messages, base.params, seed=7))
    assert cache_key(spec, base) != cache_key(spec, ChatRequest(base.messages, base.params, tools=[{"x": 1}]))
    assert cache_key(spec, base) != cache_key(compat_spec(server, id="other"), base)


def test_errors_are_not_cached(server: FakeLLMServer, tmp_path: Path) -> None:
    server.plan = ["400"]
    with JsonCache(tmp_path / "c.sqlite") as cache:
        client = open_client(compat_spec(server), cache=cache, retry=FAST)
        assert isinstance(client.complete_many([request()])[0], ProviderError)
        assert len(cache) == 0
        assert isinstance(client.complete_many([request()])[0], Completion)
        assert len(cache) == 1


# --- secrets ---------------------------------------------------------------------------------------
def test_api_key_is_used_but_never_leaks(
    server: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SV_TEST_OPENAI_KEY", SECRET)
    spec = ModelSpec(
        id="gpt-fake",
        provider="openai",
        model="gpt-4o-mini",
        api_key_env="SV_TEST_OPENAI_KEY",
        base_url=server.openai_url,
        price=Price(1, 1),
    )
    cache_path = tmp_path / "cache.sqlite"
    cache = JsonCache(cache_path)
    client = open_client(spec, cache=cache, retry=FAST)
    server.plan = ["401"]
    error = client.complete_many([request("one")])[0]
    ok = client.complete_many([request("two")])[0]
    assert isinstance(error, ProviderError) and error.kind == "auth" and error.status == 401
    assert isinstance(ok, Completion)
    assert server.posts()[-1]["headers"]["authorization"] == f"Bearer {SECRET}"
    cache.close()
    blob = cache_path.read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("cache.sqlite*"))
    for text in (
        str(error),
        repr(error),
        repr(client),
        repr(spec),
        json.dumps(client.stats),
        repr(client.provider),
        json.dumps(ok.to_dict()),
    ):
        assert SECRET not in text
    assert SECRET.encode() not in blob


def test_missing_api_key_fails_without_a_request(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SV_TEST_OPENAI_KEY", raising=False)
    spec = ModelSpec(
        id="gpt-fake",
        provider="openai",
        model="gpt-4o-mini",
        api_key_env="SV_TEST_OPENAI_KEY",
        base_url=server.openai_url,
    )
    result = open_client(spec, cache=None).complete_many([request()])[0]
    assert isinstance(result, ProviderError) and result.kind == "auth"
    assert str(result) == "SV_TEST_OPENAI_KEY is not set"
    assert server.requests == []


def test_gpt5_family_gets_max_completion_tokens_and_no_temperature(
    server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SV_TEST_OPENAI_KEY", SECRET)
    spec = ModelSpec(
        id="gpt-5",
        provider="openai",
        model="gpt-5",
        api_key_env="SV_TEST_OPENAI_KEY",
        base_url=server.openai_url,
        params={"temperature": 0, "reasoning_effort": "minimal"},
    )
    assert isinstance(open_client(spec, cache=None).complete_many([request()])[0], Completion)
    body = server.posts()[0]["body"]
    assert body["max_completion_tokens"] == 32 and "max_tokens" not in body
    assert "temperature" not in body and body["reasoning_effort"] == "minimal"


# --- anthropic -------------------------------------------------------------------------------------
def anthropic_spec(server: FakeLLMServer) -> ModelSpec:
    return ModelSpec(
        id="claude-fake",
        provider="anthropic",
        model="claude-sonnet-4-5",
        api_key_env="SV_TEST_ANT_KEY",
        base_url=server.anthropic_url,
        params={"temperature": 0, "seed": 42},
        price=Price(3, 15),
        concurrency=2,
        timeout_s=5,
    )


def test_anthropic_messages(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SV_TEST_ANT_KEY", SECRET)
    server.plan = ["529", "429:0"]
    client = open_client(anthropic_spec(server), cache=None, retry=FAST)
    result = client.complete_many([request("hi")])[0]
    assert isinstance(result, Completion), result
    assert result.text == "echo:hi" and result.finish_reason == "stop"
    assert result.usage.prompt_tokens == 1000 and result.usage.completion_tokens == 200
    assert result.cost_usd == pytest.approx((1000 * 3 + 200 * 15) / 1e6, rel=1e-12)
    assert client.stats["retries"] == 2
    sent = server.posts("/v1/messages")[-1]
    body = sent["body"]
    assert body["system"] == "be brief"
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert body["max_tokens"] == 32 and body["temperature"] == 0 and "seed" not in body
    assert SECRET in (
        sent["headers"].get("x-api-key"),
        sent["headers"].get("authorization", "").removeprefix("Bearer "),
    )


def test_anthropic_bad_request_and_key_redaction(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SV_TEST_ANT_KEY", SECRET)
    server.plan = ["401"]
    result = open_client(anthropic_spec(server), cache=None, retry=FAST).complete_many([request()])[0]
    assert isinstance(result, ProviderError) and result.kind == "auth" and not result.retryable
    assert SECRET not in str(result)
    assert len(server.posts()) == 1


# --- 200 replies that hold no answer ---------------------------------------------------------------
def _openai_body(message: Any, finish: Any = "stop", **extra: Any) -> bytes:
    choice = {"index": 0, "message": message, "finish_reason": finish}
    return json.dumps({"choices": [choice], "usage": {"prompt_tokens": 3, "completion_tokens": 1}, **extra}).encode()


def _anthropic_body(blocks: Any, stop: Any = "end_turn") -> bytes:
    return json.dumps(
        {"type": "message", "content": blocks, "stop_reason": stop, "usage": {"input_tokens": 3}}
    ).encode()


HOSTILE_BODIES = [
    b"",
    b"null",
    b"[]",
    b'"choices"',
    b"42",
    b"\xff\xfe\x00",
    b'{"choices": [{"message": {"content": "cut',
    b"<html><body>502 Bad Gateway</body></html>",
    b"[" * 100_000 + b"]" * 100_000,
    b'{"error": {"message": "upstream overloaded"}}',
    b'{"choices": null}',
    b'{"choices": []}',
    b'{"choices": "abc"}',
    b'{"choices": [1]}',
    b'{"choices": [{}]}',
    b'{"choices": [{"message": null}]}',
    b'{"choices": [{"message": "hi"}]}',
    b'{"choices": [{"message": {"content": 5}}]}',
    b'{"choices": [{"message": {"content": [1, 2]}}]}',
    b'{"choices": [{"message": {"content": "x", "tool_calls": {"a": 1}}}]}',
    b'{"choices": [{"message": {"content": "x", "tool_calls": [{"function": {"name": 7}}]}}]}',
    b'{"content": "not blocks"}',
    b'{"content": [1]}',
    b'{"content": [{"type": "text", "text": null}]}',
    b'{"content": [{"type": "tool_use", "input": {}}]}',
]


@pytest.mark.parametrize("body", HOSTILE_BODIES, ids=range(len(HOSTILE_BODIES)))
@pytest.mark.parametrize("read", [openai_completion, anthropic_completion], ids=["openai", "anthropic"])
def test_a_body_that_is_no_answer_is_a_retryable_invalid_body(read: Any, body: bytes) -> None:
    with pytest.raises(ProviderError) as caught:
        read("m", body, 0.1)
    error = caught.value
    assert (error.kind, error.retryable, error.status) == ("invalid_body", True, 200)
    assert len(str(error)) < 1000  # the body is quoted, not dumped


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (_openai_body({"content": ""}), "empty_reply"),
        (_openai_body({"content": None}), "empty_reply"),
        (_openai_body({"content": None}, finish=None), "empty_reply"),
        (_openai_body({"content": "", "tool_calls": []}, finish="tool_calls"), "empty_reply"),
        (_openai_body({"content": ""}, finish="length"), ""),
        (_openai_body({"content": None}, finish="content_filter"), ""),
        (_openai_body({"content": " "}), " "),
        (_openai_body({"content": None, "refusal": "I can't help with that."}), "I can't help with that."),
        (_openai_body({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}), "ab"),
        (_openai_body({"content": "bad \ud800 text"}), "bad \ufffd text"),
    ],
    ids=[
        "empty-stop",
        "null-stop",
        "null-no-reason",
        "tool_calls-without-calls",
        "empty-length",
        "null-filtered",
        "whitespace",
        "refusal",
        "content-parts",
        "lone-surrogate",
    ],
)
def test_openai_empty_reply_rule(body: bytes, expected: str) -> None:
    """Empty is a fault unless the finish reason explains it (cut off by max_tokens, filtered)."""
    if expected == "empty_reply":
        with pytest.raises(ProviderError) as caught:
            openai_completion("m", body, 0.1)
        assert caught.value.kind == "empty_reply" and caught.value.retryable
    else:
        completion = openai_completion("m", body, 0.1)
        assert completion.text == expected
        completion.text.encode("utf-8")  # storable


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (_anthropic_body([]), "empty_reply"),
        (_anthropic_body([{"type": "text", "text": ""}]), "empty_reply"),
        (_anthropic_body([{"type": "thinking", "thinking": "hmm", "signature": "s"}]), "empty_reply"),
        (_anthropic_body([], stop=None), "empty_reply"),
        (_anthropic_body([], stop="max_tokens"), ("", "length")),
        (_anthropic_body([], stop="refusal"), ("", "content_filter")),
        (_anthropic_body([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]), ("ab", "stop")),
    ],
    ids=["no-blocks", "empty-text", "thinking-only", "no-stop-reason", "max-tokens", "refusal", "two-blocks"],
)
def test_anthropic_empty_reply_rule(body: bytes, expected: Any) -> None:
    if expected == "empty_reply":
        with pytest.raises(ProviderError) as caught:
            anthropic_completion("m", body, 0.1)
        assert caught.value.kind == "empty_reply" and caught.value.retryable
    else:
        completion = anthropic_completion("m", body, 0.1)
        assert (completion.text, completion.finish_reason) == expected


def test_tool_calls_make_an_empty_text_an_answer() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "block", "arguments": {"port": 22}}}
    completion = openai_completion("m", _openai_body({"content": None, "tool_calls": [call]}, "tool_calls"), 0.1)
    assert completion.text == "" and completion.tool_calls[0]["function"] == {
        "name": "block",
        "arguments": '{"port": 22}',
    }
    blocks = [{"type": "tool_use", "id": "t1", "name": "block", "input": {"port": 22}}]
    completion = anthropic_completion("m", _anthropic_body(blocks, stop="tool_use"), 0.1)
    assert completion.finish_reason == "tool_calls" and completion.tool_calls[0]["id"] == "t1"


@pytest.mark.parametrize("spec_for", ["openai", "anthropic"])
def test_no_answer_replies_are_retried_within_the_call(
    spec_for: str, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SV_TEST_ANT_KEY", SECRET)
    spec = compat_spec(server) if spec_for == "openai" else anthropic_spec(server)
    server.plan = ["invalid_json", "no_choices", "empty"]
    client = open_client(spec, cache=None, retry=FAST)
    result = client.complete_many([request("x")])[0]
    assert isinstance(result, Completion) and result.text == "echo:x"
    assert len(server.posts()) == 4
    assert client.stats["retries"] == 3 and client.stats["errors"] == 0


@pytest.mark.parametrize(("action", "kind"), [("empty", "empty_reply"), ("invalid_json", "invalid_body")])
@pytest.mark.parametrize("spec_for", ["openai", "anthropic"])
def test_no_answer_replies_give_a_named_error_after_the_attempts(
    spec_for: str, action: str, kind: str, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SV_TEST_ANT_KEY", SECRET)
    spec = compat_spec(server) if spec_for == "openai" else anthropic_spec(server)
    server.plan = [action] * 10
    cache = JsonCache(tmp_path / "c.sqlite")
    client = open_client(spec, cache=cache, retry=RetryPolicy(attempts=3, base_delay_s=0.01))
    result = client.complete_many([request()])[0]
    assert isinstance(result, ProviderError)
    assert (result.kind, result.status, result.retryable) == (kind, 200, True)
    assert "gave up after 3 attempts" in str(result)
    assert len(server.posts()) == 3 and len(cache) == 0  # nothing cached: the next run asks again


@pytest.mark.parametrize("spec_for", ["openai", "anthropic"])
def test_a_key_echoed_in_a_200_error_body_is_redacted(
    spec_for: str, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SV_TEST_ANT_KEY", SECRET)
    monkeypatch.setenv("SV_TEST_OPENAI_KEY", SECRET)
    spec = anthropic_spec(server)
    if spec_for == "openai":
        spec = ModelSpec(
            id="gpt-fake",
            provider="openai",
            model="gpt-4o-mini",
            api_key_env="SV_TEST_OPENAI_KEY",
            base_url=server.openai_url,
        )
    server.plan = ["200_key"] * 2
    result = open_client(spec, cache=None, retry=RetryPolicy(attempts=2, base_delay_s=0.01)).complete_many([request()])[
        0
    ]
    assert isinstance(result, ProviderError) and result.kind == "invalid_body"
    assert "Incorrect API key provided: ***" in str(result) and SECRET not in str(result)


def test_an_empty_reply_cached_before_the_rule_is_asked_again(server: FakeLLMServer, tmp_path: Path) -> None:
    spec = compat_spec(server)
    with JsonCache(tmp_path / "c.sqlite") as cache:
        key = cache_key(spec, dataclasses.replace(request("x"), params=effective_params(spec, request("x"))))
        cache.put(CACHE_NAMESPACE, key, Completion(text="", finish_reason="stop").to_dict())
        client = open_client(spec, cache=cache, retry=FAST)
        (result,) = client.complete_many([request("x")])
        assert result.text == "echo:x" and not result.cached and len(server.posts()) == 1
        assert client.complete_many([request("x")])[0].cached


def test_a_reply_with_a_lone_surrogate_is_cached_not_a_crash(server: FakeLLMServer, tmp_path: Path) -> None:
    server.plan = ["surrogate"]
    with JsonCache(tmp_path / "c.sqlite") as cache:
        client = open_client(compat_spec(server), cache=cache, retry=FAST)
        (result,) = client.complete_many([request("x")])
        assert isinstance(result, Completion) and result.text == "bad \ufffd text"
        (again,) = client.complete_many([request("x")])
        assert again.cached and again.text == result.text


def test_a_cache_that_cannot_be_written_fails_only_its_request(server: FakeLLMServer, tmp_path: Path) -> None:
    class FullDisk(JsonCache):
        def put(self, namespace: str, key: str, value: dict[str, Any]) -> None:
            if "echo:bad" in value["text"]:
                raise OSError(28, "No space left on device")
            super().put(namespace, key, value)

    with FullDisk(tmp_path / "c.sqlite") as cache:
        client = open_client(compat_spec(server), cache=cache, retry=FAST)
        good, bad = client.complete_many([request("good"), request("bad")])
    assert isinstance(good, Completion) and good.text == "echo:good"
    assert isinstance(bad, ProviderError) and bad.kind == "internal" and "No space left" in str(bad)


# --- baselines -------------------------------------------------------------------------------------
def test_baseline_runs_inline_and_is_never_cached(tmp_path: Path) -> None:
    seen = []

    def rule(observation: dict[str, Any]) -> str:
        seen.append(observation)
        return "malicious" if observation["port"] == 22 else "benign"

    spec = ModelSpec(id="heuristic", provider="baseline", model="heuristic", envs=["e1"])
    with JsonCache(tmp_path / "c.sqlite") as cache:
        client = open_client(spec, cache=cache, baselines={"heuristic": rule})
        reqs = [ChatRequest(messages=[], params={}, observation={"port": p}) for p in (22, 80)]
        results = client.complete_many([*reqs, ChatRequest(messages=[], params={})])
        assert [r.text for r in results[:2]] == ["malicious", "benign"]
        assert results[0].usage.prompt_tokens == 0 and results[0].cost_usd == 0.0
        assert isinstance(results[2], ProviderError) and results[2].kind == "bad_request"
        assert len(cache) == 0 and seen == [{"port": 22}, {"port": 80}]
        assert client.stats["errors"] == 1 and client.stats["requests"] == 3


def test_baseline_without_function_fails_to_open() -> None:
    spec = ModelSpec(id="heuristic", provider="baseline", model="heuristic", envs=["e1"])
    with pytest.raises(ValueError, match="no baseline function"):
        open_client(spec, cache=None, baselines={})


# --- shared pieces ---------------------------------------------------------------------------------
def test_json_cache_corrupt_row_is_a_miss(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "c.sqlite"
    with JsonCache(path) as cache:
        cache.put("ns", "good", {"a": 1})
        cache.put("ns", "bad", {"b": 2})
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE cache SET value = '{not json' WHERE key = 'bad'")
    with JsonCache(path) as cache:
        assert cache.get("ns", "good") == {"a": 1}
        assert cache.get("ns", "bad") is None
        assert cache.get("ns", "absent") is None
        assert len(cache) == 2


def test_json_cache_is_thread_safe(tmp_path: Path) -> None:
    with JsonCache(tmp_path / "c.sqlite") as cache:

        def writer(n: int) -> None:
            for i in range(50):
                cache.put("ns", f"{n}-{i}", {"n": n, "i": i})

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(cache) == 200 and cache.get("ns", "3-49") == {"n": 3, "i": 49}


async def test_retry_async_backoff_and_non_retryable() -> None:
    calls, waits = [], []

    async def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise ProviderError("busy", kind="server", retryable=True)
        return "ok"

    policy = RetryPolicy(attempts=4, base_delay_s=0.01, jitter=0)
    result = await retry_async(
        flaky,
        policy=policy,
        is_retryable=lambda e: getattr(e, "retryable", False),
        on_retry=lambda e, n, d: waits.append(d),
    )
    assert result == "ok" and waits == [0.01, 0.02]

    async def broken() -> str:
        calls.append(1)
        raise ProviderError("nope", kind="bad_request")

    calls.clear()
    with pytest.raises(ProviderError, match="nope"):
        await retry_async(broken, policy=policy, is_retryable=lambda e: getattr(e, "retryable", False))
    assert len(calls) == 1
    assert policy.delay(20) == policy.max_delay_s and policy.delay(0, retry_after=2.5) == 2.5
    await asyncio.sleep(0)


def test_provider_error_pickles() -> None:
    import pickle

    error = ProviderError("x", kind="rate_limit", retryable=True, status=429, retry_after=1.5)
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.kind, copy.retryable, copy.status, copy.retry_after, str(copy)) == (
        "rate_limit",
        True,
        429,
        1.5,
        "x",
    )


def test_extra_params_reach_vllm_but_not_openai(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    open_client(compat_spec(server), cache=None).complete_many([request(top_k=5, max_tokens=7)])
    body = server.posts()[-1]["body"]
    assert body["top_k"] == 5 and body["max_tokens"] == 7
    monkeypatch.setenv("SV_TEST_OPENAI_KEY", SECRET)
    spec = ModelSpec(
        id="gpt-fake",
        provider="openai",
        model="gpt-4o-mini",
        api_key_env="SV_TEST_OPENAI_KEY",
        base_url=server.openai_url,
    )
    open_client(spec, cache=None).complete_many([request(top_k=5, max_tokens=7)])
    body = server.posts()[-1]["body"]
    assert "top_k" not in body and body["max_completion_tokens"] == 7


def test_empty_batch() -> None:
    spec = ModelSpec(id="m", provider="openai_compatible", model="m", base_url="http://127.0.0.1:9/v1")
    client = open_client(spec, cache=None)
    assert client.complete_many([]) == []
    assert client.stats["requests"] == 0
