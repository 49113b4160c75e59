"""`--model secverify/<registry id>`: a model of secverify's registry (configs/models.yaml, or `-M registry=<file>`)
as an inspect model, called through secverify's own client (providers, retries, timeouts, usage).

It reaches any OpenAI-compatible server (vLLM, `transformers serve`), OpenAI, Anthropic and local checkpoints exactly
as `secverify eval` does, also where inspect's own OpenAI providers cannot load (they need openai >= 3.4, and the
`verifiers` extra pins openai 2.x in a shared environment). Rule baselines are not offered: they read the item's
observation, which inspect's model interface does not pass."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo

from secverify.interop.inspect.messages import openai_tool_call, tool_call
from secverify_dagster.resources.models import ChatRequest, ModelSpec, ProviderError, load_registry, open_client
from secverify_dagster.resources.models.types import Completion

STOP_REASONS = {"stop": "stop", "length": "max_tokens", "tool_calls": "tool_calls", "content_filter": "content_filter"}
"""Our completions' finish reasons (OpenAI's words) in inspect's."""


class UnknownRegistryModelError(LookupError):
    """`secverify/<id>` names no model of the registry."""


class BaselineThroughInspectError(ValueError):
    """A rule baseline asked for through inspect, which gives a model messages only, never the item's observation."""


def registry_spec(model_id: str, registry: str | None, base_url: str | None) -> ModelSpec:
    specs = load_registry(Path(registry) if registry else None)
    if model_id not in specs:
        known = ", ".join(spec_id for spec_id, spec in specs.items() if spec.provider != "baseline")
        raise UnknownRegistryModelError(f"{model_id!r} is not in the model registry; models: {known}")
    spec = specs[model_id]
    if spec.provider == "baseline":
        raise BaselineThroughInspectError(
            f"{model_id} is a rule baseline: it reads the item's observation, which inspect does not pass to a "
            "model; run it with `secverify eval`"
        )
    return replace(spec, base_url=base_url) if base_url else spec


def openai_messages(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """inspect ChatMessages in the OpenAI form our client sends."""
    converted: list[dict[str, Any]] = []
    for message in messages:
        entry: dict[str, Any] = {"role": message.role, "content": message.text}
        if isinstance(message, ChatMessageAssistant) and message.tool_calls:
            entry["tool_calls"] = [openai_tool_call(call) for call in message.tool_calls]
        if message.role == "tool":
            entry["tool_call_id"] = message.tool_call_id
        converted.append(entry)
    return converted


def openai_tools(tools: list[ToolInfo]) -> list[dict[str, Any]] | None:
    specs = [
        {
            "type": "function",
            "function": {
                "name": info.name,
                "description": info.description,
                "parameters": info.parameters.model_dump(exclude_none=True),
            },
        }
        for info in tools
    ]
    return specs or None


def generation_params(config: GenerateConfig) -> dict[str, Any]:
    """The GenerateConfig inspect resolved (task, CLI) as our client's generation parameters."""
    params = {
        "max_tokens": config.max_tokens,
        "temperature": config.temperature,
        "top_p": config.top_p,
        "stop": list(config.stop_seqs) if config.stop_seqs else None,
    }
    return {key: value for key, value in params.items() if value is not None}


def model_output(model: str, completion: Completion) -> ModelOutput:
    message = ChatMessageAssistant(
        content=completion.text,
        tool_calls=[tool_call(call) for call in completion.tool_calls] or None,
        model=model,
        source="generate",
    )
    usage = completion.usage
    return ModelOutput(
        model=model,
        choices=[
            ChatCompletionChoice(
                message=message, stop_reason=STOP_REASONS.get(completion.finish_reason or "", "unknown")
            )
        ],
        usage=ModelUsage(
            input_tokens=usage.prompt_tokens,
            output_tokens=usage.completion_tokens,
            total_tokens=usage.prompt_tokens + usage.completion_tokens,
        ),
        time=completion.latency_s,
    )


class RegistryModelAPI(ModelAPI):
    """One registry model; `-M registry=<models.yaml>` reads another registry, `--model-base-url` moves its endpoint."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig | None = None,
        registry: str | None = None,
    ) -> None:
        super().__init__(model_name=model_name, base_url=base_url, api_key=api_key, config=config or GenerateConfig())
        self.spec = registry_spec(model_name, registry, base_url)
        # no response cache: inspect keeps its own (--cache), and ours would store text a dialogue has not judged
        self.client = open_client(self.spec, cache=None)

    def max_connections(self) -> int:
        return max(1, self.spec.concurrency)

    def connection_key(self) -> str:
        return self.spec.id

    def close(self) -> None:
        self.client.close()

    async def generate(
        self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice, config: GenerateConfig
    ) -> ModelOutput:
        request = ChatRequest(
            messages=openai_messages(input), params=generation_params(config), tools=openai_tools(tools)
        )
        if config.seed is not None:
            request = replace(request, seed=config.seed)
        # our client is synchronous (and retries itself, so inspect's should_retry stays False)
        (result,) = await anyio.to_thread.run_sync(self.client.complete_many, [request])
        if isinstance(result, ProviderError):
            raise result
        return model_output(self.spec.id, result)


@modelapi(name="secverify")
def secverify_registry_models() -> type[ModelAPI]:
    return RegistryModelAPI
