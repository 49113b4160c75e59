"""Tool-using episodes (E2 scanners, E4 URL reputation) on the library's tool mechanism.

Each tool is a `vf.Toolset` (an MCP server) that `Task.toolsets` serves per rollout when the taskset config says
`include_tools`; the chat harness offers it to the model as native function calls and loops until the model answers
without a call or the seat's `max_turns` (our turn budget) runs out. The budget and refusal rules are ours: the
toolset counts calls in the rollout's state (`ToolAccount`, synced with the trace), refuses calls past the budget with
our message, and the final answer is scored by our verifier, as `episodes.rollout` scores it; the accounting becomes
metrics.

The subprocess runtime runs a toolset as `python -m <its module>`; any other runtime packages the whole secverify
distribution into the sandbox, so subprocess (or a toolset `url` of a server started by hand) is the supported mode.
"""

from __future__ import annotations

from typing import Any, ClassVar

import verifiers.v1 as vf

from secverify.interop.verifiers.common import SecverifyTask, SecverifyTaskConfig, SecverifyTaskData


class ToolAccount(vf.State):
    """A rollout's tool accounting, shared between the tool server and the trace (the library's state channel)."""

    tool_calls: int = 0
    """Calls executed (within the budget); for E2 malformed ones too, as our rollout counts them."""
    refused_calls: int = 0
    """Calls refused because the budget was spent."""
    invalid_calls: int = 0
    """Executed calls whose arguments were wrong (unknown scanner, bad content)."""


class ToolUseTask(SecverifyTask, vf.Task[SecverifyTaskData, ToolAccount, SecverifyTaskConfig]):
    """A task that may be played with tools: its toolsets when `include_tools`, and the accounting as metrics."""

    TOOLSET: ClassVar[type[vf.Toolset]]
    """The env's tool server, one per rollout, run as a local subprocess (the library's default placement)."""

    @classmethod
    def toolsets(cls, config: SecverifyTaskConfig) -> list[vf.Toolset]:
        return [cls.TOOLSET(vf.ToolsetConfig())] if config.include_tools else []

    @vf.metric
    async def tool_use(self, trace: vf.Trace) -> dict[str, float]:
        """Model turns and tool calls (executed, refused past the budget, invalid), as `details["tools"]` has them."""
        account: Any = trace.state
        return {
            "turns": float(trace.num_turns),
            "tool_calls": float(account.tool_calls),
            "refused_calls": float(account.refused_calls),
            "invalid_calls": float(account.invalid_calls),
        }
