"""Where a model's answer ends, so generation can stop there instead of running on to the token budget.

Each environment declares its answer's end (ANSWER_ENDS): most answer with one JSON object (E1, E4 labels; E2, E3
findings and patches inside JSON strings; E5's attacker message; a text-protocol tool call `TOOL: scan {…}` ends with
its argument object too), E6's defender answers in free text, which ends only where the model ends its turn.

A JSON answer is complete when the parser (parsing.extract_json_object) would already settle on it from the text so
far: a balanced object (braces inside JSON strings and escapes do not count) that decodes to an object, or a verdict
no further text can change (a broken answer rule: a repeated key, nesting deeper than the parser reads, a number that
is not a plain finite value). Text after that point is never read by the parser, so stopping there changes no score
and saves the tokens.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Final

from sv_shared.answers.parsing import SETTLED_REFUSALS, extract_json_object


class AnswerEnd(StrEnum):
    """What ends an answer; the value is the generation parameter's value."""

    JSON_OBJECT = "json_object"
    """The first JSON object the parser accepts is closed."""
    END_OF_TURN = "end_of_turn"
    """Free text: only the model's own end of turn (or the budget) ends it."""


ANSWER_END_PARAM: Final = "answer_end"
"""The generation parameter that carries an AnswerEnd to the local model; providers that cannot stop on it drop it."""

ANSWER_ENDS: Final[dict[str, AnswerEnd]] = {
    "e1": AnswerEnd.JSON_OBJECT,
    "e2": AnswerEnd.JSON_OBJECT,
    "e3": AnswerEnd.JSON_OBJECT,
    "e4": AnswerEnd.JSON_OBJECT,
    "e5": AnswerEnd.JSON_OBJECT,
    "e6": AnswerEnd.END_OF_TURN,
}
"""The answer end of the policy under evaluation in each environment (E5: the attacker's JSON turn; E6: the
defender's plain-text reply)."""


def answer_end_params(env_id: str) -> dict[str, Any]:
    """The generation parameter declaring env_id's answer end ({} for free text or an unknown environment)."""
    end = ANSWER_ENDS.get(env_id, AnswerEnd.END_OF_TURN)
    return {} if end is AnswerEnd.END_OF_TURN else {ANSWER_END_PARAM: end.value}


def answer_end_of(params: dict[str, Any]) -> AnswerEnd:
    """The AnswerEnd params declare; a value that names none is an error naming it."""
    value = params.get(ANSWER_END_PARAM)
    if value is None:
        return AnswerEnd.END_OF_TURN
    try:
        return AnswerEnd(value)
    except ValueError:
        known = ", ".join(end.value for end in AnswerEnd)
        raise ValueError(f"{ANSWER_END_PARAM}={value!r} is not an answer end (known: {known})") from None


def json_answer_complete(text: str) -> bool:
    """Whether text already holds the JSON answer the parser will take, so nothing after it can matter."""
    if "}" not in text:
        return False
    answer, error = extract_json_object(text)
    return answer is not None or error in SETTLED_REFUSALS


LOOP_REPEATS: Final = 3
"""Consecutive copies of the same span at the end of a reply that make it a repetition loop."""
_LOOP_MIN_SPAN: Final = 8
_LOOP_WINDOW: Final = 4096
"""Only the reply's last characters are searched for a loop (the search is quadratic in its window)."""


def ends_in_loop(text: str) -> bool:
    """Whether text ends by repeating one span (8 characters or more) at least LOOP_REPEATS times: greedy decoding
    caught in a loop, a model failure that no token budget would have let finish (not a truncation)."""
    tail = text.rstrip()[-_LOOP_WINDOW:]
    for span in range(_LOOP_MIN_SPAN, len(tail) // LOOP_REPEATS + 1):
        unit = tail[-span:]
        if tail.endswith(unit * LOOP_REPEATS):
            return True
    return False


def cut_by_budget(text: str, finish_reason: str | None, answer_end: AnswerEnd) -> bool:
    """Whether a reply was cut short by its token budget: it hit the budget (finish_reason "length") before its
    answer ended (a JSON answer not yet complete; free text before the model ended its turn, i.e. mid-sentence),
    and it was not caught in a repetition loop (a model failure no budget fixes)."""
    if finish_reason != "length" or ends_in_loop(text):
        return False
    return answer_end is AnswerEnd.END_OF_TURN or not json_answer_complete(text)
