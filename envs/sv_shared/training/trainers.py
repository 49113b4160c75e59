"""SFT and GRPO training runs on TRL (SFTTrainer, GRPOTrainer), resumable, with a plain HF folder as their output.

A run owns one output_dir: checkpoints (`checkpoint-<step>`, every `save_steps`) and, when it finishes, the final
model in `output_dir/model` (config.json, safetensors, tokenizer, generation_config; LoRA adapters merged), which
transformers, TRL, vLLM and secverify's local provider load. A run whose output_dir already holds checkpoints
resumes from the newest complete one. Nothing here reaches a model hub: every load is local_files_only.

GPU paths (bf16, vLLM colocate/server) are configuration only here (`device_settings`): they are unit-tested by
the trainer configs they produce, and run where a GPU is present.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sv_shared.config import outputs_dir
from sv_shared.training.recipes import Recipe, RlftRecipe, SftRecipe
from sv_shared.training.rewards import clean_text

if TYPE_CHECKING:  # transformers loads only when a run starts
    from sv_shared.training.early_stopping import DevProbe, DevRewardStopping

MODEL_FOLDER = "model"
CHECKPOINT_PATTERN = re.compile(r"^checkpoint-(\d+)$")
TRAINER_STATE = "trainer_state.json"
"""Written last into a checkpoint: a checkpoint folder without it was interrupted and is not resumed from."""
REPORT_TO = ("none", "wandb")


class TrainingDataError(ValueError):
    """Training examples or rows that cannot be trained on; the message names the example and the reason."""


@dataclass(frozen=True)
class TrainingResult:
    """What a training run did: where its checkpoints and final model are, how far and how fast it went."""

    output_dir: Path
    model_dir: Path
    """The final model: a plain HF folder (config, safetensors, tokenizer, generation_config)."""
    steps: int
    """Global step reached (counting steps done before a resume)."""
    steps_this_run: int
    train_s: float
    """Wall time of this process's trainer.train()."""
    steps_per_s: float
    peak_memory_mb: float
    peak_memory_kind: str
    """"max_rss" (CPU: the process's peak resident memory) or "cuda_max_allocated" (GPU: torch's peak)."""
    history: list[dict[str, Any]] = field(default_factory=list)
    """Every logged dict (loss, learning_rate, reward, rewards/<func>/mean, frac_reward_zero_std, ...) with its
    step, including those logged before a resume (they travel in the checkpoint's trainer state)."""
    resumed_from: Path | None = None
    best_step: int | None = None
    """The step whose weights the final model holds when the run stopped on dev reward (None: the last step)."""
    spread: dict[str, int] | None = None
    """GRPO: groups with and without reward spread (sv_shared.training.grpo_spread.SpreadCounts); None for SFT."""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for name in ("output_dir", "model_dir", "resumed_from"):
            data[name] = None if data[name] is None else str(data[name])
        return data


# -- device settings -------------------------------------------------------------------------------------------------


def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def device_settings(recipe: Recipe, gpu: bool) -> dict[str, Any]:
    """Trainer-config kwargs for where the run goes: CPU (fp32, no vLLM) or GPU (bf16 and, for GRPO, vLLM in
    colocate or server mode as the recipe says). A "gpu" profile refuses to run on CPU rather than crawl.
    `gpu.devices` is for the launcher (accelerate/torchrun processes), not a trainer kwarg."""
    is_rlft = isinstance(recipe, RlftRecipe)
    checkpointing = recipe.activation_checkpointing
    if not gpu:
        if recipe.profile == "gpu":
            raise RuntimeError(f"recipe {recipe.name!r} is a gpu profile and no GPU is available here")
        settings: dict[str, Any] = {"use_cpu": True, "bf16": False, "activation_checkpointing": checkpointing}
        if is_rlft:
            settings["use_vllm"] = False
        return settings
    settings = {
        "use_cpu": False,
        "bf16": recipe.profile == "gpu" and recipe.gpu_settings.bf16,
        "activation_checkpointing": checkpointing,
    }
    if not is_rlft:
        return settings
    vllm = recipe.vllm
    if not vllm.enabled:
        settings["use_vllm"] = False
        return settings
    settings.update(use_vllm=True, vllm_mode=vllm.mode, vllm_enable_sleep_mode=vllm.enable_sleep_mode)
    if vllm.max_model_length is not None:
        settings["vllm_max_model_length"] = vllm.max_model_length
    if vllm.mode == "colocate":
        settings.update(
            vllm_gpu_memory_utilization=vllm.gpu_memory_utilization,
            vllm_tensor_parallel_size=vllm.tensor_parallel_size,
        )
    else:
        settings.update(vllm_server_host=vllm.server_host, vllm_server_port=vllm.server_port)
    return settings


# -- checkpoints -----------------------------------------------------------------------------------------------------


def newest_checkpoint(output_dir: Path) -> Path | None:
    """The complete `checkpoint-<step>` with the highest step under output_dir (None: nothing to resume)."""
    output_dir = Path(output_dir)
    if not output_dir.is_dir():
        return None
    found = []
    for path in output_dir.iterdir():
        match = CHECKPOINT_PATTERN.fullmatch(path.name)
        if match and path.is_dir() and (path / TRAINER_STATE).is_file():
            found.append((int(match.group(1)), path))
    return max(found)[1] if found else None


# -- shared plumbing -------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _environment(recipe: Recipe, report_to: str) -> Iterator[None]:
    """Offline hubs for the run and, when reporting to W&B, the recipe's project, runs written under outputs/wandb
    and offline unless WANDB_MODE says otherwise (the tracking resource sets both before W&B's first call in the
    process, which is when W&B reads them), never a model file or weight histogram. Restored afterwards.

    A W&B run the trainer opens is finished when training ends, so the next training run in the same process gets
    its own run (and project) instead of logging into this one; a run the caller opened is left alone."""
    values = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if report_to == "wandb":
        wandb_dir = Path(os.environ.get("WANDB_DIR") or outputs_dir() / "wandb")
        wandb_dir.mkdir(parents=True, exist_ok=True)
        values.update(
            WANDB_PROJECT=recipe.wandb_project,
            WANDB_DIR=str(wandb_dir),
            WANDB_MODE=os.environ.get("WANDB_MODE") or "offline",
            WANDB_LOG_MODEL="false",
            WANDB_WATCH="false",
        )
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    wandb = None
    if report_to == "wandb":
        import wandb
    outer_run = wandb.run if wandb is not None else None
    try:
        yield
    finally:
        if wandb is not None and outer_run is None and wandb.run is not None:
            wandb.finish()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _common_args(
    recipe: Recipe, output_dir: Path, report_to: str, gpu: bool, run_name: str | None = None
) -> dict[str, Any]:
    if report_to not in REPORT_TO:
        raise ValueError(f"report_to is one of {REPORT_TO}, got {report_to!r}")
    args: dict[str, Any] = {
        "output_dir": str(output_dir),
        "learning_rate": recipe.learning_rate,
        "max_steps": recipe.max_steps if recipe.max_steps is not None else -1,
        "per_device_train_batch_size": recipe.per_device_train_batch_size,
        "gradient_accumulation_steps": recipe.gradient_accumulation_steps,
        "save_strategy": "steps",
        "save_steps": recipe.save_steps,
        "save_total_limit": recipe.save_total_limit,
        "logging_strategy": "steps",
        "logging_steps": recipe.logging_steps,
        "seed": recipe.seed,
        "data_seed": recipe.seed,
        "report_to": report_to,
        "run_name": run_name or recipe.name,
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
        **device_settings(recipe, gpu),
    }
    if recipe.num_train_epochs is not None:
        args["num_train_epochs"] = recipe.num_train_epochs
    return args


def _check_model_folder(base_model_dir: Path) -> None:
    if not (Path(base_model_dir) / "config.json").is_file():
        raise FileNotFoundError(f"no model folder at {base_model_dir} (config.json missing)")


def _load_tokenizer(base_model_dir: Path) -> Any:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base_model_dir, local_files_only=True)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def _load_model(base_model_dir: Path) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(Path(base_model_dir), local_files_only=True, dtype=torch.float32)


def _peft_config(recipe: Recipe) -> Any:
    if recipe.method != "lora" or recipe.lora is None:
        return None
    from peft import LoraConfig

    lora = recipe.lora
    return LoraConfig(
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=lora.target_modules,
        task_type="CAUSAL_LM",
    )


def _peak_memory_mb(gpu: bool) -> tuple[float, str]:
    if gpu:
        import torch

        return torch.cuda.max_memory_allocated() / 2**20, "cuda_max_allocated"
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return (peak / 2**20 if sys.platform == "darwin" else peak / 2**10), "max_rss"  # bytes on macOS, KiB on Linux


def _save_final_model(trainer: Any, tokenizer: Any, base_model_dir: Path, output_dir: Path) -> Path:
    """The trained weights (LoRA merged) with tokenizer and generation config, written whole or not at all."""
    from transformers import GenerationConfig

    model = trainer.accelerator.unwrap_model(trainer.model)
    if hasattr(model, "merge_and_unload"):  # a peft model: fold the adapter into the base weights
        model = model.merge_and_unload()
    if (Path(base_model_dir) / "generation_config.json").is_file():
        model.generation_config = GenerationConfig.from_pretrained(base_model_dir, local_files_only=True)
    dest = Path(output_dir) / MODEL_FOLDER
    tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    if dest.exists():
        shutil.rmtree(dest)
    tmp.rename(dest)
    return dest


def _train(
    trainer: Any,
    *,
    tokenizer: Any,
    base_model_dir: Path,
    output_dir: Path,
    gpu: bool,
    best: DevRewardStopping | None = None,
) -> TrainingResult:
    checkpoint = newest_checkpoint(output_dir)
    if gpu:
        import torch

        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    if checkpoint is not None and 0 < trainer.args.max_steps <= _checkpoint_step(checkpoint):
        # The run had reached max_steps when its process stopped (before the final model was written): the
        # checkpoint is the result. Resuming mid-epoch at max_steps would train one step past it.
        from transformers import TrainerState

        trainer._load_from_checkpoint(str(checkpoint))
        trainer.state = TrainerState.load_from_json(str(checkpoint / TRAINER_STATE))
    else:
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    train_s = time.perf_counter() - started
    start_step = _checkpoint_step(checkpoint)
    steps = int(trainer.state.global_step)
    best_step = None
    if best is not None and best.best_step is not None:
        best_step = best.best_step
        if best_step != steps:  # the run went on past its best dev reward: the final model is the best one
            trainer._load_from_checkpoint(str(best.best_dir))
    model_dir = _save_final_model(trainer, tokenizer, base_model_dir, output_dir)
    peak, kind = _peak_memory_mb(gpu)
    done = max(0, steps - start_step)
    return TrainingResult(
        output_dir=Path(output_dir),
        model_dir=model_dir,
        steps=steps,
        steps_this_run=done,
        train_s=train_s,
        steps_per_s=done / train_s if train_s > 0 else 0.0,
        peak_memory_mb=peak,
        peak_memory_kind=kind,
        history=[dict(entry) for entry in trainer.state.log_history],
        resumed_from=checkpoint,
        best_step=best_step,
    )


def _checkpoint_step(checkpoint: Path | None) -> int:
    if checkpoint is None:
        return 0
    match = CHECKPOINT_PATTERN.fullmatch(checkpoint.name)
    return int(match.group(1)) if match else 0


# -- SFT -------------------------------------------------------------------------------------------------------------


def _field(value: Any, name: str) -> Any:
    """A mapping's key or an object's attribute (SftExample and its ChatMessage are pydantic models)."""
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)


def sft_rows(examples: Iterable[Any]) -> list[dict[str, Any]]:
    """Prompt-completion rows from SFT examples (objects or mappings with `messages`, the last the assistant
    target): the loss falls on the target only when the recipe says completion_only_loss."""
    rows = []
    for index, example in enumerate(examples):
        messages = _field(example, "messages")
        if not isinstance(messages, Sequence) or isinstance(messages, str) or len(messages) < 2:
            raise TrainingDataError(f"example {index}: messages must be a list of at least a prompt and a target")
        cleaned = []
        for position, message in enumerate(messages):
            role, content = _field(message, "role"), _field(message, "content")
            if not isinstance(role, str) or not isinstance(content, str):
                raise TrainingDataError(f"example {index}: message {position} needs text role and content")
            cleaned.append({"role": role, "content": clean_text(content)})
        if cleaned[-1]["role"] != "assistant":
            raise TrainingDataError(f"example {index}: the last message is the target and must be the assistant's")
        rows.append({"prompt": cleaned[:-1], "completion": cleaned[-1:]})
    if not rows:
        raise TrainingDataError("no SFT examples to train on")
    return rows


def _dev_stopping(
    recipe: Recipe, probes: Sequence[DevProbe], tokenizer: Any, output_dir: Path
) -> DevRewardStopping | None:
    if recipe.early_stopping is None:
        return None
    if not probes:
        raise ValueError(f"{recipe.name}: early_stopping is set but no dev items were given to measure it on")
    from sv_shared.training.early_stopping import DevRewardStopping

    return DevRewardStopping(
        probes,
        tokenizer=tokenizer,
        output_dir=output_dir,
        patience=recipe.early_stopping.patience,
        min_delta=recipe.early_stopping.min_delta,
    )


def run_sft(
    recipe: SftRecipe,
    *,
    base_model_dir: Path,
    examples: Iterable[Any],
    output_dir: Path,
    report_to: str = "none",
    gpu: bool | None = None,
    run_name: str | None = None,
    dev_probes: Sequence[DevProbe] = (),
) -> TrainingResult:
    """Fine-tune base_model_dir on the examples with TRL's SFTTrainer; resumes from output_dir's newest checkpoint.
    gpu=None: use CUDA when it is available. run_name: the W&B run's name (default: the recipe's name). dev_probes:
    each environment's dev sample, measured at every save when the recipe stops early (recipe.early_stopping)."""
    from datasets import Dataset
    from transformers import set_seed
    from trl import SFTConfig, SFTTrainer

    _check_model_folder(base_model_dir)
    gpu = cuda_available() if gpu is None else gpu
    output_dir = Path(output_dir)
    with _environment(recipe, report_to):
        config = SFTConfig(
            **_common_args(recipe, output_dir, report_to, gpu, run_name),
            max_length=recipe.max_length,
            completion_only_loss=recipe.completion_only_loss,
            packing=False,
        )
        dataset = Dataset.from_list(sft_rows(examples))
        tokenizer = _load_tokenizer(base_model_dir)
        set_seed(recipe.seed)
        stopping = _dev_stopping(recipe, dev_probes, tokenizer, output_dir)
        trainer = SFTTrainer(
            model=_load_model(base_model_dir),
            args=config,
            train_dataset=dataset,
            processing_class=tokenizer,
            peft_config=_peft_config(recipe),
            callbacks=[stopping] if stopping else None,
        )
        return _train(
            trainer, tokenizer=tokenizer, base_model_dir=base_model_dir, output_dir=output_dir, gpu=gpu, best=stopping
        )


# -- GRPO ------------------------------------------------------------------------------------------------------------


def run_grpo(
    recipe: RlftRecipe,
    *,
    base_model_dir: Path,
    rows: Iterable[Mapping[str, Any]],
    reward_funcs: Sequence[Callable[..., Any]],
    reward_weights: Sequence[float],
    output_dir: Path,
    report_to: str = "none",
    rollout_func: Callable[..., dict[str, Any]] | None = None,
    gpu: bool | None = None,
    run_name: str | None = None,
    dev_probes: Sequence[DevProbe] = (),
) -> TrainingResult:
    """GRPO on base_model_dir with TRL's GRPOTrainer (sv_shared.training.grpo_spread: groups without reward spread
    resampled, then left out, and counted in the result's `spread`): rows from grpo_prompt_rows, reward functions and
    weights from grpo_reward_functions (or the episode rollout's), optionally a rollout_func for multi-turn episodes.
    Resumes from output_dir's newest checkpoint. gpu=None: use CUDA when it is available. run_name: the W&B run's
    name (default: the recipe's name). dev_probes: as for run_sft (early stopping on dev reward)."""
    from datasets import Dataset
    from transformers import set_seed
    from trl import GRPOConfig

    from sv_shared.training.grpo_spread import SpreadAwareGRPOTrainer

    if len(reward_funcs) != len(reward_weights) or not reward_funcs:
        raise ValueError(f"{len(reward_funcs)} reward functions but {len(reward_weights)} weights")
    if not any(weight > 0 for weight in reward_weights):
        raise ValueError("every reward weight is 0: there is nothing to optimise")
    rows = list(rows)
    if not rows:
        raise TrainingDataError("no GRPO rows to train on")
    _check_model_folder(base_model_dir)
    gpu = cuda_available() if gpu is None else gpu
    output_dir = Path(output_dir)
    with _environment(recipe, report_to):
        config = GRPOConfig(
            **_common_args(recipe, output_dir, report_to, gpu, run_name),
            num_generations=recipe.num_generations,
            max_completion_length=recipe.max_completion_length,
            temperature=recipe.temperature,
            top_p=recipe.top_p,
            beta=recipe.beta,
            reward_weights=[float(weight) for weight in reward_weights],
            remove_unused_columns=False,
            log_completions=False,
        )
        dataset = Dataset.from_list(rows)
        tokenizer = _load_tokenizer(base_model_dir)
        set_seed(recipe.seed)
        stopping = _dev_stopping(recipe, dev_probes, tokenizer, output_dir)
        trainer = SpreadAwareGRPOTrainer(
            model=_load_model(base_model_dir),
            reward_funcs=list(reward_funcs),
            args=config,
            train_dataset=dataset,
            processing_class=tokenizer,
            peft_config=_peft_config(recipe),
            rollout_func=rollout_func,
            callbacks=[stopping] if stopping else None,
            resample=recipe.resample_without_spread,
        )
        result = _train(
            trainer, tokenizer=tokenizer, base_model_dir=base_model_dir, output_dir=output_dir, gpu=gpu, best=stopping
        )
        return replace(result, spread=trainer.spread_counts.as_dict())
