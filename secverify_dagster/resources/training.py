"""Resources the training assets use: where metrics and lineage go (Weights & Biases through dagster-wandb, offline
by default) and which GPUs a training run may use."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import dagster as dg

from sv_shared.config import outputs_dir


def wandb_dir() -> Path:
    """Where W&B writes: $WANDB_DIR, else outputs/wandb (offline runs land in its wandb/offline-run-* folders).

    W&B stages the files it copies into an artifact under its data folder until they are uploaded; unless the user
    chose other folders, staging and cache live here too, so an offline run's folder and the files its artifacts
    name travel together to the machine that runs `wandb sync`."""
    directory = Path(os.environ.get("WANDB_DIR") or outputs_dir() / "wandb")
    directory.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("WANDB_DATA_DIR", str(directory / "data"))
    os.environ.setdefault("WANDB_CACHE_DIR", str(directory / "cache"))
    return directory


class TrackingResource(dg.ConfigurableResource):
    """Training metrics to W&B (projects security-verifiers-sft / security-verifiers-rl, named by the recipes), and
    checkpoints and eval summaries as W&B artifacts in `artifacts_project` (secverify_dagster.publishing.
    wandb_artifacts).

    offline (default): runs are written under outputs/wandb/ and need no key (`wandb sync` uploads them later);
    online: authenticates through dagster-wandb's resource with the key in `api_key_env`; disabled: no W&B at all."""

    mode: Literal["offline", "online", "disabled"] = "offline"
    api_key_env: str = "WANDB_API_KEY"
    """NAME of the environment variable that holds the key (never the key itself)."""
    host: str = "https://api.wandb.ai"
    artifacts_project: str = "security-verifiers"
    """The one project every checkpoint, dataset, base model and eval summary artifact goes to: W&B's lineage links
    artifacts within a project, so a checkpoint and its parent, data and evals must share one."""

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
        if self.mode == "offline":
            # Nothing to log in to: W&B is imported (seconds) only when a step logs to it.
            return
        key = os.environ.get(self.api_key_env)
        if not key:
            raise dg.Failure(f"W&B is online but {self.api_key_env} is not set; set it, or use mode offline")
        from dagster_wandb import wandb_resource  # imported here: it takes seconds

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
