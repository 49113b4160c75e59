"""Applying a model's patch to one config file: unified diffs (sv_shared.execution.patching) and RFC 6902 JSON Patch.

A patch is untrusted input. Every refusal raises PatchError with a named reason (recorded per sample), never a
partial result: a diff that names another file, a path with "..", an absolute path, a hunk whose context is not in
the file, or a JSON Patch op that does not resolve.

A JSON Patch is bounded before and while it is applied, so no patch can exhaust the scorer: more than
MAX_JSON_PATCH_OPS operations (patch_too_many_ops); values larger than MAX_PATCH_BYTES in all, or so much measuring
work that the patch is not worth applying (patch_too_large); a value nested, or placed, deeper than a config may be
(patch_too_deep, the loader's depth limit); adds and copies that grow the document by more than
MAX_JSON_PATCH_GROWTH (patch_growth_exceeded: forty copies of a node into itself would double it forty times).

Unified diffs go to sv_shared.apply_patch_to_file, the applier E3 uses (one parser, one set of path rules): headers
are optional but, when present, must name the item's file (a/ b/ prefixes optional); one file per patch, no
/dev/null, rename or copy; a hunk applies where its context matches, nearest its stated line, trailing whitespace
ignored only when nothing matches exactly; header counts are recounted from the body; a stray line inside a hunk is
refused. This module only renames the shared refusal codes to E2's recorded reasons (see _reason). JSON Patch is
E2-only and lives here.
"""

from __future__ import annotations

import copy
import re
from enum import StrEnum
from typing import Any

from sv_env_config_verification.config_model import DEFAULT_LIMITS
from sv_shared.answers.parsing import SETTLED_REFUSALS, FormatError, decode_json
from sv_shared.execution.patch_format import PatchError as DiffError
from sv_shared.execution.patch_format import PatchErrorCode, PatchLimits
from sv_shared.execution.patching import apply_patch_to_file

MAX_PATCH_BYTES = 200_000
MAX_JSON_PATCH_OPS = 200
MAX_JSON_PATCH_DEPTH = DEFAULT_LIMITS.max_depth
"""A value may not end up nested deeper than the loader accepts a config: deeper could never re-parse."""
MAX_JSON_PATCH_GROWTH = 256_000
"""Size (nodes plus characters, about the bytes it would dump to) that adds and copies may add: a config's worth."""
_MAX_JSON_PATCH_VISITS = 2_000_000
_DIFF_LIMITS = PatchLimits(max_diff_bytes=MAX_PATCH_BYTES)


class PatchErrorReason(StrEnum):
    """Why a patch was refused; the value is what results.jsonl records."""

    EMPTY = "patch_empty"
    TOO_LARGE = "patch_too_large"
    NOT_A_DIFF = "patch_not_a_diff"
    PATH_TRAVERSAL = "patch_path_traversal"
    ABSOLUTE_PATH = "patch_absolute_path"
    OTHER_FILE = "patch_touches_other_file"
    MULTIPLE_FILES = "patch_multiple_files"
    CREATE_OR_DELETE = "patch_creates_or_deletes_file"
    BAD_HUNK = "patch_malformed_hunk"
    DOES_NOT_APPLY = "patch_does_not_apply"
    BINARY = "patch_binary"
    JSON_PATCH_INVALID = "json_patch_invalid"
    JSON_PATCH_FAILED = "json_patch_failed"
    JSON_PATCH_UNSUPPORTED = "json_patch_unsupported_for_kind"
    TOO_DEEP = "patch_too_deep"
    TOO_MANY_OPS = "patch_too_many_ops"
    GROWTH_EXCEEDED = "patch_growth_exceeded"
    # The patched config applies and parses, but Kubernetes or Terraform would refuse it (validity.py).
    INVALID_DUPLICATE_KEY = "patch_invalid:duplicate_key"
    INVALID_DUPLICATE_RESOURCE = "patch_invalid:duplicate_resource"
    INVALID_SCHEMA = "patch_invalid:schema"
    INVALID_TYPE = "patch_invalid:type"
    INVALID_SYNTAX = "patch_invalid:syntax"


class PatchError(ValueError):
    """A refused patch; `reason` is the named per-sample error, the message says where."""

    def __init__(self, reason: PatchErrorReason, message: str) -> None:
        super().__init__(f"{reason.value}: {message}")
        self.reason = reason


# Shared codes that map one to one; path_outside_project and malformed_diff are split in _reason.
_REASONS: dict[PatchErrorCode, PatchErrorReason] = {
    PatchErrorCode.DOES_NOT_APPLY: PatchErrorReason.DOES_NOT_APPLY,
    PatchErrorCode.TOO_LARGE: PatchErrorReason.TOO_LARGE,
    PatchErrorCode.BINARY_PATCH: PatchErrorReason.BINARY,
    PatchErrorCode.OTHER_FILE: PatchErrorReason.OTHER_FILE,
    PatchErrorCode.PROTECTED_FILE: PatchErrorReason.OTHER_FILE,  # not raised: E2 protects no file but its own
    PatchErrorCode.MULTIPLE_FILES: PatchErrorReason.MULTIPLE_FILES,
    PatchErrorCode.FILE_OPERATION: PatchErrorReason.CREATE_OR_DELETE,
}


def _reason(error: DiffError, diff: str) -> PatchErrorReason:
    """E2's recorded name for a shared refusal, finer where E2's results always were: a path outside the item is
    absolute or uses "..", a malformed diff has no hunk at all or a broken one."""
    if error.code is PatchErrorCode.PATH_OUTSIDE_PROJECT:
        absolute = re.match(r"^([A-Za-z]:)?[\\/]", error.path or "")
        return PatchErrorReason.ABSOLUTE_PATH if absolute else PatchErrorReason.PATH_TRAVERSAL
    if error.code is PatchErrorCode.MALFORMED_DIFF:
        has_hunk = re.search(r"^@@", diff, re.MULTILINE)
        return PatchErrorReason.BAD_HUNK if has_hunk else PatchErrorReason.NOT_A_DIFF
    return _REASONS[error.code]


def apply_unified_diff(original: str, diff: str, filename: str) -> str:
    """The file after the diff, or PatchError with E2's reason; the shared applier does all the parsing and checks."""
    if not diff.strip():
        raise PatchError(PatchErrorReason.EMPTY, "empty diff")
    try:
        return apply_patch_to_file(diff, filename, original, limits=_DIFF_LIMITS)
    except DiffError as error:
        message = str(error).removeprefix(f"{error.code.value}: ")
        raise PatchError(_reason(error, diff), message) from None


# --- JSON Patch (RFC 6902) ---

JSON_PATCH_OPS = ("add", "remove", "replace", "move", "copy", "test")


def validate_json_patch(ops: Any) -> list[dict[str, Any]]:
    """Check the shape of a JSON Patch document: a list of op objects with the members each op needs.

    Its bounds (op count, size, depth, growth) are checked when it is applied, so a patch over them costs the patch
    component, not the whole answer."""
    if not isinstance(ops, list) or not ops:
        raise PatchError(PatchErrorReason.JSON_PATCH_INVALID, "a JSON Patch is a non-empty list of operations")
    for number, op in enumerate(ops, start=1):
        if not isinstance(op, dict):
            raise PatchError(PatchErrorReason.JSON_PATCH_INVALID, f"operation {number} is not an object")
        name = op.get("op")
        if name not in JSON_PATCH_OPS:
            raise PatchError(PatchErrorReason.JSON_PATCH_INVALID, f"operation {number}: unknown op {name!r}")
        if not isinstance(op.get("path"), str):
            raise PatchError(PatchErrorReason.JSON_PATCH_INVALID, f"operation {number}: 'path' must be a string")
        if name in ("add", "replace", "test") and "value" not in op:
            raise PatchError(PatchErrorReason.JSON_PATCH_INVALID, f"operation {number}: {name} needs a 'value'")
        if name in ("move", "copy") and not isinstance(op.get("from"), str):
            raise PatchError(PatchErrorReason.JSON_PATCH_INVALID, f"operation {number}: {name} needs a 'from'")
    return ops


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(PatchErrorReason.JSON_PATCH_INVALID, f"JSON pointer {path!r} must start with '/'")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _index(container: list[Any], token: str, *, for_add: bool) -> int:
    if for_add and token == "-":
        return len(container)
    if not re.fullmatch(r"0|[1-9][0-9]*", token):
        raise PatchError(PatchErrorReason.JSON_PATCH_FAILED, f"{token!r} is not an array index")
    if len(token) > len(str(len(container))):  # int() refuses 4,300 digits; no list is that long anyway
        raise PatchError(PatchErrorReason.JSON_PATCH_FAILED, f"array index {token[:20]}... out of range")
    index = int(token)
    if index > len(container) or (index == len(container) and not for_add):
        raise PatchError(PatchErrorReason.JSON_PATCH_FAILED, f"array index {index} out of range")
    return index


def _walk(document: Any, tokens: list[str], path: str) -> Any:
    """The node the tokens lead to; one walk for both the target (_get) and the parent of an add/remove."""
    node = document
    for token in tokens:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, for_add=False)]
        else:
            raise PatchError(PatchErrorReason.JSON_PATCH_FAILED, f"path {path!r} does not exist")
    return node


def _parent(document: Any, tokens: list[str], path: str) -> tuple[Any, str]:
    if not tokens:
        raise PatchError(PatchErrorReason.JSON_PATCH_FAILED, "the root itself cannot be the target of this op")
    return _walk(document, tokens[:-1], path), tokens[-1]


def _get(document: Any, path: str) -> Any:
    return _walk(document, _pointer(path), path)


def _add(document: Any, path: str, value: Any) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return value
    parent, key = _parent(document, tokens, path)
    if isinstance(parent, dict):
        parent[key] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, key, for_add=True), value)
    else:
        raise PatchError(PatchErrorReason.JSON_PATCH_FAILED, f"parent of {path!r} is not a container")
    return document


def _remove(document: Any, path: str) -> tuple[Any, Any]:
    parent, key = _parent(document, _pointer(path), path)
    if isinstance(parent, dict) and key in parent:
        return document, parent.pop(key)
    if isinstance(parent, list):
        return document, parent.pop(_index(parent, key, for_add=False))
    raise PatchError(PatchErrorReason.JSON_PATCH_FAILED, f"path {path!r} does not exist")


class _Meter:
    """Measures the values one JSON Patch places (iteratively: a value may be deeper than the recursion limit),
    counting what they add to the document and the nodes visited doing so."""

    def __init__(self) -> None:
        self.growth = 0
        self.visits = 0

    def measure(
        self,
        value: Any,
        *,
        at: int,
        max_size: int | None = None,
        too_large: PatchErrorReason = PatchErrorReason.TOO_LARGE,
    ) -> int:
        """The size of value (nodes plus characters of strings and keys); PatchError when value placed `at` levels
        down nests deeper than MAX_JSON_PATCH_DEPTH, or when its size passes max_size (reason too_large)."""
        size = 0
        stack: list[tuple[Any, int]] = [(value, at)]
        while stack:
            node, level = stack.pop()
            self.visits += 1
            if self.visits > _MAX_JSON_PATCH_VISITS:
                raise PatchError(PatchErrorReason.TOO_LARGE, "the patch is too expensive to apply")
            size += 1
            if isinstance(node, dict):
                size += sum(len(key) for key in node)
                stack.extend((child, level + 1) for child in node.values())
            elif isinstance(node, list):
                stack.extend((child, level + 1) for child in node)
            elif isinstance(node, str):
                size += len(node)
            if isinstance(node, dict | list) and level + 1 > MAX_JSON_PATCH_DEPTH:
                raise PatchError(
                    PatchErrorReason.TOO_DEEP, f"a value would be nested deeper than {MAX_JSON_PATCH_DEPTH} levels"
                )
            if max_size is not None and size > max_size:
                raise PatchError(too_large, f"a value is larger than the {max_size} (nodes plus characters) left to it")
        return size

    def grow(self, value: Any, path: str) -> None:
        """Count a value about to be added at path against what is left of MAX_JSON_PATCH_GROWTH."""
        left = MAX_JSON_PATCH_GROWTH - self.growth
        at = len(_pointer(path))
        self.growth += self.measure(value, at=at, max_size=left, too_large=PatchErrorReason.GROWTH_EXCEEDED)


def _check_bounds(ops: list[dict[str, Any]], meter: _Meter) -> None:
    """The bounds a patch must meet before any op runs: op count, total size and depth of the values it carries."""
    if len(ops) > MAX_JSON_PATCH_OPS:
        raise PatchError(PatchErrorReason.TOO_MANY_OPS, f"{len(ops)} operations (limit {MAX_JSON_PATCH_OPS})")
    size = 0
    for op in ops:
        source = op.get("from")  # only move and copy need one; any other op may carry anything there
        size += len(op["path"]) + (len(source) if isinstance(source, str) else 0)
        if "value" in op:
            size += meter.measure(op["value"], at=0, max_size=MAX_PATCH_BYTES - size)
        if size > MAX_PATCH_BYTES:
            raise PatchError(PatchErrorReason.TOO_LARGE, f"the operations are larger than {MAX_PATCH_BYTES}")


def apply_json_patch(document: Any, ops: Any) -> Any:
    """A new document with the ops applied in order (the input is not modified); all or nothing, within the bounds
    in the module docstring."""
    ops = validate_json_patch(ops)
    meter = _Meter()
    _check_bounds(ops, meter)
    result = copy.deepcopy(document)
    for number, op in enumerate(ops, start=1):
        name, path = op["op"], op["path"]
        try:
            if name == "add":
                meter.grow(op["value"], path)
                result = _add(result, path, copy.deepcopy(op["value"]))
            elif name == "remove":
                result, _ = _remove(result, path)
            elif name == "replace":
                _get(result, path)
                meter.grow(op["value"], path)
                if _pointer(path):
                    result, _ = _remove(result, path)
                result = _add(result, path, copy.deepcopy(op["value"]))
            elif name == "move":
                source = op["from"]
                if path != source and path.startswith(source + "/"):
                    raise PatchError(PatchErrorReason.JSON_PATCH_FAILED, "cannot move a value into itself")
                value = _get(result, source)
                if len(_pointer(path)) > len(_pointer(source)):  # only a move down can nest deeper
                    meter.measure(value, at=len(_pointer(path)))
                result, value = _remove(result, source)
                result = _add(result, path, value)
            elif name == "copy":
                value = _get(result, op["from"])
                meter.grow(value, path)
                result = _add(result, path, copy.deepcopy(value))
            elif _get(result, path) != op["value"]:
                raise PatchError(PatchErrorReason.JSON_PATCH_FAILED, f"test failed at {path!r}")
        except PatchError as error:
            message = str(error).removeprefix(f"{error.reason.value}: ")
            raise PatchError(error.reason, f"operation {number} ({name} {path!r}): {message}") from None
    return result


def json_patch_from_text(text: str) -> tuple[list[dict[str, Any]] | None, FormatError | None]:
    """A JSON Patch sent as a string (some models quote it): (the op list, None); (None, None) when the text is not
    one (it is then read as a diff); (None, the rule) when it is one the answer rules refuse (SETTLED_REFUSALS:
    a repeated key, too deep, a number that is not finite, too large or -0)."""
    stripped = text.strip()
    if not stripped.startswith("["):
        return None, None
    value, error = decode_json(stripped)
    if error in SETTLED_REFUSALS:
        return None, error
    if isinstance(value, list) and all(isinstance(op, dict) for op in value):
        return value, None
    return None, None
