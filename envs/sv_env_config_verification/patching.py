"""Applying a model's patch to one config file: unified diffs (sv_shared.execution.patching) and RFC 6902 JSON Patch.

A patch is untrusted input. Every refusal raises PatchError with a named reason (recorded per sample), never a
partial result: a diff that names another file, a path with "..", an absolute path, a hunk whose context is not in
the file, or a JSON Patch op that does not resolve.

Unified diffs go to sv_shared.apply_patch_to_file, the applier E3 uses (one parser, one set of path rules): headers
are optional but, when present, must name the item's file (a/ b/ prefixes optional); one file per patch, no
/dev/null, rename or copy; a hunk applies where its context matches, nearest its stated line, trailing whitespace
ignored only when nothing matches exactly; header counts are recounted from the body; a stray line inside a hunk is
refused. This module only renames the shared refusal codes to E2's recorded reasons (see _reason). JSON Patch is
E2-only and lives here.
"""

from __future__ import annotations

import copy
import json
import re
from enum import StrEnum
from typing import Any

from sv_shared.execution.patching import PatchError as DiffError
from sv_shared.execution.patching import PatchErrorCode, PatchLimits, apply_patch_to_file

MAX_PATCH_BYTES = 200_000
MAX_JSON_PATCH_OPS = 200
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
    """Check the shape of a JSON Patch document: a list of op objects with the members each op needs."""
    if not isinstance(ops, list) or not ops:
        raise PatchError(PatchErrorReason.JSON_PATCH_INVALID, "a JSON Patch is a non-empty list of operations")
    if len(ops) > MAX_JSON_PATCH_OPS:
        raise PatchError(PatchErrorReason.TOO_LARGE, f"{len(ops)} operations (limit {MAX_JSON_PATCH_OPS})")
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


def apply_json_patch(document: Any, ops: Any) -> Any:
    """A new document with the ops applied in order (the input is not modified); all or nothing."""
    result = copy.deepcopy(document)
    for number, op in enumerate(validate_json_patch(ops), start=1):
        name, path = op["op"], op["path"]
        try:
            if name == "add":
                result = _add(result, path, copy.deepcopy(op["value"]))
            elif name == "remove":
                result, _ = _remove(result, path)
            elif name == "replace":
                _get(result, path)
                if _pointer(path):
                    result, _ = _remove(result, path)
                result = _add(result, path, copy.deepcopy(op["value"]))
            elif name == "move":
                source = op["from"]
                if path != source and path.startswith(source + "/"):
                    raise PatchError(PatchErrorReason.JSON_PATCH_FAILED, "cannot move a value into itself")
                result, value = _remove(result, source)
                result = _add(result, path, value)
            elif name == "copy":
                result = _add(result, path, copy.deepcopy(_get(result, op["from"])))
            elif _get(result, path) != op["value"]:
                raise PatchError(PatchErrorReason.JSON_PATCH_FAILED, f"test failed at {path!r}")
        except PatchError as error:
            raise PatchError(error.reason, f"operation {number} ({name} {path!r}): {error}") from None
    return result


def json_patch_from_text(text: str) -> list[dict[str, Any]] | None:
    """A JSON Patch sent as a string (some models quote it): the op list, or None when the text is not one."""
    stripped = text.strip()
    if not stripped.startswith("["):
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    return value if isinstance(value, list) and all(isinstance(op, dict) for op in value) else None
