"""Robust parsing of JSON answers in model completions.

Models wrap their JSON in prose or code fences, or get it wrong; the parser finds the answer object and validates it,
and every failure has a named reason (see FormatError) so format errors can be counted and triaged, never coerced.

Two rules make an answer unambiguous and cheap to handle (decode_json): an object that repeats a key, at any depth,
is refused as `duplicate_key` (json.loads would keep the last value silently, so an answer could show one value to a
person reading it and another to the scorer), and JSON nested deeper than MAX_JSON_DEPTH is refused as
`json_too_deep` before it is decoded (deep values make every recursive consumer -- copying, comparing, writing the
results -- fail with RecursionError, and whether they do depends on the caller's stack).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sv_shared.contracts.types import ParseResult

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
# Hostile inputs ("{{{{…") would make the balanced-object scan quadratic; a few candidates are plenty for real output.
_MAX_CANDIDATES = 16
MAX_JSON_DEPTH = 100
"""Deepest nesting of arrays and objects an answer may have; real answers nest a few levels (E2's JSON Patch values
up to the 64 levels a config may have, under three levels of answer)."""
_STRUCTURE = re.compile(r'["\\\[\]{}]')


class FormatError(StrEnum):
    """Why a completion could not be parsed; the value is what results.jsonl records."""

    EMPTY = "empty_completion"
    TOO_LONG = "completion_too_long"
    NO_JSON = "no_json_object"
    INVALID_JSON = "invalid_json"
    TRUNCATED_JSON = "truncated_json"
    NOT_OBJECT = "not_an_object"
    MISSING_LABEL = "missing_label"
    LABEL_NOT_STRING = "label_not_string"
    UNKNOWN_LABEL = "unknown_label"
    MISSING_CONFIDENCE = "missing_confidence"
    CONFIDENCE_NOT_NUMERIC = "confidence_not_numeric"
    CONFIDENCE_NOT_FINITE = "confidence_not_finite"
    CONFIDENCE_OUT_OF_RANGE = "confidence_out_of_range"
    RATIONALE_NOT_STRING = "rationale_not_string"
    DUPLICATE_KEY = "duplicate_key"
    TOO_DEEP = "json_too_deep"


def _balanced_objects(text: str) -> list[str]:
    """Substrings that are brace-balanced objects, honouring JSON strings, in order of their start."""
    found: list[str] = []
    start = text.find("{")
    while start != -1 and len(found) < _MAX_CANDIDATES:
        depth = 0
        in_string = False
        escaped = False
        end = -1
        for index in range(start, len(text)):
            char = text[index]
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    end = index
                    break
        if end == -1:
            break
        found.append(text[start : end + 1])
        start = text.find("{", start + 1)
    return found


def _nesting_exceeds(text: str, max_depth: int) -> bool:
    """Whether brackets outside JSON strings nest deeper than max_depth anywhere in text (stops at the first place)."""
    if text.count("[") + text.count("{") <= max_depth:  # the common case, decided without a scan
        return False
    depth = 0
    in_string = False
    escape_at = -1
    for match in _STRUCTURE.finditer(text):
        char, index = match.group(), match.start()
        if in_string:
            if index == escape_at:
                continue
            if char == "\\":
                escape_at = index + 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > max_depth:
                return True
        elif char in "]}":
            depth = max(0, depth - 1)
    return False


class _DuplicateKeys:
    """An object_pairs_hook that builds dicts as json.loads would and notes whether any object repeated a key."""

    def __init__(self) -> None:
        self.found = False

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        value = dict(pairs)
        if len(value) != len(pairs):
            self.found = True
        return value


def _decode(text: str, max_depth: int) -> tuple[Any, FormatError | None, bool]:
    """(value, error, has duplicate keys); the error is too deep or invalid JSON."""
    if _nesting_exceeds(text, max_depth):
        return None, FormatError.TOO_DEEP, False
    duplicates = _DuplicateKeys()
    try:
        value = json.loads(text, object_pairs_hook=duplicates)
    except (ValueError, RecursionError):
        return None, FormatError.INVALID_JSON, False
    return value, None, duplicates.found


def decode_json(text: str, *, max_depth: int = MAX_JSON_DEPTH) -> tuple[Any, FormatError | None]:
    """The JSON value of text, or why there is none: invalid_json, json_too_deep or duplicate_key (see the module
    docstring). NaN and Infinity decode to floats, as json.loads does: callers that need finite numbers check."""
    value, error, duplicates = _decode(text, max_depth)
    if error is None and duplicates:
        return None, FormatError.DUPLICATE_KEY
    return value, error


def extract_json_object(text: str, *, max_chars: int = 100_000) -> tuple[dict[str, Any] | None, FormatError | None]:
    """Find the answer object: the whole text as JSON, else a fenced block, else the first balanced object.

    The first candidate that decodes to an object is the answer; if it repeats a key it is refused (duplicate_key),
    never passed over for a later candidate. A candidate nested deeper than MAX_JSON_DEPTH is refused (json_too_deep).
    """
    stripped = text.strip()
    if not stripped:
        return None, FormatError.EMPTY
    if len(stripped) > max_chars:
        return None, FormatError.TOO_LONG
    value, error, duplicates = _decode(stripped, MAX_JSON_DEPTH)
    if error is FormatError.TOO_DEEP:
        return None, error
    if error is None:
        if not isinstance(value, dict):
            return None, FormatError.NOT_OBJECT
        return (None, FormatError.DUPLICATE_KEY) if duplicates else (value, None)
    saw_candidate = False
    candidates = (block.strip() for block in _FENCE.findall(stripped))
    for candidate in (*candidates, *_balanced_objects(stripped)):
        saw_candidate = True
        value, error, duplicates = _decode(candidate, MAX_JSON_DEPTH)
        if error is FormatError.TOO_DEEP:
            return None, error
        if error is None and isinstance(value, dict):
            return (None, FormatError.DUPLICATE_KEY) if duplicates else (value, None)
    if saw_candidate:
        return None, FormatError.INVALID_JSON
    # An object that opens but never closes: usually generation cut off by the token limit.
    return None, (FormatError.TRUNCATED_JSON if "{" in stripped else FormatError.NO_JSON)


def parse_confidence(value: Any) -> tuple[float | None, FormatError | None]:
    """A confidence must be a real number in [0, 1]; strings, booleans, NaN and out-of-range values are failures."""
    if value is None:
        return None, FormatError.MISSING_CONFIDENCE
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None, FormatError.CONFIDENCE_NOT_NUMERIC
    number = float(value)
    if not math.isfinite(number):
        return None, FormatError.CONFIDENCE_NOT_FINITE
    if not 0.0 <= number <= 1.0:
        return None, FormatError.CONFIDENCE_OUT_OF_RANGE
    return number, None


@dataclass(frozen=True)
class JsonClassificationParser:
    """Parses `{"label": …, "confidence": 0..1, "rationale": …}` answers.

    Labels match case-insensitively (and ignoring surrounding whitespace) to their canonical spelling.
    """

    labels: Sequence[str]
    label_field: str = "label"
    confidence_field: str = "confidence"
    rationale_field: str = "rationale"
    max_chars: int = 100_000

    def __post_init__(self) -> None:
        object.__setattr__(self, "_canonical", {label.casefold(): label for label in self.labels})

    def canonical_label(self, value: Any) -> tuple[str | None, FormatError | None]:
        if value is None:
            return None, FormatError.MISSING_LABEL
        if not isinstance(value, str):
            return None, FormatError.LABEL_NOT_STRING
        canonical: Mapping[str, str] = self._canonical  # type: ignore[attr-defined]
        label = canonical.get(value.strip().casefold())
        return (label, None) if label is not None else (None, FormatError.UNKNOWN_LABEL)

    def parse(self, completion: str) -> ParseResult:
        obj, error = extract_json_object(completion, max_chars=self.max_chars)
        if obj is None:
            return ParseResult(None, error)
        label, error = self.canonical_label(obj.get(self.label_field))
        if error:
            return ParseResult(None, error)
        confidence, error = parse_confidence(obj.get(self.confidence_field))
        if error:
            return ParseResult(None, error)
        rationale = obj.get(self.rationale_field, "")
        if rationale is None:
            rationale = ""
        if not isinstance(rationale, str):
            return ParseResult(None, FormatError.RATIONALE_NOT_STRING)
        return ParseResult(
            {self.label_field: label, self.confidence_field: confidence, self.rationale_field: rationale}
        )
