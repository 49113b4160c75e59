"""E6 sv-env-redteam-defense as a `verifiers` environment: the library's agent is the defender, answering the
corpus's scripted conversations turn by turn in our dialogue runner; every reply is judged by our judge."""

from __future__ import annotations

from typing import Any

import verifiers.v1 as vf

from secverify.interop.verifiers.common import (
    SecverifyChatHarness,
    SecverifyTaskset,
    SecverifyTasksetConfig,
    load_seed_environment,
    local_agent,
)
from secverify.interop.verifiers.dialogue import DialogueEnv, DialogueEnvConfig, dialogue_task
from sv_shared.registry import ENV_NAMES

ENV_ID = "e6"
RedteamDefenseTask = dialogue_task(ENV_ID, "defense")


class Taskset(SecverifyTaskset, vf.Taskset[RedteamDefenseTask, SecverifyTasksetConfig]):
    ENV_ID = ENV_ID


class RedteamDefenseEnvConfig(DialogueEnvConfig):
    defender: vf.AgentConfig = local_agent()
    """The model under evaluation (CLI: --env.defender.*), local by default."""


class Env(DialogueEnv, vf.Env[RedteamDefenseEnvConfig]):
    ENV_ID = ENV_ID


Harness = SecverifyChatHarness


def load_environment(**kwargs: Any) -> vf.Env:
    """The environment with these settings (split="dev", n=8, judge="refusal-detector", defender={...}, …)."""
    return load_seed_environment(ENV_NAMES[ENV_ID], **kwargs)
