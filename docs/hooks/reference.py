"""MkDocs hook: the generated parts of the reference pages, rendered from the code at build time so they cannot drift.

A page asks for a part with a marker on a line of its own, `<!-- generated: KIND [ARG] -->`:

  cli                  every `secverify` command, sub-command, argument, default and help (from `build_parser()`)
  environment e1       an environment at a glance: package, episode kind, verifier, baselines, corpora and their
                       real ids, reward components and weights, default N, tools or dialogue, ablations, split sizes
  env-config e1        every key of configs/envs/<env>.yaml with its type, default, shipped value and meaning
  config models        a config file's keys from its typed model (models, sft, rlft, sft_datasets, promotion,
                       owners, ablations, experiments), with the shipped files
  automation           the schedules and sensors as the code declares them (cron, time zone, default status)
  make                 the Makefile's targets, what each runs and the comment above it

This file only dispatches the markers; each kind is rendered by a module of the docs_reference package beside it
(cli, environments, configs, automation, make). Definitions are found by name in the source (docs_reference.source:
find_definition, constant), not by module path, so a module that moves does not break the build; tests/test_docs.py
reads the code's values through the same functions.

An unknown marker, or one whose renderer fails, stops the build: a reference page is never silently left empty.
Nothing is written to the docs folder; the rendered Markdown exists only in the built site.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# MkDocs loads this file by path (not as part of a package), and loads it again on every `mkdocs serve` rebuild: put
# its folder first on the path and forget any docs_reference imported before, so an edited module is read anew.
for stale in [name for name in sys.modules if name.partition(".")[0] == "docs_reference"]:
    del sys.modules[stale]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from docs_reference import automation, cli, configs, environments, make  # noqa: E402

MARKER = re.compile(r"^<!--\s*generated:\s*([a-z-]+)(?:\s+([\w./-]+))?\s*-->\s*$", re.MULTILINE)

RENDERERS: dict[str, Callable[[str | None], str]] = {
    "cli": cli.render_cli,
    "environment": lambda arg: environments.render_environment(str(arg)),
    "env-config": lambda arg: configs.render_env_config(str(arg)),
    "config": lambda arg: configs.render_config(str(arg)),
    "automation": automation.render_automation,
    "make": make.render_make,
}


def render(kind: str, arg: str | None) -> str:
    if kind not in RENDERERS:
        raise KeyError(f"unknown generated part {kind!r}; known: {sorted(RENDERERS)}")
    return RENDERERS[kind](arg)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any, **kwargs: Any) -> str:
    """Replace each `<!-- generated: KIND [ARG] -->` marker of a page with the part rendered from the code."""
    return MARKER.sub(lambda match: "\n\n" + render(match.group(1), match.group(2)) + "\n\n", markdown)
