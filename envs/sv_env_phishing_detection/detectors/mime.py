"""The MIME tree of a message, split without the stdlib's FeedParser: entities, multipart bodies and leaf parts,
each part's transfer encoding and charset decoded under size and depth caps, every defect reported as a warning."""

from __future__ import annotations

import binascii
import codecs
import quopri
import re
from collections.abc import Iterator
from email.message import Message

MAX_PARTS = 200
"""MIME parts examined per message; the rest are counted in a warning."""
MAX_PART_CHARS = 300_000
"""Characters of one text/HTML part that are decoded and scanned; attachments are never decoded at all."""
_NOT_BASE64 = re.compile(rb"[^A-Za-z0-9+/]")


def decode_text(data: bytes, charset: str | None, where: str, warnings: list[str]) -> str:
    """Bytes to text by the declared charset; unknown charsets and invalid bytes are reported, never fatal."""
    name = (charset or "utf-8").strip().strip('"').casefold() or "utf-8"
    try:
        codecs.lookup(name)
    except LookupError:
        warnings.append(f"{where}: unknown charset {name!r}; decoded as UTF-8 with replacement characters")
        name = "utf-8"
    try:
        return data.decode(name)
    except UnicodeDecodeError:
        warnings.append(f"{where}: bytes are not valid {name}; undecodable bytes replaced")
        return data.decode(name, errors="replace")
    except LookupError:  # codecs.lookup accepts bytes-to-bytes codecs (zlib, base64) that cannot decode to text
        warnings.append(f"{where}: charset {name!r} is not a text encoding; decoded as UTF-8 with replacement")
        return data.decode("utf-8", errors="replace")


def part_text(part: Message, body: str, where: str, warnings: list[str]) -> str:
    """A text part's content, transfer-decoded and charset-decoded, at most MAX_PART_CHARS characters of it."""
    if len(body) > MAX_PART_CHARS:
        warnings.append(f"{where}: {len(body):,} characters; only the first {MAX_PART_CHARS:,} were scanned")
        body = body[:MAX_PART_CHARS]
    encoding = str(part.get("Content-Transfer-Encoding", "")).strip().casefold()
    if encoding == "base64":
        data = _base64(body, where, warnings)
    elif encoding == "quoted-printable":
        data = quopri.decodestring(body.encode("utf-8", errors="replace"))
    else:
        return body  # 7bit/8bit/binary: the text is already decoded (the message was read as text)
    return decode_text(data, part.get_content_charset(), where, warnings)


def _base64(payload: str, where: str, warnings: list[str]) -> bytes:
    """Decode a base64 body; a damaged one (stray characters, bad length) is decoded as far as it goes, and said."""
    compact = "".join(payload.split()).encode("ascii", errors="ignore")
    try:
        return binascii.a2b_base64(compact, strict_mode=True)
    except binascii.Error as error:
        warnings.append(f"{where}: base64 body is damaged ({error}); decoded what could be decoded")
    alphabet_only = _NOT_BASE64.sub(b"", compact)
    return binascii.a2b_base64(alphabet_only[: len(alphabet_only) - len(alphabet_only) % 4])


def payload_size(part: Message, body: str) -> int:
    """Decoded size of a part, estimated from its encoded body without decoding it."""
    if str(part.get("Content-Transfer-Encoding", "")).strip().casefold() == "base64":
        return len(body) * 3 // 4
    return len(body)


_HEADER_NAME = re.compile(r"[!-9;-~]+")
"""RFC 5322 field names: printable ASCII except colon."""


def split_entity(text: str) -> tuple[Message, str, list[str]]:
    """(headers as a stdlib compat32 Message, body, defects) of one MIME entity (LF line ends).

    The header block ends at the first empty line; a line that is neither a header nor a continuation ends it too
    (the stdlib's MissingHeaderBodySeparatorDefect), and the rest is body.
    """
    message = Message()
    defects: list[str] = []
    if text.startswith("\n"):
        return message, text[1:], defects
    end = text.find("\n\n")
    block, body = (text, "") if end == -1 else (text[:end], text[end + 2 :])
    lines = block.split("\n")
    name: str | None = None
    value: list[str] = []
    for index, line in enumerate(lines):
        if line[:1] in (" ", "\t"):
            if name is None:
                defects.append("FirstHeaderLineIsContinuationDefect")
            else:
                value.append(line)
            continue
        field, colon, rest = line.partition(":")
        if index == 0 and line.startswith("From "):
            continue  # an mbox From_ line, not a header
        if not colon or not _HEADER_NAME.fullmatch(field):
            defects.append("MissingHeaderBodySeparatorDefect")
            body = "\n".join(lines[index:]) + ("\n\n" + body if end != -1 else "")
            break
        if name is not None:
            message[name] = "\n".join(value)
        name, value = field, [rest.lstrip(" \t")]
    if name is not None:
        message[name] = "\n".join(value)
    return message, body, defects


def split_multipart(body: str, boundary: str) -> tuple[list[str], bool]:
    """(part texts, whether the closing delimiter was found) of a multipart body (RFC 2046 delimiter lines; the
    newline before a delimiter belongs to it; preamble and epilogue are dropped)."""
    marker = "\n--" + boundary
    chunks = ("\n" + body).split(marker)
    parts: list[str] = []
    started = False
    for chunk in chunks[1:]:
        if chunk.startswith("--"):
            return parts, True
        newline = chunk.find("\n")
        padding = chunk if newline == -1 else chunk[:newline]
        if padding.strip():  # "--boundaryXYZ": a longer line that only starts like a delimiter
            if started:
                parts[-1] += marker + chunk
            continue
        parts.append("" if newline == -1 else chunk[newline + 1 :])
        started = True
    return parts, False


MAX_DEPTH = 8
"""Nesting depth of multiparts and attached messages that is followed; deeper content is reported, not read."""


def leaves(
    message: Message, body: str, depth: int, warnings: list[str], counter: list[int] | None = None
) -> Iterator[tuple[Message, str, str]]:
    """(headers, body, content type) of the entity's leaf parts in order, at most MAX_PARTS; attached messages
    (message/rfc822) are followed. A multipart whose boundary is missing or absent from its body is yielded as one
    leaf (read as text), with the defect in the warnings."""
    counter = counter if counter is not None else [0]
    content_type = message.get_content_type()
    if content_type.startswith("multipart/") or (content_type == "message/rfc822" and message.get_filename() is None):
        if depth >= MAX_DEPTH:
            warnings.append(f"MIME nested deeper than {MAX_DEPTH} levels; the inner parts were not examined")
            return
        if content_type == "message/rfc822":
            inner, inner_body, defects = split_entity(body)
            warnings.extend(f"attached message: malformed MIME ({defect})" for defect in defects)
            yield from leaves(inner, inner_body, depth + 1, warnings, counter)
            return
        boundary = message.get_boundary()
        parts, closed = split_multipart(body, boundary) if boundary else ([], False)
        if not parts:
            problem = "no boundary parameter" if not boundary else f"boundary {boundary!r} never occurs"
            warnings.append(
                f"malformed MIME: {content_type} with {problem} (StartBoundaryNotFoundDefect); read as text"
            )
        elif not closed:
            warnings.append(
                f"malformed MIME: {content_type} without its closing boundary (CloseBoundaryNotFoundDefect)"
            )
        if parts:
            for part in parts:
                inner, inner_body, defects = split_entity(part)
                if defects:
                    warnings.append(f"a {inner.get_content_type()} part: malformed MIME ({', '.join(defects)})")
                yield from leaves(inner, inner_body, depth + 1, warnings, counter)
            return
    counter[0] += 1
    if counter[0] == MAX_PARTS + 1:
        warnings.append(f"more than {MAX_PARTS} MIME parts; the rest were not examined")
    if counter[0] <= MAX_PARTS:
        yield message, body, content_type
