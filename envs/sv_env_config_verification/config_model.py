"""What E2's loader makes of a config: the kinds, the parse-error reasons, the limits, the parsed resources and the
skipped entries (ParsedConfig, what the policies and the scanners read), and the size and UTF-8 check every input
passes first (decode_config). loading.py parses; this module holds what parsing yields."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import yaml

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
PARSE_ERROR_REASONS: tuple[str, ...] = get_args(ParseErrorReason)


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
            found = child_entry(node, step)
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


def child_entry(node: Any, step: str | int) -> tuple[Any, int] | None:
    """(child node, its line): a mapping entry's line is its key's, where a reader looks for the field."""
    if isinstance(node, yaml.MappingNode) and isinstance(step, str):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == step:
                return value, key.start_mark.line + 1
        return None
    if isinstance(node, yaml.SequenceNode) and isinstance(step, int) and 0 <= step < len(node.value):
        return node.value[step], node.value[step].start_mark.line + 1
    return None


def child_node(node: Any, step: str | int) -> Any:
    entry = child_entry(node, step)
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
