"""E4 sender evidence weighed, not decided: a Return-Path of another organisation is one weak clue; authentication
results, DMARC alignment and consistent From headers decide whether From is forged."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from sv_env_phishing_detection.baseline import rules_answer
from sv_env_phishing_detection.data import decode_message_bytes
from sv_env_phishing_detection.detectors import (
    SPOOFING_WEIGHT,
    SenderVerdict,
    analyze,
    auth_verdicts,
    normalize,
    parse_email,
    srs_original_domain,
    vouches_for_from,
    weigh_sender,
)
from sv_env_phishing_detection.detectors.domains import address_domain

CPYTHON_MAIL = Path(sysconfig.get_paths()["stdlib"]) / "test" / "test_email" / "data"
"""CPython's own email test messages (legitimate mail), present where the stdlib's tests are installed."""
AR = "Authentication-Results: mx.example.org; "
"""The receiving server's results header, to which each test appends its verdicts."""


def message(*headers: str, from_: str = "Ana Ruiz <ana@example.com>") -> str:
    """A plain message from `from_` with the given headers after its From (a second From among them is the second)."""
    lines = [f"From: {from_}", *headers, "To: reader@example.org", "Subject: Thursday"]
    return "\n".join([*lines, 'Content-Type: text/plain; charset="utf-8"', "", "See you on Thursday.", ""])


def sender(raw: str) -> SenderVerdict:
    """The message's sender evidence, weighed as analyze weighs it."""
    parsed = parse_email(raw)
    verdicts = auth_verdicts(parsed.auth_results)
    from_domain = address_domain(parsed.from_address)
    return weigh_sender(parsed, verdicts, from_domain, vouched=vouches_for_from(verdicts, from_domain))


def spoofed(raw: str) -> bool:
    return "sender_spoofing" in analyze(raw).types


@pytest.mark.parametrize(
    "return_path",
    [
        "bounce-8812-reader=example.org@mail.sendservice.net",  # a mail service's VERP bounce address
        "python-dev-bounces+reader=example.org@python.org",  # a list that bounces to itself
        "reader@example.org",  # a local delivery agent that wrote the recipient as Return-Path
    ],
)
def test_a_return_path_mismatch_alone_is_one_weak_clue_not_spoofing(return_path: str) -> None:
    raw = message(f"Return-Path: <{return_path}>")
    verdict = sender(raw)
    assert [clue.name for clue in verdict.clues] == ["return_path_mismatch"]
    assert verdict.weight < SPOOFING_WEIGHT and not verdict.anchors
    assert not spoofed(raw)


@pytest.mark.parametrize(
    ("headers", "clue"),
    [
        ((AR + "spf=softfail smtp.mailfrom=bulk.example.net",), "authentication_failed"),
        (("Received-SPF: fail (bulk.example.net does not designate 192.0.2.7)",), "authentication_failed"),
        ((AR + "dmarc=fail header.from=example.com",), "authentication_failed"),
        ((AR + "dkim=pass header.d=bulk.example.net",), "unaligned_authentication"),
        ((AR + "spf=pass smtp.mailfrom=bulk.example.net; dmarc=none",), "unaligned_authentication"),
    ],
)
def test_a_mismatch_corroborated_by_the_receivers_results_is_spoofing(headers: tuple[str, ...], clue: str) -> None:
    raw = message("Return-Path: <bounce@bulk.example.net>", *headers)
    verdict = sender(raw)
    assert {"return_path_mismatch", clue} <= {found.name for found in verdict.clues}
    assert verdict.spoofed and verdict.anchors == ("bounce@bulk.example.net", "ana@example.com")
    assert analyze(raw).indicators["sender_spoofing"] == ("bounce@bulk.example.net", "ana@example.com")


def test_a_brand_from_with_a_foreign_envelope_and_nothing_vouching_is_spoofing() -> None:
    raw = message("Return-Path: <bounce@bulk.example.net>", from_="PayPal <service@paypal.com>")
    assert {clue.name for clue in sender(raw).clues} == {"return_path_mismatch", "unauthenticated_brand"}
    assert spoofed(raw)


@pytest.mark.parametrize(
    "headers",
    [
        (AR + "spf=fail smtp.mailfrom=example.com; dmarc=fail",),
        ("Return-Path: <ana@example.com>", AR + "dkim=pass header.d=other.example"),
    ],
)
def test_one_clue_without_a_second_is_not_spoofing(headers: tuple[str, ...]) -> None:
    verdict = sender(message(*headers))
    assert len(verdict.clues) == 1 and not verdict.spoofed


def test_a_failure_for_from_and_another_organisation_authenticated_is_spoofing_without_a_mismatch() -> None:
    raw = message(
        "Return-Path: <ana@example.com>",
        AR + "spf=fail smtp.mailfrom=example.com; dkim=pass header.d=other.example",
    )
    assert {clue.name for clue in sender(raw).clues} == {"authentication_failed", "unaligned_authentication"}
    assert analyze(raw).indicators["sender_spoofing"] == ("ana@example.com",)


def test_aligned_authentication_outweighs_a_foreign_envelope() -> None:
    raw = message(
        "Return-Path: <bounce@bulk.example.net>",
        AR + "spf=pass smtp.mailfrom=bulk.example.net; dkim=pass header.d=example.com",
    )
    assert sender(raw).clues == () and not spoofed(raw)


@pytest.mark.parametrize(
    ("headers", "detail"),
    [
        # RFC 5322 allows one From field; readers and DMARC may each pick a different one of two.
        (
            ("Return-Path: <ana@example.com>", "From: PayPal <service@paypal.com>"),
            "second From header names paypal.com",
        ),
        # The receiving server checked another From than the one a reader is shown.
        ((AR + "dmarc=pass header.from=evil.example",), "header.from=evil.example"),
    ],
)
def test_from_headers_that_disagree_are_spoofing_on_their_own(headers: tuple[str, ...], detail: str) -> None:
    verdict = sender(message(*headers))
    assert [clue.name for clue in verdict.clues] == ["conflicting_from"]
    assert detail in verdict.clues[0].detail and verdict.spoofed


def test_a_second_from_is_weighed_even_when_dmarc_vouches_for_the_first() -> None:
    raw = message(
        AR + "dmarc=pass header.from=example.com",
        "From: PayPal <service@paypal.com>",
    )
    assert analyze(raw).aligned_pass and spoofed(raw)


@pytest.mark.parametrize(
    ("address", "original"),
    [
        ("srs0=hhh=tt=example.com=ana@forwarder.example.net", "example.com"),
        ("SRS0+hhh=tt=mail.example.com=ana@forwarder.example.net", "mail.example.com"),
        ("srs1=hhh=first.example.org==hhh=tt=example.com=ana@second.example.net", "example.com"),
        ("bounce-8812@mail.sendservice.net", None),
        ("srs0=broken@forwarder.example.net", None),
    ],
)
def test_srs_original_domain(address: str, original: str | None) -> None:
    assert srs_original_domain(address) == original


def test_a_forwarder_that_rewrote_the_envelope_with_srs_explains_the_mismatch() -> None:
    raw = message(
        "Return-Path: <SRS0=Ab12=TT=example.com=ana@forwarder.example.net>",
        AR + "spf=pass smtp.mailfrom=forwarder.example.net",
    )
    verdict = sender(raw)
    assert "SRS" in (verdict.explained_mismatch or "")
    assert [clue.name for clue in verdict.clues] == ["unaligned_authentication"] and not spoofed(raw)


def test_the_rules_baseline_quotes_a_grounded_span_for_a_weighed_spoof() -> None:
    raw = message(
        "Return-Path: <bounce@bulk.example.net>",
        AR + "spf=softfail smtp.mailfrom=bulk.example.net",
    )
    answer = rules_answer({"raw_email": raw})
    assert '"sender_spoofing", "quote": "bounce@bulk.example.net"' in answer
    assert analyze(raw).grounded(normalize("bounce@bulk.example.net"))


def test_suspicion_does_not_depend_on_the_process_hash_seed() -> None:
    """The noisy-OR multiplies floats; a set of strings iterates in a per-process order, so it must not decide it."""
    code = (
        "from sv_env_phishing_detection.detectors import suspicion_score;"
        "print(suspicion_score(['auth_failure', 'credential_request', 'display_name_mismatch', 'urgency'],"
        " aligned_pass=False))"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("0", "8")  # these two seeds ordered that set differently before its order was fixed
    }
    assert len(outputs) == 1


@pytest.mark.skipif(not CPYTHON_MAIL.is_dir(), reason="CPython's email test data is not installed here")
def test_cpython_email_test_messages_are_not_called_spoofed() -> None:
    """Legitimate mail as CPython tests its parser on it: five of these carry a Return-Path of another organisation
    and nothing else about their sender. At most 1 in 100 may be called spoofed."""
    files = sorted(CPYTHON_MAIL.glob("msg_*.txt"))
    flagged = [file.name for file in files if spoofed(decode_message_bytes(file.read_bytes()).replace("\r\n", "\n"))]
    assert len(files) >= 40 and len(flagged) <= len(files) // 100, flagged
