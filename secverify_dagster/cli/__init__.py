"""The `secverify` command: the parser and `main` in `main.py`, one module per command group beside it."""

from secverify_dagster.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
