"""The Makefile's targets: what each needs and runs and the comment above it (`<!-- generated: make -->`)."""

from __future__ import annotations

import re
from typing import Any

from .markdown import code, escape, table
from .source import ROOT


def make_targets() -> list[dict[str, Any]]:
    """The Makefile's rules in file order (set-up internals left out): targets, prerequisites, recipe lines and the
    comment block right above the rule."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    variables = dict(re.findall(r"^([A-Z_]+) :?= (.*)$", text, re.MULTILINE))
    rules: list[dict[str, Any]] = []
    comment: list[str] = []
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        if line.startswith("\t"):
            if current is not None and not line.strip().startswith("#"):
                current["recipe"].append(line.strip())
            continue
        if line.startswith("#"):
            comment.append(line.lstrip("#").strip())
            continue
        rule = re.match(r"^([$()A-Za-z0-9_. -]+):(?!=)\s*(.*)$", line)
        current = None
        if rule and not line.startswith(".PHONY"):
            names = rule.group(1).strip()
            if names.startswith("$(") and names[2:-1] in variables:
                names = variables[names[2:-1]]
            if not names.startswith("$("):
                current = {"targets": names.split(), "needs": rule.group(2).split(), "recipe": [], "comment": comment}
                rules.append(current)
        comment = []
    return rules


def render_make(_: str | None = None) -> str:
    rows = []
    for rule in make_targets():
        recipe = "<br>".join(code(step.replace("$(BIN)/", ".venv/bin/")) for step in rule["recipe"][:6])
        if len(rule["recipe"]) > 6:
            recipe += f"<br>… ({len(rule['recipe'])} commands)"
        needs = ", ".join(code(need) for need in rule["needs"] if not need.startswith("$("))
        rows.append(
            [
                " ".join(code(name) for name in rule["targets"]),
                needs or "—",
                recipe or "—",
                escape(" ".join(rule["comment"])),
            ]
        )
    return table(["target", "needs", "runs", "note"], rows)
