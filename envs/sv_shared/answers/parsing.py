"""Robust parsing of JSON answers in model completions.

Models wrap their JSON in prose or code fences, or get it wrong; the parser finds the answer object and validates it,
and every failure has a named reason (see FormatError) so format errors can be counted and triaged, never coerced.

Answer rules make an answer unambiguous and cheap to handle (decode_json, SETTLED_REFUSALS): an object that repeats
a key, at any depth, is refused as `duplicate_key` (json.loads would keep the last value silently, so an answer could
show one value to a person reading it and another to the scorer), and JSON nested deeper than MAX_JSON_DEPTH is
refused as `json_too_deep` before it is decoded (deep values make every recursive consumer -- copying, comparing,
writing the results -- fail with RecursionError, and whether they do depends on the caller's stack).

And every number must be one every consumer reads as the same finite value (the numbers I-JSON, RFC 7493, allows):
`NaN`, `Infinity` and `-Infinity` (not JSON, though json.loads reads them) are `number_not_finite`; a literal beyond
the double range (1e400, which json.loads reads as infinity) or an integer beyond ±(2**53 - 1) (a 400-digit integer
makes float() raise OverflowError, one of over 4300 digits makes json.loads raise ValueError) is `number_too_large`;
`-0` in any spelling (-0, -0.0, -0e5, -1e-400) is `negative_zero`, a value that equals 0 yet keeps its sign (it
prints as -0.0, and copysign, atan2 or numpy's 1/x tell it from 0). Each is refused while decoding, from the literal's
text, so no environment ever holds such a value.

JSON is read as a reader sees it: outside strings, format characters (zero-width spaces and joiners, bidi controls)
and non-ASCII spaces are whitespace, so an answer laid out with them is the answer it shows, not invalid JSON, and a
completion cannot hide its first object that way (E5 would otherwise send the whole text, wrapper and all, as the
attack message). Strings keep every character they hold.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
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
    NUMBER_NOT_FINITE = "number_not_finite"
    NUMBER_TOO_LARGE = "number_too_large"
    NEGATIVE_ZERO = "negative_zero"


SETTLED_REFUSALS: frozenset[FormatError] = frozenset(
    {
        FormatError.DUPLICATE_KEY,
        FormatError.TOO_DEEP,
        FormatError.NUMBER_NOT_FINITE,
        FormatError.NUMBER_TOO_LARGE,
        FormatError.NEGATIVE_ZERO,
    }
)
"""The answer rules (see the module docstring): the parser refuses the first candidate object that breaks one, never
passing it over for a later one, so no text after it can change the verdict."""

MAX_EXACT_INTEGER = 2**53 - 1
"""The largest integer magnitude an answer may hold: beyond it JSON implementations (and float) read integers inexactly,
so a reader and the scorer could see different values (I-JSON, RFC 7493 section 2.2)."""
_MAX_INTEGER_DIGITS = len(str(MAX_EXACT_INTEGER))


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


class _AnswerRules:
    """json.loads hooks that decode as json.loads would and note the answer rules the text breaks: a repeated key, or
    a number that is not a plain finite value (see the module docstring). Numbers are judged from their literal text,
    before any conversion can overflow, raise or lose the sign of a zero."""

    def __init__(self) -> None:
        self.duplicate_key = False
        self.number: FormatError | None = None
        """The first number rule broken."""

    @property
    def broken(self) -> FormatError | None:
        """The rule to name: a repeated key before any number, so a caller that reads unparseable text as plain text
        (E5's attack message) still refuses an answer that shows a reader one value and the scorer another."""
        return FormatError.DUPLICATE_KEY if self.duplicate_key else self.number

    def _refuse_number(self, rule: FormatError) -> None:
        if self.number is None:
            self.number = rule

    def object_pairs(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        value = dict(pairs)
        if len(value) != len(pairs):
            self.duplicate_key = True
        return value

    def integer(self, text: str) -> int:
        if text == "-0":
            self._refuse_number(FormatError.NEGATIVE_ZERO)
            return 0
        # Counted before converting: int() of a long literal is slow, and over 4300 digits raises.
        if len(text.lstrip("-")) <= _MAX_INTEGER_DIGITS and abs(value := int(text)) <= MAX_EXACT_INTEGER:
            return value
        self._refuse_number(FormatError.NUMBER_TOO_LARGE)
        return 0  # a refused answer's values are never used

    def real(self, text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            self._refuse_number(FormatError.NUMBER_TOO_LARGE)
        elif value == 0.0 and math.copysign(1.0, value) < 0:
            self._refuse_number(FormatError.NEGATIVE_ZERO)
        return value

    def constant(self, text: str) -> float:
        self._refuse_number(FormatError.NUMBER_NOT_FINITE)
        return 0.0


_STRING_OR_NON_ASCII = re.compile(r'("(?:[^"\\]|\\.)*")|[^\x00-\x7f]+', re.DOTALL)


def _reads_as_space(char: str) -> bool:
    """A format character (zero-width space or joiner, bidi control, BOM, soft hyphen) or a non-ASCII space."""
    return char.isspace() or unicodedata.category(char) == "Cf"


def _outside_strings(match: re.Match[str]) -> str:
    if match.group(1) is not None:
        return match.group(1)
    return "".join(" " if _reads_as_space(char) else char for char in match.group())


def _as_read(text: str) -> str:
    """The JSON a reader sees (module docstring): json.loads refuses format characters and non-ASCII spaces outside
    strings, which a reader takes for whitespace."""
    if text.isascii():
        return text
    return _STRING_OR_NON_ASCII.sub(_outside_strings, text)


def _decode(text: str, max_depth: int) -> tuple[Any, FormatError | None, FormatError | None]:
    """(value, error, broken rule); the error is too deep or invalid JSON, the rule the first answer rule broken."""
    if _nesting_exceeds(text, max_depth):
        return None, FormatError.TOO_DEEP, None
    rules = _AnswerRules()
    try:
        value = json.loads(
            _as_read(text),
            object_pairs_hook=rules.object_pairs,
            parse_int=rules.integer,
            parse_float=rules.real,
            parse_constant=rules.constant,
        )
    except (ValueError, RecursionError):
        return None, FormatError.INVALID_JSON, None
    return value, None, rules.broken


def decode_json(text: str, *, max_depth: int = MAX_JSON_DEPTH) -> tuple[Any, FormatError | None]:
    """The JSON value of text, or why there is none: invalid_json, or the answer rule it breaks (SETTLED_REFUSALS:
    json_too_deep, duplicate_key, number_not_finite, number_too_large, negative_zero; see the module docstring)."""
    value, error, broken = _decode(text, max_depth)
    if error is None and broken is not None:
        return None, broken
    return value, error


def extract_json_object(text: str, *, max_chars: int = 100_000) -> tuple[dict[str, Any] | None, FormatError | None]:
    """Find the answer object: the whole text as JSON, else a fenced block, else the first balanced object.

    The first candidate that decodes to an object is the answer; if it breaks an answer rule (repeats a key, holds a
    number that is not a plain finite value) it is refused with that rule's name, never passed over for a later
    candidate. A candidate nested deeper than MAX_JSON_DEPTH is refused (json_too_deep).
    """
    stripped = text.strip()
    if not stripped:
        return None, FormatError.EMPTY
    if len(stripped) > max_chars:
        return None, FormatError.TOO_LONG
    value, error, broken = _decode(stripped, MAX_JSON_DEPTH)
    if error is FormatError.TOO_DEEP:
        return None, error
    if error is None:
        if not isinstance(value, dict):
            return None, FormatError.NOT_OBJECT
        return (None, broken) if broken else (value, None)
    saw_candidate = False
    candidates = (block.strip() for block in _FENCE.findall(stripped))
    for candidate in (*candidates, *_balanced_objects(stripped)):
        saw_candidate = True
        value, error, broken = _decode(candidate, MAX_JSON_DEPTH)
        if error is FormatError.TOO_DEEP:
            return None, error
        if error is None and isinstance(value, dict):
            return (None, broken) if broken else (value, None)
    if saw_candidate:
        return None, FormatError.INVALID_JSON
    # An object that opens but never closes: usually generation cut off by the token limit.
    return None, (FormatError.TRUNCATED_JSON if "{" in stripped else FormatError.NO_JSON)


def parse_confidence(value: Any) -> tuple[float | None, FormatError | None]:
    """A confidence must be a real number in [0, 1]; strings, booleans, NaN and out-of-range values are failures.

    Decoded answers never hold NaN, infinities or huge integers (the decoder refuses them); a value handed over
    decoded by someone else (a tool call's arguments) may, and is judged without converting it first."""
    if value is None:
        return None, FormatError.MISSING_CONFIDENCE
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None, FormatError.CONFIDENCE_NOT_NUMERIC
    if isinstance(value, int) and not 0 <= value <= 1:  # compared exactly: float() of a huge int overflows
        return None, FormatError.CONFIDENCE_OUT_OF_RANGE
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
