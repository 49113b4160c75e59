"""The GPU check (scripts/gpu_check.py): its experiment trains the GPU recipe with vLLM from the base model for 20
steps, and the check refuses to start without vLLM rather than fall back. The check itself needs a GPU; its serving
and evaluation path runs here with `--server transformers` (see docs/how-to/train-a-checkpoint.md)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from file_modules import load_file_module

from sv_shared.config import project_root
from sv_shared.config.experiments import experiment_recipe, load_experiment
from sv_shared.training.recipes import RlftRecipe
from sv_shared.training.trainers import device_settings

REPO = project_root()


@pytest.fixture(scope="module")
def gpu_check() -> ModuleType:
    return load_file_module(REPO / "scripts" / "gpu_check.py")


def test_the_experiment_runs_20_grpo_steps_with_vllm_from_the_base_model(gpu_check: ModuleType) -> None:
    experiment, _ = load_experiment(gpu_check.EXPERIMENT.relative_to(REPO), REPO)
    recipe = experiment_recipe(experiment, REPO)
    assert isinstance(recipe, RlftRecipe) and recipe.envs == ["e1"] and recipe.profile == "gpu"
    assert (recipe.init_from, recipe.max_steps, recipe.num_generations) == ("smollm2-135m-instruct", 20, 8)
    settings = device_settings(recipe, gpu=True)
    assert settings["use_vllm"] is True and settings["vllm_mode"] == "colocate" and settings["bf16"] is True
    with pytest.raises(RuntimeError, match="no GPU"):
        device_settings(recipe, gpu=False)


def test_the_check_refuses_to_start_without_vllm(gpu_check: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_check, "machine", lambda: {"torch": "x", "cuda": False, "vllm": None})
    assert gpu_check.main(["--server", "vllm"]) == 2


def test_the_vllm_server_is_pinned_to_the_exported_folder_on_loopback(gpu_check: ModuleType, tmp_path: Path) -> None:
    command = gpu_check.server_command("vllm", tmp_path, 8123)
    assert command[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    pairs = dict(zip(command[3::2], command[4::2], strict=False))
    assert pairs["--model"] == pairs["--served-model-name"] == str(tmp_path) and pairs["--host"] == "127.0.0.1"
