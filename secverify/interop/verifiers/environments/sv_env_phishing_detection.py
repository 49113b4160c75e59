"""E4 sv-env-phishing-detection as a `verifiers` environment: classify an email, in one turn or (include_tools)
with the offline URL-reputation tool the model calls within our budget."""

from __future__ import annotations

import json
from typing import Any

import verifiers.v1 as vf

from secverify.interop.verifiers.common import (
    SecverifyChatHarness,
    SecverifyEnv,
    SecverifyEnvConfig,
    SecverifyTaskData,
    SecverifyTaskset,
    SecverifyTasksetConfig,
    component_task,
    config_weights,
    load_seed_environment,
    local_agent,
)
from secverify.interop.verifiers.tools import ToolAccount, ToolUseTask
from sv_env_phishing_detection.reputation import TOOL_NAME, TOOL_SPEC
from sv_shared.registry import ENV_NAMES, get_environment

ENV_ID = "e4"
BUDGET = get_environment(ENV_ID).config.tools.url_reputation.budget


class ReputationToolset(vf.Toolset[vf.ToolsetConfig, ToolAccount]):
    """The `url_reputation` tool of our tool-using episode: look-ups in the offline reputation store, `budget` per
    email; later calls are answered with our budget error, and every call counts, as in our rollout."""

    TOOL_PREFIX = None  # the model sees `url_reputation`, as in our native protocol

    async def setup_task(self, task: SecverifyTaskData) -> None:
        self.tool = get_environment(ENV_ID).episodes.reputation_tool()

    @vf.tool(name=TOOL_NAME)
    async def url_reputation(self, target: str) -> str:
        account = self.state
        refused = len(self.tool.transcript) >= self.tool.budget
        result = self.tool({"target": target})
        account.tool_calls = len(self.tool.transcript)
        account.refused_calls += refused
        return json.dumps(result)

    url_reputation.__doc__ = TOOL_SPEC["function"]["description"]


class PhishingDetectionTask(component_task(ENV_ID, [config_weights(get_environment(ENV_ID))], ToolUseTask)):
    """An email posed once, or (include_tools) with the URL-reputation tool served for its rollout."""

    TOOLSET = ReputationToolset


class Taskset(SecverifyTaskset, vf.Taskset[PhishingDetectionTask, SecverifyTasksetConfig]):
    """Single-turn and native tool mode pose the same messages (the tool is offered as a function, not in text)."""

    ENV_ID = ENV_ID


class PhishingDetectionEnvConfig(SecverifyEnvConfig):
    agent: vf.AgentConfig = local_agent(max_turns=BUDGET + 1)
    """The policy's seat: local, at most budget + 1 model turns, as our rollout allows."""


class PhishingDetectionEnv(SecverifyEnv, vf.Env[PhishingDetectionEnvConfig]):
    """The single-agent env with E4's turn budget."""


Env = PhishingDetectionEnv
Harness = SecverifyChatHarness


def load_environment(**kwargs: Any) -> vf.Env:
    """The environment with these taskset/env settings (split="dev", n=8, include_tools=True, agent={...}, …)."""
    return load_seed_environment(ENV_NAMES[ENV_ID], **kwargs)


if __name__ == "__main__":
    ReputationToolset.run()
