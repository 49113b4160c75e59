"""SFT and GRPO runs on a tiny random Llama (seconds): resume, final model folder, history, LoRA merge, GPU settings."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from tiny_models import save_tiny_model, smollm2_tokenizer

from sv_shared.registry import get_environment
from sv_shared.training.recipes import RlftRecipe, SftRecipe, load_rlft_recipe, load_sft_recipe
from sv_shared.training.rewards import grpo_prompt_rows, grpo_reward_functions
from sv_shared.training.trainers import (
    TrainingDataError,
    device_settings,
    newest_checkpoint,
    run_grpo,
    run_sft,
    sft_rows,
)

SFT = {
    "name": "tiny-sft",
    "stage": "sft",
    "base_model": "smollm2-135m-instruct",
    "envs": ["e1"],
    "learning_rate": 1.0e-3,
    "max_steps": 2,
    "per_device_train_batch_size": 2,
    "save_steps": 1,
    "max_length": 256,
    "min_reward": 0.5,
}
RLFT = {
    "name": "tiny-grpo",
    "stage": "rlft-single",
    "envs": ["e1"],
    "init_from": "smollm2-135m-instruct",
    "num_generations": 2,
    "max_completion_length": 8,
    "temperature": 1.0,
    "beta": 0.0,
    "learning_rate": 1.0e-3,
    "max_steps": 2,
    "per_device_train_batch_size": 2,
    "save_steps": 1,
    "items_per_env": 4,
}


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random LlamaForCausalLM (hidden 32, 2 layers) with SmolLM2's tokenizer and a generation config."""
    return save_tiny_model(tmp_path_factory.mktemp("tiny-llama"), smollm2_tokenizer())


def _examples(n: int = 4) -> list[dict[str, Any]]:
    env = get_environment("e1")
    items = env.data.load_source("embedded").to_dicts()[:n]
    return [
        {
            "messages": [
                *env.episodes.messages(item),
                {"role": "assistant", "content": json.dumps({"label": item["label"], "confidence": 0.9})},
            ]
        }
        for item in items
    ]


def _assert_plain_model_folder(folder: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    for name in ("config.json", "model.safetensors", "generation_config.json", "tokenizer.json"):
        assert (folder / name).is_file(), name
    assert not (folder / "adapter_config.json").exists()  # LoRA merged: a plain HF folder
    AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)
    AutoTokenizer.from_pretrained(folder, local_files_only=True)
    GenerationConfig.from_pretrained(folder, local_files_only=True)


def _losses(history: list[dict[str, Any]]) -> dict[int, float]:
    return {entry["step"]: entry["loss"] for entry in history if "loss" in entry}


def test_sft_saves_a_loadable_model_and_resumes_from_the_newest_checkpoint(tiny_model: Path, tmp_path: Path) -> None:
    first = run_sft(SftRecipe.model_validate(SFT), base_model_dir=tiny_model, examples=_examples(), output_dir=tmp_path)
    assert (first.steps, first.steps_this_run, first.resumed_from) == (2, 2, None)
    assert (tmp_path / "checkpoint-1").is_dir() and (tmp_path / "checkpoint-2").is_dir()
    assert first.model_dir == tmp_path / "model"
    _assert_plain_model_folder(first.model_dir)
    assert set(_losses(first.history)) == {1, 2}
    assert first.peak_memory_kind == "max_rss" and first.peak_memory_mb > 0
    assert first.train_s > 0 and first.steps_per_s > 0

    longer = SftRecipe.model_validate({**SFT, "max_steps": 4})
    second = run_sft(longer, base_model_dir=tiny_model, examples=_examples(), output_dir=tmp_path)
    assert second.resumed_from == tmp_path / "checkpoint-2"
    assert (second.steps, second.steps_this_run) == (4, 2)  # the global step continued from 2, not from 0
    assert set(_losses(second.history)) == {1, 2, 3, 4}  # the earlier logs travel in the checkpoint
    assert _losses(second.history)[1] == _losses(first.history)[1]
    _assert_plain_model_folder(second.model_dir)


def test_a_run_stopped_after_its_last_step_does_not_train_past_max_steps(tiny_model: Path, tmp_path: Path) -> None:
    # 8 examples at batch 2 is 4 steps an epoch: max_steps 3 ends mid-epoch, where resuming would take a 4th step.
    recipe = SftRecipe.model_validate({**SFT, "max_steps": 3})
    first = run_sft(recipe, base_model_dir=tiny_model, examples=_examples(8), output_dir=tmp_path)
    shutil.rmtree(first.model_dir)  # the process died before writing the final model
    again = run_sft(recipe, base_model_dir=tiny_model, examples=_examples(8), output_dir=tmp_path)
    assert (again.steps, again.steps_this_run) == (3, 0) and again.resumed_from == tmp_path / "checkpoint-3"
    assert not (tmp_path / "checkpoint-4").exists()
    assert (again.model_dir / "config.json").is_file()


def test_lora_sft_is_merged_into_a_plain_model(tiny_model: Path, tmp_path: Path) -> None:
    from safetensors.torch import load_file

    recipe = SftRecipe.model_validate(
        {**SFT, "method": "lora", "lora": {"r": 4, "alpha": 8, "target_modules": ["q_proj", "v_proj"]}}
    )
    result = run_sft(recipe, base_model_dir=tiny_model, examples=_examples(), output_dir=tmp_path)
    _assert_plain_model_folder(result.model_dir)
    base = load_file(tiny_model / "model.safetensors")
    trained = load_file(result.model_dir / "model.safetensors")
    assert set(trained) == set(base)  # no lora_A/lora_B tensors left
    q_name = next(name for name in base if name.endswith("q_proj.weight"))
    k_name = next(name for name in base if name.endswith("k_proj.weight"))
    assert not trained[q_name].equal(base[q_name])  # the adapter's update is in the merged weights
    assert trained[k_name].equal(base[k_name])  # layers without an adapter are untouched


def test_grpo_logs_each_reward_function_and_resumes(tiny_model: Path, tmp_path: Path) -> None:
    env = get_environment("e1")
    rows = grpo_prompt_rows(env, env.data.load_source("embedded").to_dicts()[:4])
    functions, weights = grpo_reward_functions({"e1": env})
    kwargs = {"base_model_dir": tiny_model, "rows": rows, "reward_funcs": functions, "reward_weights": weights}
    first = run_grpo(RlftRecipe.model_validate(RLFT), output_dir=tmp_path, **kwargs)
    assert first.steps == 2 and first.resumed_from is None
    logged = [entry for entry in first.history if "reward" in entry]
    assert len(logged) == 2
    for key in ("rewards/e1/reward/mean", "rewards/e1/accuracy/mean", "rewards/e1/format/mean", "frac_reward_zero_std"):
        assert key in logged[0], key
    _assert_plain_model_folder(first.model_dir)

    second = run_grpo(RlftRecipe.model_validate({**RLFT, "max_steps": 3}), output_dir=tmp_path, **kwargs)
    assert second.resumed_from == tmp_path / "checkpoint-2" and (second.steps, second.steps_this_run) == (3, 1)


def test_grpo_learns_from_a_graded_reward(tiny_model: Path, tmp_path: Path) -> None:
    """A reward that differs within a group gives advantages, a loss and gradients (a constant one gives none)."""
    env = get_environment("e1")
    rows = grpo_prompt_rows(env, env.data.load_source("embedded").to_dicts()[:4])

    def length_reward(prompts: list[Any], completions: list[Any], **_: Any) -> list[float]:
        return [len(completion[-1]["content"]) / 100 for completion in completions]

    result = run_grpo(
        RlftRecipe.model_validate(RLFT),
        base_model_dir=tiny_model,
        rows=rows,
        reward_funcs=[length_reward],
        reward_weights=[1.0],
        output_dir=tmp_path,
    )
    logged = [entry for entry in result.history if "reward" in entry]
    assert any(entry["frac_reward_zero_std"] < 1 for entry in logged)
    assert any(entry["grad_norm"] > 0 for entry in logged)


def test_bad_inputs_fail_before_training(tiny_model: Path, tmp_path: Path) -> None:
    recipe = RlftRecipe.model_validate(RLFT)
    common = {"base_model_dir": tiny_model, "output_dir": tmp_path, "reward_funcs": [len]}
    with pytest.raises(ValueError, match="nothing to optimise"):
        run_grpo(recipe, rows=[{}], reward_weights=[0.0], **common)
    with pytest.raises(ValueError, match="weights"):
        run_grpo(recipe, rows=[{}], reward_weights=[], **common)
    with pytest.raises(TrainingDataError, match="no GRPO rows"):
        run_grpo(recipe, rows=[], reward_weights=[1.0], **common)
    sft = SftRecipe.model_validate(SFT)
    with pytest.raises(ValueError, match="report_to"):
        run_sft(sft, base_model_dir=tiny_model, examples=_examples(1), output_dir=tmp_path, report_to="mlflow")
    with pytest.raises(FileNotFoundError, match=r"config\.json missing"):
        run_sft(sft, base_model_dir=tmp_path, examples=_examples(1), output_dir=tmp_path)
    assert not any(tmp_path.iterdir())  # nothing was written


def test_wandb_offline_runs_get_the_recipe_project_and_are_finished(
    tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import wandb

    # W&B keeps its settings process-wide from its first call (an eval's artifact in this worker, say): forget them,
    # so the directory below is the one it writes to.
    wandb.teardown()
    monkeypatch.setenv("WANDB_MODE", "offline")  # nothing leaves the machine
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.delenv("WANDB_PROJECT", raising=False)
    recipe = SftRecipe.model_validate({**SFT, "max_steps": 1})
    for run in ("a", "b"):
        run_sft(
            recipe,
            base_model_dir=tiny_model,
            examples=_examples(2),
            output_dir=tmp_path / run,
            report_to="wandb",
            run_name=f"run-{run}",
        )
        assert wandb.run is None  # finished: the next training run opens its own
    runs = sorted((tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 2
    for folder in runs:
        data = b"".join(path.read_bytes() for path in folder.glob("*.wandb"))
        assert b"security-verifiers-sft" in data
    assert "WANDB_PROJECT" not in os.environ  # restored


def test_sft_rows_take_sft_examples_and_refuse_bad_ones() -> None:
    from sv_shared.training.sft_files import SftExample

    example = SftExample.model_validate(
        {
            "messages": [{"role": "user", "content": "q \ud800"}, {"role": "assistant", "content": "a"}],
            "env_id": "e1",
            "item_id": "x",
            "source": "reference",
            "reward": 1.0,
        }
    )
    assert sft_rows([example]) == [
        {"prompt": [{"role": "user", "content": "q \ufffd"}], "completion": [{"role": "assistant", "content": "a"}]}
    ]
    with pytest.raises(TrainingDataError, match="must be the assistant"):
        sft_rows([{"messages": [{"role": "assistant", "content": "a"}, {"role": "user", "content": "q"}]}])
    with pytest.raises(TrainingDataError, match="text role and content"):
        sft_rows([{"messages": [{"role": "user", "content": 3}, {"role": "assistant", "content": "a"}]}])
    with pytest.raises(TrainingDataError, match="at least a prompt"):
        sft_rows([{"messages": "hello"}])
    with pytest.raises(TrainingDataError, match="no SFT examples"):
        sft_rows([])


def test_newest_checkpoint_takes_the_highest_complete_step(tmp_path: Path) -> None:
    assert newest_checkpoint(tmp_path / "missing") is None
    for step in (2, 9, 10):
        (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
    (tmp_path / "checkpoint-11").mkdir()  # interrupted: no trainer state yet
    (tmp_path / "checkpoint-x").mkdir()
    (tmp_path / "checkpoint-12").write_text("a file, not a checkpoint")
    assert newest_checkpoint(tmp_path) == tmp_path / "checkpoint-10"


# -- GPU settings (configuration only: no GPU here) ---------------------------------------------------------------


def test_cpu_settings_and_gpu_profiles_refuse_the_cpu() -> None:
    assert device_settings(SftRecipe.model_validate(SFT), gpu=False) == {
        "use_cpu": True,
        "bf16": False,
        "activation_checkpointing": True,
    }
    no_checkpointing = SftRecipe.model_validate({**SFT, "activation_checkpointing": False})
    assert device_settings(no_checkpointing, gpu=False)["activation_checkpointing"] is False
    assert device_settings(RlftRecipe.model_validate(RLFT), gpu=False)["use_vllm"] is False
    with pytest.raises(RuntimeError, match="gpu profile"):
        device_settings(load_rlft_recipe("e1-gpu"), gpu=False)
    assert device_settings(load_sft_recipe("e1"), gpu=True) == {
        "use_cpu": False,
        "bf16": False,  # a cpu recipe on a GPU machine runs there in fp32, as written
        "activation_checkpointing": True,
    }


def test_vllm_colocate_and_server_settings_are_grpo_config_fields() -> None:
    from trl import GRPOConfig

    recipe = load_rlft_recipe("e1-gpu")
    colocate = device_settings(recipe, gpu=True)
    assert colocate == {
        "use_cpu": False,
        "bf16": True,
        "activation_checkpointing": True,
        "use_vllm": True,
        "vllm_mode": "colocate",
        "vllm_enable_sleep_mode": False,
        "vllm_max_model_length": 512,
        "vllm_gpu_memory_utilization": 0.3,
        "vllm_tensor_parallel_size": 1,
    }
    server_recipe = recipe.model_copy(
        update={"vllm": recipe.vllm.model_copy(update={"mode": "server", "server_port": 8123})}
    )
    server = device_settings(server_recipe, gpu=True)
    assert server["vllm_mode"] == "server" and server["vllm_server_port"] == 8123
    assert server["vllm_server_host"] == "127.0.0.1" and "vllm_gpu_memory_utilization" not in server
    fields = {field.name for field in dataclasses.fields(GRPOConfig)}
    for settings in (colocate, server):
        assert set(settings) <= fields
        # bf16 needs a GPU to validate; the vLLM fields are checked by GRPOConfig itself here.
        config = GRPOConfig(output_dir="unused", **{**settings, "bf16": False}, num_generations=8, report_to="none")
        assert config.use_vllm and config.vllm_mode == settings["vllm_mode"]


# -- the real local model (slow) ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_sft_on_smollm2_gives_a_model_the_local_provider_serves(tmp_path: Path) -> None:
    """One SFT step on the real SmolLM2 (exported from its GGUF), then secverify's local provider loads the result."""
    from secverify_dagster.resources.models.local_model import LocalModel, export_hf_folder, unload_local_models
    from secverify_dagster.resources.models.types import ChatRequest

    base = export_hf_folder(tmp_path / "smollm2")
    unload_local_models()  # the export loaded the GGUF model; training needs the memory
    recipe = SftRecipe.model_validate({**SFT, "learning_rate": 5.0e-5, "max_steps": 1, "max_length": 320})
    result = run_sft(recipe, base_model_dir=base, examples=_examples(2), output_dir=tmp_path / "run")
    assert result.steps == 1 and all(entry["loss"] > 0 for entry in result.history if "loss" in entry)
    _assert_plain_model_folder(result.model_dir)
    model = LocalModel(result.model_dir)
    env = get_environment("e1")
    item = env.data.load_source("embedded").to_dicts()[0]
    [completion] = model.generate_batch([ChatRequest(env.episodes.messages(item), {"max_tokens": 8})])
    assert completion.usage.completion_tokens > 0


def _dev_probe(scores: list[float]):
    """E1's first dev-like items with a verifier whose reward is scripted per save (the tiny model answers noise)."""
    from sv_shared.training.early_stopping import DevProbe

    env = get_environment("e1")
    items = env.data.load_source("embedded").to_dicts()[:2]
    rewards = iter(scores)

    class Scripted:
        answers_are_labels = True

        def __init__(self) -> None:
            self.current = 0.0
            self.calls = 0

        def score(self, item: dict[str, Any], completion: str) -> Any:
            if self.calls % len(items) == 0:
                self.current = next(rewards)
            self.calls += 1
            return dataclasses.replace(env.verifier.score(item, completion), reward=self.current)

    return DevProbe(
        env_id="e1",
        items=items,
        prompts=[env.episodes.messages(item) for item in items],
        verifier=Scripted(),  # type: ignore[arg-type]
        label_column="label",
        max_new_tokens=4,
    )


def test_sft_stops_on_dev_reward_and_keeps_the_best_weights(tiny_model: Path, tmp_path: Path) -> None:
    """Dev reward 0.1 at the start, 0.2, 0.5, 0.4, 0.3 at saves 1-4 with patience 2: the run stops at step 4 and its
    final model holds step 2's weights, the best (saved in best-dev/), with every measurement in the history."""
    from safetensors.torch import load_file

    recipe = SftRecipe.model_validate(SFT | {"max_steps": 8, "early_stopping": {"dev_items": 2, "patience": 2}})
    with pytest.raises(ValueError, match="no dev items"):
        run_sft(recipe, base_model_dir=tiny_model, examples=_examples(), output_dir=tmp_path / "none")
    result = run_sft(
        recipe,
        base_model_dir=tiny_model,
        examples=_examples(),
        output_dir=tmp_path / "run",
        dev_probes=[_dev_probe([0.1, 0.2, 0.5, 0.4, 0.3, 0.9])],
    )
    measured = [(entry["step"], entry["dev_reward"]) for entry in result.history if "dev_reward" in entry]
    assert measured == [(0, 0.1), (1, 0.2), (2, 0.5), (3, 0.4), (4, 0.3)]
    assert result.steps == 4 and result.best_step == 2
    assert json.loads((tmp_path / "run" / "best-dev" / "best.json").read_text())["step"] == 2
    final = load_file(result.model_dir / "model.safetensors")
    best = load_file(tmp_path / "run" / "best-dev" / "model.safetensors")
    last = load_file(tmp_path / "run" / "checkpoint-4" / "model.safetensors")
    assert all((final[name] == best[name]).all() for name in best)
    assert any(not (final[name] == last[name]).all() for name in last)


def test_a_run_no_save_of_which_beats_its_start_ends_on_its_starting_weights(tiny_model: Path, tmp_path: Path) -> None:
    """The starting model is measured first (step 0) and is the first candidate: dev 0.6 at the start, 0.5 and 0.4
    at saves 1-2 with patience 2 stop the run at step 2 on the weights it started from (best step 0)."""
    from safetensors.torch import load_file

    recipe = SftRecipe.model_validate(SFT | {"max_steps": 8, "early_stopping": {"dev_items": 2, "patience": 2}})
    result = run_sft(
        recipe,
        base_model_dir=tiny_model,
        examples=_examples(),
        output_dir=tmp_path / "run",
        dev_probes=[_dev_probe([0.6, 0.5, 0.4, 0.9])],
    )
    measured = [(entry["step"], entry["dev_reward"]) for entry in result.history if "dev_reward" in entry]
    assert measured == [(0, 0.6), (1, 0.5), (2, 0.4)]
    assert (result.steps, result.best_step) == (2, 0)
    final = load_file(result.model_dir / "model.safetensors")
    start = load_file(tiny_model / "model.safetensors")
    assert all((final[name] == start[name]).all() for name in start)


def test_grpo_resamples_then_leaves_out_groups_without_reward_spread_and_counts_them(
    tiny_model: Path, tmp_path: Path
) -> None:
    """A reward that never differs within a group: every generation batch is sampled again `resample` times, then
    its groups are left out of the loss (no tokens count, no gradient) and each is counted; a reward with spread in
    every group is trained on at once."""
    env = get_environment("e1")
    rows = grpo_prompt_rows(env, env.data.load_source("embedded").to_dicts()[:4])
    recipe = RlftRecipe.model_validate(RLFT | {"resample_without_spread": 2})

    def constant(prompts: list[Any], completions: list[Any], **_: Any) -> list[float]:
        return [0.5] * len(completions)

    flat = run_grpo(
        recipe, base_model_dir=tiny_model, rows=rows, reward_funcs=[constant], reward_weights=[1.0], output_dir=tmp_path
    )
    # 2 steps × 1 group (2 prompts' worth of answers = 1 prompt × 2 generations per step)
    assert flat.spread == {
        "groups": 2,
        "without_spread_first_sample": 2,
        "recovered_by_resampling": 0,
        "left_out": 2,
        "resamples": 4,
    }
    logged = [entry for entry in flat.history if "groups/without_spread" in entry]
    assert [entry["groups/without_spread"] for entry in logged] == [1.0, 1.0]
    assert [entry["groups/resamples"] for entry in logged] == [2.0, 2.0]
    assert all(entry["grad_norm"] == 0 for entry in flat.history if "grad_norm" in entry)

    calls = iter(range(10_000))

    def always_spread(prompts: list[Any], completions: list[Any], **_: Any) -> list[float]:
        return [float(next(calls) % 2) for _ in completions]

    graded = run_grpo(
        recipe,
        base_model_dir=tiny_model,
        rows=rows,
        reward_funcs=[always_spread],
        reward_weights=[1.0],
        output_dir=tmp_path / "graded",
    )
    assert graded.spread is not None
    assert (graded.spread["left_out"], graded.spread["resamples"]) == (0, 0)
    assert any(entry["grad_norm"] > 0 for entry in graded.history if "grad_norm" in entry)


def test_groups_with_spread_reads_whole_groups() -> None:
    import torch

    from sv_shared.training.grpo_spread import groups_with_spread

    advantages = torch.tensor([0.0, 0.0, 0.7, -0.7, 0.0, 1e-9])
    assert groups_with_spread(advantages, 2).tolist() == [False, True, False]
    with pytest.raises(ValueError, match="groups of 4"):
        groups_with_spread(advantages, 4)


def test_grpo_stops_on_dev_reward_and_keeps_the_best_weights(tiny_model: Path, tmp_path: Path) -> None:
    """GRPO early stopping is SFT's: dev reward at each save, patience, the best weights as the final model."""
    env = get_environment("e1")
    rows = grpo_prompt_rows(env, env.data.load_source("embedded").to_dicts()[:4])
    functions, weights = grpo_reward_functions({"e1": env})
    recipe = RlftRecipe.model_validate(RLFT | {"max_steps": 6, "early_stopping": {"dev_items": 2, "patience": 1}})
    kwargs = {"base_model_dir": tiny_model, "rows": rows, "reward_funcs": functions, "reward_weights": weights}
    with pytest.raises(ValueError, match="no dev items"):
        run_grpo(recipe, output_dir=tmp_path / "none", **kwargs)
    result = run_grpo(recipe, output_dir=tmp_path / "run", dev_probes=[_dev_probe([0.1, 0.4, 0.6, 0.1, 0.9])], **kwargs)
    measured = [(entry["step"], entry["dev_reward"]) for entry in result.history if "dev_reward" in entry]
    assert measured == [(0, 0.1), (1, 0.4), (2, 0.6), (3, 0.1)]
    assert (result.steps, result.best_step) == (3, 2)
