"""E4 sender rule on list mail: a Return-Path ≠ From is not held against a message that DMARC-style alignment vouches
for or that an authenticated mailing list relays; list headers alone, which a phisher adds for free, whitewash
nothing (tests/test_e4_sender_evidence.py weighs the other clues)."""

from __future__ import annotations

import pytest

from sv_env_phishing_detection.baseline import rules_answer
from sv_env_phishing_detection.detectors import analyze, auth_verdicts, parse_email, relayed_by_list, vouches_for_from


def _message(*, from_: str, return_path: str, auth: str | None, extra: tuple[str, ...] = ()) -> str:
    headers = [f"Return-Path: <{return_path}>"]
    if auth is not None:
        headers.append(f"Authentication-Results: mx.example.net; {auth}")
    headers += [f"From: {from_}", "To: reader@example.org", "Subject: Re: weekly notes", *extra]
    return "\n".join([*headers, 'Content-Type: text/plain; charset="utf-8"', "", "See you on Thursday.", ""])


PYTHON_DEV = _message(
    from_="Ana Ruiz <ana.ruiz@example.com>",
    return_path="python-dev-bounces+reader=example.org@python.org",
    auth="spf=pass smtp.mailfrom=python.org; dkim=pass header.d=python.org; dmarc=none header.from=example.com",
    extra=("Sender: Python-Dev <python-dev-bounces@python.org>", "List-Id: Python-Dev <python-dev.python.org>"),
)
"""The issue's example: a discussion list that keeps the author's From and bounces to itself."""


def _spoofing(raw: str) -> bool:
    return "sender_spoofing" in analyze(raw).types


def test_mailing_list_relay_is_not_spoofing() -> None:
    assert not _spoofing(PYTHON_DEV)


def test_google_groups_style_relay_with_sender_and_no_dmarc_verdict() -> None:
    raw = _message(
        from_="jens@example.net",
        return_path="hiking+bncBDE@googlegroups.com",
        auth="dkim=pass header.i=@googlegroups.com; spf=pass smtp.mailfrom=googlegroups.com",
        extra=("Sender: hiking@googlegroups.com", "List-Unsubscribe: <mailto:hiking+unsubscribe@googlegroups.com>"),
    )
    assert not _spoofing(raw)


def test_bounce_domain_of_a_mail_service_with_aligned_dkim_is_not_spoofing() -> None:
    raw = _message(
        from_="Shop <news@shop.example.com>",
        return_path="bounce-8812@mail.sendservice.net",
        auth="dkim=pass header.d=example.com; spf=pass smtp.mailfrom=mail.sendservice.net",
        extra=("List-Unsubscribe: <https://shop.example.com/unsubscribe>",),
    )
    assert vouches_for_from(auth_verdicts(parse_email(raw).auth_results), "shop.example.com")
    assert not _spoofing(raw)


@pytest.mark.parametrize(
    ("auth", "extra"),
    [
        # List headers and an authenticated envelope domain of the phisher's own, but DMARC fails for From.
        (
            "spf=pass smtp.mailfrom=mailer-lists.top; dkim=none; dmarc=fail header.from=example.com",
            ("List-Id: <news.mailer-lists.top>", "Sender: news@mailer-lists.top"),
        ),
        # List headers and an SPF softfail for the envelope the receiving server recorded (Received-SPF only).
        (None, ("List-Id: <staff.mailer-lists.top>", "Received-SPF: softfail (mailer-lists.top: 192.0.2.9)")),
        # A List-Id naming another organisation than the envelope sender.
        ("spf=pass smtp.mailfrom=mailer-lists.top; dmarc=none", ("List-Id: <finance.example.com>",)),
        # A DKIM pass for the phisher's domain that is not From's organisation, and no list headers.
        ("dkim=pass header.d=mailer-lists.top; spf=pass smtp.mailfrom=mailer-lists.top", ()),
    ],
)
def test_list_headers_a_phisher_adds_do_not_whitewash_a_mismatch(auth: str | None, extra: tuple[str, ...]) -> None:
    raw = _message(
        from_="IT Helpdesk <helpdesk@example.com>", return_path="list@mailer-lists.top", auth=auth, extra=extra
    )
    assert _spoofing(raw)


def test_a_brand_domain_is_vouched_for_only_by_dmarc_never_by_list_headers() -> None:
    raw = _message(
        from_="PayPal <service@paypal.com>",
        return_path="bounce@lists.example-relay.org",
        auth="spf=pass smtp.mailfrom=lists.example-relay.org; dmarc=none",
        extra=("List-Id: <offers.lists.example-relay.org>", "Sender: offers@lists.example-relay.org"),
    )
    parsed = parse_email(raw)
    assert not relayed_by_list(parsed, auth_verdicts(parsed.auth_results), "paypal.com")
    assert _spoofing(raw)


def test_dmarc_fail_is_never_outweighed_by_an_aligned_dkim_pass() -> None:
    verdicts = auth_verdicts("dkim=pass header.d=example.com; dmarc=fail header.from=example.com")
    assert not vouches_for_from(verdicts, "example.com")


def test_rules_baseline_no_longer_calls_a_clicky_list_newsletter_phishing() -> None:
    """Sender spoofing plus a click-tracking shortener and a deadline used to cross the phishing threshold."""
    raw = _message(
        from_="Release Team <releases@example-project.org>",
        return_path="announce-bounces@lists.project-hosting.net",
        auth="spf=pass smtp.mailfrom=lists.project-hosting.net",
        extra=("List-Id: Announcements <announce.lists.project-hosting.net>",),
    ).replace("See you on Thursday.", "Version 4.2: https://bit.ly/proj-4-2 Upgrade immediately if you run 4.1.")
    assert '"label": "Legitimate"' in rules_answer({"raw_email": raw})
