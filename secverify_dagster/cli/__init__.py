"""The `secverify` command: the parser and `main` in `main.py`, one module per command group beside it."""
