"""Kubernetes YAML under loading.py's order of checks: a streaming pass over libyaml's events bounds documents,
depth and alias expansion (check_yaml_events) before anything is composed; then the safe loader, JSON-safe values and
one resource per object, named as the policies and the scanners name it."""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
from collections.abc import Iterator, Mapping
from typing import Any

import yaml

from sv_env_config_verification.config_model import (
    DEFAULT_LIMITS,
    ConfigParseError,
    ConfigResource,
    LoadLimits,
    ParsedConfig,
    SkippedEntry,
    child_node,
    decode_config,
)


def check_yaml_events(text: str, limits: LoadLimits = DEFAULT_LIMITS) -> int:
    """Stream libyaml's events and enforce document, depth and alias-expansion limits; returns the document count.

    No node tree exists yet, so nothing here can blow up: each finished node's expanded size (1 + its children's,
    aliases counting their anchor's size) is kept per anchor, and every alias adds that size to a running total
    of alias-added nodes that must stay under max_alias_expansion. An alias to an anchor still open (a recursive
    structure) is rejected too: nothing downstream can serialize it.
    """
    anchor_sizes: dict[str, tuple[int, int]] = {}  # anchor -> (expanded node count, height)
    open_anchors: set[str] = set()
    stack: list[list[Any]] = []  # [anchor, expanded size so far, height so far] per open collection
    documents = 0
    alias_added = 0
    events = yaml.parse(text, Loader=yaml.CSafeLoader)
    try:
        for event in events:
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                anchor_sizes.clear()  # anchors are scoped to their document
                if documents > limits.max_documents:
                    raise ConfigParseError(
                        "too_many_documents", f"more than {limits.max_documents} YAML documents", line=_line(event)
                    )
            elif isinstance(event, yaml.CollectionStartEvent):
                if len(stack) >= limits.max_depth:
                    raise ConfigParseError(
                        "too_deep", f"nesting deeper than {limits.max_depth} levels", line=_line(event)
                    )
                stack.append([event.anchor, 1, 1])
                if event.anchor:
                    open_anchors.add(event.anchor)
            elif isinstance(event, yaml.CollectionEndEvent):
                anchor, size, height = stack.pop()
                if anchor:
                    anchor_sizes[anchor] = (size, height)
                    open_anchors.discard(anchor)
                if stack:
                    stack[-1][1] += size
                    stack[-1][2] = max(stack[-1][2], height + 1)
            elif isinstance(event, yaml.ScalarEvent):
                if event.anchor:
                    anchor_sizes[event.anchor] = (1, 0)
                if stack:
                    stack[-1][1] += 1
            elif isinstance(event, yaml.AliasEvent):
                if event.anchor in open_anchors:
                    raise ConfigParseError(
                        "yaml_bomb", f"alias *{event.anchor} refers to its own enclosing node", line=_line(event)
                    )
                if event.anchor not in anchor_sizes:
                    raise ConfigParseError("invalid_yaml", f"undefined alias *{event.anchor}", line=_line(event))
                size, height = anchor_sizes[event.anchor]
                alias_added += size
                if alias_added > limits.max_alias_expansion:
                    raise ConfigParseError(
                        "yaml_bomb",
                        f"aliases expand to more than {limits.max_alias_expansion} extra nodes "
                        f"(alias *{event.anchor} alone is {size} nodes)",
                        line=_line(event),
                    )
                # Aliases nest their anchor's subtree here, so the expanded depth is what recursive code will see.
                if len(stack) + height > limits.max_depth:
                    raise ConfigParseError(
                        "too_deep",
                        f"alias *{event.anchor} nests deeper than {limits.max_depth} levels once expanded",
                        line=_line(event),
                    )
                if stack:
                    stack[-1][1] += size
                    stack[-1][2] = max(stack[-1][2], height + 1)
    except yaml.YAMLError as exc:
        raise _yaml_error(exc) from None
    return documents


def _line(event: Any) -> int | None:
    mark = getattr(event, "start_mark", None)
    return mark.line + 1 if mark is not None else None


def _yaml_error(exc: yaml.YAMLError) -> ConfigParseError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = mark.line + 1 if mark is not None else None
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    where = f" at line {line}" if line is not None else ""
    return ConfigParseError("invalid_yaml", f"{problem}{where}", line=line)


def _yaml_documents(text: str) -> Iterator[tuple[yaml.Node | None, Any]]:
    """(node, JSON-safe value) per document; only called after check_yaml_events accepted the text."""
    loader = yaml.CSafeLoader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            value = loader.construct_document(node) if node is not None else None
            yield node, to_json_safe(value)
    except yaml.YAMLError as exc:
        raise _yaml_error(exc) from None
    except RecursionError:  # a backstop: check_yaml_events bounds the expanded depth well below the recursion limit
        raise ConfigParseError("too_deep", "YAML nesting too deep to construct") from None
    finally:
        loader.dispose()


def to_json_safe(value: Any) -> Any:
    """YAML values as JSON values: timestamps -> ISO strings, binary -> base64, sets -> sorted lists, keys -> str.

    SafeConstructor still yields these non-JSON types; the Rego input, the caches and the model prompts are
    JSON, so they are normalized once here. Non-finite floats become strings ("inf"), which JSON lacks.
    """
    if isinstance(value, dict):
        return {json_key(key): to_json_safe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [to_json_safe(item) for item in value]
    if isinstance(value, str | bool | int) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, set | frozenset):
        return sorted((to_json_safe(item) for item in value), key=lambda item: json.dumps(item, sort_keys=True))
    if isinstance(value, tuple):
        return [to_json_safe(item) for item in value]
    return str(value)


def json_key(key: Any) -> str:
    """A constructed YAML mapping key as the JSON key it becomes (validity.py compares keys by it, so two keys that
    become one are a duplicate)."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool) or key is None:
        return json.dumps(key)
    if isinstance(key, int | float):
        return str(key)
    safe = to_json_safe(key)
    return safe if isinstance(safe, str) else json.dumps(safe, sort_keys=True)


def parse_kubernetes(text: str | bytes, *, limits: LoadLimits = DEFAULT_LIMITS, strict: bool = True) -> ParsedConfig:
    """Multi-document Kubernetes YAML -> documents and named resources ("Kind/name"; `kind: List` items too).

    One bad entry never rejects the file: a document or List item that is not a Kubernetes object (null, a scalar,
    a mapping without apiVersion/kind) is left out of the resources and named in `skipped`, and the other objects
    are scanned. strict=True rejects the file (invalid_manifest) only when nothing but such entries is in it.
    """
    decoded = decode_config(text, limits)
    check_yaml_events(decoded, limits)
    documents: list[Any] = []
    resources: list[ConfigResource] = []
    skipped: list[SkippedEntry] = []
    for doc_index, (node, value) in enumerate(_yaml_documents(decoded)):
        if value is None:
            continue  # an empty document ("---" twice, or comments only) is harmless
        documents.append(value)
        where = f"document {doc_index + 1}"
        problem = _manifest_problem(value)
        if problem is not None:
            skipped.append(SkippedEntry(where, problem, _node_line(node)))
            continue
        if value.get("kind") == "List" and isinstance(value.get("items"), list):
            item_nodes = _list_item_nodes(node)
            for item_index, item in enumerate(value["items"]):
                item_node = item_nodes[item_index] if item_index < len(item_nodes) else None
                problem = _manifest_problem(item)
                if problem is not None:
                    where_item = f"item {item_index + 1} of the List in {where}"
                    skipped.append(SkippedEntry(where_item, problem, _node_line(item_node)))
                    continue
                resources.append(_k8s_resource(item, len(resources), item_node))
            continue
        resources.append(_k8s_resource(value, len(resources), node))
    if strict and skipped and not resources:
        first = skipped[0]
        raise ConfigParseError("invalid_manifest", f"no Kubernetes object in the file: {first}", line=first.line)
    return ParsedConfig(
        kind="kubernetes",
        documents=documents,
        resources=resources,
        size_bytes=len(decoded.encode("utf-8")),
        skipped=tuple(skipped),
    )


def _manifest_problem(value: Any) -> str | None:
    """Why `value` is not a Kubernetes object (None when it is one: a mapping with string apiVersion and kind)."""
    if value is None:
        return "is empty (null)"
    if not isinstance(value, dict):
        return f"is a {type(value).__name__}, not a Kubernetes object"
    for key in ("apiVersion", "kind"):
        if not isinstance(value.get(key), str) or not value.get(key):
            return f"has no string {key!r}"
    return None


def _node_line(node: yaml.Node | None) -> int | None:
    return node.start_mark.line + 1 if node is not None else None


def kubernetes_resource_name(obj: Mapping[str, Any], index: int) -> str:
    """ "Kind/name" -- the resource label scanners, models and the oracle share; unnamed objects get "#index"."""
    kind = obj.get("kind") if isinstance(obj.get("kind"), str) and obj.get("kind") else "Unknown"
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name = metadata.get("name") or metadata.get("generateName")
    if not isinstance(name, str) or not name:
        name = f"#{index}"
    return f"{kind}/{name}"


def _k8s_resource(obj: dict[str, Any], index: int, node: yaml.Node | None) -> ConfigResource:
    kind = obj.get("kind") if isinstance(obj.get("kind"), str) else "Unknown"
    line = node.start_mark.line + 1 if node is not None else None
    return ConfigResource(
        name=kubernetes_resource_name(obj, index), kind=kind, body=obj, line=line, index=index, node=node
    )


def _list_item_nodes(node: yaml.Node | None) -> list[yaml.Node]:
    items = child_node(node, "items")
    return list(items.value) if isinstance(items, yaml.SequenceNode) else []
