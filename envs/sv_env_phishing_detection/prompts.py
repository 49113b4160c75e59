"""How an email is posed to a model: a system prompt with the answer schema and evidence vocabulary, and the email
rendered as a reader sees it (decoded headers, text, links with their real targets, attachment names).

The rendering is a deterministic function of the raw message, built by the same safe parser the detectors use, so
what a model can quote is what the verifier can find: headers, body text, link text and targets, file names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sv_env_phishing_detection.detectors import ParsedEmail, parse_email
from sv_env_phishing_detection.schema import EVIDENCE_TYPES
from sv_shared.contracts import Message

MAX_BODY_CHARS = 4_000
MAX_LINKS = 25
SHOWN_HEADERS = (
    "return-path",
    "authentication-results",
    "received-spf",
    "from",
    "reply-to",
    "to",
    "cc",
    "date",
    "subject",
)

_VOCABULARY = "\n".join(f"- {name}: {meaning}" for name, meaning in EVIDENCE_TYPES.items())

SYSTEM_PROMPT = (
    "You are an email security analyst. Decide whether the email is Phishing or Legitimate, and show the evidence.\n"
    'Reply with JSON only: {"label": "Phishing" | "Legitimate" | "Abstain", "confidence": <number 0 to 1>, '
    '"evidence": [{"type": "<evidence type>", "quote": "<text copied exactly from the email>"}]}\n'
    f"Evidence types (use only these):\n{_VOCABULARY}\n"
    "Each quote must be copied from the email (a header value, body text, a link or an attachment name), "
    "4 to 300 characters; a quote that is not in the email scores nothing. List each warning sign you can quote, "
    "and no others; a clean email has an empty evidence list. Abstain only when the evidence is genuinely mixed."
)


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[… {len(text) - limit:,} more characters not shown]"


def render_parsed(parsed: ParsedEmail) -> str:
    """A parsed message as plain text for a prompt."""
    lines = [
        f"{name.title()}: {value}"
        for wanted in SHOWN_HEADERS
        for name, value in parsed.headers
        if name == wanted and value
    ]
    body = parsed.text.strip() or parsed.html_text.strip()
    lines.extend(
        ["", _clip("\n".join(" ".join(line.split()) for line in body.splitlines() if line.strip()), MAX_BODY_CHARS)]
    )
    if parsed.links:
        lines.extend(["", "Links (shown text -> target):"])
        for link in parsed.links[:MAX_LINKS]:
            shown = f"{link.text} -> " if link.text else ""
            lines.append(f"- {shown}{link.href}")
        if len(parsed.links) > MAX_LINKS:
            lines.append(f"- … {len(parsed.links) - MAX_LINKS} more links not shown")
    if parsed.attachments:
        lines.extend(["", "Attachments:"])
        lines.extend(
            f"- {item.filename or '(unnamed)'} ({item.content_type}, {item.size_bytes:,} bytes)"
            for item in parsed.attachments
        )
    return "\n".join(lines)


def render_email(raw: str) -> str:
    return render_parsed(parse_email(raw))


def build_messages(observation: Mapping[str, Any], *, tool_instructions: str | None = None) -> list[Message]:
    """System + user messages for one email; tool_instructions (ReputationTool.instructions()) adds the text
    protocol of the optional URL-reputation tool."""
    system = SYSTEM_PROMPT if tool_instructions is None else f"{SYSTEM_PROMPT}\n{tool_instructions}"
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"Email:\n{render_email(observation['raw_email'])}"},
    ]
