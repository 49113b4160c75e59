"""A report's markdown made self-contained: its plots inlined as PNG data URIs, for the Dagster UI's markdown metadata
and for report.html.

The UI renders markdown metadata in the browser, where a relative image link resolves against the UI's own address
and shows as a broken image; its markdown sanitizer (Dagster 1.13's MarkdownWithPlugins) allows `data:` image sources,
so inlined PNGs render there. report.html is one file with its styles and images inside: it opens anywhere, offline,
attached to a mail. The markdown on disk keeps plain relative links, which file viewers resolve beside it.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from markdown_it import MarkdownIt

_IMAGE = re.compile(r"!\[([^\]\n]*)\]\(([A-Za-z0-9._-]+\.png)\)")

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 72rem;
       padding: 0 1rem; color: #1f2328; line-height: 1.45; }
h1 { border-bottom: 1px solid #d0d7de; padding-bottom: .3rem; }
h2 { margin-top: 2rem; border-bottom: 1px solid #eaeef2; padding-bottom: .2rem; }
table { border-collapse: collapse; margin: .8rem 0; font-size: .9rem; }
th, td { border: 1px solid #d0d7de; padding: .3rem .6rem; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
tr:nth-child(even) td { background: #fbfcfd; }
code { background: #f6f8fa; padding: .1rem .3rem; border-radius: 4px; font-size: .85em; }
img { max-width: 100%; height: auto; display: block; margin: .8rem 0; }
"""


def png_data_uri(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def inline_images(markdown: str, folder: Path) -> str:
    """The markdown with each `![alt](<file>.png)` whose file is in `folder` replaced by the image as a data URI;
    other links are left as they are."""

    def inlined(match: re.Match[str]) -> str:
        path = folder / match[2]
        if not path.is_file():
            return match[0]
        return f"![{match[1]}]({png_data_uri(path.read_bytes())})"

    return _IMAGE.sub(inlined, markdown)


def render_html(markdown: str, folder: Path, *, title: str) -> str:
    """A standalone HTML page of the markdown, its images inlined; raw HTML in the markdown is shown as text."""
    renderer = MarkdownIt("commonmark", {"html": False}).enable("table")
    body = renderer.render(inline_images(markdown, folder))
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{html.escape(title)}</title>\n'
        f"<style>{_STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n"
    )
