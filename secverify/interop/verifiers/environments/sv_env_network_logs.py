"""E1 sv-env-network-logs as a `verifiers` environment: single-turn calibrated anomaly detection."""

from __future__ import annotations

from typing import Any

import verifiers.v1 as vf

from secverify.interop.verifiers.common import (
    SecverifyChatHarness,
    SecverifyEnv,
    SecverifyTaskset,
    SecverifyTasksetConfig,
    component_task,
    config_weights,
    load_seed_environment,
)
from sv_shared.registry import ENV_NAMES, get_environment

ENV_ID = "e1"


class NetworkLogsTask(component_task(ENV_ID, [config_weights(get_environment(ENV_ID))])):
    """An item posed once; the answer is scored by our verifier's components."""


class Taskset(SecverifyTaskset, vf.Taskset[NetworkLogsTask, SecverifyTasksetConfig]):
    ENV_ID = ENV_ID


Env = SecverifyEnv
Harness = SecverifyChatHarness


def load_environment(**kwargs: Any) -> vf.Env:
    """The environment with these taskset/env settings (split="dev", n=8, agent={...}, …)."""
    return load_seed_environment(ENV_NAMES[ENV_ID], **kwargs)
