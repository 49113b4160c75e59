"""E5 sv-env-redteam-attack as a `verifiers` environment: the library's agent is the attacker; our dialogue runner
plays each of its messages to secverify's target (a registry model or a rule defender) and judges every reply."""

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

ENV_ID = "e5"
RedteamAttackTask = dialogue_task(ENV_ID, "attack")


class Taskset(SecverifyTaskset, vf.Taskset[RedteamAttackTask, SecverifyTasksetConfig]):
    ENV_ID = ENV_ID


class RedteamAttackEnvConfig(DialogueEnvConfig):
    attacker: vf.AgentConfig = local_agent()
    """The model under evaluation (CLI: --env.attacker.*), local by default."""
    target: str = ""
    """The target's registry model id (a model, or one of E6's rule defenders: policy-defender, refuse-all,
    naive-complier); empty: configs/envs/e5.yaml dialogue.target, as `secverify eval --target`."""


class Env(DialogueEnv, vf.Env[RedteamAttackEnvConfig]):
    ENV_ID = ENV_ID

    def counterpart_models(self) -> dict[str, str]:
        return {"target": self.config.target} if self.config.target else {}


Harness = SecverifyChatHarness


def load_environment(**kwargs: Any) -> vf.Env:
    """The environment with these settings (n=8, target="policy-defender", judge="local", attacker={...}, …)."""
    return load_seed_environment(ENV_NAMES[ENV_ID], **kwargs)
