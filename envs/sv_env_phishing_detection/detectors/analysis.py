"""The detectors' verdict on one message: every cue module's indicators with their anchors, the suspicion they add
up to (noisy-OR of per-indicator weights, damped when authentication vouches for the sender), and the haystack a
model's quotes are grounded in."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sv_env_phishing_detection.detectors.authentication import auth_verdicts, authentication_failures, vouches_for_from
from sv_env_phishing_detection.detectors.content import content_cues, guess_language
from sv_env_phishing_detection.detectors.domains import address_domain, lookalike
from sv_env_phishing_detection.detectors.parsing import ParsedEmail, parse_email
from sv_env_phishing_detection.detectors.sender import sender_cues
from sv_env_phishing_detection.detectors.text import (
    MAX_QUOTE_CHARS,
    MIN_QUOTE_CHARS,
    SEGMENT_SEPARATOR,
    Found,
    normalize,
)
from sv_env_phishing_detection.detectors.urls import url_cues

INDICATOR_WEIGHTS: dict[str, float] = {
    "sender_spoofing": 0.4,
    "reply_to_mismatch": 0.25,
    "display_name_mismatch": 0.35,
    "lookalike_domain": 0.6,
    "link_mismatch": 0.5,
    "ip_or_punycode_url": 0.5,
    "url_shortener": 0.2,
    "urgency": 0.15,
    "credential_request": 0.3,
    "payment_change": 0.35,
    "gift_card_request": 0.35,
    "suspicious_attachment": 0.55,
    "auth_failure": 0.45,
    "zero_width_obfuscation": 0.5,
}
"""How strongly each indicator alone suggests phishing; combined by noisy-OR in suspicion_score."""
AUTH_PASS_FACTOR = 0.6
"""Suspicion is scaled by this when authentication vouches for the From domain (vouches_for_from: DMARC pass, or
without a DMARC verdict an aligned DKIM/SPF pass) and that domain imitates no brand."""


@dataclass(frozen=True)
class Analysis:
    """Detector output for one message: anchors per indicator type, suspicion, and the grounding haystack."""

    indicators: dict[str, tuple[str, ...]]
    suspicion: float
    aligned_pass: bool
    subject: str | None
    sender: str | None
    warnings: tuple[str, ...]
    haystack: str = field(repr=False)

    @property
    def types(self) -> frozenset[str]:
        return frozenset(self.indicators)

    def grounded(self, normalized_quote: str) -> bool:
        """Whether a normalized quote of usable length occurs in the message (within one segment)."""
        return MIN_QUOTE_CHARS <= len(normalized_quote) <= MAX_QUOTE_CHARS and normalized_quote in self.haystack

    def supports(self, evidence_type: str, normalized_quote: str) -> bool:
        """Whether the quote points at a detected indicator of that type (contains one of its anchors, or lies in
        one); groundedness is checked separately."""
        anchors = self.indicators.get(evidence_type, ())
        return any(anchor in normalized_quote or normalized_quote in anchor for anchor in anchors)

    def indicator_records(self) -> list[dict[str, Any]]:
        return [{"type": kind, "quotes": list(anchors)} for kind, anchors in self.indicators.items()]


def suspicion_score(types: Iterable[str], *, aligned_pass: bool) -> float:
    """Noisy-OR of the fired indicators' weights, scaled by AUTH_PASS_FACTOR when authentication vouches for From
    (aligned_pass must already be False when the sender domain imitates a brand); rounded to 6 decimals."""
    # A fixed order: float products depend on it, and a set of strings iterates in a per-process hash order.
    survive = math.prod(1.0 - INDICATOR_WEIGHTS[kind] for kind in sorted(set(types)))
    score = 1.0 - survive
    if aligned_pass:
        score *= AUTH_PASS_FACTOR
    return round(score, 6)


def is_mixed(suspicion: float, band: tuple[float, float]) -> bool:
    """Genuinely mixed evidence: the detectors' suspicion lies in [low, high), neither clearly clean nor clearly
    phishing (e.g. phishing-like wording from an authenticated sender, or payment-change wording alone)."""
    low, high = band
    return low <= suspicion < high


def _haystack(parsed: ParsedEmail) -> str:
    segments = [f"{name}: {value}" for name, value in parsed.headers]
    segments.extend([parsed.text, parsed.html_text, parsed.html_source])
    segments.extend(attachment.filename for attachment in parsed.attachments)
    return SEGMENT_SEPARATOR.join(normalize(segment) for segment in segments if segment)


def analyze(raw: str) -> Analysis:
    """Parse a message and run every detector; never raises (see the package docstring)."""
    parsed = parse_email(raw)
    found = Found()
    from_domain = address_domain(parsed.from_address)
    verdicts = auth_verdicts(parsed.auth_results)
    for span in authentication_failures(parsed, verdicts):
        found.add("auth_failure", span)
    aligned_pass = vouches_for_from(verdicts, from_domain)
    if from_domain and lookalike(from_domain):
        found.add("lookalike_domain", from_domain)
        aligned_pass = False  # a look-alike domain authenticating itself vouches for nothing
    sender_cues(parsed, verdicts, from_domain, aligned_pass, found)
    reply_domain = address_domain(parsed.reply_to)
    if reply_domain and lookalike(reply_domain):
        found.add("lookalike_domain", reply_domain)
    url_cues(parsed, found)
    content_cues(parsed, found)
    indicators = found.result()
    return Analysis(
        indicators=indicators,
        suspicion=suspicion_score(indicators, aligned_pass=aligned_pass),
        aligned_pass=aligned_pass,
        subject=parsed.subject,
        sender=next((value for name, value in parsed.headers if name == "from"), None),
        warnings=parsed.warnings,
        haystack=_haystack(parsed),
    )


def language_of(raw: str) -> str:
    """guess_language over a message's subject and decoded text (for corpora that do not say their language)."""
    parsed = parse_email(raw)
    return guess_language(" ".join((parsed.subject or "", parsed.text, parsed.html_text)))


def item_fields(raw: str) -> dict[str, Any]:
    """The detector-derived columns of an item (schema.DERIVED_COLUMNS) for a raw message."""
    analysis = analyze(raw)
    return {
        "subject": analysis.subject,
        "sender": analysis.sender,
        "indicators": json.dumps(analysis.indicator_records(), ensure_ascii=False),
        "suspicion": analysis.suspicion,
        "parse_warnings": json.dumps(list(analysis.warnings), ensure_ascii=False),
    }
