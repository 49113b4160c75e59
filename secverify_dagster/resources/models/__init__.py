"""The model layer: every model call in secverify goes through here. Plain Python; no Dagster import.

- `load_registry()` reads configs/models.yaml into `ModelSpec`s; `reachability()` says whether one can run
  here.
- `open_client(spec, cache=...)` gives a `ModelClient` whose `complete_many()` returns `Completion`s or
  `ProviderError`s in request order, with caching, retries, bounded concurrency and cost accounting.
- The local model (SmolLM2-135M-Instruct) lives in `local_model` (`load_local_model`, `export_hf_folder`),
  imported lazily because torch is heavy.
"""

from sv_shared.execution.cache import JsonCache
from sv_shared.execution.retry import RetryPolicy

from .client import CACHE_NAMESPACE, ModelClient, cache_key, effective_params, open_client
from .registry import (
    MODEL_ID_PATTERN,
    Reachability,
    RegistryError,
    default_registry_path,
    load_registry,
    parse_registry,
    reachability,
    require_promoted,
    resolve_base_url,
    validate_model_id,
)
from .types import PROVIDERS, ChatRequest, Completion, ModelSpec, Price, ProviderError, Usage

__all__ = [
    "CACHE_NAMESPACE",
    "MODEL_ID_PATTERN",
    "PROVIDERS",
    "ChatRequest",
    "Completion",
    "JsonCache",
    "ModelClient",
    "ModelSpec",
    "Price",
    "ProviderError",
    "Reachability",
    "RegistryError",
    "RetryPolicy",
    "Usage",
    "cache_key",
    "default_registry_path",
    "effective_params",
    "load_registry",
    "open_client",
    "parse_registry",
    "reachability",
    "require_promoted",
    "resolve_base_url",
    "validate_model_id",
]
