"""The comparison form of text, and the anchors (normalized spans of the message) every indicator carries.

A model's quote and the message are normalized alike, so grounding a quote is a substring test that ignores case,
line wrapping and invisible characters.
"""

from __future__ import annotations

import re
import unicodedata

from sv_env_phishing_detection.schema import EVIDENCE_TYPES

MAX_ANCHORS = 5
"""Anchors kept per indicator type (the first ones found, in message order)."""
MAX_QUOTE_CHARS = 300
"""A quote longer than this (normalized) is not a span but a dump of the email: it is never grounded."""
MIN_QUOTE_CHARS = 4
"""A quote shorter than this (normalized) matches too much to be evidence: it is never grounded."""
SEGMENT_SEPARATOR = "\x1f"
"""Joins the haystack's segments; normalization removes it from quotes, so a quote cannot span two segments."""

ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff\u180e"
_INVISIBLE = ZERO_WIDTH + "\u00ad"  # soft hyphens are legitimate hyphenation hints: stripped, but not an indicator
_INVISIBLE_CHAR = re.compile(f"[{_INVISIBLE}]")


def normalize(text: str) -> str:
    """The comparison form of text: NFC, invisible characters removed, casefolded, whitespace collapsed.

    Quotes and the message are normalized alike, so grounding ignores case, line wrapping and invisible characters.
    (The checks before each step keep the common case, plain ASCII, at C speed.)
    """
    if not text.isascii():
        text = _INVISIBLE_CHAR.sub("", text)
        if not unicodedata.is_normalized("NFC", text):
            text = unicodedata.normalize("NFC", text)
    return " ".join(text.casefold().split())


class Found:
    """Collects anchors per indicator type, in vocabulary order, deduplicated, at most MAX_ANCHORS each."""

    def __init__(self) -> None:
        self.anchors: dict[str, list[str]] = {}

    def add(self, kind: str, span: str) -> None:
        anchor = normalize(span)
        if len(anchor) < MIN_QUOTE_CHARS:
            return
        anchors = self.anchors.setdefault(kind, [])
        if anchor not in anchors and len(anchors) < MAX_ANCHORS:
            anchors.append(anchor[:MAX_QUOTE_CHARS])

    def result(self) -> dict[str, tuple[str, ...]]:
        return {kind: tuple(self.anchors[kind]) for kind in EVIDENCE_TYPES if kind in self.anchors}
