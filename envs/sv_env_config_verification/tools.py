"""The scanners as tools a model may call during an episode, in two protocols, behind one executor.

- OpenAI function calling ("native"): `tool_specs()` is the `tools` list; calls arrive as
  {"id", "type": "function", "function": {"name", "arguments": "<JSON>"}} and results go back as role "tool".
- Text ("text", for local models): a completion line `TOOL: scan {"tool": "opa"}` is one call
  (`parse_text_calls`); results go back in one user message starting with "TOOL RESULT".

The only tool is `scan`: run one scanner (or "all", the oracle's merged view) on the item's file, or on a revised
text the model passes as `content` (so it can check its own fix). Results are the normalized findings (canonical
id, severity, resource, line, message), as compact JSON. A malformed call is answered with an error message and
counted; it is never executed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sv_env_config_verification.schema import MAX_CONTENT_BYTES
from sv_shared.execution.findings import Finding

SCAN = "scan"
ALL = "all"
MAX_RESULT_FINDINGS = 50
_TEXT_CALL = re.compile(r"^\s*TOOL:\s*([A-Za-z_][\w-]*)\s*(.*?)\s*$", re.MULTILINE)

ScanFn = Callable[[str, str, str], tuple[list[Finding], str | None]]
"""(tool or "all", filename, content) -> (findings, error); the environment binds it to the oracle."""


@dataclass(frozen=True)
class ToolCall:
    """One call as the model made it; `problem` says why it cannot run (bad JSON, unknown tool, ...)."""

    id: str
    name: str
    arguments: dict[str, Any]
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments, "problem": self.problem}


def tool_specs(tools: Sequence[str]) -> list[dict[str, Any]]:
    """The OpenAI `tools` parameter for the scanners available here."""
    return [
        {
            "type": "function",
            "function": {
                "name": SCAN,
                "description": (
                    "Run a security scanner on the config file and return its findings (canonical id, severity, "
                    "resource, line, message). Pass `content` to scan a revised version of the file instead."
                ),
                "parameters": {
                    "type": "object",
                    "properties": {
                        "tool": {"type": "string", "enum": [*tools, ALL], "description": "the scanner, or all"},
                        "content": {"type": "string", "description": "full text of a revised file (optional)"},
                    },
                    "required": ["tool"],
                    "additionalProperties": False,
                },
            },
        }
    ]


def _arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    if raw is None or raw == "":
        return {}, None
    if isinstance(raw, Mapping):
        return dict(raw), None
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return {}, "arguments are not valid JSON"
    if not isinstance(value, dict):
        return {}, "arguments must be a JSON object"
    return value, None


def parse_native_calls(calls: Sequence[Mapping[str, Any]], *, start: int = 0) -> list[ToolCall]:
    """OpenAI-form tool calls from a completion."""
    parsed = []
    for offset, call in enumerate(calls):
        function = call.get("function") if isinstance(call.get("function"), Mapping) else {}
        arguments, problem = _arguments(function.get("arguments"))
        parsed.append(
            ToolCall(
                id=str(call.get("id") or f"call_{start + offset}"),
                name=str(function.get("name") or ""),
                arguments=arguments,
                problem=problem,
            )
        )
    return parsed


def parse_text_calls(text: str, *, start: int = 0) -> list[ToolCall]:
    """`TOOL: <name> <JSON arguments>` lines of a completion, in order."""
    calls = []
    for offset, match in enumerate(_TEXT_CALL.finditer(text)):
        arguments, problem = _arguments(match.group(2))
        calls.append(ToolCall(id=f"call_{start + offset}", name=match.group(1), arguments=arguments, problem=problem))
    return calls


def _finding(finding: Finding) -> dict[str, Any]:
    return {
        "id": finding.canonical_id,
        "severity": finding.severity,
        "resource": finding.resource,
        "line": finding.line,
        "tool": finding.tool,
        "rule": finding.rule_id,
        "message": finding.message[:300],
    }


class ToolBox:
    """Runs validated calls against one item's file; everything it returns is text for the transcript."""

    def __init__(self, scan: ScanFn, tools: Sequence[str], filename: str, content: str) -> None:
        self.scan = scan
        self.tools = list(tools)
        self.filename = filename
        self.content = content

    def check(self, call: ToolCall) -> str | None:
        """Why a call cannot run, or None."""
        if call.problem:
            return call.problem
        if call.name != SCAN:
            return f"unknown tool {call.name!r}; the only tool is {SCAN!r}"
        tool = call.arguments.get("tool")
        if tool not in (*self.tools, ALL):
            return f"unknown scanner {tool!r}; available: {', '.join([*self.tools, ALL])}"
        content = call.arguments.get("content")
        if content is not None and not isinstance(content, str):
            return "content must be a string"
        if isinstance(content, str) and len(content.encode("utf-8", "replace")) > MAX_CONTENT_BYTES:
            return f"content larger than {MAX_CONTENT_BYTES} bytes"
        extra = set(call.arguments) - {"tool", "content"}
        if extra:
            return f"unexpected argument(s) {sorted(extra)}"
        return None

    def run(self, call: ToolCall) -> tuple[str, int]:
        """(result text, number of findings); a call that fails `check` returns its error and -1."""
        problem = self.check(call)
        if problem is not None:
            return json.dumps({"error": problem}), -1
        content = call.arguments.get("content")
        findings, error = self.scan(
            call.arguments["tool"], self.filename, content if content is not None else self.content
        )
        if error:
            return json.dumps({"tool": call.arguments["tool"], "error": error}), -1
        shown = [_finding(finding) for finding in findings[:MAX_RESULT_FINDINGS]]
        result = {"tool": call.arguments["tool"], "findings": shown, "total": len(findings)}
        return json.dumps(result, ensure_ascii=False), len(findings)
