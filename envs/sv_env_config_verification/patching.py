"""Applying a model's patch to one config file: unified diffs (a small, strict applier) and RFC 6902 JSON Patch.

A patch is untrusted input. Every refusal raises PatchError with a named reason (recorded per sample), never a
partial result: a diff that names another file, a path with "..", an absolute path, a hunk whose context is not in
the file, or a JSON Patch op that does not resolve.

Unified diff rules (what `patch -p1` would accept, minus fuzz):
- Headers are optional; when present, `--- a/<name>` / `+++ b/<name>` must both name the item's file (the a/ and b/
  prefixes are optional). One file per patch; /dev/null (create or delete) is refused.
- A hunk applies where its context and removed lines match the file exactly, at the line its header states or, if
  the model miscounted, at the nearest other place they match (ties go to the earlier line). Trailing whitespace is
  ignored only when no exact match exists. Hunks apply in order and may not overlap.
- Header counts are not trusted (models miscount); the hunk body is. An empty line inside a hunk is an empty
  context line (editors strip the leading space).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

MAX_PATCH_CHARS = 200_000
MAX_JSON_PATCH_OPS = 200

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


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
    JSON_PATCH_INVALID = "json_patch_invalid"
    JSON_PATCH_FAILED = "json_patch_failed"
    JSON_PATCH_UNSUPPORTED = "json_patch_unsupported_for_kind"


class PatchError(ValueError):
    """A refused patch; `reason` is the named per-sample error, the message says where."""

    def __init__(self, reason: PatchErrorReason, message: str) -> None:
        super().__init__(f"{reason.value}: {message}")
        self.reason = reason


@dataclass(frozen=True)
class _Hunk:
    """One hunk: where it claims to start and its body as (tag, text) lines, tag in " ", "-", "+"."""

    old_start: int
    body: list[tuple[str, str]]

    @property
    def old(self) -> list[str]:
        return [text for tag, text in self.body if tag != "+"]

    def apply_to(self, matched: list[str]) -> list[str]:
        """The new lines, keeping the file's own version of each context line (it may differ in trailing spaces)."""
        out, index = [], 0
        for tag, text in self.body:
            if tag == "+":
                out.append(text)
                continue
            if tag == " ":
                out.append(matched[index])
            index += 1
        return out


def _check_path(raw: str, filename: str) -> None:
    """A header path must be the item's file name, optionally under a/ or b/; nothing else may be touched."""
    path = raw.split("\t", 1)[0].strip()
    if path.startswith('"') and path.endswith('"') and len(path) >= 2:
        path = path[1:-1]
    if path == "/dev/null":
        raise PatchError(PatchErrorReason.CREATE_OR_DELETE, "the patch creates or deletes a file (/dev/null)")
    if path.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:[\\/]", path):
        raise PatchError(PatchErrorReason.ABSOLUTE_PATH, f"absolute path {path!r}")
    parts = re.split(r"[\\/]+", path)
    if ".." in parts:
        raise PatchError(PatchErrorReason.PATH_TRAVERSAL, f"path {path!r} leaves the item's directory")
    if parts and parts[0] in ("a", "b") and len(parts) > 1:
        parts = parts[1:]
    if [part for part in parts if part not in ("", ".")] != [filename]:
        raise PatchError(PatchErrorReason.OTHER_FILE, f"path {path!r} is not the item's file {filename!r}")


def parse_unified_diff(diff: str, filename: str) -> list[_Hunk]:
    """The hunks of a one-file unified diff for `filename`, after checking every header path."""
    if not diff.strip():
        raise PatchError(PatchErrorReason.EMPTY, "empty diff")
    if len(diff) > MAX_PATCH_CHARS:
        raise PatchError(PatchErrorReason.TOO_LARGE, f"diff of {len(diff)} characters (limit {MAX_PATCH_CHARS})")
    lines = diff.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    hunks: list[_Hunk] = []
    files = 0
    index = 0
    current: _Hunk | None = None
    while index < len(lines):
        line = lines[index]
        if line.startswith("--- ") and index + 1 < len(lines) and lines[index + 1].startswith("+++ "):
            files += 1
            if files > 1:
                raise PatchError(PatchErrorReason.MULTIPLE_FILES, "the diff has more than one file section")
            _check_path(line[4:], filename)
            _check_path(lines[index + 1][4:], filename)
            current = None
            index += 2
            continue
        if line.startswith(("diff ", "index ", "similarity ", "rename ", "new file", "deleted file", "old mode")):
            if line.startswith(("rename ", "new file", "deleted file")):
                raise PatchError(PatchErrorReason.CREATE_OR_DELETE, f"unsupported file operation: {line!r}")
            index += 1
            continue
        match = _HUNK.match(line)
        if match:
            current = _Hunk(old_start=int(match.group(1)), body=[])
            hunks.append(current)
            index += 1
            continue
        if current is None:
            if hunks or files:
                raise PatchError(PatchErrorReason.BAD_HUNK, f"line {index + 1} is outside any hunk: {line[:60]!r}")
            index += 1  # prose before the first header or hunk
            continue
        if line.startswith("\\"):
            index += 1  # "\ No newline at end of file"
            continue
        tag, body = (line[0], line[1:]) if line else (" ", "")
        if tag not in " -+":
            raise PatchError(PatchErrorReason.BAD_HUNK, f"line {index + 1} is not a hunk line: {line[:60]!r}")
        current.body.append((tag, body))
        index += 1
    if not hunks:
        raise PatchError(PatchErrorReason.NOT_A_DIFF, "no @@ hunk found")
    for number, hunk in enumerate(hunks, start=1):
        if not hunk.body:
            raise PatchError(PatchErrorReason.BAD_HUNK, f"hunk {number} is empty")
    return hunks


def _find(lines: Sequence[str], block: Sequence[str], start: int, preferred: int) -> int | None:
    """Index >= start where `block` matches, nearest to `preferred` (exact first, then ignoring trailing spaces)."""
    size = len(block)
    candidates = range(start, len(lines) - size + 1)
    for normalize in (lambda text: text, lambda text: text.rstrip()):
        wanted = [normalize(text) for text in block]
        hits = [pos for pos in candidates if [normalize(text) for text in lines[pos : pos + size]] == wanted]
        if hits:
            return min(hits, key=lambda pos: (abs(pos - preferred), pos))
    return None


def apply_unified_diff(original: str, diff: str, filename: str) -> str:
    """The file after the diff, or PatchError. Line endings follow the original; a final newline is kept."""
    hunks = parse_unified_diff(diff, filename)
    lines = original.split("\n")
    trailing_newline = original.endswith("\n")
    if trailing_newline:
        lines.pop()
    output: list[str] = []
    cursor = 0
    for number, hunk in enumerate(hunks, start=1):
        preferred = max(hunk.old_start - 1, 0)
        if not hunk.old:
            # Pure insertion: "-l,0" means after line l.
            position = min(hunk.old_start, len(lines))
            if position < cursor:
                raise PatchError(PatchErrorReason.DOES_NOT_APPLY, f"hunk {number} overlaps the previous hunk")
        else:
            found = _find(lines, hunk.old, cursor, preferred)
            if found is None:
                raise PatchError(
                    PatchErrorReason.DOES_NOT_APPLY,
                    f"hunk {number} (at line {hunk.old_start}): its context and removed lines are not in the file",
                )
            position = found
        output.extend(lines[cursor:position])
        output.extend(hunk.apply_to(lines[position : position + len(hunk.old)]))
        cursor = position + len(hunk.old)
    output.extend(lines[cursor:])
    return "\n".join(output) + ("\n" if trailing_newline or not original else "")


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


def _parent(document: Any, tokens: list[str], path: str) -> tuple[Any, str]:
    if not tokens:
        raise PatchError(PatchErrorReason.JSON_PATCH_FAILED, "the root itself cannot be the target of this op")
    node = document
    for token in tokens[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, for_add=False)]
        else:
            raise PatchError(PatchErrorReason.JSON_PATCH_FAILED, f"path {path!r} does not exist")
    return node, tokens[-1]


def _get(document: Any, path: str) -> Any:
    node = document
    for token in _pointer(path):
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, for_add=False)]
        else:
            raise PatchError(PatchErrorReason.JSON_PATCH_FAILED, f"path {path!r} does not exist")
    return node


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
