"""The JSON-answer parser: where it finds the answer, and the named reason for every failure."""

from __future__ import annotations

import time

import pytest

from sv_shared.answers.parsing import MAX_JSON_DEPTH, FormatError, JsonClassificationParser, decode_json

PARSER = JsonClassificationParser(labels=("Benign", "Malicious", "Abstain"))


@pytest.mark.parametrize(
    ("completion", "label", "confidence"),
    [
        ('{"label": "Malicious", "confidence": 0.9, "rationale": "scan"}', "Malicious", 0.9),
        ('  {"label": "  malicious ", "confidence": 1}  ', "Malicious", 1.0),
        ('{"label": "BENIGN", "confidence": 0}', "Benign", 0.0),
        ('Sure! ```json\n{"label": "Abstain", "confidence": 0.5}\n``` hope that helps', "Abstain", 0.5),
        ('```\n{"label": "benign", "confidence": 0.25}\n```', "Benign", 0.25),
        (
            'My answer: {"label": "Malicious", "confidence": 0.7, "rationale": "odd {brace} in \\"text\\""} end',
            "Malicious",
            0.7,
        ),
        ('{"note": oops} then {"label": "Benign", "confidence": 0.6}', "Benign", 0.6),
    ],
)
def test_finds_and_normalizes_the_answer(completion: str, label: str, confidence: float) -> None:
    result = PARSER.parse(completion)
    assert result.ok, result.error
    assert result.output is not None
    assert result.output["label"] == label
    assert result.output["confidence"] == confidence
    assert isinstance(result.output["confidence"], float)


def test_rationale_is_kept_and_defaults_to_empty() -> None:
    assert PARSER.parse('{"label": "Benign", "confidence": 0.5, "rationale": "dns"}').output["rationale"] == "dns"
    assert PARSER.parse('{"label": "Benign", "confidence": 0.5}').output["rationale"] == ""


@pytest.mark.parametrize(
    ("completion", "reason"),
    [
        ("", FormatError.EMPTY),
        ("   \n ", FormatError.EMPTY),
        ("The flow looks malicious.", FormatError.NO_JSON),
        ('{"label": "Malicious", "confidence": 0.9, "rationale": "port sc', FormatError.TRUNCATED_JSON),
        ("{label: Malicious, confidence: 0.9}", FormatError.INVALID_JSON),
        ('["Malicious", 0.9]', FormatError.NOT_OBJECT),
        ('{"confidence": 0.9}', FormatError.MISSING_LABEL),
        ('{"label": 1, "confidence": 0.9}', FormatError.LABEL_NOT_STRING),
        ('{"label": "Suspicious", "confidence": 0.9}', FormatError.UNKNOWN_LABEL),
        ('{"label": "Benign"}', FormatError.MISSING_CONFIDENCE),
        ('{"label": "Benign", "confidence": null}', FormatError.MISSING_CONFIDENCE),
        ('{"label": "Benign", "confidence": "0.9"}', FormatError.CONFIDENCE_NOT_NUMERIC),
        ('{"label": "Benign", "confidence": "high"}', FormatError.CONFIDENCE_NOT_NUMERIC),
        ('{"label": "Benign", "confidence": true}', FormatError.CONFIDENCE_NOT_NUMERIC),
        ('{"label": "Benign", "confidence": NaN}', FormatError.NUMBER_NOT_FINITE),
        ('{"label": "Benign", "confidence": Infinity}', FormatError.NUMBER_NOT_FINITE),
        ('{"label": "Benign", "confidence": 1.5}', FormatError.CONFIDENCE_OUT_OF_RANGE),
        ('{"label": "Benign", "confidence": -0.1}', FormatError.CONFIDENCE_OUT_OF_RANGE),
        ('{"label": "Benign", "confidence": 90}', FormatError.CONFIDENCE_OUT_OF_RANGE),
        ('{"label": "Benign", "confidence": 0.9, "rationale": ["a"]}', FormatError.RATIONALE_NOT_STRING),
    ],
)
def test_failures_have_named_reasons(completion: str, reason: FormatError) -> None:
    result = PARSER.parse(completion)
    assert not result.ok
    assert result.output is None
    assert result.error == reason


def test_huge_and_hostile_inputs_fail_fast_without_crashing() -> None:
    too_long = '{"label": "Benign", "confidence": 0.5, "rationale": "' + "x" * 200_000 + '"}'
    assert PARSER.parse(too_long).error == FormatError.TOO_LONG
    started = time.perf_counter()
    assert PARSER.parse("{" * 90_000).error == FormatError.TOO_DEEP
    assert PARSER.parse("[" * 50_000 + "]" * 50_000).error == FormatError.TOO_DEEP
    assert PARSER.parse("{}" * 40_000).error == FormatError.MISSING_LABEL
    assert time.perf_counter() - started < 5.0


@pytest.mark.parametrize(
    "completion",
    [
        '{"label": "Benign", "label": "Malicious", "confidence": 0.9}',
        '{"label": "Malicious", "confidence": 0.9, "confidence": 0.1}',
        '{"label": "Malicious", "confidence": 0.9, "rationale": {"a": 1, "a": 2}}',
        'Answer:\n```json\n{"label": "Benign", "label": "Malicious", "confidence": 0.9}\n```',
        'I think {"label": "Benign", "label": "Malicious", "confidence": 0.9} and {"label": "Benign", "confidence": 1}',
    ],
)
def test_a_repeated_key_is_refused_never_resolved(completion: str) -> None:
    """A key given twice could show a reader one value and the scorer another: the answer is refused as a format
    failure, at any depth, and the parser does not fall back to a later object."""
    result = PARSER.parse(completion)
    assert result.output is None and result.error == FormatError.DUPLICATE_KEY


def test_the_same_key_in_different_objects_is_fine() -> None:
    result = PARSER.parse('{"label": "Benign", "confidence": 0.5, "rationale": "{\\"label\\": 1}"}')
    assert result.ok and result.output["rationale"] == '{"label": 1}'


def test_nesting_is_bounded_before_decoding() -> None:
    nested = '{"label": "Benign", "confidence": 0.5, "x": ' + "[" * 120 + "]" * 120 + "}"
    assert PARSER.parse(nested).error == FormatError.TOO_DEEP
    fine = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert decode_json(fine)[1] is None
    assert decode_json("[" + fine + "]")[1] == FormatError.TOO_DEEP
    assert decode_json('["[[[[[[[[[[", "\\"[[["]', max_depth=2) == (["[[[[[[[[[[", '"[[['], None)


@pytest.mark.parametrize("gap", ["\u200b", "\u00a0", "\u2028", "\u3000", "\ufeff", "\u202e", "\u200b\u00a0 \n"])
def test_invisible_and_non_ascii_spaces_between_tokens_read_as_whitespace(gap: str) -> None:
    """A reader sees the answer; json.loads alone would call it invalid, and E5 would then send the whole text."""
    completion = "{" + gap + '"label":' + gap + '"Benign",' + gap + '"confidence":' + gap + "0.6" + gap + "}"
    result = PARSER.parse(completion)
    assert result.ok, result.error
    assert result.output["label"] == "Benign" and result.output["confidence"] == 0.6


def test_strings_keep_their_invisible_characters() -> None:
    value, error = decode_json('{"message":\u200b"a\u200bb\u00a0c",\u200b"note": "\\"\u200b"}')
    assert error is None and value == {"message": "a\u200bb\u00a0c", "note": '"\u200b'}
    assert decode_json('{"x"\u200b: 1 x}')[1] == FormatError.INVALID_JSON  # other mistakes stay mistakes
