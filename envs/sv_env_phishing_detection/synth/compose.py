"""Writing one RFC 5322 / MIME message: `Mail` holds what a message says, `compose` writes it (headers with
Received, Authentication-Results and DKIM-Signature lines, multipart/alternative bodies in quoted-printable, base64
attachments). Deterministic in its fields; knows nothing of campaigns or languages."""

from __future__ import annotations

import base64
import hashlib
import quopri
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from email.header import Header
from email.utils import format_datetime, formataddr


@dataclass(frozen=True)
class Mail:
    """Everything `compose` needs to write one message. Links are (shown text, href) pairs."""

    sender_name: str
    sender: str
    recipient_name: str
    recipient: str
    subject: str
    paragraphs: tuple[str, ...]
    sent_at: datetime
    cta: tuple[str, str] | None = None
    signature: str = ""
    footer: tuple[str, ...] = ()
    footer_links: tuple[tuple[str, str], ...] = ()
    reply_to: str | None = None
    return_path: str | None = None
    auth: str | None = "pass"
    """Authentication-Results profile: pass (aligned), spf_only, none, softfail, fail; None writes no header."""
    dkim_domain: str | None = None
    parts: str = "both"
    """Which bodies to write: both (multipart/alternative), text or html."""
    attachments: tuple[tuple[str, str, bytes], ...] = ()
    sender_ip: str = "203.0.113.25"


def _domain_of(address: str) -> str:
    return address.rsplit("@", 1)[1]


def _digest(*parts: object, length: int = 16) -> str:
    return hashlib.sha256("|".join(map(str, parts)).encode("utf-8")).hexdigest()[:length]


def _b64_digest(*parts: object, length: int = 44) -> str:
    raw = hashlib.sha512("|".join(map(str, parts)).encode("utf-8")).digest()
    return base64.b64encode(raw + raw).decode("ascii")[:length]


def _header(value: str) -> str:
    """A header value, RFC 2047-encoded when it is not ASCII."""
    return value if value.isascii() else Header(value, "utf-8").encode()


def _address(name: str, address: str) -> str:
    return formataddr((name, address), charset="utf-8") if name else address


def _body(text: str) -> tuple[str, str]:
    """(Content-Transfer-Encoding, encoded body) for a UTF-8 text: 7bit when ASCII, else quoted-printable."""
    if text.isascii() and all(len(line) <= 900 for line in text.splitlines()):
        return "7bit", text
    return "quoted-printable", quopri.encodestring(text.encode("utf-8")).decode("ascii")


def auth_results(profile: str, *, mx: str, from_domain: str, mailfrom_domain: str, dkim_domain: str) -> str:
    """An Authentication-Results value (folded like Gmail/Microsoft write them) for a profile name."""
    dkim, spf, dmarc = {
        "pass": ("pass", "pass", "pass"),
        "spf_only": ("none", "pass", "pass" if mailfrom_domain == from_domain else "fail"),
        "none": ("none", "none", "none"),
        "softfail": ("none", "softfail", "fail"),
        "fail": ("fail", "fail", "fail"),
    }[profile]
    dkim_part = f"dkim={dkim} header.i=@{dkim_domain} header.s=s1" if dkim != "none" else "dkim=none"
    return (
        f"{mx};\n       {dkim_part};\n       spf={spf} smtp.mailfrom={mailfrom_domain};\n"
        f"       dmarc={dmarc} (p=QUARANTINE sp=NONE dis=NONE) header.from={from_domain}"
    )


def _html(mail: Mail) -> str:
    paragraphs = "\n".join(
        f'<p style="margin:0 0 14px">{"<br>".join(_escape(line) for line in paragraph.splitlines())}</p>'
        for paragraph in mail.paragraphs
    )
    button = ""
    if mail.cta:
        text, href = mail.cta
        button = (
            f'<p style="margin:22px 0"><a href="{_escape(href)}" style="background:#0b5cad;color:#ffffff;'
            f'padding:10px 18px;border-radius:4px;text-decoration:none">{_escape(text)}</a></p>'
        )
    signature = ""
    if mail.signature:
        signature = (
            f'<p style="margin:0 0 14px">{"<br>".join(_escape(line) for line in mail.signature.splitlines())}</p>'
        )
    footer = " ".join(_escape(line) for line in mail.footer)
    links = " | ".join(
        f'<a href="{_escape(href)}" style="color:#777777">{_escape(text)}</a>' for text, href in mail.footer_links
    )
    return (
        '<!DOCTYPE html>\n<html><head><meta http-equiv="Content-Type" content="text/html; charset=utf-8">'
        f"<title>{_escape(mail.subject)}</title></head>\n"
        '<body style="font-family:Arial,Helvetica,sans-serif;font-size:14px;color:#222222">\n'
        f'<div style="max-width:600px;margin:0 auto">\n{paragraphs}\n{button}\n{signature}\n'
        f'<hr style="border:none;border-top:1px solid #dddddd">\n'
        f'<p style="font-size:11px;color:#777777">{footer}<br>{links}</p>\n</div>\n</body></html>\n'
    )


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _text(mail: Mail) -> str:
    lines = list(mail.paragraphs)
    if mail.cta:
        text, href = mail.cta
        lines.append(f"{text}: {href}")
    if mail.signature:
        lines.append(mail.signature)
    footer = list(mail.footer) + [f"{text}: {href}" for text, href in mail.footer_links]
    if footer:
        lines.append("--\n" + "\n".join(footer))
    return "\n\n".join(lines) + "\n"


def _part(content_type: str, body: str) -> str:
    encoding, encoded = _body(body)
    return f'Content-Type: {content_type}; charset="utf-8"\nContent-Transfer-Encoding: {encoding}\n\n' + encoded.rstrip(
        "\n"
    )


def _attachment(filename: str, content_type: str, data: bytes) -> str:
    encoded = base64.encodebytes(data).decode("ascii").rstrip("\n")
    name = _header(filename)
    return (
        f'Content-Type: {content_type}; name="{name}"\nContent-Disposition: attachment; filename="{name}"\n'
        f"Content-Transfer-Encoding: base64\n\n{encoded}"
    )


def compose(mail: Mail) -> str:
    """The message as RFC 5322 text (LF line ends, as mbox and most .eml tools store it); deterministic in its
    fields."""
    key = _digest(mail.sender, mail.recipient, mail.subject, mail.sent_at.isoformat(), length=24)
    from_domain = _domain_of(mail.sender)
    return_path = mail.return_path or mail.sender
    mailfrom_domain = _domain_of(return_path)
    mx = f"mx.{_domain_of(mail.recipient)}"
    date = format_datetime(mail.sent_at)
    headers = [
        f"Return-Path: <{return_path}>",
        f"Received: from mail-{key[:6]}.{mailfrom_domain} (mail-{key[:6]}.{mailfrom_domain} [{mail.sender_ip}])\n"
        f"        by {mx} with ESMTPS id {key[6:18]}\n        for <{mail.recipient}>; {date}",
    ]
    dkim_domain = mail.dkim_domain or from_domain
    if mail.auth is not None:
        results = auth_results(
            mail.auth, mx=mx, from_domain=from_domain, mailfrom_domain=mailfrom_domain, dkim_domain=dkim_domain
        )
        headers.append(f"Authentication-Results: {results}")
        if mail.auth in ("pass", "fail"):
            headers.append(
                f"DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d={dkim_domain}; s=s1;\n"
                f"        t={int(mail.sent_at.timestamp())}; h=from:to:subject:date:message-id;\n"
                f"        bh={_b64_digest('bh', key)};\n        b={_b64_digest('b', key, length=88)}"
            )
    headers.append(f"From: {_address(mail.sender_name, mail.sender)}")
    if mail.reply_to:
        headers.append(f"Reply-To: {mail.reply_to}")
    headers.extend(
        [
            f"To: {_address(mail.recipient_name, mail.recipient)}",
            f"Subject: {_header(mail.subject)}",
            f"Date: {date}",
            f"Message-ID: <{key}@{from_domain}>",
            "MIME-Version: 1.0",
        ]
    )
    bodies: list[str] = []
    if mail.parts in ("both", "text"):
        bodies.append(_part("text/plain", _text(mail)))
    if mail.parts in ("both", "html"):
        bodies.append(_part("text/html", _html(mail)))
    boundary = f"==sv_{key[:20]}"
    body = bodies[0] if len(bodies) == 1 else _multipart("alternative", f"{boundary}_alt", bodies)
    if mail.attachments:
        body = _multipart("mixed", boundary, [body, *(_attachment(*attachment) for attachment in mail.attachments)])
    return "\n".join(headers) + "\n" + body + "\n"


def _multipart(subtype: str, boundary: str, sections: Sequence[str]) -> str:
    lines = [f'Content-Type: multipart/{subtype}; boundary="{boundary}"', ""]
    for section in sections:
        lines.extend([f"--{boundary}", section])
    lines.append(f"--{boundary}--")
    return "\n".join(lines)
