"""E2 sv-env-config-verification as a `verifiers` environment: verify and patch a Kubernetes/Terraform config, in
one turn or (include_tools) with the scanners as a tool the model calls within our budget."""

from __future__ import annotations

import asyncio
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
from sv_env_config_verification import prompts
from sv_env_config_verification.rollout import Episode, execute_call
from sv_env_config_verification.tools import SCAN, ToolBox, ToolCall, tool_specs
from sv_shared.contracts import Environment, Item, Message
from sv_shared.registry import ENV_NAMES, get_environment

ENV_ID = "e2"
BUDGET = get_environment(ENV_ID).episodes.budget


class ScannerToolset(vf.Toolset[vf.ToolsetConfig, ToolAccount]):
    """The `scan` tool of our tool-using episode: the oracle's scanners on the item's file (or a revised text),
    at most `max_tool_calls` executed per rollout; later calls are refused with our message."""

    TOOL_PREFIX = None  # the model sees `scan`, as in our native protocol

    async def setup_task(self, task: SecverifyTaskData) -> None:
        episodes = get_environment(ENV_ID).episodes
        item = task.item
        self.toolbox = ToolBox(episodes.scan_tool, episodes.tool_names(), item["filename"], item["content"])
        self.episode = Episode(messages=[])

    @vf.tool
    async def scan(self, tool: str, content: str | None = None) -> str:
        call = ToolCall(
            id=SCAN, name=SCAN, arguments={"tool": tool, **({} if content is None else {"content": content})}
        )
        result = await asyncio.to_thread(execute_call, self.episode, self.toolbox, call, BUDGET)
        account = self.state
        account.tool_calls = self.episode.tool_calls
        account.refused_calls = self.episode.refused_calls
        account.invalid_calls = self.episode.invalid_calls
        return result

    scan.__doc__ = tool_specs([])[0]["function"]["description"]


class ConfigVerificationTask(component_task(ENV_ID, [config_weights(get_environment(ENV_ID))], ToolUseTask)):
    """A config posed once, or (include_tools) with the scanners served for its rollout."""

    TOOLSET = ScannerToolset


class Taskset(SecverifyTaskset, vf.Taskset[ConfigVerificationTask, SecverifyTasksetConfig]):
    ENV_ID = ENV_ID

    def messages(self, env: Environment, item: Item) -> list[Message]:
        if not self.config.include_tools:
            return env.episodes.messages(item)
        return prompts.build_tool_messages(
            env.episodes.observation(item),
            protocol="native",
            tools=env.episodes.tool_names(),
            max_tool_calls=BUDGET.max_tool_calls,
            max_turns=BUDGET.max_turns,
        )


class ConfigVerificationEnvConfig(SecverifyEnvConfig):
    agent: vf.AgentConfig = local_agent(max_turns=BUDGET.max_turns)
    """The policy's seat: local, at most `tools.max_turns` model turns (configs/envs/e2.yaml)."""


class ConfigVerificationEnv(SecverifyEnv, vf.Env[ConfigVerificationEnvConfig]):
    """The single-agent env with E2's turn budget."""


Env = ConfigVerificationEnv
Harness = SecverifyChatHarness


def load_environment(**kwargs: Any) -> vf.Env:
    """The environment with these taskset/env settings (split="dev", n=8, include_tools=True, agent={...}, …)."""
    return load_seed_environment(ENV_NAMES[ENV_ID], **kwargs)


if __name__ == "__main__":
    ScannerToolset.run()
