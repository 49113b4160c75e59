"""The shape of an audit: a tree of links from a published number down to the data, models and code behind it.

Each link says what it is, whether it holds, the facts it rests on (hashes, versions, paths), and the links beneath
it. A link is present (found, and where a hash is recorded, the file still hashes to it), missing (with why) or
mismatched (the file was re-hashed and no longer matches the record). A chain is complete when every required link
beneath its root is present; optional links (a checkpoint's promotion) are shown but never make a chain incomplete.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

LinkStatus = Literal["present", "missing", "mismatched"]
SubjectKind = Literal["eval run", "report", "checkpoint"]

_MARKS: dict[LinkStatus, str] = {"present": "✓", "missing": "✗", "mismatched": "≠"}
_SHORT_HASH = 12
_MAX_FACT_CHARS = 160


@dataclass(frozen=True)
class Gap:
    """A required link that does not hold, and the path of links from the root down to it."""

    path: tuple[str, ...]
    status: LinkStatus
    why: str

    def describe(self) -> str:
        return f"{' › '.join(self.path)}: {self.status}: {self.why}"

    def as_dict(self) -> dict[str, Any]:
        return {"path": list(self.path), "status": self.status, "why": self.why}


@dataclass(frozen=True)
class Link:
    kind: str
    """What the link is in the domain's words: "dataset", "raw corpus", "model", "code version", "dagster run", …"""
    name: str
    status: LinkStatus
    why: str = ""
    """Missing or mismatched: why. Present: an optional note (e.g. a fallback corpus, a dirty checkout)."""
    facts: Mapping[str, Any] = field(default_factory=dict)
    links: tuple[Link, ...] = ()
    required: bool = True

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name}"

    def gaps(self, above: tuple[str, ...] = ()) -> list[Gap]:
        """Every required link at or beneath this one that is not present (an optional link's subtree is skipped)."""
        if not self.required:
            return []
        path = (*above, self.label)
        own = [Gap(path, self.status, self.why)] if self.status != "present" else []
        return own + [gap for link in self.links for gap in link.gaps(path)]

    def walk(self) -> Iterator[Link]:
        yield self
        for link in self.links:
            yield from link.walk()

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "status": self.status,
            "why": self.why,
            "required": self.required,
            "facts": dict(self.facts),
            "links": [link.as_dict() for link in self.links],
        }


def present(kind: str, name: str, *, note: str = "", facts: Mapping[str, Any] | None = None, **options: Any) -> Link:
    return Link(kind, name, "present", note, dict(facts or {}), **options)


def missing(kind: str, name: str, why: str, *, facts: Mapping[str, Any] | None = None, **options: Any) -> Link:
    return Link(kind, name, "missing", why, dict(facts or {}), **options)


def mismatched(kind: str, name: str, why: str, *, facts: Mapping[str, Any] | None = None, **options: Any) -> Link:
    return Link(kind, name, "mismatched", why, dict(facts or {}), **options)


@dataclass(frozen=True)
class Audit:
    """One subject's chain: an eval run, a report or a checkpoint."""

    kind: SubjectKind
    subject: str
    root: Link

    @property
    def gaps(self) -> list[Gap]:
        return self.root.gaps()

    @property
    def complete(self) -> bool:
        return not self.gaps

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "subject": self.subject,
            "complete": self.complete,
            "gaps": [gap.as_dict() for gap in self.gaps],
            "chain": self.root.as_dict(),
        }

    def render(self) -> str:
        """The chain as an indented text tree, then a verdict listing the links that do not hold."""
        lines = list(_render(self.root, 0))
        gaps = self.gaps
        if gaps:
            lines += ["", f"INCOMPLETE: {len(gaps)} link(s) do not hold"]
            lines += [f"  {_MARKS[gap.status]} {gap.describe()}" for gap in gaps]
        else:
            lines += ["", "COMPLETE: every link holds"]
        return "\n".join(lines)


def _render(link: Link, depth: int) -> Iterator[str]:
    indent = "  " * depth
    mark = _MARKS[link.status] if link.required or link.status == "present" else "–"
    why = f": {link.why}" if link.why else ""
    optional = " (optional)" if not link.required else ""
    yield f"{indent}{mark} {link.kind} {link.name}{optional}{why}"
    for key, value in link.facts.items():
        yield f"{indent}    {key}: {_fact_text(value)}"
    for child in link.links:
        yield from _render(child, depth + 1)


def _fact_text(value: Any) -> str:
    if isinstance(value, str):
        text = value
        if len(text) >= 40 and all(char in "0123456789abcdef" for char in text):
            text = text[:_SHORT_HASH] + "…"
    else:
        text = json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    return text if len(text) <= _MAX_FACT_CHARS else text[: _MAX_FACT_CHARS - 1] + "…"
