"""A typed config model as a key table: each key's type, default, shipped value and meaning (its field docstring
and the YAML file's comment), and a shipped file shown whole."""

from __future__ import annotations

import ast
import re
import types
import typing
from functools import cache
from pathlib import Path
from typing import Any

from .markdown import code, escape, table
from .source import ROOT


def type_name(annotation: Any) -> str:
    """A readable type: `list[str] | None`, `'full' | 'lora'`, `int ≥ 1`."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        base, *meta = args
        bounds = []
        for item in meta:
            for attr, sign in (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤")):
                value = getattr(item, attr, None)
                if value is not None:
                    bounds.append(f"{sign} {value}")
        return type_name(base) + (" " + ", ".join(bounds) if bounds else "")
    if origin is typing.Literal:
        return " | ".join(repr(arg) for arg in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(arg) for arg in args)
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(type_name(arg) for arg in args)}]"
    if annotation is type(None):
        return "None"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


@cache
def attribute_docstrings(cls: type) -> dict[str, str]:
    """A class's field docstrings (the string literal under an annotated field), its bases' included."""
    import inspect

    found: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__ in ("builtins", "pydantic.main") or klass.__module__.startswith("pydantic"):
            continue
        try:
            tree = ast.parse(inspect.getsource(klass).strip())
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, following in zip(body, [*body[1:], None], strict=True):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                found[node.target.id] = " ".join(following.value.value.split())
    return found


def yaml_comments(path: Path) -> dict[str, str]:
    """Comments of a YAML file by dotted key: a key's trailing comment, else the comment lines right above it."""
    comments: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    above: list[str] = []
    seen = False
    for line in path.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            above.append(stripped.lstrip("#").strip())
            continue
        match = re.match(r"^(\s*)([A-Za-z0-9_.-]+):(.*)$", line)
        if not match:
            above = []
            continue
        indent, key, rest = len(match.group(1)), match.group(2), match.group(3)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, key))
        trailing = re.search(r"\s#\s*(.*)$", rest)
        # The comment block at the top of a file describes the file, not its first key.
        text = trailing.group(1) if trailing else (" ".join(above) if seen else "")
        seen = True
        if text:
            comments[".".join(name for _, name in stack)] = text
        above = []
    return comments


def _is_model(annotation: Any) -> bool:
    from pydantic import BaseModel

    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _model_in(annotation: Any) -> tuple[str, Any] | None:
    """('', Model) for a model (or an optional one), ('.*', Model) for a mapping of models, ('[]', Model) for a list."""
    if _is_model(annotation):
        return "", annotation
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        models = [arg for arg in args if _is_model(arg)]
        return ("", models[0]) if len(models) == 1 else None
    if origin is dict and len(args) == 2 and _is_model(args[1]):
        return ".*", args[1]
    if origin is list and args and _is_model(args[0]):
        return "[]", args[0]
    return None


def _default(field: Any) -> str:
    from pydantic_core import PydanticUndefined

    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if value is PydanticUndefined:
        return "required"
    if hasattr(value, "model_dump"):
        return "see below"
    return code(value)


def _lookup(data: Any, path: str) -> Any:
    node = data
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


_MISSING = object()


def config_rows(
    model: type, data: dict[str, Any] | None, comments: dict[str, str], prefix: str = ""
) -> list[list[str]]:
    """One row per key of a typed config model (nested models flattened to dotted keys)."""
    rows: list[list[str]] = []
    docs = attribute_docstrings(model)
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        nested = _model_in(field.annotation)
        value = _lookup(data, key) if data is not None else _MISSING
        meaning = " ".join(filter(None, [docs.get(name, ""), comments.get(key, "")]))
        if nested is not None and not nested[0]:
            if not meaning and nested[1].__doc__ and "Create a new model" not in nested[1].__doc__:
                meaning = nested[1].__doc__
            rows.append([code(key), type_name(nested[1]) + " (section)", _default(field), "", escape(meaning)])
            rows += config_rows(nested[1], data, comments, f"{key}.")
            continue
        shown = "—" if value is _MISSING else code(value)
        if nested is not None:
            rows.append([code(key), escape(type_name(field.annotation)), _default(field), "", escape(meaning)])
            rows += config_rows(nested[1], None, comments, f"{key}{nested[0]}.")
            continue
        rows.append([code(key), escape(type_name(field.annotation)), _default(field), shown, escape(meaning)])
    return rows


def config_table(model: type, path: Path | None) -> str:
    """The key table of a config model, with the values and comments of one shipped file."""
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8")) if path is not None else None
    comments = yaml_comments(path) if path is not None else {}
    header = ["key", "type", "default", "in the shipped file" if path is not None else "", "meaning"]
    rows = config_rows(model, data, comments)
    if path is None:
        header.pop(3)
        rows = [row[:3] + row[4:] for row in rows]
    return table(header, rows)


def shipped_file(path: Path, *, open_: bool = False) -> str:
    relative = path.relative_to(ROOT).as_posix()
    body = "\n".join("    " + line for line in path.read_text(encoding="utf-8").splitlines())
    return f'{"???+" if open_ else "???"} example "{relative}"\n\n    ```yaml\n{body}\n    ```'
