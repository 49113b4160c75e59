"""E2/E4 tool mode: our ToolUse.rollout (native function calling) played by inspect's model, as an inspect solver.

The episode is ours (budgets, refusals, malformed-call accounting, the tools themselves), so its verdict is the one
`secverify eval --include-tools` records; the transcript becomes the sample's conversation."""

from __future__ import annotations

from collections.abc import Mapping

import anyio
from inspect_ai.model import ModelOutput, get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver

from secverify.interop.inspect.bridge import sync_policy
from secverify.interop.inspect.messages import chat_messages, log_safe
from secverify.interop.inspect.scorers import ITEM_ID, VERDICT
from sv_shared.contracts import Environment, Item, ToolUse

NATIVE = "native"
"""inspect models call tools through their provider's function calling; the text protocol is not offered."""


def tool_episode(env: Environment, items: Mapping[str, Item]) -> Solver:
    episodes = env.episodes
    if not isinstance(episodes, ToolUse):
        raise TypeError(f"{env.name} has no tool-using mode")

    @solver(name=f"{env.name}/tool_episode")
    def secverify_tool_episode() -> Solver:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            item = items[state.metadata[ITEM_ID]]
            model = get_model()
            policy = sync_policy(model)
            scored = await anyio.to_thread.run_sync(lambda: episodes.rollout(item, policy, tool_protocol=NATIVE))
            transcript = scored.details.get("transcript") or []
            state.messages = chat_messages(log_safe(transcript))
            final = next((message for message in reversed(state.messages) if message.role == "assistant"), None)
            # What the verifier scored: the episode's last reply (the transcript keeps it verbatim).
            state.output = ModelOutput.from_content(model=model.name, content=final.text if final else "")
            state.store.set(VERDICT, log_safe(scored.to_record()))
            return state

        return solve

    return secverify_tool_episode()
