"""How a config is posed to a model: the task, the canonical id vocabulary, the answer schema, and (in the
tool-using mode) the scanners it may call and its budget.

Two tool protocols: "native" passes OpenAI function-calling tools to API models; "text" is for local models
without function calling and is documented in the prompt itself: the model writes one line per call,
`TOOL: scan {"tool": "opa"}`, and stops; results come back in a user message starting with `TOOL RESULT`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sv_env_config_verification.schema import canonical_ids, canonical_severity, canonical_title
from sv_shared.contracts import Message

ANSWER_FORMAT = (
    'Reply with JSON only: {"violations": [{"id": "<canonical id>", "severity": "low" | "medium" | "high", '
    '"resource": "<Kind/name or type.name>", "evidence": "<the offending line>"}], "patch": <fix or null>, '
    '"confidence": <number 0 to 1>}.\n'
    'If the config has no violation, answer {"violations": [], "patch": null, "confidence": <number>}.\n'
    "The patch is either a unified diff of this one file (headers --- a/<file> and +++ b/<file>, @@ hunks with "
    "unchanged context lines) or, for Kubernetes YAML, a JSON Patch (RFC 6902 list of operations) whose paths "
    "address the document of a one-document file, or the list of documents (/0/..., /1/...) of a multi-document "
    "file. Fix the problems while keeping every object, container and rule: deleting what a finding is about is "
    "not a fix."
)

TEXT_TOOL_PROTOCOL = (
    "You may run security scanners before answering. To call one, write a line of exactly this form and stop:\n"
    'TOOL: scan {"tool": "<scanner>"}\n'
    'Add "content": "<full file text>" to scan a revised version instead of the original. The findings come back '
    'in a message starting with "TOOL RESULT". When you are done, reply with the final JSON answer only.'
)


def vocabulary(kind: str) -> str:
    """One line per canonical id of the config's kind: id, default severity and what it means."""
    return "\n".join(f"- {name} ({canonical_severity(name)}): {canonical_title(name)}" for name in canonical_ids(kind))


def system_prompt(kind: str) -> str:
    what = "Kubernetes manifest" if kind == "kubernetes" else "Terraform module"
    return (
        f"You are a cloud security reviewer. Find the security misconfigurations in the {what} and fix them.\n"
        f"Name each violation with one of these canonical ids (others count as false alarms):\n{vocabulary(kind)}\n"
        f"{ANSWER_FORMAT}"
    )


def render_config(observation: Mapping[str, Any]) -> str:
    fence = "yaml" if observation["kind"] == "kubernetes" else "hcl"
    return f"File: {observation['filename']}\n```{fence}\n{observation['content'].rstrip()}\n```"


def budget_note(tools: Sequence[str], max_tool_calls: int, max_turns: int) -> str:
    return (
        f'Scanners available: {", ".join(tools)} (or "all"). Budget: at most {max_tool_calls} scanner calls and '
        f"{max_turns} replies in total; calls beyond the budget are refused."
    )


def build_messages(observation: Mapping[str, Any]) -> list[Message]:
    """The single-turn prompt: task, vocabulary and answer schema, then the file."""
    return [
        {"role": "system", "content": system_prompt(observation["kind"])},
        {"role": "user", "content": render_config(observation)},
    ]


def build_tool_messages(
    observation: Mapping[str, Any], *, protocol: str, tools: Sequence[str], max_tool_calls: int, max_turns: int
) -> list[Message]:
    """The tool-using prompt: the single-turn one plus the scanners, the budget and (text protocol) the syntax."""
    if protocol not in ("native", "text"):
        raise ValueError(f"protocol must be 'native' or 'text', got {protocol!r}")
    parts = [system_prompt(observation["kind"]), budget_note(tools, max_tool_calls, max_turns)]
    if protocol == "text":
        parts.append(TEXT_TOOL_PROTOCOL)
    return [
        {"role": "system", "content": "\n".join(parts)},
        {"role": "user", "content": render_config(observation)},
    ]
