"""E3 answer parsing and the pure reward pieces: named failures, lenient CWE spellings, CWE families, diff size."""

from __future__ import annotations

import json

import pytest

from sv_env_code_vulnerability.schema import normalize_cwe
from sv_env_code_vulnerability.verify import (
    AnswerError,
    answer_json,
    cwe_score,
    finding_gone_share,
    minimal_diff_score,
    new_findings,
    no_new_findings_score,
    parse_answer,
    target_findings,
)
from sv_shared.answers.parsing import FormatError
from sv_shared.execution.findings import Finding

DIFF = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"


@pytest.mark.parametrize(
    ("completion", "error"),
    [
        ("", FormatError.EMPTY),
        ("I would parameterise the query.", FormatError.NO_JSON),
        ('{"diff": "x", "cwe": ', FormatError.TRUNCATED_JSON),
        ("[1, 2]", FormatError.NOT_OBJECT),
        ('{"cwe": "CWE-89"}', AnswerError.MISSING_DIFF),
        ('{"diff": ["-a", "+b"], "cwe": "CWE-89"}', AnswerError.DIFF_NOT_STRING),
        ('{"diff": ""}', AnswerError.MISSING_CWE),
        ('{"diff": "", "cwe": "SQL injection"}', AnswerError.INVALID_CWE),
        ('{"diff": "", "cwe": true}', AnswerError.INVALID_CWE),
        ('{"diff": "", "cwe": "CWE-89", "explanation": 3}', AnswerError.EXPLANATION_NOT_STRING),
        ("x" * 200_001, FormatError.TOO_LONG),
    ],
)
def test_parse_failures_are_named(completion: str, error: str) -> None:
    parsed = parse_answer(completion)
    assert parsed.output is None
    assert parsed.error == error


def test_parses_the_documented_format_in_prose_and_fences() -> None:
    answer = answer_json(DIFF, "CWE-89", "parameterise the query")
    for completion in (answer, f"Here is my fix:\n```json\n{answer}\n```\nDone.", f"Sure. {answer}"):
        parsed = parse_answer(completion)
        assert parsed.ok and parsed.output == {"diff": DIFF, "cwe": "CWE-89", "explanation": "parameterise the query"}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("CWE-89", "CWE-89"),
        ("cwe 89", "CWE-89"),
        ("CWE_0089", "CWE-89"),
        (89, "CWE-89"),
        ("none", "none"),
        (None, None),
        ("CWE-0", None),
        ("XSS", None),
    ],
)
def test_cwe_spellings(raw: object, expected: str | None) -> None:
    assert normalize_cwe(raw) == expected


def test_null_diff_and_explanation_are_empty() -> None:
    parsed = parse_answer(json.dumps({"diff": None, "cwe": None, "explanation": None}))
    assert parsed.output == {"diff": "", "cwe": "none", "explanation": ""}


def test_cwe_score_exact_family_and_none() -> None:
    assert cwe_score("CWE-89", "CWE-89", 0.5) == 1.0
    assert cwe_score("CWE-327", "CWE-328", 0.5) == 0.5
    assert cwe_score("CWE-193", "CWE-125", 0.25) == 0.25
    assert cwe_score("CWE-79", "CWE-89", 0.5) == 0.0
    assert cwe_score("none", "CWE-89", 0.5) == 0.0
    assert cwe_score("CWE-89", None, 0.5) == 0.0


def _finding(tool: str, rule: str, severity: str = "medium") -> Finding:
    return Finding(tool, rule, None, severity, None, "m.py", 1, rule)


def test_finding_arithmetic() -> None:
    original = [_finding("bandit", "B608"), _finding("semgrep", "sql"), _finding("bandit", "B404", "low")]
    reference = [_finding("bandit", "B404", "low"), _finding("bandit", "B603", "low")]
    target = target_findings(original, reference)
    assert sum(target.values()) == 2
    assert finding_gone_share(target, [_finding("semgrep", "sql")]) == 0.5
    assert finding_gone_share(target, []) == 1.0
    assert finding_gone_share(target_findings(original, original), []) is None
    # B603 comes with the reference fix, so it is not new; an eval is.
    patched = [_finding("bandit", "B603", "low"), _finding("bandit", "B307", "medium")]
    added = new_findings(patched, original, reference)
    assert [f.rule_id for f in added] == ["B307"]
    assert no_new_findings_score(added) == pytest.approx(1 / 3)
    assert no_new_findings_score([_finding("bandit", "B602", "high")]) == 0.0


def test_minimal_diff_score() -> None:
    assert minimal_diff_score(2, 2, 1.5) == 1.0
    assert minimal_diff_score(3, 2, 1.5) == 1.0
    assert minimal_diff_score(6, 2, 1.5) == 0.5
    assert minimal_diff_score(0, 2, 1.5) == 0.0
