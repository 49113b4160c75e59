"""Training recipes: typed, strict configs read from configs/sft/<name>.yaml and configs/rlft/<name>.yaml.

A recipe holds everything a training run depends on besides its data and its starting weights: method (full or
LoRA), optimiser settings, steps, batch, reward-weight overrides per environment (RLFT), vLLM and W&B settings. Its
hash (`recipe_hash`) names the run it produces, so a changed recipe never resumes another recipe's checkpoints.

Models are strict like every project config: a string where a number belongs, or an unknown key, is an error that
names the file and the field. (YAML reads `5e-5` as a string: write learning rates as `5.0e-5`.)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, PositiveInt, model_validator

from sv_shared.config import (
    ConfigError,
    ConfigModel,
    EnvConfig,
    RewardWeightSettings,
    outputs_dir,
    project_root,
    read_config,
    validate_config,
)
from sv_shared.config import read_yaml as _read_yaml
from sv_shared.data.hashing import sha256_hex, stable_json
from sv_shared.training.checkpoints import list_checkpoints

NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
"""Recipe names and model ids: lower case, digits, '.', '_' and '-' (file stems, partition keys; no path parts)."""

ENV_IDS: tuple[str, ...] = ("e1", "e2", "e3", "e4", "e5", "e6")
DIALOGUE_ENVS: frozenset[str] = frozenset({"e5", "e6"})
"""Environments whose episodes are dialogues (their reward comes from the episode rollout, not a completion)."""
TOOL_ENVS: frozenset[str] = frozenset({"e2", "e4"})
"""Environments whose items may also be played as tool-using episodes (`tools: true`)."""
JOINT_ENVS: tuple[str, str] = ("e5", "e6")
"""Attacker and defender environments of rlft-joint."""


def _name(value: str) -> str:
    if not NAME_PATTERN.fullmatch(value):
        raise ValueError(f"{value!r} is not a valid name (lower case letters, digits, '.', '_', '-'; no '/')")
    return value


def _env_id(value: str) -> str:
    if value not in ENV_IDS:
        raise ValueError(f"unknown environment {value!r}; known: {', '.join(ENV_IDS)}")
    return value


Name = Annotated[str, AfterValidator(_name)]
EnvId = Annotated[str, AfterValidator(_env_id)]
Positive = Annotated[float, Field(gt=0.0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]


class LoraSettings(ConfigModel):
    """peft LoRA adapter; merged into the base weights before the final model is saved."""

    r: PositiveInt = 16
    alpha: PositiveInt = 32
    dropout: float = Field(default=0.05, ge=0.0, lt=1.0)
    target_modules: list[str] | Literal["all-linear"] = "all-linear"


class GpuSettings(ConfigModel):
    """Used by a "gpu" profile only."""

    bf16: bool = True
    devices: PositiveInt = 1
    """GPUs (processes) the launcher starts; the effective batch is per-device batch × accumulation × devices."""


class VllmSettings(ConfigModel):
    """vLLM generation inside GRPO (GPU only): colocated in the trainer process, or a separate `trl vllm-serve`."""

    enabled: bool = False
    mode: Literal["colocate", "server"] = "colocate"
    gpu_memory_utilization: float = Field(default=0.3, gt=0.0, le=1.0)
    """Colocate mode: share of GPU memory vLLM takes (server mode: pass it to the server instead)."""
    tensor_parallel_size: PositiveInt = 1
    """Colocate mode: GPUs one vLLM engine spans (server mode: pass it to the server instead)."""
    server_host: str = "127.0.0.1"
    server_port: int = Field(default=8000, ge=1, le=65535)
    max_model_length: PositiveInt | None = None
    """vLLM context window (None: from the model config); at least the longest prompt + max_completion_length."""
    enable_sleep_mode: bool = False


class JointSettings(ConfigModel):
    """rlft-joint: attacker (E5) and defender (E6) trained in alternating rounds against frozen counterparts.

    Round 1 trains `first_side` against the other side's frozen counterpart; each later round trains the other
    side against the checkpoint the previous round produced (when `update_counterparts`), else against the fixed
    ids below. Each round runs the recipe's `max_steps` steps."""

    rounds: PositiveInt
    first_side: Literal["attacker", "defender"] = "attacker"
    frozen_attacker: Name
    """Registry id of the attacker the defender trains against until an attacker checkpoint exists."""
    frozen_defender: Name
    """Registry id of the defender (E5's target) the attacker trains against until a defender checkpoint exists."""
    update_counterparts: bool = True

    def sides(self) -> list[str]:
        """The side trained in each round, alternating from `first_side`."""
        order = ["attacker", "defender"] if self.first_side == "attacker" else ["defender", "attacker"]
        return [order[index % 2] for index in range(self.rounds)]


class EarlyStopping(ConfigModel):
    """Early stopping on dev reward (sv_shared.training.early_stopping): measured at every save."""

    dev_items: PositiveInt = 16
    """Dev items per environment the model answers at each checkpoint (a seeded sample of the curated dev split)."""
    patience: PositiveInt = 2
    """Checkpoints in a row without a gain that stop the run."""
    min_delta: NonNegative = 0.0
    """A gain must exceed this to count."""


class _TrainingRecipe(ConfigModel):
    """What SFT and RLFT recipes share."""

    name: Name
    envs: list[EnvId] = Field(min_length=1)
    method: Literal["full", "lora"] = "full"
    lora: LoraSettings | None = None
    learning_rate: Positive
    max_steps: PositiveInt | None = None
    """Optimizer steps; when set it wins over num_train_epochs (transformers' rule)."""
    num_train_epochs: Positive | None = None
    per_device_train_batch_size: PositiveInt
    gradient_accumulation_steps: PositiveInt = 1
    save_steps: PositiveInt
    logging_steps: PositiveInt = 1
    save_total_limit: PositiveInt | None = 2
    """Checkpoints kept under the run (the newest is what a resume starts from)."""
    seed: int = 42
    activation_checkpointing: bool = True
    """Recompute activations in the backward pass (TRL's default). Measured with SmolLM2 on 2 CPU cores: no speed
    difference either way, and off costs ~1.2 GB more peak memory (SFT and GRPO alike)."""
    profile: Literal["cpu", "gpu"] = "cpu"
    gpu: GpuSettings | None = None
    """GPU settings of a "gpu" profile (left out: the defaults); a "cpu" profile must not carry them."""
    early_stopping: EarlyStopping | None = None
    """Stop on dev reward and keep the best checkpoint's weights (None: train max_steps and keep the last)."""

    @model_validator(mode="after")
    def _consistent(self) -> _TrainingRecipe:
        if len(set(self.envs)) != len(self.envs):
            raise ValueError(f"envs lists an environment twice: {self.envs}")
        if self.method == "lora" and self.lora is None:
            raise ValueError("method 'lora' needs a lora section (r, alpha, dropout, target_modules)")
        if self.method == "full" and self.lora is not None:
            raise ValueError("a lora section is given but method is 'full' (set method: lora, or drop the section)")
        if self.max_steps is None and self.num_train_epochs is None:
            raise ValueError("set max_steps or num_train_epochs (or both: max_steps wins)")
        if self.profile == "cpu" and self.gpu is not None:
            raise ValueError("a gpu section is given for a 'cpu' profile (set profile: gpu, or drop the section)")
        return self

    @property
    def gpu_settings(self) -> GpuSettings:
        return self.gpu or GpuSettings()


class SftRecipe(_TrainingRecipe):
    """Supervised fine-tuning on verified examples (reference answers and teacher answers the verifier accepts)."""

    stage: Literal["sft"]
    base_model: Name
    """Registry id of the model fine-tuned (configs/models.yaml)."""
    max_length: PositiveInt
    """Tokens per example (longer ones are truncated)."""
    completion_only_loss: bool = True
    """Loss on the assistant target only (the prompt is context)."""
    min_reward: float = Field(ge=0.0, le=1.0)
    """Examples whose target the verifier rewards below this are dropped from the SFT data."""
    teacher: Name | None = None
    """Registry id of a teacher model whose verified answers join the reference examples (None: references only)."""
    items_per_env: PositiveInt | None = None
    """Train items taken per environment (None: all)."""
    wandb_project: str = Field(default="security-verifiers-sft", min_length=1)


class RlftRecipe(_TrainingRecipe):
    """GRPO on the verifiers' rewards: one environment, a mix of environments, or attacker/defender jointly."""

    stage: Literal["rlft-single", "rlft-mixed", "rlft-joint"]
    init_from: Name
    """An SFT recipe name (the run continues that recipe's checkpoint) or a registry model id."""
    reward_weights: dict[EnvId, dict[str, NonNegative]] = Field(default_factory=dict)
    """Per environment, component → weight overriding configs/envs/<env>.yaml's reward_weights (partial: the
    components not named keep the config's weight)."""
    ablation: Name | None = None
    """A reward ablation of configs/ablations/<env>.yaml trained under: its reward-weight overrides are merged into
    reward_weights when the recipe is loaded (weights the recipe names itself win), so the manifest's recipe holds
    both the ablation's name and the weights it resolved to."""
    num_generations: int = Field(ge=2)
    max_completion_length: PositiveInt
    temperature: Positive
    """Sampling temperature of the rollouts (0 would make every completion of a group alike: nothing to learn)."""
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    beta: NonNegative
    """KL coefficient against the reference (initial) model; 0 skips loading the reference model."""
    items_per_env: PositiveInt
    """Train items taken per environment."""
    resample_without_spread: int = Field(default=0, ge=0, le=4)
    """Times a generation batch is sampled again while some of its groups earned equal rewards (such a group has no
    advantage, so it teaches nothing); the attempt with the most groups with spread is trained on, and the groups still
    without spread are left out of the loss (sv_shared.training.grpo_spread counts both)."""
    tools: bool = False
    """Play E2/E4 items as tool-using episodes (ToolUse.rollout through the episode rollout function)."""
    joint: JointSettings | None = None
    vllm: VllmSettings = VllmSettings()
    wandb_project: str = Field(default="security-verifiers-rl", min_length=1)

    @model_validator(mode="after")
    def _stage_rules(self) -> RlftRecipe:
        envs = set(self.envs)
        if self.stage == "rlft-single" and len(self.envs) != 1:
            raise ValueError(f"rlft-single trains one environment, got {self.envs}")
        if self.stage == "rlft-mixed":
            if len(self.envs) < 2:
                raise ValueError(f"rlft-mixed mixes two or more environments, got {self.envs}")
            if envs & DIALOGUE_ENVS:
                raise ValueError(
                    f"rlft-mixed mixes single-answer environments; {sorted(envs & DIALOGUE_ENVS)} are dialogues "
                    "(train them with rlft-single or rlft-joint)"
                )
        if self.stage == "rlft-joint":
            if sorted(self.envs) != sorted(JOINT_ENVS):
                raise ValueError(f"rlft-joint trains attacker and defender: envs must be {list(JOINT_ENVS)}")
            if self.joint is None:
                raise ValueError("rlft-joint needs a joint section (rounds, first_side, frozen_attacker/defender)")
        elif self.joint is not None:
            raise ValueError(f"a joint section is given for stage {self.stage!r} (only rlft-joint takes one)")
        if self.tools and not envs <= TOOL_ENVS:
            raise ValueError(f"tools: true plays tool episodes, which only {sorted(TOOL_ENVS)} have; envs: {self.envs}")
        for env_id, overrides in self.reward_weights.items():
            if env_id not in envs:
                raise ValueError(f"reward_weights names {env_id!r}, which is not one of this recipe's envs")
            check_reward_components(env_id, overrides)
        if self.vllm.enabled and self.profile != "gpu":
            raise ValueError("vllm.enabled needs profile: gpu (vLLM runs on GPUs only)")
        processes = self.gpu_settings.devices if self.profile == "gpu" else 1
        generation_batch = self.per_device_train_batch_size * self.gradient_accumulation_steps * processes
        if generation_batch % self.num_generations:
            raise ValueError(
                f"per_device_train_batch_size × gradient_accumulation_steps × devices ({generation_batch}) must be a "
                f"multiple of num_generations ({self.num_generations}): GRPO groups whole prompts"
            )
        return self


Recipe = SftRecipe | RlftRecipe


# -- reward weights -----------------------------------------------------------------------------------------------


def reward_weight_model(env_id: str) -> type[RewardWeightSettings]:
    """The typed reward weights of an environment's config; a named error for environments without them."""
    from sv_shared.registry import config_model

    field = config_model(env_id).model_fields.get("reward_weights")
    annotation = field.annotation if field is not None else None
    if not (isinstance(annotation, type) and issubclass(annotation, RewardWeightSettings)):
        raise ValueError(
            f"{env_id} has no reward_weights in its config (its reward is shaped by its own section of "
            f"configs/envs/{env_id}.yaml): it takes no reward-weight override"
        )
    return annotation


def check_reward_components(env_id: str, overrides: dict[str, float]) -> None:
    """Raise unless every overridden component is one of the environment's reward components."""
    known = list(reward_weight_model(env_id).model_fields)
    unknown = sorted(set(overrides) - set(known))
    if unknown:
        raise ValueError(f"reward_weights.{env_id}: unknown component(s) {unknown}; {env_id} has {known}")


def shaped_env_config(env_id: str, overrides: dict[str, float] | None, root: Path | None = None) -> EnvConfig:
    """configs/envs/<env_id>.yaml with its reward_weights overridden (validated: finite, not all zero)."""
    from sv_shared.registry import load_env_config

    config = load_env_config(env_id, root)
    if not overrides:
        return config
    model = reward_weight_model(env_id)
    check_reward_components(env_id, overrides)
    weights = model.model_validate({**config.reward_weights.as_mapping(), **overrides})
    return config.model_copy(update={"reward_weights": weights})


def effective_reward_weights(recipe: RlftRecipe, root: Path | None = None) -> dict[str, dict[str, float]]:
    """The reward weights each environment trains with (config merged with the recipe), for checkpoint manifests.
    Dialogue environments, whose reward has no weights section, map to {}."""
    weights: dict[str, dict[str, float]] = {}
    for env_id in recipe.envs:
        config = shaped_env_config(env_id, recipe.reward_weights.get(env_id), root)
        section = getattr(config, "reward_weights", None)
        weights[env_id] = section.as_mapping() if isinstance(section, RewardWeightSettings) else {}
    return weights


def ablation_reward_weights(env_id: str, ablation_name: str, root: Path | None = None) -> dict[str, float]:
    """The reward-weight overrides of an ablation of configs/ablations/<env>.yaml; ConfigError when it is unknown or
    changes anything but reward weights (training under another episode config is another recipe, not an ablation)."""
    from sv_shared.runs.ablations import AblationError, load_ablation

    try:
        ablation = load_ablation(env_id, ablation_name, root)
    except AblationError as error:
        raise ConfigError(str(error)) from None
    weights: dict[str, float] = {}
    for path, value in ablation.overrides.items():
        section, _, component = path.partition(".")
        if section != "reward_weights" or not component or "." in component:
            raise ConfigError(
                f"{ablation.where} overrides {path!r}: a training recipe's ablation may only change reward weights "
                "(reward_weights.<component>)"
            )
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{ablation.where}: {path} must be a number, got {value!r}")
        weights[component] = float(value)
    return weights


def resolve_ablation(recipe: RlftRecipe, root: Path | None = None) -> RlftRecipe:
    """The recipe with its ablation's reward weights merged into reward_weights for each of its environments (the
    recipe's own weights win); unchanged when it names no ablation."""
    if recipe.ablation is None:
        return recipe
    merged = {
        env_id: {**ablation_reward_weights(env_id, recipe.ablation, root), **recipe.reward_weights.get(env_id, {})}
        for env_id in recipe.envs
    }
    return validate_config(
        RlftRecipe, recipe.as_dict() | {"reward_weights": merged}, source=f"rlft recipe {recipe.name!r}"
    )


# -- files ----------------------------------------------------------------------------------------------------------


def recipes_dir(kind: Literal["sft", "rlft"], root: Path | None = None) -> Path:
    return (root or project_root()) / "configs" / kind


def _names(kind: Literal["sft", "rlft"], root: Path | None) -> list[str]:
    folder = recipes_dir(kind, root)
    if not folder.is_dir():
        return []
    return sorted(path.stem for path in folder.glob("*.yaml") if NAME_PATTERN.fullmatch(path.stem))


def sft_recipe_names(root: Path | None = None) -> list[str]:
    return _names("sft", root)


def rlft_recipe_names(root: Path | None = None) -> list[str]:
    return _names("rlft", root)


def _registry_model_ids(root: Path | None) -> set[str]:
    """The model registry's ids: configs/models.yaml's, and every trained checkpoint's under outputs/checkpoints (the
    registry lists them too), so a run can start from, or learn from, a checkpoint (RLFT continued from RLFT)."""
    path = (root or project_root()) / "configs" / "models.yaml"
    models = _read_yaml(path).get("models") or {}
    configured = set(models) if isinstance(models, dict) else set()
    return configured | {manifest.model_id for manifest in list_checkpoints(outputs_dir() / "checkpoints")}


def _read_recipe(kind: Literal["sft", "rlft"], model: type[Recipe], name: str, root: Path | None) -> Any:
    if not NAME_PATTERN.fullmatch(name):
        raise ConfigError(f"{name!r} is not a recipe name (lower case letters, digits, '.', '_', '-')")
    path = recipes_dir(kind, root) / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(_names(kind, root)) or "none"
        raise ConfigError(f"no {kind} recipe {name!r}: {path} is missing (known: {known})")
    recipe = read_config(model, path)
    if recipe.name != name:
        raise ConfigError(f"{path}: name must be the file's stem {name!r}, got {recipe.name!r}")
    return recipe


def load_sft_recipe(name: str, root: Path | None = None, *, check_references: bool = True) -> SftRecipe:
    """configs/sft/<name>.yaml, validated; with check_references, its base and teacher models must be registry ids."""
    recipe: SftRecipe = _read_recipe("sft", SftRecipe, name, root)
    if check_references:
        models = _registry_model_ids(root)
        for field, value in (("base_model", recipe.base_model), ("teacher", recipe.teacher)):
            if value is not None and value not in models:
                raise ConfigError(
                    f"sft recipe {name!r}: {field} {value!r} is not a registry model (configs/models.yaml or a "
                    "trained checkpoint)"
                )
    return recipe


def load_rlft_recipe(name: str, root: Path | None = None, *, check_references: bool = True) -> RlftRecipe:
    """configs/rlft/<name>.yaml, validated, its ablation resolved (resolve_ablation); with check_references,
    init_from must name an SFT recipe or a registry model (not both), and the joint counterparts must be registry
    models."""
    recipe: RlftRecipe = resolve_ablation(_read_recipe("rlft", RlftRecipe, name, root), root)
    if check_references:
        models = _registry_model_ids(root)
        init_kind(recipe, root, models=models)
        if recipe.joint is not None:
            for field in ("frozen_attacker", "frozen_defender"):
                value = getattr(recipe.joint, field)
                if value not in models:
                    raise ConfigError(f"rlft recipe {name!r}: joint.{field} {value!r} is not a registry model")
    return recipe


def init_kind(recipe: RlftRecipe, root: Path | None = None, *, models: set[str] | None = None) -> str:
    """What an RLFT recipe's init_from names: "sft" (an SFT recipe) or "model" (a registry model id)."""
    models = _registry_model_ids(root) if models is None else models
    is_sft = recipe.init_from in sft_recipe_names(root)
    is_model = recipe.init_from in models
    if is_sft and is_model:
        raise ConfigError(
            f"rlft recipe {recipe.name!r}: init_from {recipe.init_from!r} is both an SFT recipe and a registry model"
        )
    if not (is_sft or is_model):
        raise ConfigError(
            f"rlft recipe {recipe.name!r}: init_from {recipe.init_from!r} is neither an SFT recipe (configs/sft/) "
            "nor a registry model (configs/models.yaml or a trained checkpoint)"
        )
    return "sft" if is_sft else "model"


def recipe_hash(recipe: Recipe) -> str:
    """sha256 of the recipe's canonical JSON (every field, defaults included)."""
    return sha256_hex(stable_json(recipe.as_dict()))
