"""The reference pages' generated parts, one module per kind of part, rendered from the code at build time.

docs/hooks/reference.py (the MkDocs hook) dispatches a page's `<!-- generated: KIND [ARG] -->` markers to the
`render_*` functions here: cli, configs (config files and env configs), environments, automation and make, built on
source (finding definitions in the project's code), markdown (escaping and tables) and config_tables (a typed model's
key table). tests/test_docs.py reads the code's values through the same functions.
"""
