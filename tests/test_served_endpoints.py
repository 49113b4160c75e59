"""The vLLM resource asks a real OpenAI-compatible server on loopback (`GET /v1/models`), and the sweeps and the
new-model sensor request no run for a served model whose endpoint is down, saying why."""

from __future__ import annotations

import dataclasses
import json
import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import dagster as dg
import pytest
import yaml

from secverify_dagster.concurrency import PROVIDER_TAG, SERVED_MODEL_TAG
from secverify_dagster.definitions import defs
from secverify_dagster.jobs import ENV_TAG
from secverify_dagster.partitions import add_model_partitions
from secverify_dagster.resources.dagster_resources import ModelRegistryResource
from secverify_dagster.resources.models import load_registry
from secverify_dagster.resources.vllm import VllmResource
from secverify_dagster.schedules.sweeps import weekly_sweep
from secverify_dagster.sensors.new_models import new_model_sensor

SERVED = "Qwen/Qwen2.5-72B-Instruct"
KEY = "sk-vllm-test"


class _ModelList(BaseHTTPRequestHandler):
    """What vLLM answers on /v1/models (its --api-key makes it refuse any other bearer token)."""

    def do_GET(self) -> None:
        if self.headers.get("Authorization") != f"Bearer {KEY}":
            self._reply(401, {"error": "invalid api key"})
        elif self.path == "/v1/models":
            self._reply(200, {"object": "list", "data": [{"id": SERVED, "object": "model", "owned_by": "vllm"}]})
        else:
            self._reply(404, {"error": "not found"})

    def _reply(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        return


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _serve(port: int) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", port), _ModelList)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(autouse=True)
def own_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No trained checkpoint of this checkout's outputs/ joins the test's registry."""
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path / "outputs"))


@pytest.fixture()
def server() -> Iterator[str]:
    """A running server's base URL, as SV_<ID>_BASE_URL holds it."""
    running = _serve(_free_port())
    try:
        yield f"http://127.0.0.1:{running.server_address[1]}/v1"
    finally:
        running.shutdown()
        running.server_close()


def _registry(tmp_path: Path, endpoints: dict[str, str]) -> Path:
    """A portfolio of served models (id → base URL, or "" for one whose endpoint is not set here) and a baseline."""
    models: dict[str, dict] = {
        model_id: {
            "provider": "openai_compatible",
            "model": SERVED,
            "api_key_env": "SV_VLLM_API_KEY",
            **({"base_url": url} if url else {"base_url_env": "SV_TEST_UNSET_BASE_URL"}),
        }
        for model_id, url in endpoints.items()
    }
    models["heuristic"] = {"provider": "baseline", "envs": ["e1"]}
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump({"models": models}), encoding="utf-8")
    return path


def test_health_is_what_the_server_answers(server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SV_VLLM_API_KEY", KEY)
    monkeypatch.delenv("SV_TEST_UNSET_BASE_URL", raising=False)
    closed = f"http://127.0.0.1:{_free_port()}/v1"
    registry = load_registry(
        _registry(tmp_path, {"up": server, "down": closed, "unset": ""}), include_checkpoints=False
    )
    registry["other-model"] = dataclasses.replace(
        registry["up"], id="other-model", model="x"
    )  # a server up with another model
    vllm = VllmResource(health_timeout_s=5)
    assert vllm.endpoints(registry) == {"up": server, "down": closed, "other-model": server}
    health = vllm.health(registry, ["up", "down", "unset", "other-model", "heuristic"])
    assert set(health) == {"up", "down", "other-model"}  # not served (no endpoint, or a baseline): not checked
    assert health["up"].up and SERVED in health["up"].reason
    assert not health["down"].up and "ConnectError" in health["down"].reason and closed in health["down"].reason
    assert not health["other-model"].up and f"serves {SERVED}, not x" in health["other-model"].reason

    monkeypatch.setenv("SV_VLLM_API_KEY", "sk-wrong")
    assert vllm.down(registry, ["up"]) == {"up": f"endpoint down: {server}/models answered HTTP 401"}


def test_the_weekly_sweep_requests_no_run_for_a_served_model_whose_endpoint_is_down(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("SV_VLLM_API_KEY", KEY)
    closed = f"http://127.0.0.1:{_free_port()}/v1"
    path = _registry(tmp_path, {"served-up": server, "served-down": closed})
    resources = {"models": ModelRegistryResource(registry_path=str(path)), "vllm": VllmResource(health_timeout_s=5)}
    with dg.instance_for_test() as instance:
        add_model_partitions(instance, [("e1", "served-up"), ("e1", "served-down"), ("e1", "heuristic")])
        with dg.build_schedule_context(
            instance=instance, scheduled_execution_time=datetime(2026, 11, 23, 6, tzinfo=UTC), resources=resources
        ) as context:
            context.log.addHandler(caplog.handler)  # the tick's own logger (what the UI shows under the tick)
            requests = weekly_sweep(context)
    assert {request.partition_key: request.tags for request in requests} == {
        "served-up": {
            "secverify/cadence": "weekly",
            "secverify/views": "none",
            PROVIDER_TAG: "openai_compatible",
            SERVED_MODEL_TAG: "served-up",
            ENV_TAG: "e1",
        },
        "heuristic": {
            "secverify/cadence": "weekly",
            "secverify/views": "none",
            PROVIDER_TAG: "baseline",
            ENV_TAG: "e1",
        },
    }
    assert f"not requesting e1:served-down: endpoint down: {closed}/models" in caplog.text


def test_the_new_model_sensor_backfills_a_served_model_once_its_server_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SV_VLLM_API_KEY", KEY)
    port = _free_port()
    path = _registry(tmp_path, {"served": f"http://127.0.0.1:{port}/v1"})
    resources = {"models": ModelRegistryResource(registry_path=str(path)), "vllm": VllmResource(health_timeout_s=5)}

    def tick(cursor: str | None) -> dg.SensorResult:
        with (
            dg.instance_for_test() as instance,
            dg.build_sensor_context(instance=instance, cursor=cursor, resources=resources, definitions=defs) as context,
        ):
            return new_model_sensor(context)

    down = tick(None)
    assert [request.tags[PROVIDER_TAG] for request in down.run_requests] == ["baseline"]
    assert json.loads(down.cursor) == ["heuristic"]  # the served model is asked again next tick
    running = _serve(port)
    try:
        up = tick(down.cursor)
    finally:
        running.shutdown()
        running.server_close()
    (request,) = up.run_requests
    assert request.tags[SERVED_MODEL_TAG] == "served" and request.tags[PROVIDER_TAG] == "openai_compatible"
    assert request.asset_graph_subset is not None
    assert {key.partition_key for key in request.asset_graph_subset.iterate_asset_partitions()} == {"served"}
    assert json.loads(up.cursor) == ["heuristic", "served"]
