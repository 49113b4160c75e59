"""Redaction of judged-unsafe text before anything is stored (results, logs, reports, tracking records).

The seed's governance: unsafe text is never stored in clear. A span a judge found unsafe (or could not judge) is
replaced by a marker carrying its hash, categories and length, so a record stays auditable — the same text always
gives the same marker, and a reviewer holding the original can prove which text it was — without holding the text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sv_shared.data.hashing import sha256_hex
from sv_shared.judging.verdict import Verdict

MARKER_PREFIX = "[REDACTED"
_MARKER = re.compile(r"\[REDACTED sha256:([0-9a-f]{16}) categories:([A-Za-z0-9,_-]+) chars:(\d+)\]")
UNJUDGED = "unjudged"
"""Category of text redacted because its judge failed: it may be unsafe, so it is not kept."""


def redaction_marker(text: str, categories: Sequence[str]) -> str:
    label = ",".join(categories) if categories else "unsafe"
    return f"{MARKER_PREFIX} sha256:{sha256_hex(text)[:16]} categories:{label} chars:{len(text)}]"


def must_redact(verdict: Verdict) -> bool:
    """Judged unsafe, or the judge could not say: either way the text is not stored."""
    return verdict.unsafe or verdict.error is not None


def redact(text: str, verdict: Verdict) -> str:
    """The text itself when the verdict clears it, otherwise its marker."""
    if not must_redact(verdict):
        return text
    categories = list(verdict.categories) if verdict.unsafe else [UNJUDGED]
    return redaction_marker(text, categories)


def is_redacted(text: str) -> bool:
    return bool(_MARKER.fullmatch(text.strip()))


def marker_sha256_prefix(text: str) -> str | None:
    """The hash prefix a marker carries (None if text is not a marker): what an auditor compares."""
    match = _MARKER.fullmatch(text.strip())
    return match.group(1) if match else None
