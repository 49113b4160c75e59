"""Structure-aware edits of Terraform (HCL) text, for mutations, remediations and the destructive-fix check, and the
scan of attributes a patch sets twice (validity.py).

Editing the text rather than a parsed-and-regenerated tree keeps the author's layout, so a mutation or a fix is a
small diff. Block and attribute positions come from a scan that knows strings (with ${...} templates), heredocs
and comments, so a "{" inside a string or a comment never counts. The result of every edit is re-parsed by the
caller (loading.parse_config) before it is trusted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_OPENERS = "{[("
_CLOSERS = "}])"
# Terraform's scanner (hashicorp/hcl hclsyntax): the opener is `<<` or `<<-`, an identifier and the newline, nothing
# between them; the closing line is the identifier with any whitespace around it (bytes.TrimSpace), \r\n included.
_HEREDOC = re.compile(r"<<(-?)([A-Za-z_][\w-]*)\r?\n")
_TOP_BLOCK = re.compile(r'^[ \t]*([A-Za-z_][\w-]*)((?:[ \t]+(?:"[^"\n]*"|[A-Za-z_][\w-]*))*)[ \t]*\{[ \t]*$', re.M)
_CHILD_BLOCK = re.compile(r"^([ \t]*)([A-Za-z_][\w-]*)[ \t]*\{", re.M)
_ATTRIBUTE = re.compile(r"^([ \t]*)([A-Za-z_][\w-]*)[ \t]*=(?!=)", re.M)
_BRACKET = re.compile(r"[{}\[\]()]")
# What precedes a block body's "{" on its line: a keyword and its labels. An object value's "{" follows "=", "(",
# "[" or ",", so it never matches.
_BLOCK_HEAD = re.compile(r'[ \t]*[A-Za-z_][\w-]*(?:[ \t]+(?:"[^"\n]*"|[A-Za-z_][\w-]*))*[ \t]*')


class HclScanError(ValueError):
    """The text's strings, comments or brackets do not close, so no edit can be placed safely."""


@dataclass(frozen=True)
class Block:
    """A block `keyword "label" ... { ... }`: offsets of its first line, its braces and the end of its last line."""

    keyword: str
    labels: tuple[str, ...]
    start: int
    open: int
    close: int
    end: int


@dataclass(frozen=True)
class Attribute:
    """`name = value`: offsets of its line start, of the value (after "= ") and of the end of the value's last line."""

    name: str
    start: int
    value_start: int
    value_end: int
    end: int


class HclText:
    """One HCL file with its code mask and bracket levels, answering where blocks and attributes are."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.code = _code_mask(text)
        self.level = _levels(text, self.code)

    def _line_end(self, offset: int) -> int:
        newline = self.text.find("\n", offset)
        return len(self.text) if newline == -1 else newline + 1

    def _match(self, open_at: int) -> int:
        depth = 0
        for index in range(open_at, len(self.text)):
            if not self.code[index]:
                continue
            char = self.text[index]
            if char in _OPENERS:
                depth += 1
            elif char in _CLOSERS:
                depth -= 1
                if depth == 0:
                    return index
        raise HclScanError(f"bracket at offset {open_at} never closes")

    def top_blocks(self) -> list[Block]:
        """Top-level blocks (resource, data, variable, provider, ...) in file order."""
        found = []
        for match in _TOP_BLOCK.finditer(self.text):
            open_at = match.end() - 1
            while self.text[open_at] != "{":
                open_at -= 1
            if not self.code[open_at] or self.level[open_at] != 0 or not self.code[match.start(1)]:
                continue
            labels = tuple(label.strip('"') for label in re.findall(r'"[^"\n]*"|[A-Za-z_][\w-]*', match.group(2)))
            close = self._match(open_at)
            found.append(Block(match.group(1), labels, match.start(), open_at, close, self._line_end(close)))
        return found

    def resources(self) -> list[Block]:
        return [block for block in self.top_blocks() if block.keyword == "resource" and len(block.labels) == 2]

    def resource(self, rtype: str, name: str | None = None) -> Block | None:
        """The first resource of a type (and name, when given)."""
        for block in self.resources():
            if block.labels[0] == rtype and (name is None or block.labels[1] == name):
                return block
        return None

    def children(self, block: Block, keyword: str | None = None) -> list[Block]:
        """Direct child blocks of `block` (optionally only those named `keyword`)."""
        inner = self.level[block.open] + 1
        found = []
        for match in _CHILD_BLOCK.finditer(self.text, block.open + 1, block.close):
            name_at = match.start(2)
            open_at = match.end() - 1
            if not self.code[name_at] or self.level[name_at] != inner or not self.code[open_at]:
                continue
            if keyword is not None and match.group(2) != keyword:
                continue
            close = self._match(open_at)
            found.append(Block(match.group(2), (), match.start(), open_at, close, self._line_end(close)))
        return found

    def attribute(self, block: Block, name: str) -> Attribute | None:
        """The direct attribute `name = ...` of `block`, with the full extent of a multi-line value."""
        inner = self.level[block.open] + 1
        for match in _ATTRIBUTE.finditer(self.text, block.open + 1, block.close):
            name_at = match.start(2)
            if match.group(2) != name or not self.code[name_at] or self.level[name_at] != inner:
                continue
            value_start = match.end()
            while value_start < len(self.text) and self.text[value_start] in " \t":
                value_start += 1
            index = value_start
            while index < block.close:
                if self.text[index] == "\n" and self.code[index] and self.level[index] == inner:
                    break
                index += 1
            return Attribute(name, match.start(), value_start, index, min(index + 1, len(self.text)))
        return None

    def value(self, block: Block, name: str) -> str | None:
        attribute = self.attribute(block, name)
        return None if attribute is None else self.text[attribute.value_start : attribute.value_end].rstrip()

    def redefined_attributes(self) -> list[tuple[str, str, int]]:
        """(block head, name, offset) of every attribute set again in a block body where it was already set.

        Terraform refuses such a file ("Attribute redefined"); python-hcl2 keeps the last value, so a check on the
        parsed tree never sees the first. Attributes of object values ({...} after "=") are not block attributes.
        One pass: brackets and attributes in file order, with the stack of open brackets."""
        brackets = [match.start() for match in _BRACKET.finditer(self.text) if self.code[match.start()]]
        open_at: list[int] = []
        heads: dict[int, str | None] = {}  # a "{" -> its block head, None when it opens an object value
        names: dict[int, set[str]] = {}
        found: list[tuple[str, str, int]] = []
        next_bracket = 0
        for match in _ATTRIBUTE.finditer(self.text):
            name_at = match.start(2)
            if not self.code[name_at]:
                continue
            while next_bracket < len(brackets) and brackets[next_bracket] < name_at:
                at = brackets[next_bracket]
                if self.text[at] in _OPENERS:
                    open_at.append(at)
                else:
                    open_at.pop()
                next_bracket += 1
            if not open_at or self.text[open_at[-1]] != "{":
                continue
            body = open_at[-1]
            if body not in heads:
                head = self.text[self.text.rfind("\n", 0, body) + 1 : body]
                heads[body] = head.strip() if _BLOCK_HEAD.fullmatch(head) else None
            head = heads[body]
            if head is None:
                continue
            seen = names.setdefault(body, set())
            if match.group(2) in seen:
                found.append((head, match.group(2), match.start()))
            seen.add(match.group(2))
        return found

    def inner_indent(self, block: Block) -> str:
        for attribute in _ATTRIBUTE.finditer(self.text, block.open + 1, block.close):
            if self.level[attribute.start(2)] == self.level[block.open] + 1:
                return attribute.group(1)
        outer = re.match(r"[ \t]*", self.text[block.start : block.open]).group(0)  # type: ignore[union-attr]
        return outer + "  "


@dataclass(frozen=True)
class Heredoc:
    """A heredoc: `start` at its "<<", `body` from after the opener's newline to the start of the closing line,
    `end` after the closing marker's line (before its newline); `flush` for `<<-`."""

    marker: str
    flush: bool
    start: int
    body: int
    closing: int
    end: int


def _non_code(text: str) -> Iterator[tuple[int, int, Heredoc | None]]:
    """(start, end, heredoc or None) of every comment, string and heredoc, in file order."""
    index = 0
    size = len(text)
    while index < size:
        char = text[index]
        if char == "#" or text.startswith("//", index):
            end = text.find("\n", index)
            end = size if end == -1 else end
            yield index, end, None
            index = end
        elif text.startswith("/*", index):
            end = text.find("*/", index + 2)
            if end == -1:
                raise HclScanError(f"comment at offset {index} never closes")
            yield index, end + 2, None
            index = end + 2
        elif char == '"':
            end = _string_end(text, index)
            yield index, end + 1, None
            index = end + 1
        elif text.startswith("<<", index) and (opener := _HEREDOC.match(text, index)):
            marker = opener.group(2)
            closing = re.compile(rf"^[^\S\n]*{re.escape(marker)}[^\S\n]*$", re.M).search(text, opener.end())
            if closing is None:
                raise HclScanError(f"heredoc {marker} at offset {index} never closes")
            yield (
                index,
                closing.end(),
                Heredoc(marker, opener.group(1) == "-", index, opener.end(), closing.start(), closing.end()),
            )
            index = closing.end()
        else:
            index += 1


def _code_mask(text: str) -> bytearray:
    """1 for characters that are HCL code, 0 inside strings, templates, heredocs and comments."""
    mask = bytearray(b"\x01") * len(text)
    for start, end, _ in _non_code(text):
        mask[start:end] = bytes(end - start)
    return mask


def heredocs_as_terraform_reads_them(text: str) -> str:
    """The text with every heredoc rewritten as a plain `<<MARKER` heredoc holding the value Terraform reads.

    Terraform accepts whitespace around the closing marker and, for `<<-`, removes the smallest indentation of the
    non-blank lines from each of them; python-hcl2 rejects the first and mis-reads the second, so the text it
    parses is put in that form. Line numbers are unchanged. Raises HclScanError when a string, comment or heredoc
    does not close.
    """
    pieces: list[str] = []
    last = 0
    for _, _, heredoc in _non_code(text):
        if heredoc is None:
            continue
        body = text[heredoc.body : heredoc.closing]
        newline = "\r\n" if text[heredoc.body - 2 : heredoc.body] == "\r\n" else "\n"
        value = _flushed(body) if heredoc.flush else body
        pieces += [text[last : heredoc.start], f"<<{heredoc.marker}{newline}", value, heredoc.marker]
        last = heredoc.end
    pieces.append(text[last:])
    return "".join(pieces)


def _flushed(body: str) -> str:
    """A `<<-` heredoc's lines less their common indentation (blank lines neither count nor change)."""
    lines = body.split("\n")
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    cut = min(indents, default=0)
    return "\n".join(line[cut:] if line.strip() else line for line in lines)


def _string_end(text: str, start: int) -> int:
    """Offset of the quote closing the string opened at `start`, stepping over escapes and ${...} templates."""
    index = start + 1
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == "\n":
            raise HclScanError(f"string at offset {start} runs past the end of its line")
        if char == '"':
            return index
        if text.startswith(("${", "%{"), index):
            index = _template_end(text, index + 2)
            continue
        index += 1
    raise HclScanError(f"string at offset {start} never closes")


def _template_end(text: str, index: int) -> int:
    """Offset just after the "}" closing a template expression whose body starts at `index`."""
    depth = 1
    while index < len(text):
        char = text[index]
        if char == '"':
            index = _string_end(text, index) + 1
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    raise HclScanError("template expression never closes")


def _levels(text: str, code: bytearray) -> list[int]:
    """Bracket nesting level before each character (code brackets only)."""
    levels = [0] * len(text)
    level = 0
    for index, char in enumerate(text):
        if code[index] and char in _CLOSERS:
            level -= 1
            if level < 0:
                raise HclScanError(f"unbalanced {char!r} at offset {index}")
        levels[index] = level
        if code[index] and char in _OPENERS:
            level += 1
    if level != 0:
        raise HclScanError("unbalanced brackets at end of file")
    return levels


# --- edits (each returns new text) ---


def set_attribute(text: str, block: Block, name: str, value: str) -> str:
    """Set `name = value` in `block`: replace the value if the attribute exists, else add it as the first line."""
    hcl = HclText(text)
    existing = hcl.attribute(block, name)
    if existing is not None:
        return text[: existing.value_start] + value + text[existing.value_end :]
    line_end = hcl._line_end(block.open)
    return text[:line_end] + f"{hcl.inner_indent(block)}{name} = {value}\n" + text[line_end:]


def remove_lines(text: str, start: int, end: int) -> str:
    """Remove text[start:end] (whole lines), and one blank line before it if that would leave two in a row."""
    before = text[:start]
    after = text[end:]
    if before.endswith("\n\n") and (after.startswith("\n") or after.lstrip(" \t").startswith("}")):
        before = before[:-1]
    return before + after


def remove_attribute(text: str, block: Block, name: str) -> str:
    attribute = HclText(text).attribute(block, name)
    return text if attribute is None else remove_lines(text, attribute.start, attribute.end)
