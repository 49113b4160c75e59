"""What the detectors read from a message (ParsedEmail): decoded headers and addresses, the text and HTML of its
parts, its links and its attachments, read without ever raising (see parse_email)."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from email.header import decode_header, make_header
from email.utils import parseaddr
from urllib.parse import unquote, urlsplit

from sv_env_phishing_detection.detectors.mime import MAX_PART_CHARS, leaves, part_text, payload_size, split_entity


@dataclass(frozen=True)
class Link:
    """A link in the message: its href (HTML-unescaped), the text shown for it (None for bare URLs) and its host."""

    href: str
    text: str | None
    host: str | None


@dataclass(frozen=True)
class Attachment:
    filename: str
    content_type: str
    size_bytes: int


@dataclass(frozen=True)
class ParsedEmail:
    """What the detectors read from a message; every string is decoded (headers, charsets, transfer encodings)."""

    headers: tuple[tuple[str, str], ...]
    subject: str | None
    from_name: str | None
    from_address: str | None
    reply_to: str | None
    return_path: str | None
    auth_results: str | None
    received_spf: str | None
    text: str
    html_text: str
    html_source: str
    links: tuple[Link, ...]
    attachments: tuple[Attachment, ...]
    warnings: tuple[str, ...]
    sender_address: str | None = None
    """The Sender header's address (a mailing list's or a secretary's, when someone else sent for From)."""
    list_id: str | None = None
    """The List-Id header's identifier (RFC 2919, "python-dev.python.org"), or "" for a list that only carries
    List-Unsubscribe / List-Post (RFC 2369) headers; None for mail that names no list."""


# Every pattern here runs in linear time on hostile HTML: a tag body stops at the next "<" ([^<>]), so a run of
# unclosed "<a" cannot make each attempt scan to the end of the text.
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_HIDDEN_BLOCK = re.compile(r"<(script|style|template|noscript|head)\b[^<>]*>.*?(?:</\1\s*>|\Z)", re.S | re.I)
_SCRIPT = re.compile(r"<script\b|\bon[a-z]+\s*=|javascript:", re.I)
_ANCHOR = re.compile(r"<a\b([^<>]*)>(.*?)(?:</a\s*>|(?=<a\b)|\Z)", re.S | re.I)
_HREF = re.compile(r"""\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.I)
_FORM_ACTION = re.compile(r"""<form\b[^<>]*?\baction\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.I)
_BLOCK_BREAK = re.compile(r"<(?:br|/?p|/?div|/?tr|/?li|/?h[1-6]|/?table|/?td)\b[^<>]*>", re.I)
_TAG = re.compile(r"<[^<>]*>")
_TEXT_URL = re.compile(r"(?i)\b(?:https?://|www\.)[^\s<>\"'()\[\]{}]+")


def _unfold(value: str) -> str:
    return " ".join(value.split())


def _decode_header(value: str, name: str, warnings: list[str]) -> str:
    """A header value with its RFC 2047 encoded words decoded; undecodable values are kept as written."""
    if "=?" not in value:
        return _unfold(value)
    try:
        return _unfold(str(make_header(decode_header(value))))
    except Exception as error:  # the stdlib decoder raises assorted errors (charset lookups, bad base64) on bad input
        warnings.append(f"header {name}: undecodable encoded word ({type(error).__name__}); kept as written")
        return _unfold(value)


_ADDR = r'[^\s<>,;:()"@\\]+@[^\s<>,;:()"@\\]+'
_SIMPLE_ADDRESS = re.compile(rf'\s*(?:(?:"([^"\\]*)"|([^"<>,;:()@\\]*?))\s*<({_ADDR})>|({_ADDR}))\s*')
"""`Name <a@b>`, `"Name" <a@b>`, `<a@b>` and `a@b`: most address headers, read without the stdlib's slower
tokenizer (same result); anything else (comments, groups, lists, escapes) goes through email.utils.parseaddr."""
MAX_ADDRESS_CHARS = 2_000
"""Longest address header value read (RFC 5322 lines stop at 998 characters; more is an attack on the parser)."""


def _address(value: str | None, name: str, warnings: list[str]) -> tuple[str | None, str | None]:
    """(display name, lowercased address) of an address header; an empty address (bounces: <>) is None."""
    if value is None:
        return None, None
    if len(value) > MAX_ADDRESS_CHARS:
        warnings.append(f"header {name}: {len(value):,} characters; only the first {MAX_ADDRESS_CHARS:,} were read")
        value = value[:MAX_ADDRESS_CHARS]
    simple = _SIMPLE_ADDRESS.fullmatch(value)
    if simple:
        display = simple.group(1) or " ".join((simple.group(2) or "").split())
        address = simple.group(3) or simple.group(4)
    else:
        display, address = parseaddr(value)
    display = _decode_header(display, name, warnings) if display else None
    address = address.strip().casefold() or None
    return display or None, address


def href_host(href: str) -> str | None:
    """Host of an http(s) URL (or of www.… text), lowercased, percent-decoded, without user info or port."""
    url = href.strip()
    if url.casefold().startswith("www."):
        url = "http://" + url
    if not re.match(r"(?i)https?://", url):
        return None
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    if not host:
        return None
    host = unquote(host).strip("[]").rstrip(".")
    return host or None


def _html(source: str) -> tuple[str, list[Link], bool]:
    """(visible text, links, whether it carried script) of an HTML part, read with bounded regexes, never run."""
    has_script = bool(_SCRIPT.search(source))
    cleaned = _HIDDEN_BLOCK.sub(" ", _COMMENT.sub(" ", source))
    links: list[Link] = []
    for match in _ANCHOR.finditer(cleaned):
        href_match = _HREF.search(match.group(1))
        if not href_match:
            continue
        href = html.unescape(next(group for group in href_match.groups() if group is not None))
        text = _unfold(html.unescape(_TAG.sub(" ", match.group(2))))
        links.append(Link(href=href, text=text, host=href_host(href)))
    for match in _FORM_ACTION.finditer(cleaned):
        action = html.unescape(next(group for group in match.groups() if group is not None))
        links.append(Link(href=action, text=None, host=href_host(action)))
    text = html.unescape(_TAG.sub(" ", _BLOCK_BREAK.sub("\n", cleaned)))
    return text, links, has_script


def _text_links(text: str) -> list[Link]:
    links = []
    for match in _TEXT_URL.finditer(text):
        url = match.group(0).rstrip(".,;:!?")
        links.append(Link(href=url, text=None, host=href_host(url)))
    return links


def parse_email(raw: str) -> ParsedEmail:
    """Parse a message safely; what could not be read is reported in warnings, never raised.

    The MIME tree is split here (split_entity, split_multipart) and everything inside it is read with the stdlib:
    header and parameter parsing (email.message.Message, compat32), RFC 2047/2231 decoding, base64 and
    quoted-printable, charsets. The stdlib's own FeedParser walks the text line by line in Python and compiles a
    regular expression per multipart boundary; it was most of the verifier's time, so it is not used. Any exception
    the stdlib helpers raise on hostile input degrades to reading the message as plain text, with the reason in the
    warnings: one bad message must not stop a corpus load.
    """
    warnings: list[str] = []
    try:
        return _parse(raw.replace("\r\n", "\n"), warnings)
    except Exception as error:
        warnings.append(f"unparseable message ({type(error).__name__}: {error}); read as plain text")
        text = raw[:MAX_PART_CHARS]
        return ParsedEmail(
            (), None, None, None, None, None, None, None, text, "", "", tuple(_text_links(text)), (), tuple(warnings)
        )


def _parse(raw: str, warnings: list[str]) -> ParsedEmail:
    message, body, defects = split_entity(raw)
    warnings.extend(f"malformed MIME: {defect}" for defect in defects)
    headers: list[tuple[str, str]] = []
    first: dict[str, str] = {}
    for name, value in message.items():
        decoded = _decode_header(str(value), name, warnings)
        headers.append((name.casefold(), decoded))
        first.setdefault(name.casefold(), str(value))
    from_name, from_address = _address(first.get("from"), "From", warnings)
    _, reply_to = _address(first.get("reply-to"), "Reply-To", warnings)
    _, return_path = _address(first.get("return-path"), "Return-Path", warnings)
    _, sender_address = _address(first.get("sender"), "Sender", warnings)
    subject = _decode_header(first["subject"], "Subject", warnings) if "subject" in first else None

    texts: list[str] = []
    html_texts: list[str] = []
    html_sources: list[str] = []
    links: list[Link] = []
    attachments: list[Attachment] = []
    for index, (part, part_body, content_type) in enumerate(leaves(message, body, 0, warnings), start=1):
        where = f"part {index} ({content_type})"
        raw_disposition = part.get("Content-Disposition")
        # get_filename parses Content-Disposition and Content-Type again: only when a name can be there
        named = raw_disposition is not None or "name" in str(part.get("Content-Type", "")).casefold()
        filename = part.get_filename() if named else None
        disposition = str(raw_disposition or "").split(";")[0].strip().casefold()
        if filename is not None or disposition == "attachment":
            name = _decode_header(str(filename or ""), "filename", warnings)
            size = payload_size(part, part_body)
            attachments.append(Attachment(filename=name, content_type=content_type, size_bytes=size))
            if size > MAX_PART_CHARS:
                warnings.append(f"{where}: attachment {name!r} of {size:,} bytes not decoded")
            continue
        if content_type == "text/html":
            source = part_text(part, part_body, where, warnings)
            text, part_links, has_script = _html(source)
            if has_script:
                warnings.append(f"{where}: HTML carries script (removed, never executed)")
            html_sources.append(source)
            html_texts.append(text)
            links.extend(part_links)
            links.extend(link for link in _text_links(text) if link.href not in {known.text for known in part_links})
        elif content_type.startswith(("text/plain", "multipart/")) or (content_type.startswith("text/") and index == 1):
            text = part_text(part, part_body, where, warnings)
            texts.append(text)
            links.extend(_text_links(text))
    return ParsedEmail(
        headers=tuple(headers),
        subject=subject,
        from_name=from_name,
        from_address=from_address,
        reply_to=reply_to,
        return_path=return_path,
        auth_results=_decode_header(first["authentication-results"], "Authentication-Results", warnings)
        if "authentication-results" in first
        else None,
        received_spf=_unfold(first["received-spf"]) if "received-spf" in first else None,
        text="\n".join(texts),
        html_text="\n".join(html_texts),
        html_source="\n".join(html_sources),
        links=tuple(links),
        attachments=tuple(attachments),
        warnings=tuple(warnings),
        sender_address=sender_address,
        list_id=_list_id(first),
    )


_LIST_ID = re.compile(r"<\s*([\w.-]+)\s*>|^\s*([\w-]+(?:\.[\w-]+)+)\s*$")
_LIST_HEADERS = ("list-unsubscribe", "list-post", "list-help", "list-archive")


def _list_id(first: dict[str, str]) -> str | None:
    """The list a message says it came through: List-Id's identifier, "" for RFC 2369 headers alone, else None."""
    if "list-id" in first:
        match = _LIST_ID.search(first["list-id"][:MAX_ADDRESS_CHARS])
        return (match.group(1) or match.group(2)).casefold().strip(".") if match else ""
    return "" if any(name in first for name in _LIST_HEADERS) else None
