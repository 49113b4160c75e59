"""A run's samples as a reader triages them: lowest reward first, each with its prompt, completion, parsed answer,
reward components, tool calls and results, judge verdicts and triage category, in display-ready plain values.

Judged-unsafe text is shown only as its redaction marker (sv_shared.judging.redaction), wherever it appears. E5/E6
transcripts are stored redacted already, but the same text can also sit in another field (a dialogue's completion is
its last turn) or in a record written before redaction: every string shown is checked against what the record's
verdicts flagged: a marker's hash (any string whose hash matches is shown as that marker), and flagged text still in
clear (replaced by its marker wherever it occurs). Nothing here renders HTML; secverify_dagster.reports.trajectories
does, and escapes everything.

Records are read as they are: any field may hold odd shapes (old records, other environments), so every reader here
takes what it finds and shows the rest as plain values rather than failing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from sv_shared.data.files import json_text
from sv_shared.data.hashing import sha256_hex
from sv_shared.judging.redaction import marker_sha256_prefix, must_redact, redact, redaction_marker
from sv_shared.judging.verdict import Verdict
from sv_shared.runs.folder import RunFolder
from sv_shared.runs.schema import ResultRecord, RunMetadata
from sv_shared.runs.triage import Category, SampleTriage, category_counts, error_name, triage_sample

MAX_DEPTH: Final = 40
"""Nesting shown of a record's values; deeper parts are replaced by a note (a verifier's details may nest deeply)."""

TOO_DEEP: Final = "(nested too deep to show)"

_SHOWN_ELSEWHERE: Final = frozenset({"transcript", "tools"})
"""Keys of record.details shown in sections of their own."""


class UnsafeText:
    """What one record's judges flagged, so that no string of the record is shown except through its marker."""

    def __init__(self, record: ResultRecord) -> None:
        self._markers: dict[str, str] = {}
        """Hash prefix of a flagged text → its marker."""
        self._clear: dict[str, str] = {}
        """Flagged text still in clear (a record from before redaction) → its marker."""
        transcript = record.details.get("transcript")
        for entry in transcript if isinstance(transcript, list) else []:
            if isinstance(entry, Mapping):
                self._flag(entry)
        for text in _strings(record.as_dict()):
            if (prefix := marker_sha256_prefix(text)) is not None:
                self._markers.setdefault(prefix, text.strip())

    def _flag(self, entry: Mapping[str, Any]) -> None:
        text = entry.get("text", entry.get("content"))
        if not isinstance(text, str) or marker_sha256_prefix(text) is not None:
            return
        verdict = verdict_of(entry.get("verdict"))
        if verdict is not None and must_redact(verdict):
            marker = redact(text, verdict)
        elif entry.get("redacted") is True:
            marker = redaction_marker(text, [])
        else:
            return
        self._markers[sha256_hex(text)[:16]] = marker
        if text.strip():
            self._clear[text] = marker

    def shown(self, text: str) -> str:
        """The text, or its marker when it is (or holds) text a verdict flagged."""
        if marker_sha256_prefix(text) is not None:
            return text
        for candidate in (text, text.strip()):
            if (marker := self._markers.get(sha256_hex(candidate)[:16])) is not None:
                return marker
        for flagged in sorted(self._clear, key=len, reverse=True):
            text = text.replace(flagged, self._clear[flagged])
        return text

    def shown_value(self, value: Any, depth: int = 0) -> Any:
        """A JSON-like value with every string (keys included) passed through `shown`, cut at MAX_DEPTH."""
        if isinstance(value, str):
            return self.shown(value)
        if isinstance(value, Mapping | list | tuple) and depth >= MAX_DEPTH:
            return TOO_DEEP
        if isinstance(value, Mapping):
            return {self.shown(str(key)): self.shown_value(item, depth + 1) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.shown_value(item, depth + 1) for item in value]
        return value


def _strings(value: Any) -> Iterable[str]:
    """Every string in a JSON-like value (keys too), without recursion (nesting may be deep)."""
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, str):
            yield current
        elif isinstance(current, Mapping):
            stack += [str(key) for key in current]
            stack += list(current.values())
        elif isinstance(current, list | tuple):
            stack += list(current)


def verdict_of(value: Any) -> Verdict | None:
    """A stored verdict (Verdict.to_dict()) read back; None where there is none. Read leniently: a malformed field
    reads as unsafe rather than as cleared, since it decides what is redacted."""
    if not isinstance(value, Mapping):
        return None
    categories = value.get("categories")
    score = value.get("score")
    error = value.get("error")
    unsafe = value.get("unsafe", False)
    return Verdict(
        judge=str(value.get("judge", "")),
        unsafe=unsafe is not False,
        categories=tuple(str(name) for name in categories) if isinstance(categories, list) else (),
        refusal=value.get("refusal") is True,
        safe_alternative=value.get("safe_alternative") is True,
        score=float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None,
        error=None if error is None else str(error),
    )


@dataclass(frozen=True)
class ToolRequest:
    """A tool call as the model asked for it (OpenAI's function-calling shape)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Message:
    """One message of a prompt or transcript, its text as shown."""

    role: str
    text: str
    tool_calls: tuple[ToolRequest, ...] = ()
    tool_call_id: str | None = None
    verdict: Verdict | None = None
    redacted: bool = False
    """The text is a redaction marker."""
    extra: dict[str, Any] = field(default_factory=dict)
    """The entry's other fields (turn, tactic, chars, …)."""


@dataclass(frozen=True)
class ToolCall:
    """One entry of a tool episode's call log (record.details["tools"]["calls"]): what ran and what it answered."""

    name: str
    arguments: Any
    status: str | None
    result: Any
    extra: dict[str, Any]


@dataclass(frozen=True)
class Trajectory:
    """One scored sample, display-ready: every text passed through the record's UnsafeText."""

    id: str
    model: str
    reward: float
    triage: SampleTriage
    components: dict[str, float]
    parsed: Any
    error: str | None
    finish_reason: str | None
    prompt: tuple[Message, ...]
    completion: str
    transcript: tuple[Message, ...]
    tool_summary: dict[str, Any]
    """record.details["tools"] without its call log: turns, refused and invalid calls, budget exhausted."""
    tool_calls: tuple[ToolCall, ...]
    details: dict[str, Any]
    """record.details less the transcript and tools (outcome, judge, stages, tests, …)."""
    run: dict[str, Any]
    """What producing it took: usage, latency, cost, cache, turns, counterparts."""
    outcomes: tuple[str, ...]
    """Filter tags: "error: <name>" or "no error", "outcome: <name>", "finish: <reason>"."""

    @property
    def verdicts(self) -> list[tuple[Message, Verdict]]:
        """The judge's verdict on each judged turn, in turn order."""
        return [(message, message.verdict) for message in self.transcript if message.verdict is not None]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _message(entry: Any, unsafe: UnsafeText) -> Message:
    if not isinstance(entry, Mapping):
        return Message(role="?", text=_text(unsafe.shown_value(entry)))
    raw = entry.get("content", entry.get("text"))
    text = unsafe.shown(raw) if isinstance(raw, str) else "" if raw is None else _json_like(unsafe.shown_value(raw))
    calls = entry.get("tool_calls")
    requests = tuple(
        _tool_request(call, unsafe) for call in (calls if isinstance(calls, list) else []) if isinstance(call, Mapping)
    )
    shown_keys = {"role", "content", "text", "tool_calls", "tool_call_id", "verdict", "redacted"}
    call_id = entry.get("tool_call_id")
    return Message(
        role=_text(entry.get("role")) or "?",
        text=text,
        tool_calls=requests,
        tool_call_id=None if call_id is None else unsafe.shown(str(call_id)),
        verdict=verdict_of(entry.get("verdict")),
        redacted=marker_sha256_prefix(text) is not None,
        extra={
            unsafe.shown(str(key)): unsafe.shown_value(value) for key, value in entry.items() if key not in shown_keys
        },
    )


def _json_like(value: Any) -> str:
    return json_text(value, default=str)


def _tool_request(call: Mapping[str, Any], unsafe: UnsafeText) -> ToolRequest:
    function = call.get("function")
    function = function if isinstance(function, Mapping) else {}
    arguments = function.get("arguments", call.get("arguments"))
    return ToolRequest(
        id=unsafe.shown(_text(call.get("id"))),
        name=unsafe.shown(_text(function.get("name", call.get("name")))),
        arguments=unsafe.shown(arguments) if isinstance(arguments, str) else _json_like(unsafe.shown_value(arguments)),
    )


def _tool_call(call: Any, unsafe: UnsafeText) -> ToolCall:
    if not isinstance(call, Mapping):
        return ToolCall(name="?", arguments=None, status=None, result=unsafe.shown_value(call), extra={})
    shown = unsafe.shown_value(call)
    status = shown.pop("status", None)
    return ToolCall(
        name=_text(shown.pop("name", None) or shown.pop("tool", None)) or "?",
        arguments=shown.pop("arguments", None),
        status=None if status is None else str(status),
        result=shown.pop("result", None),
        extra=shown,
    )


def _outcomes(record: ResultRecord) -> tuple[str, ...]:
    tags = [f"error: {error_name(record.error)}" if record.error else "no error"]
    outcome = record.details.get("outcome")
    if isinstance(outcome, str):
        tags.append(f"outcome: {outcome[:80]}")
    if record.finish_reason:
        tags.append(f"finish: {record.finish_reason[:80]}")
    return tuple(tags)


def trajectory(record: ResultRecord, *, dialogue: bool) -> Trajectory:
    """One record as a reader sees it, with its triage (sv_shared.runs.triage, the reports' own categories)."""
    unsafe = UnsafeText(record)
    details = record.details
    tools = details.get("tools")
    tools = tools if isinstance(tools, Mapping) else {}
    calls = tools.get("calls")
    transcript = details.get("transcript")
    return Trajectory(
        id=record.id,
        model=record.model,
        reward=float(record.reward),
        triage=triage_sample(record, dialogue=dialogue),
        components={unsafe.shown(name): float(value) for name, value in record.components.items()},
        parsed=unsafe.shown_value(record.parsed),
        error=None if record.error is None else unsafe.shown(record.error),
        finish_reason=record.finish_reason,
        prompt=tuple(_message(message, unsafe) for message in record.prompt),
        completion=unsafe.shown(record.completion),
        transcript=tuple(_message(entry, unsafe) for entry in (transcript if isinstance(transcript, list) else [])),
        tool_summary=unsafe.shown_value({key: value for key, value in tools.items() if key != "calls"}),
        tool_calls=tuple(_tool_call(call, unsafe) for call in (calls if isinstance(calls, list) else [])),
        details=unsafe.shown_value({key: value for key, value in details.items() if key not in _SHOWN_ELSEWHERE}),
        run=unsafe.shown_value(
            {
                "usage": record.usage.as_dict(),
                "latency_s": record.latency_s,
                "cost_usd": record.cost_usd,
                "cached": record.cached,
                **({"turns": record.turns} if record.turns is not None else {}),
                **({"counterparts": record.counterparts} if record.counterparts is not None else {}),
            }
        ),
        outcomes=tuple(unsafe.shown(tag) for tag in _outcomes(record)),
    )


def lowest_first(samples: Iterable[Trajectory]) -> list[Trajectory]:
    return sorted(samples, key=lambda sample: (sample.reward, sample.id))


@dataclass(frozen=True)
class RunTrajectories:
    """A run's identity, every scored sample lowest reward first, and its answer profile (answers vs the split's
    labels, collapse: sv_shared.answers.collapse) once the run has a summary and answers are labels."""

    run_dir: Path
    metadata: RunMetadata
    samples: list[Trajectory]
    answers: dict[str, Any] | None = None

    @property
    def counts(self) -> dict[Category, int]:
        return category_counts(sample.triage for sample in self.samples)

    @classmethod
    def build(
        cls,
        run_dir: Path,
        metadata: RunMetadata,
        records: Iterable[ResultRecord],
        *,
        dialogue: bool,
        answers: Mapping[str, Any] | None = None,
    ) -> RunTrajectories:
        samples = lowest_first(trajectory(record, dialogue=dialogue) for record in records)
        return cls(run_dir, metadata, samples, dict(answers) if answers is not None else None)

    @classmethod
    def read(cls, run_dir: Path, *, dialogue: bool) -> RunTrajectories:
        """A run folder's samples as written so far (a run still in progress shows what it has scored)."""
        folder = RunFolder(run_dir)
        answers = folder.read_summary().metrics.get("answers") if folder.summary_path.is_file() else None
        return cls.build(run_dir, folder.read_metadata(), folder.read_results(), dialogue=dialogue, answers=answers)
