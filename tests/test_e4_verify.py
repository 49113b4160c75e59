"""E4 verifier: the answer parser's named failures, grounding, exact reward values, and run metrics."""

from __future__ import annotations

import json

import pytest

from sv_env_phishing_detection import verify
from sv_env_phishing_detection.config import Abstention
from sv_env_phishing_detection.detectors import analyze
from sv_shared.answers.parsing import FormatError
from sv_shared.registry import get_environment

ENV = get_environment("e4")

# The worked example: a look-alike PayPal sender asking for a login through an IP address link.
PHISH = """From: PayPal <service@paypal-secure.com>
To: a@example.com
Subject: Your account will be suspended
Content-Type: text/plain

Please verify your account within 24 hours: http://203.0.113.7/login
"""
# Payment-change wording and urgency from an unauthenticated sender: genuinely mixed evidence.
MIXED = """From: Accounts <accounts@vendor-example.com>
To: a@example.com
Subject: Remittance
Content-Type: text/plain

Urgent: please use our new bank details for the next transfer.
"""
CLEAN = """From: Jane Doe <jane@example.com>
To: a@example.com
Subject: Lunch
Content-Type: text/plain

Lunch at noon on Friday?
"""


def item(raw: str, label: str, item_id: str = "0123456789abcdef") -> dict:
    return {"email_id": item_id, "raw_email": raw, "label": label, "language": "en"}


def answer(label: str, confidence: float, *evidence: tuple[str, str]) -> str:
    return json.dumps(
        {"label": label, "confidence": confidence, "evidence": [{"type": t, "quote": q} for t, q in evidence]}
    )


# --- parsing ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("completion", "error"),
    [
        ("", FormatError.EMPTY),
        ("It is phishing.", FormatError.NO_JSON),
        ('{"label": "Phishing", "confidence": 0.9, "evidence": [', FormatError.TRUNCATED_JSON),
        ("[1, 2]", FormatError.NOT_OBJECT),
        ('{"confidence": 0.9}', FormatError.MISSING_LABEL),
        ('{"label": "Spam", "confidence": 0.9}', FormatError.UNKNOWN_LABEL),
        ('{"label": "Phishing"}', FormatError.MISSING_CONFIDENCE),
        ('{"label": "Phishing", "confidence": 1.5}', FormatError.CONFIDENCE_OUT_OF_RANGE),
        ('{"label": "Phishing", "confidence": "high"}', FormatError.CONFIDENCE_NOT_NUMERIC),
        ('{"label": "Phishing", "confidence": 0.9, "evidence": "urgency"}', verify.EvidenceError.NOT_LIST),
        ('{"label": "Phishing", "confidence": 0.9, "evidence": ["urgency"]}', verify.EvidenceError.ITEM_NOT_OBJECT),
        (answer("Phishing", 0.9, ("urgency", "x")).replace('"urgency"', "7"), verify.EvidenceError.TYPE_NOT_STRING),
        (answer("Phishing", 0.9, ("typosquat", "paypa1.com")), verify.EvidenceError.UNKNOWN_TYPE),
        (answer("Phishing", 0.9, ("urgency", "x")).replace('"x"', "null"), verify.EvidenceError.QUOTE_NOT_STRING),
        (answer("Phishing", 0.9, *[("urgency", f"q{i}") for i in range(33)]), verify.EvidenceError.TOO_MANY),
    ],
)
def test_parse_failures_have_names(completion: str, error: str) -> None:
    parsed = ENV.verifier.parse(completion)
    assert not parsed.ok and parsed.error == error


def test_parse_accepts_fences_loose_types_and_missing_evidence() -> None:
    fenced = (
        '```json\n{"label": "phishing", "confidence": 1, "evidence": [{"type": "Lookalike-Domain", "quote": "q"}]}\n```'
    )
    assert ENV.verifier.parse(fenced).output == {
        "label": "Phishing",
        "confidence": 1.0,
        "evidence": [{"type": "lookalike_domain", "quote": "q"}],
    }
    assert ENV.verifier.parse('{"label": "Abstain", "confidence": 0.5}').output["evidence"] == []
    assert ENV.verifier.parse('{"label": "Legitimate", "confidence": 0.5, "evidence": null}').output["evidence"] == []


# --- exact reward values ------------------------------------------------------------------------------------------


def test_worked_example_reward() -> None:
    """Phishing at 0.9 with four entries: one supported look-alike, one supported urgency, one invented quote and
    one real quote under the wrong type. 0.45·1 + 0.15·0.99 + 0.05·1 + 0.1·(2/4) + 0.15·(2/5) + 0.1·(3/4), no cost."""
    assert analyze(PHISH).suspicion == pytest.approx(0.92265)
    completion = answer(
        "Phishing",
        0.9,
        ("lookalike_domain", "paypal-secure.com"),
        ("urgency", "Your account will be suspended"),
        ("credential_request", "verify your password"),
        ("auth_failure", "within 24 hours"),
    )
    scored = ENV.verifier.score(item(PHISH, "Phishing"), completion)
    assert scored.components == {
        "accuracy": 1.0,
        "calibration": pytest.approx(0.99),
        "asymmetric_cost": 1.0,
        "format": 1.0,
        "evidence_precision": 0.5,
        "evidence_recall": 0.4,
        "grounding": 0.75,
    }
    assert scored.reward == pytest.approx(0.8335)
    assert scored.details["covered"] == ["lookalike_domain", "urgency"]
    assert not scored.details["mixed"]


def test_duplicate_entries_cost_precision() -> None:
    """Repeating a quote (even re-cased or padded) adds no evidence; every entry listed counts against precision."""
    once = ENV.verifier.score(
        item(PHISH, "Phishing"), answer("Phishing", 0.9, ("lookalike_domain", "paypal-secure.com"))
    )
    twice = ENV.verifier.score(
        item(PHISH, "Phishing"),
        answer("Phishing", 0.9, ("lookalike_domain", "paypal-secure.com"), ("lookalike_domain", "PAYPAL-SECURE.COM ")),
    )
    assert twice.components == once.components | {"evidence_precision": 0.5}


def test_missed_phish_without_evidence() -> None:
    """A miss costs everything on asymmetric cost (the whole 0.7 penalty); saying nothing about a phish earns no
    evidence credit."""
    scored = ENV.verifier.score(item(PHISH, "Phishing"), answer("Legitimate", 0.8))
    assert scored.components["asymmetric_cost"] == 0.0
    assert scored.components["calibration"] == pytest.approx(0.36)
    assert (scored.components["evidence_precision"], scored.components["evidence_recall"]) == (0.0, 0.0)
    assert scored.reward == pytest.approx(0.15 * 0.36 + 0.05 - 0.7)


def test_false_alarm_costs_less_than_a_miss() -> None:
    scored = ENV.verifier.score(item(CLEAN, "Legitimate"), answer("Phishing", 0.6, ("urgency", "Lunch at noon")))
    assert scored.components["asymmetric_cost"] == pytest.approx(1 - 0.3)
    assert scored.components["evidence_precision"] == 0.0 and scored.components["grounding"] == 1.0


def test_clean_email_with_no_evidence_scores_full_evidence_credit() -> None:
    scored = ENV.verifier.score(item(CLEAN, "Legitimate"), answer("Legitimate", 1.0))
    assert scored.reward == pytest.approx(1.0)


def test_abstaining_pays_only_on_mixed_evidence() -> None:
    assert analyze(MIXED).suspicion == pytest.approx(0.4475)
    mixed = ENV.verifier.score(item(MIXED, "Phishing"), answer("Abstain", 0.5, ("payment_change", "new bank details")))
    assert mixed.details["mixed"]
    assert mixed.components["asymmetric_cost"] == pytest.approx(0.85)
    assert mixed.components["calibration"] == 0.0 and mixed.components["accuracy"] == 0.0
    # 0.05·1 + 0.1·1 + 0.15·(1/2) + 0.1·1, less 0.7·0.15
    assert mixed.reward == pytest.approx(0.22)
    clear_phish = ENV.verifier.score(item(PHISH, "Phishing"), answer("Abstain", 0.5))
    assert clear_phish.components["asymmetric_cost"] == 0.0  # costed as the miss it avoided
    clear_legit = ENV.verifier.score(item(CLEAN, "Legitimate"), answer("Abstain", 0.5))
    assert clear_legit.components["asymmetric_cost"] == pytest.approx(0.7)  # costed as a false alarm
    assert clear_legit.reward < ENV.verifier.score(item(CLEAN, "Legitimate"), answer("Legitimate", 0.5)).reward


def test_parse_failure_scores_zero_everywhere_and_earns_the_floor() -> None:
    scored = ENV.verifier.score(item(PHISH, "Phishing"), "I think this is phishing")
    assert scored.reward == ENV.verifier.reward_floor == -0.7 and set(scored.components.values()) == {0.0}
    assert scored.error == FormatError.NO_JSON
    assert set(scored.components) == set(ENV.config.reward_weights.as_mapping())


def test_ungrounded_quotes_score_nothing_even_with_the_right_type() -> None:
    scored = ENV.verifier.score(
        item(PHISH, "Phishing"), answer("Phishing", 1.0, ("urgency", "will be suspended forever"))
    )
    assert scored.components["grounding"] == 0.0 and scored.components["evidence_precision"] == 0.0
    assert scored.components["evidence_recall"] == 0.0


def test_score_uses_the_raw_email_not_stored_indicators() -> None:
    forged = {**item(CLEAN, "Legitimate"), "indicators": json.dumps([{"type": "urgency", "quotes": ["lunch"]}])}
    scored = ENV.verifier.score(forged, answer("Legitimate", 1.0, ("urgency", "Lunch at noon")))
    assert scored.components["evidence_precision"] == 0.0


def test_mixed_band_comes_from_config() -> None:
    narrow = verify.phishing_task(ENV.config.model_copy(update={"abstention": Abstention(mixed_band=[0.5, 0.6])}))
    scored = verify.score_completion(narrow, "x", "Phishing", answer("Abstain", 0.5), analyze(MIXED))
    assert scored.components["asymmetric_cost"] == 0.0
    with pytest.raises(ValueError, match="mixed_band"):
        Abstention(mixed_band=[0.6, 0.3])


# --- aggregation --------------------------------------------------------------------------------------------------


def test_aggregate_reports_evidence_grounding_and_abstention_by_evidence() -> None:
    items = {
        "a" * 16: item(PHISH, "Phishing", "a" * 16),
        "b" * 16: {**item(MIXED, "Phishing", "b" * 16), "language": "de"},
        "c" * 16: item(CLEAN, "Legitimate", "c" * 16),
    }
    completions = {
        "a" * 16: answer("Phishing", 0.9, ("lookalike_domain", "paypal-secure.com"), ("urgency", "not in the email")),
        "b" * 16: answer("Abstain", 0.5, ("payment_change", "new bank details")),
        "c" * 16: "no answer",
    }
    records = [ENV.verifier.score(items[key], text).to_record() for key, text in completions.items()]
    metrics = ENV.verifier.aggregate(records, items)
    assert metrics["n"] == 3 and metrics["n_mixed"] == 1
    assert metrics["grounding_rate"] == pytest.approx(2 / 3)
    assert metrics["abstention_rate_mixed"] == 1.0 and metrics["abstention_rate_clear"] == 0.0
    assert metrics["evidence_recall_by_type"]["lookalike_domain"] == 1.0
    assert metrics["evidence_recall_by_type"]["urgency"] == 0.0
    assert metrics["accuracy_by_language"] == {"de": 0.0, "en": 0.5}
    assert metrics["format_errors"] == {"no_json_object": 1}
    assert metrics["cost_weighted_error"] == pytest.approx((0.0 + 0.15 + 0.3) / 3)  # the mixed abstention costs 0.15
    for _, key in ENV.verifier.report_columns():
        value = metrics
        for part in key.split("."):  # a dotted key names a nested metric ("rates.itt.fpr")
            assert part in value, key
            value = value[part]
