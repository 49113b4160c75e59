"""Safe parsing of untrusted configuration files: Kubernetes YAML and Terraform HCL.

Every config E2 sees (corpus items, model patches, user files given to `secverify scan`) is hostile until parsed
here. The dangers are concrete: a YAML "billion laughs" document is a few hundred bytes whose aliases expand to
10^9 nodes the moment anything walks it (JSON encoding, Rego input conversion, a scanner); a very deep `[[[[...`
document overflows recursive composers; multi-megabyte inputs or thousands of documents make every scanner slow;
bytes that are not UTF-8 mean different things to different tools. So the checks run in this order, each before
any work it protects:

1. size (bytes) and UTF-8 decoding, before any parser sees the text;
2. for YAML, a streaming pass over libyaml's parser events (no tree is built) that counts documents, nesting
   depth and -- the key check -- how many nodes the aliases would add once expanded; the expansion is computed
   from per-anchor subtree sizes, so a bomb is rejected at its first oversized alias in microseconds;
3. only then composition and construction (libyaml's C loader, SafeConstructor: no arbitrary Python objects),
   followed by conversion to JSON-safe values (timestamps become ISO strings, keys become strings).

Terraform goes through python-hcl2 under the same size limit; a nesting pre-scan guards its recursive transformer.
Errors are `ConfigParseError` with a stable `reason` code the environment reports per sample.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml

from sv_env_config_verification import hcltext
from sv_env_config_verification.pod_specs import pod_spec_paths

ConfigKind = Literal["kubernetes", "terraform"]
CONFIG_KINDS: tuple[str, ...] = ("kubernetes", "terraform")

# Bumped whenever parsing results change shape (resource naming, value normalization): part of every cache key
# that depends on parsed configs, so stale cached scans are never reused after a loader change.
LOADER_VERSION = "2"

ParseErrorReason = Literal[
    "too_large",
    "yaml_bomb",
    "not_utf8",
    "invalid_yaml",
    "invalid_hcl",
    "too_deep",
    "too_many_documents",
    "invalid_manifest",
]
PARSE_ERROR_REASONS: tuple[str, ...] = (
    "too_large",
    "yaml_bomb",
    "not_utf8",
    "invalid_yaml",
    "invalid_hcl",
    "too_deep",
    "too_many_documents",
    "invalid_manifest",
)


class ConfigParseError(ValueError):
    """An untrusted config was rejected; `reason` is a stable code (see PARSE_ERROR_REASONS), the message says why."""

    def __init__(self, reason: ParseErrorReason | str, message: str, *, line: int | None = None) -> None:
        if reason not in PARSE_ERROR_REASONS:
            raise ValueError(f"unknown parse error reason {reason!r}")
        super().__init__(f"{reason}: {message}")
        self.reason: str = reason
        self.detail = message
        self.line = line


@dataclass(frozen=True)
class LoadLimits:
    """Bounds on untrusted input. Defaults fit real manifests and modules with a wide margin.

    max_alias_expansion counts the nodes that aliases add beyond the document as written: anchors used a few
    times for shared env blocks cost tens of nodes, a billion-laughs document asks for ~10^9.
    """

    max_bytes: int = 1_000_000
    max_documents: int = 500
    max_depth: int = 64
    max_alias_expansion: int = 20_000

    def fingerprint(self) -> str:
        return f"b{self.max_bytes}-d{self.max_documents}-n{self.max_depth}-a{self.max_alias_expansion}"


DEFAULT_LIMITS = LoadLimits()


@dataclass(frozen=True)
class ConfigResource:
    """One addressable object of a config: a Kubernetes object ("Kind/name") or a Terraform block ("type.name").

    `body` is the JSON-safe object (a manifest document, or a block's attributes as python-hcl2 gives them);
    `line` is 1-based where the object starts, None when it cannot be located. `node` is the composed YAML node
    (Kubernetes only), kept so a finding's path can be turned into the exact line of the offending field.
    """

    name: str
    kind: str
    body: Mapping[str, Any]
    line: int | None
    index: int
    mode: str = "managed"
    node: Any = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class SkippedEntry:
    """A document or `kind: List` item that is not a Kubernetes object, left out of a config's resources.

    `where` names it ("item 2 of the List in document 1"), `problem` says what is wrong, `line` is 1-based.
    """

    where: str
    problem: str
    line: int | None
    reason: str = "invalid_manifest"

    def __str__(self) -> str:
        at = f" (line {self.line})" if self.line is not None else ""
        return f"{self.where}{at} {self.problem}"

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "where": self.where, "problem": self.problem, "line": self.line}


# Resource names a policy may echo back. regopy 1.5.2 prints strings unescaped in its JSON output, so a name with
# a quote, backslash or control character is replaced by a placeholder in the policy input and mapped back.
_POLICY_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.:/#@+\-]{1,512}$")


@dataclass(frozen=True)
class ParsedConfig:
    """A config that passed every check. Treat it as read-only: parsed configs are shared between scanners.

    `skipped` names the entries of a Kubernetes file that are not objects (left out of `resources`).
    """

    kind: ConfigKind
    documents: list[Any]
    resources: list[ConfigResource]
    size_bytes: int
    skipped: tuple[SkippedEntry, ...] = ()
    _lines: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        for resource in self.resources:
            if resource.line is not None:
                self._lines.setdefault(resource.name, resource.line)

    def resource_names(self) -> list[str]:
        return [resource.name for resource in self.resources]

    def line_of(self, resource_name: str | None) -> int | None:
        """Line where a resource starts (first one when a name repeats), None when unknown."""
        if resource_name is None:
            return None
        return self._lines.get(resource_name)

    def resource_at_line(self, line: int | None) -> ConfigResource | None:
        """The resource whose text holds 1-based `line`, so a scanner's line can be named like the loader names it.

        Kubernetes: exact, from the YAML node spans (the innermost, latest-starting span wins for List items).
        Terraform: the last resource or data block starting at or before the line (a line inside a provider or
        variable block that follows a resource is attributed to that resource: callers prefer a tool's own name
        when it is one of resource_names()).
        """
        if line is None:
            return None
        best: ConfigResource | None = None
        for resource in self.resources:
            if resource.line is None or resource.line > line:
                continue
            if self.kind == "kubernetes" and resource.node is not None:
                end = resource.node.end_mark
                last_line = end.line + 1 if end.column > 0 else end.line
                if line > last_line:
                    continue
            if best is None or (best.line or 0) <= resource.line:
                best = resource
        return best

    def line_at(self, resource: ConfigResource, path: Sequence[str | int]) -> int | None:
        """Line of the deepest YAML node `path` reaches inside `resource` (its start line when nothing deeper)."""
        node = resource.node
        line = resource.line
        for step in path:
            found = _child_entry(node, step)
            if found is None:
                break
            node, line = found
        return line

    def policy_names(self) -> dict[str, ConfigResource]:
        """The name each resource has in policy_input() -> the resource.

        Identity, except for names a policy must not echo (unsafe characters) and names shared by two resources
        (the same Deployment in two namespaces): those get "resource#<index>", so every finding maps back to
        exactly one resource and its lines.
        """
        return dict(zip(self._policy_name_list(), self.resources, strict=True))

    def _policy_name_list(self) -> list[str]:
        counts: dict[str, int] = {}
        for resource in self.resources:
            counts[resource.name] = counts.get(resource.name, 0) + 1
        return [
            r.name if counts[r.name] == 1 and _POLICY_SAFE_NAME.match(r.name) else f"resource#{r.index}"
            for r in self.resources
        ]

    def policy_input(self) -> dict[str, Any]:
        """The document the project's Rego policies evaluate.

        Names are computed once here, in Python, so a policy's `resource` is byte-identical to the name every other
        consumer (oracle dedup, model answers, patch checks) uses; so are a Kubernetes object's pod spec paths
        (pod_specs.py), so the policies find pods exactly where the baseline and the verifier do. Terraform
        resources come grouped by type (and mode) because every Terraform rule starts from one resource type: the
        grouping halves evaluation time.
        """
        names = self._policy_name_list()
        if self.kind == "kubernetes":
            return {
                "kind": self.kind,
                "resources": [
                    {
                        "name": name,
                        "kind": r.kind,
                        "object": r.body,
                        "pod_specs": [list(path) for path in pod_spec_paths(r.body)],
                    }
                    for name, r in zip(names, self.resources, strict=True)
                ],
            }
        grouped: dict[str, dict[str, list[dict[str, Any]]]] = {"managed": {}, "data": {}}
        for name, r in zip(names, self.resources, strict=True):
            grouped["data" if r.mode == "data" else "managed"].setdefault(r.kind, []).append(
                {"address": name, "type": r.kind, "name": r.name.rsplit(".", 1)[-1], "config": r.body}
            )
        return {"kind": self.kind, **grouped}


def _child_entry(node: Any, step: str | int) -> tuple[Any, int] | None:
    """(child node, its line): a mapping entry's line is its key's, where a reader looks for the field."""
    if isinstance(node, yaml.MappingNode) and isinstance(step, str):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == step:
                return value, key.start_mark.line + 1
        return None
    if isinstance(node, yaml.SequenceNode) and isinstance(step, int) and 0 <= step < len(node.value):
        return node.value[step], node.value[step].start_mark.line + 1
    return None


def _child_node(node: Any, step: str | int) -> Any:
    entry = _child_entry(node, step)
    return entry[0] if entry is not None else None


# --------------------------------------------------------------------------------------------------------------
# Text checks shared by both kinds
# --------------------------------------------------------------------------------------------------------------


def decode_config(data: str | bytes, limits: LoadLimits = DEFAULT_LIMITS) -> str:
    """Size-check and decode untrusted input to text; bytes must be strict UTF-8 (a BOM is dropped)."""
    if isinstance(data, bytes | bytearray | memoryview):
        raw = bytes(data)
        if len(raw) > limits.max_bytes:
            raise ConfigParseError("too_large", f"{len(raw)} bytes exceeds the limit of {limits.max_bytes}")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigParseError(
                "not_utf8", f"input is not valid UTF-8 (byte {exc.start}: {raw[exc.start : exc.start + 1]!r})"
            ) from None
    elif isinstance(data, str):
        # Characters never outnumber bytes, so this cheap test rejects most oversized strings before encoding.
        if len(data) > limits.max_bytes:
            raise ConfigParseError("too_large", f"{len(data)} characters exceeds the limit of {limits.max_bytes} bytes")
        try:
            size = len(data.encode("utf-8"))
        except UnicodeEncodeError as exc:
            # Lone surrogates: what str(bytes, errors="surrogateescape") leaves behind for invalid input.
            raise ConfigParseError("not_utf8", f"text holds a character UTF-8 cannot encode at {exc.start}") from None
        if size > limits.max_bytes:
            raise ConfigParseError("too_large", f"{size} bytes exceeds the limit of {limits.max_bytes}")
        text = data
    else:
        raise TypeError(f"config content must be str or bytes, got {type(data).__name__}")
    return text.removeprefix("\ufeff")


_TF_BLOCK_START = re.compile(
    r"^\s*(?:resource|data|provider|variable|module|output|locals|terraform)\b[^\n=]*\{\s*(?:#.*)?$", re.MULTILINE
)


def detect_kind(name: str | None, text: str) -> ConfigKind:
    """Kubernetes or Terraform, from the file name's extension, else from the content.

    Used where only (name, content) is known (the oracle, `secverify scan`); a caller that knows better passes
    the kind to parse_config directly.
    """
    lowered = (name or "").lower()
    if lowered.endswith((".tf", ".tf.json", ".hcl", ".tfvars")):
        return "terraform"
    if lowered.endswith((".yaml", ".yml", ".json")):
        return "kubernetes"
    return "terraform" if _TF_BLOCK_START.search(text[:65536]) else "kubernetes"


def parse_config(
    kind: ConfigKind | str, text: str | bytes, *, limits: LoadLimits = DEFAULT_LIMITS, strict: bool = True
) -> ParsedConfig:
    """Parse untrusted Kubernetes YAML or Terraform HCL under `limits`; raises ConfigParseError with a reason.

    Kubernetes entries that are not objects (a null List item, a document without `kind`) are skipped and named
    in ParsedConfig.skipped; strict=True (the default) rejects a file that holds nothing else (invalid_manifest):
    a YAML file that is not a manifest is not a valid patch result.
    """
    if kind == "kubernetes":
        return parse_kubernetes(text, limits=limits, strict=strict)
    if kind == "terraform":
        return parse_terraform(text, limits=limits)
    raise ValueError(f"kind must be one of {CONFIG_KINDS}, got {kind!r}")


# --------------------------------------------------------------------------------------------------------------
# Kubernetes YAML
# --------------------------------------------------------------------------------------------------------------


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
    items = _child_node(node, "items")
    return list(items.value) if isinstance(items, yaml.SequenceNode) else []


# --------------------------------------------------------------------------------------------------------------
# Terraform HCL
# --------------------------------------------------------------------------------------------------------------

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


def read_config_file(path: str | os.PathLike[str], *, limits: LoadLimits = DEFAULT_LIMITS) -> bytes:
    """Read a config file's bytes without reading more than the size limit allows (a huge file is not loaded)."""
    with open(path, "rb") as handle:
        data = handle.read(limits.max_bytes + 1)
    if len(data) > limits.max_bytes:
        raise ConfigParseError("too_large", f"{os.fspath(path)} is larger than {limits.max_bytes} bytes")
    return data
