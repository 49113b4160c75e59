"""Terraform HCL (and Terraform JSON) under loading.py's limits: a nesting pre-scan guards python-hcl2's recursive
transformer, heredocs are read as Terraform reads them, and each resource is named with its line."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from sv_env_config_verification import hcltext
from sv_env_config_verification.config_model import (
    DEFAULT_LIMITS,
    ConfigParseError,
    ConfigResource,
    LoadLimits,
    ParsedConfig,
    decode_config,
)

_TF_ADDRESS_LINE = re.compile(
    r'^[ \t]*(resource|data)[ \t]+"?([A-Za-z0-9_-]+)"?[ \t]+"?([A-Za-z0-9_-]+)"?', re.MULTILINE
)
_JSONENCODE = re.compile(r"^\$\{jsonencode\((.*)\)\}$", re.DOTALL)


def check_hcl_nesting(text: str, limits: LoadLimits = DEFAULT_LIMITS) -> None:
    """Reject bracket nesting deeper than max_depth before python-hcl2's recursive transformer sees it.

    A character scan that skips quoted strings and comments; heredoc bodies are not skipped, so brackets inside
    them count (conservative: a pathological heredoc is rejected, not mis-parsed).
    """
    depth = 0
    line = 1
    i = 0
    n = len(text)
    openers, closers = "{[(", "}])"
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
        elif ch == '"':
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\\":
                    i += 1
                elif text[i] == "\n":
                    line += 1
                i += 1
        elif ch == "#" or (ch == "/" and i + 1 < n and text[i + 1] == "/"):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif ch == "/" and i + 1 < n and text[i + 1] == "*":
            end = text.find("*/", i + 2)
            stop = n if end < 0 else end + 2
            line += text.count("\n", i, stop)
            i = stop
            continue
        elif ch in openers:
            depth += 1
            if depth > limits.max_depth:
                raise ConfigParseError("too_deep", f"nesting deeper than {limits.max_depth} levels", line=line)
        elif ch in closers:
            depth = max(0, depth - 1)
        i += 1


def _hcl_loads(text: str) -> dict[str, Any]:
    import hcl2
    from hcl2.utils import SerializationOptions

    options = SerializationOptions(
        with_comments=False,
        explicit_blocks=False,
        preserve_heredocs=False,
        strip_string_quotes=True,
    )
    return hcl2.loads(text, serialization_options=options)


def parse_terraform(text: str | bytes, *, limits: LoadLimits = DEFAULT_LIMITS) -> ParsedConfig:
    """Terraform HCL (or `.tf.json`-style JSON) -> the python-hcl2 dict and its resources/data sources.

    Strings are unquoted (python-hcl2's strip_string_quotes) so policies compare plain values; a `jsonencode(...)`
    expression is re-parsed into the object it encodes, since that object is what Terraform sends to the cloud
    API (IAM policies are written this way) and the policies must see its structure, not HCL source text.
    """
    decoded = decode_config(text, limits)
    check_hcl_nesting(decoded, limits)
    stripped = decoded.lstrip()
    if stripped.startswith("{"):
        try:
            tree = json.loads(decoded)
        except ValueError as exc:
            raise ConfigParseError("invalid_hcl", f"Terraform JSON does not parse: {exc}") from None
        if not isinstance(tree, dict):
            raise ConfigParseError("invalid_hcl", "Terraform JSON must be an object at the top level")
        resources = _tf_json_resources(tree, decoded)
    else:
        try:
            tree = _hcl_loads(_heredocs_for_parser(decoded))
        except RecursionError:
            raise ConfigParseError("too_deep", "HCL nesting too deep for the parser") from None
        except Exception as exc:  # lark and python-hcl2 raise many exception types; all mean "not valid HCL"
            raise ConfigParseError("invalid_hcl", _hcl_error_message(exc), line=getattr(exc, "line", None)) from None
        tree = _decode_jsonencode(tree)
        resources = _tf_hcl_resources(tree, decoded)
    return ParsedConfig(
        kind="terraform", documents=[tree], resources=resources, size_bytes=len(decoded.encode("utf-8"))
    )


def _heredocs_for_parser(text: str) -> str:
    """The text python-hcl2 reads with Terraform's heredoc rules; as written when its strings or heredocs do not
    close (python-hcl2 then names the error)."""
    try:
        return hcltext.heredocs_as_terraform_reads_them(text)
    except hcltext.HclScanError:
        return text


def _hcl_error_message(exc: Exception) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"invalid HCL: {first}"[:300]


def _decode_jsonencode(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _decode_jsonencode(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_decode_jsonencode(item) for item in value]
    if isinstance(value, str) and value.startswith("${jsonencode(") and (match := _JSONENCODE.match(value)):
        try:
            decoded = _hcl_loads(f"__value = {match.group(1)}\n")
        except Exception:  # an expression python-hcl2 can print but not re-read: keep the source text
            return value
        return _decode_jsonencode(decoded.get("__value", value))
    return value


def _tf_lines(text: str) -> dict[str, int]:
    lines: dict[str, int] = {}
    for match in _TF_ADDRESS_LINE.finditer(text):
        mode, rtype, rname = match.groups()
        address = f"{rtype}.{rname}" if mode == "resource" else f"data.{rtype}.{rname}"
        lines.setdefault(address, text.count("\n", 0, match.start()) + 1)
    return lines


def _tf_hcl_resources(tree: Mapping[str, Any], text: str) -> list[ConfigResource]:
    lines = _tf_lines(text)
    resources: list[ConfigResource] = []
    for mode, section in (("managed", "resource"), ("data", "data")):
        blocks = tree.get(section, [])
        if not isinstance(blocks, list):
            raise ConfigParseError("invalid_hcl", f"unexpected shape for {section} blocks")
        for block in blocks:
            for rtype, named in _labelled(block, section):
                for rname, body in _labelled(named, f"{section} {rtype}"):
                    address = f"{rtype}.{rname}" if mode == "managed" else f"data.{rtype}.{rname}"
                    resources.append(
                        ConfigResource(
                            name=address,
                            kind=rtype,
                            body=body if isinstance(body, dict) else {},
                            line=lines.get(address),
                            index=len(resources),
                            mode=mode,
                        )
                    )
    return resources


def _labelled(value: Any, what: str) -> list[tuple[str, Any]]:
    if not isinstance(value, dict):
        raise ConfigParseError("invalid_hcl", f"{what} block is missing its labels")
    return list(value.items())


def _tf_json_resources(tree: Mapping[str, Any], text: str) -> list[ConfigResource]:
    """Terraform's JSON syntax: {"resource": {type: {name: {...}}}} (objects, or lists of them)."""
    resources: list[ConfigResource] = []
    for mode, section in (("managed", "resource"), ("data", "data")):
        sections = tree.get(section, {})
        for block in sections if isinstance(sections, list) else [sections]:
            if not isinstance(block, dict):
                raise ConfigParseError("invalid_hcl", f"unexpected shape for {section} in Terraform JSON")
            for rtype, named in block.items():
                for item in named if isinstance(named, list) else [named]:
                    for rname, body in _labelled(item, f"{section} {rtype}"):
                        for one in body if isinstance(body, list) else [body]:
                            address = f"{rtype}.{rname}" if mode == "managed" else f"data.{rtype}.{rname}"
                            resources.append(
                                ConfigResource(
                                    name=address,
                                    kind=rtype,
                                    body=one if isinstance(one, dict) else {},
                                    line=_json_key_line(text, rname),
                                    index=len(resources),
                                    mode=mode,
                                )
                            )
    return resources


def _json_key_line(text: str, key: str) -> int | None:
    position = text.find(f'"{key}"')
    return text.count("\n", 0, position) + 1 if position >= 0 else None
