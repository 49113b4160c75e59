"""The `secverify` command's reference: every command, sub-command, argument, default and help, from its argparse
parser (`<!-- generated: cli -->`)."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Iterator

from .markdown import code, escape, paragraphs, table
from .source import ensure_paths


def build_parser() -> argparse.ArgumentParser:
    """The `secverify` command's parser (secverify_dagster.cli; its main module while the package is reorganised)."""
    ensure_paths()
    try:
        from secverify_dagster.cli import build_parser as build
    except ImportError:
        build = importlib.import_module("secverify_dagster.cli.main").build_parser
    return build()


def command_parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ("secverify",)
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser, str]]:
    """Every parser under `parser` (itself first) with its command path and its help line."""
    yield path, parser, ""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                for sub_path, sub_parser, sub_help in command_parsers(sub, (*path, name)):
                    yield sub_path, sub_parser, sub_help or helps.get(name, "")


def argument_name(action: argparse.Action) -> str:
    if not action.option_strings:
        name = action.metavar or action.dest
        return {"+": f"{name} …", "*": f"[{name} …]", "?": f"[{name}]"}.get(action.nargs, name)
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    metavar = action.metavar or action.dest.upper()
    if action.nargs in ("+", "*"):
        metavar = f"{metavar} …"
    return ", ".join(f"{option} {metavar}" for option in action.option_strings)


def argument_default(action: argparse.Action) -> str:
    if action.required:
        return "required"
    if not action.option_strings and action.nargs not in ("?", "*"):
        return "required"
    if isinstance(action, argparse._StoreTrueAction):
        return "off"
    default = action.default
    if default in (None, argparse.SUPPRESS) or default == []:
        return "—"
    if isinstance(default, float) and default.is_integer():
        default = int(default)
    return code(default)


def argument_help(action: argparse.Action) -> str:
    text = escape((action.help or "").replace("%%", "%").replace("%(default)s", str(action.default)))
    extras = []
    if isinstance(action, argparse._AppendAction) and "repeatable" not in text:
        extras.append("repeatable")
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        extras.append("one of " + ", ".join(code(choice) for choice in action.choices))
    return "; ".join(filter(None, [text, *extras]))


def usage(parser: argparse.ArgumentParser) -> str:
    """The usage line at a fixed width (argparse otherwise wraps at the terminal's)."""
    formatter = argparse.HelpFormatter(prog=parser.prog, width=88)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups, prefix="")
    return formatter.format_help().strip()


def render_cli(_: str | None = None) -> str:
    parser = build_parser()
    out: list[str] = []
    for path, sub, help_line in command_parsers(parser):
        if len(path) > 1:
            out.append(f"{'#' * len(path)} {' '.join(path)}")
        if help_line:
            out.append(escape(help_line[:1].upper() + help_line[1:]) + ".")
        out.append("```text\n" + usage(sub) + "\n```")
        if sub.description and len(path) > 1:
            out.append(paragraphs(sub.description))
        rows = [
            [code(argument_name(action)), argument_default(action), argument_help(action)]
            for action in sub._actions
            if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)
        ]
        commands = [
            code(name)
            for action in sub._actions
            if isinstance(action, argparse._SubParsersAction)
            for name in action.choices
        ]
        if commands:
            out.append("Commands: " + ", ".join(commands) + ".")
        if rows:
            out.append(table(["argument", "default", "meaning"], rows))
    return "\n\n".join(out)
