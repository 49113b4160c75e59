"""Our episode code (ToolUse.rollout, Dialogue.run) driven by inspect's model, unchanged.

The episode loops are secverify's own (budgets, refusals, judge, redaction, scoring), so their rewards are the
runner's by construction. They are synchronous: they run in a worker thread (`anyio.to_thread.run_sync`) and each
model turn hops back onto inspect's event loop (`anyio.from_thread.run`) to call `Model.generate`, which inspect
records as a ModelEvent and counts against its limits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import anyio.from_thread
from inspect_ai.model import GenerateConfig, Model, ModelOutput
from inspect_ai.tool import ToolInfo, ToolParams

from secverify.interop.inspect.messages import chat_messages, openai_tool_call
from sv_shared.contracts import BatchPolicy, Message, Policy, PolicyReply


def tool_infos(specs: Sequence[Mapping[str, Any]] | None) -> list[ToolInfo]:
    """OpenAI function specs (what our rollouts offer) as inspect ToolInfo: the schema only, our rollout runs them."""
    infos = []
    for spec in specs or []:
        function = spec.get("function", spec)
        infos.append(
            ToolInfo(
                name=function["name"],
                description=function.get("description", ""),
                parameters=ToolParams.model_validate(function.get("parameters") or {}),
            )
        )
    return infos


def policy_reply(output: ModelOutput) -> PolicyReply:
    usage = output.usage
    return PolicyReply(
        text=output.completion,
        tool_calls=[openai_tool_call(call) for call in output.message.tool_calls or []],
        usage={"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens} if usage else {},
    )


async def generate_reply(
    model: Model, messages: Sequence[Message], specs: Sequence[Mapping[str, Any]] | None, config: GenerateConfig
) -> PolicyReply:
    output = await model.generate(chat_messages(messages), tools=tool_infos(specs), config=config)
    return policy_reply(output)


def sync_policy(model: Model, config: GenerateConfig | None = None) -> Policy:
    """A secverify Policy (messages, tool specs) -> PolicyReply backed by `model`, callable from the worker thread
    an episode runs in. The active model already carries the task's and the CLI's GenerateConfig; `config` adds to
    it."""
    settings = config or GenerateConfig()

    def policy(messages: list[Message], specs: list[dict[str, Any]] | None) -> PolicyReply:
        return anyio.from_thread.run(generate_reply, model, messages, specs, settings)

    return policy


def sync_batch_policy(model: Model, config: GenerateConfig | None = None) -> BatchPolicy:
    """A secverify BatchPolicy backed by `model`: the conversations of one lockstep turn are generated concurrently,
    and a failed one gives its exception in its place (the dialogue records it, as with our client's errors)."""
    settings = config or GenerateConfig()

    async def generate_all(conversations: Sequence[list[Message]]) -> list[PolicyReply | Exception]:
        replies: list[PolicyReply | Exception] = [RuntimeError("not generated")] * len(conversations)

        async def generate_one(index: int, conversation: list[Message]) -> None:
            try:
                replies[index] = await generate_reply(model, conversation, None, settings)
            except Exception as error:  # one conversation's failure must not end the others
                replies[index] = error

        async with anyio.create_task_group() as group:
            for index, conversation in enumerate(conversations):
                group.start_soon(generate_one, index, conversation)
        return replies

    def policy(conversations: Sequence[list[Message]]) -> list[PolicyReply | Exception]:
        return anyio.from_thread.run(generate_all, conversations)

    return policy
