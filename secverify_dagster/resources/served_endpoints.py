"""Open-weights models served on our own OpenAI-compatible endpoints (vLLM, `transformers serve`): where each one is,
and whether it answers now.

An endpoint is found the way the model client finds it (registry.resolve_base_url: the spec's `base_url`, else the
variable its `base_url_env` names, e.g. SV_QWEN3_72B_BASE_URL=http://qwen3-72b:8000/v1), so the check asks the very
server the eval would call. It is up when `GET <base_url>/models` answers an OpenAI model list that names the
spec's model (a server that came up with another model is down for this one).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx

from secverify_dagster.resources.models import ModelSpec
from secverify_dagster.resources.models.openai_compat import PLACEHOLDER_KEY
from secverify_dagster.resources.models.registry import resolve_base_url


@dataclass(frozen=True)
class EndpointHealth:
    model_id: str
    base_url: str
    up: bool
    reason: str


def served_endpoints(registry: Mapping[str, ModelSpec]) -> dict[str, str]:
    """Model id → base URL of every openai_compatible model whose endpoint is configured here."""
    return {
        model_id: base_url
        for model_id, spec in registry.items()
        if spec.provider == "openai_compatible" and (base_url := resolve_base_url(spec))
    }


def check_endpoint(spec: ModelSpec, base_url: str, *, timeout_s: float) -> EndpointHealth:
    """`GET <base_url>/models` with the key the client would send; up when the list names spec.model."""
    url = f"{base_url.rstrip('/')}/models"
    key = (os.environ.get(spec.api_key_env) if spec.api_key_env else None) or PLACEHOLDER_KEY

    def health(up: bool, reason: str) -> EndpointHealth:
        return EndpointHealth(spec.id, base_url, up, reason)

    try:
        reply = httpx.get(url, headers={"Authorization": f"Bearer {key}"}, timeout=timeout_s)
    except httpx.HTTPError as error:
        return health(False, f"endpoint down: {url}: {type(error).__name__}: {error}")
    if reply.status_code != 200:
        return health(False, f"endpoint down: {url} answered HTTP {reply.status_code}")
    try:
        served = [str(entry["id"]) for entry in reply.json()["data"]]
    except (ValueError, KeyError, TypeError):
        return health(False, f"endpoint down: {url} did not answer an OpenAI model list")
    if spec.model not in served:
        return health(False, f"endpoint serves {', '.join(served) or 'no model'}, not {spec.model} ({url})")
    return health(True, f"{url} serves {spec.model}")


def check_endpoints(
    registry: Mapping[str, ModelSpec], model_ids: Collection[str], *, timeout_s: float
) -> dict[str, EndpointHealth]:
    """The health of the configured endpoints among model_ids, checked at once (a blackholed host costs one
    timeout, not one per model)."""
    endpoints = {model_id: url for model_id, url in served_endpoints(registry).items() if model_id in model_ids}
    if not endpoints:
        return {}
    with ThreadPoolExecutor(max_workers=min(len(endpoints), 16), thread_name_prefix="endpoint-health") as pool:
        checks = {
            model_id: pool.submit(check_endpoint, registry[model_id], url, timeout_s=timeout_s)
            for model_id, url in endpoints.items()
        }
        return {model_id: check.result() for model_id, check in checks.items()}


def without_down_endpoints(
    pairs: list[tuple[str, str]], down: Mapping[str, str]
) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """(environment, model) pairs split into those to request and, for models whose endpoint is down, "env:model"
    → the reason (as cadences.runnable_pairs names what it leaves out)."""
    kept = [(env_id, model_id) for env_id, model_id in pairs if model_id not in down]
    left_out = {f"{env_id}:{model_id}": down[model_id] for env_id, model_id in pairs if model_id in down}
    return kept, left_out
