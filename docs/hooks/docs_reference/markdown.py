"""Markdown helpers for the generated parts: escaping plain text, `code` spans, tables and paragraphs."""

from __future__ import annotations

import html
import json
import re
from typing import Any


def escape(text: str) -> str:
    """Plain text for a Markdown table cell or paragraph: HTML and Markdown specials escaped outside `code` spans."""
    parts = re.split(r"(`[^`]*`)", " ".join(str(text).split()))
    out = []
    for index, part in enumerate(parts):
        if index % 2:
            out.append(part)
        else:
            # `{` as an entity: attr_list would read a trailing `{...}` as attributes.
            part = re.sub(r"([\\*_\[\]#|])", r"\\\1", html.escape(part, quote=False))
            out.append(part.replace("{", "&#123;").replace("}", "&#125;"))
    return "".join(out)


def code(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return "`" + text.replace("`", "'") + "`" if text != "" else '`""`'


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell or " " for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def paragraphs(text: str | None) -> str:
    if not text:
        return ""
    return "\n\n".join(escape(block) for block in re.split(r"\n\s*\n", text.strip()) if block.strip())
