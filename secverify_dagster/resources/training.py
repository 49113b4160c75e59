"""Resources the training assets use: where metrics go (Weights & Biases through dagster-wandb, offline by default)
and which GPUs a training run may use."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Literal

import dagster as dg

from sv_shared.config import outputs_dir

OFFLINE_KEY = "offline-no-key"
"""What dagster-wandb's resource is given in offline mode: it requires a key, and offline runs never use one."""


class TrackingResource(dg.ConfigurableResource):
    """Training metrics to W&B (projects security-verifiers-sft / security-verifiers-rl, named by the recipes).

    offline (default): runs are written under outputs/wandb/ and need no key (`wandb sync` uploads them later);
    online: authenticates through dagster-wandb's resource with the key in `api_key_env`; disabled: no W&B at all."""

    mode: Literal["offline", "online", "disabled"] = "offline"
    api_key_env: str = "WANDB_API_KEY"
    """NAME of the environment variable that holds the key (never the key itself)."""
    host: str = "https://api.wandb.ai"

    def report_to(self) -> Literal["none", "wandb"]:
        return "none" if self.mode == "disabled" else "wandb"

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        if self.mode == "disabled":
            return
        # Set before W&B's first call in this process: later changes to its environment are ignored.
        wandb_dir = outputs_dir() / "wandb"
        wandb_dir.mkdir(parents=True, exist_ok=True)
        os.environ["WANDB_DIR"] = str(wandb_dir)
        os.environ["WANDB_MODE"] = self.mode
        key = os.environ.get(self.api_key_env) if self.mode == "online" else OFFLINE_KEY
        if not key:
            raise dg.Failure(f"W&B is online but {self.api_key_env} is not set; set it, or use mode offline")
        from dagster_wandb import wandb_resource  # imported here: it takes seconds, and only training runs need it

        wandb_resource(dg.build_init_resource_context(config={"api_key": key, "host": self.host}))


class GpuResource(dg.ConfigurableResource):
    """The GPUs a training run may use. devices: CUDA_VISIBLE_DEVICES for the run ("0", "0,1"; None: whatever the
    process sees). use_gpu: None trains on CUDA when it is available, False forces the CPU. How generation runs on
    the GPU (vLLM colocate or server mode, memory share, tensor parallelism) is the recipe's `vllm` section; a recipe
    with profile "gpu" refuses to run where no GPU is visible."""

    devices: str | None = None
    use_gpu: bool | None = None

    def settings(self) -> bool | None:
        return self.use_gpu

    @contextlib.contextmanager
    def visible_devices(self) -> Iterator[None]:
        if self.devices is None:
            yield
            return
        saved = os.environ.get("CUDA_VISIBLE_DEVICES")
        os.environ["CUDA_VISIBLE_DEVICES"] = self.devices
        try:
            yield
        finally:
            if saved is None:
                os.environ.pop("CUDA_VISIBLE_DEVICES", None)
            else:
                os.environ["CUDA_VISIBLE_DEVICES"] = saved
