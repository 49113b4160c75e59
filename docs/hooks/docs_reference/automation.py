"""The schedules and sensors as secverify_dagster declares them, read from the source: cron, time zone, job,
default status and what each does (`<!-- generated: automation -->`)."""

from __future__ import annotations

import ast
import re
from typing import Any

from .markdown import code, escape, table
from .source import ROOT, constant

WEEKDAYS = {
    "0": "Sunday",
    "1": "Monday",
    "2": "Tuesday",
    "3": "Wednesday",
    "4": "Thursday",
    "5": "Friday",
    "6": "Saturday",
}


def describe_cron(cron: str) -> str:
    minute, hour, day, month, weekday = cron.split()
    at = f"{int(hour):02d}:{int(minute):02d}"
    if day == "*" and month == "*" and weekday == "*":
        return f"every day, {at}"
    if day == "*" and month == "*" and weekday in WEEKDAYS:
        return f"every {WEEKDAYS[weekday]}, {at}"
    if month == "*" and weekday == "*" and day.isdigit():
        return f"day {day} of every month, {at}"
    return cron


DECORATORS = {"schedule": {"schedule", "documented_schedule"}}
"""The decorators that declare each kind, where more than its own name (`dg.schedule`) does: secverify_dagster's
`documented_schedule` is `dg.schedule` with the docstring as the description."""


def _decorator_keywords(node: ast.FunctionDef, name: str) -> dict[str, Any] | None:
    names = DECORATORS.get(name, {name})
    for decorator in node.decorator_list:
        func = decorator.func if isinstance(decorator, ast.Call) else None
        if func is not None and (getattr(func, "attr", None) in names or getattr(func, "id", None) in names):
            keywords = {}
            for keyword in decorator.keywords:
                try:
                    keywords[keyword.arg] = ast.literal_eval(keyword.value)
                except ValueError:
                    keywords[keyword.arg] = ast.unparse(keyword.value)
            return keywords
    return None


def automation() -> dict[str, list[dict[str, Any]]]:
    """Every schedule and sensor declared in secverify_dagster, read from the source: name, decorator arguments,
    what it does (its description, else its docstring's first paragraph, else its module's), and where it is."""
    found: dict[str, list[dict[str, Any]]] = {"schedule": [], "sensor": [], "run_failure_sensor": []}
    for path in sorted((ROOT / "secverify_dagster").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef):
                continue
            for kind in found:
                keywords = _decorator_keywords(node, kind)
                if keywords is not None:
                    doc = keywords.pop("description", None) or ast.get_docstring(node) or ast.get_docstring(tree) or ""
                    keywords.setdefault("name", node.name)
                    keywords["biweekly"] = any(
                        isinstance(sub, ast.Name) and sub.id == "is_biweekly_week" for sub in ast.walk(node)
                    )
                    found[kind].append(
                        {"doc": str(doc).split("\n\n")[0], "where": path.relative_to(ROOT).as_posix(), **keywords}
                    )
    return found


def _job_name(item: dict[str, Any]) -> str:
    """A schedule's job: its job_name (a literal, or a constant named in the source) or its job object's name."""
    name = str(item.get("job_name") or item.get("job", ""))
    if re.fullmatch(r"[A-Z][A-Z0-9_]*", name):
        try:
            return str(constant(name))
        except LookupError:
            return name
    return name


def _running(item: dict[str, Any]) -> bool:
    """Whether a schedule or sensor ships switched on (default_status RUNNING; Dagster's default is stopped)."""
    return "RUNNING" in str(item.get("default_status", ""))


def render_automation(_: str | None = None) -> str:
    found = automation()
    schedules = [
        [
            code(item["name"]),
            f"{describe_cron(item['cron_schedule'])} {item.get('execution_timezone', 'UTC')}"
            + (", bi-weekly weeks only" if item["biweekly"] else "")
            + f" ({code(item['cron_schedule'])})",
            "on" if _running(item) else "off",
            code(_job_name(item)),
            escape(item["doc"]),
        ]
        for item in found["schedule"]
    ]
    all_off = not any(_running(item) for item in found["schedule"])
    sensors = [
        [
            code(item["name"]),
            "on" if _running(item) else "off",
            f"{item['minimum_interval_seconds']} s" if "minimum_interval_seconds" in item else "Dagster's default",
            escape(item["doc"]) + f" ({code(item['where'])})",
        ]
        for item in found["sensor"] + found["run_failure_sensor"]
    ]
    return "\n\n".join(
        [
            "## Schedules",
            (
                "Every schedule ships **off** (Dagster's default status)"
                if all_off
                else "The *ships* column says which schedules start switched on"
            )
            + ": switch one on in the UI's *Automation* page or with `dagster schedule start NAME -w workspace.yaml` "
            "(with `DAGSTER_HOME` set, as the Makefile sets it).",
            table(["schedule", "when", "ships", "job", "what it does"], schedules),
            "## Sensors",
            table(["sensor", "ships", "interval", "what it does"], sensors),
        ]
    )
