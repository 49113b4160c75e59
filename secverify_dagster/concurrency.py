"""What the instance's limits key on (dagster.yaml): run tags by the model a run calls, and pools of steps that hold
a model in their own process.

Run tags: the run queue launches one local model run at a time (the CPU holds one model), a few runs per API
provider, a few per served model (its own vLLM server). Pools limit steps across every run, queued or in-process:
"local-model" for steps that load a model into their process on the CPU, "gpu" for training on the GPU.
"""

from __future__ import annotations

from typing import Literal

from secverify_dagster.resources.models import ModelSpec

PROVIDER_TAG = "secverify/provider"
"""The provider of the model a run calls (openai, anthropic, openai_compatible, local_transformers, baseline)."""
SERVED_MODEL_TAG = "secverify/served-model"
"""The registry id of a model served on our own endpoint: each endpoint is its own server, with its own limit."""

LOCAL_MODEL_POOL = "local-model"
GPU_POOL = "gpu"


def provider_tags(spec: ModelSpec) -> dict[str, str]:
    """The run tags of a run that calls this model."""
    tags = {PROVIDER_TAG: spec.provider}
    if spec.provider == "openai_compatible":
        tags[SERVED_MODEL_TAG] = spec.id
    return tags


def training_pool(profile: Literal["cpu", "gpu"]) -> str:
    """The pool of a training step (and of its checkpoint's safety scan) by the recipe's profile."""
    return GPU_POOL if profile == "gpu" else LOCAL_MODEL_POOL
