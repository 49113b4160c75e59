"""A model's unified diff as data: the patch's parts (hunks, file patches, changes, stats) and its named errors, the
lenient parser (recounted hunks, bare `@@` headers, prose and fences around the diff ignored) and the path rules
(normalized, bounded, never absolute or above the root; the protected files). patching.py applies what this parses."""

from __future__ import annotations

import enum
import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

FileKind = Literal["modified", "created", "deleted", "renamed", "copied"]
OnProtected = Literal["reject", "drop"]

#: Files a patch to a pytest-verified project must not touch: tests, conftest, pytest configuration, start-up hooks.
PYTEST_PROTECTED: tuple[str, ...] = (
    "conftest.py",
    "pytest.ini",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    "sitecustomize.py",
    "usercustomize.py",
    "*.pth",
    "test_*.py",
    "*_test.py",
    "tests/*",
    "test/*",
)

_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_MAX_LINE_DIGITS = 9  # no file has a billion lines; int() refuses 4,300 digits with a ValueError
# Paths a patch may name: a file system refuses longer ones (NAME_MAX, PATH_MAX) with an OSError, far too late.
MAX_PATH_BYTES = 1024
MAX_PATH_PART_BYTES = 255
MAX_PATH_PARTS = 32
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
SYMLINK_MODE = "120000"
GITLINK_MODE = "160000"
_NO_EOL = "\\ No newline at end of file"


class PatchErrorCode(enum.StrEnum):
    """Why a patch was refused; compare with plain strings ("protected_file") too."""

    PATH_OUTSIDE_PROJECT = "path_outside_project"
    PROTECTED_FILE = "protected_file"
    DOES_NOT_APPLY = "does_not_apply"
    MALFORMED_DIFF = "malformed_diff"
    BINARY_PATCH = "binary_patch"
    TOO_LARGE = "too_large"
    # Only from apply_patch_to_file, whose diff may touch one named file and nothing else.
    OTHER_FILE = "touches_other_file"
    MULTIPLE_FILES = "multiple_files"
    FILE_OPERATION = "creates_or_deletes_file"


class PatchError(ValueError):
    """A refused patch: code says which rule it broke, path (when known) which file; nothing was written."""

    def __init__(self, code: PatchErrorCode, message: str, path: str | None = None) -> None:
        super().__init__(f"{code.value}: {message}")
        self.code = code
        self.path = path


@dataclass(frozen=True)
class PatchLimits:
    """Size limits: a diff or a result beyond them is refused as too_large (cheap to check, bounds the work)."""

    max_diff_bytes: int = 256 * 1024
    max_files: int = 50
    max_hunks: int = 500
    max_file_bytes: int = 1024 * 1024
    max_line_compares: int = 5_000_000


@dataclass(frozen=True)
class Hunk:
    """One hunk: header positions (None for a bare ``@@``) and (op, text) lines, op in " ", "-", "+"."""

    old_start: int | None
    new_start: int | None
    lines: tuple[tuple[str, str], ...]
    old_no_eol: bool = False
    new_no_eol: bool = False

    @property
    def added(self) -> int:
        return sum(op == "+" for op, _ in self.lines)

    @property
    def removed(self) -> int:
        return sum(op == "-" for op, _ in self.lines)


@dataclass(frozen=True)
class FilePatch:
    """The patch of one file as parsed: old_path / new_path are None for /dev/null (creation / deletion)."""

    old_path: str | None
    new_path: str | None
    hunks: tuple[Hunk, ...]
    rename: bool = False
    copy: bool = False
    new_mode: str | None = None


@dataclass(frozen=True)
class FileChange:
    """What the patch did to one file, with its own added/removed line counts."""

    path: str
    kind: FileKind
    added: int
    removed: int
    old_path: str | None = None


@dataclass(frozen=True)
class DiffStats:
    """Size of the applied change, for the minimal-diff reward."""

    files_touched: int
    lines_added: int
    lines_removed: int

    @property
    def lines_changed(self) -> int:
        return self.lines_added + self.lines_removed


@dataclass(frozen=True)
class PatchResult:
    """files: new text of every file created or modified (renamed ones under their new path); deleted: paths gone
    (deleted, or the old side of a rename); dropped: protected paths whose patches were neutralized (on_protected
    "drop"). updated() gives the whole project mapping after the patch."""

    files: Mapping[str, str]
    deleted: tuple[str, ...]
    changes: tuple[FileChange, ...]
    stats: DiffStats
    dropped: tuple[str, ...] = field(default=())

    def updated(self, original: Mapping[str, str]) -> dict[str, str]:
        """original with this result applied."""
        out = {path: text for path, text in original.items() if path not in self.deleted}
        out.update(self.files)
        return out


def patch_error(code: PatchErrorCode, message: str, path: str | None = None) -> PatchError:
    return PatchError(code, message, path)


# ----------------------------------------------------------------------------------------------------------- parsing
def _unquote(raw: str) -> str:
    """Git C-quotes paths with unusual characters ("a/sp ace\\t"); undo that."""
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        body = raw[1:-1]
        try:
            return body.encode("latin-1", "backslashreplace").decode("unicode_escape").encode("latin-1").decode()
        except (UnicodeDecodeError, UnicodeEncodeError) as exc:
            raise patch_error(PatchErrorCode.MALFORMED_DIFF, f"bad quoted path {raw!r}") from exc
    return raw


def _header_path(rest: str) -> str | None:
    """Path from a ---/+++ line (timestamp after a tab dropped); None for /dev/null."""
    raw = rest.split("\t", 1)[0].rstrip()
    raw = _unquote(raw)
    if raw == "/dev/null":
        return None
    return raw


def _strip_prefix(old: str | None, new: str | None) -> tuple[str | None, str | None]:
    """Drop git's a/ b/ prefixes when the pair carries them (either side may be /dev/null)."""
    old_ok = old is None or old.startswith("a/")
    new_ok = new is None or new.startswith("b/")
    if old_ok and new_ok and (old is not None or new is not None):
        return (old[2:] if old else None, new[2:] if new else None)
    return old, new


def _parse_hunk(lines: list[str], i: int, *, strict: bool = False) -> tuple[Hunk, int]:
    """Parse the hunk whose header is lines[i]; body lines are taken until the next header or non-hunk line.

    strict: a non-hunk line (other than a closing ``` fence) is malformed_diff instead of the end of the diff, so a
    stray line cannot silently cut a hunk short and let the rest of the diff be dropped.
    """
    header = lines[i]
    match = _HUNK_HEADER.match(header)
    if match and any(len(number) > _MAX_LINE_DIGITS for number in match.groups() if number):
        raise patch_error(PatchErrorCode.MALFORMED_DIFF, f"line number out of range in hunk header {header[:60]!r}")
    if match:
        old_start, new_start = int(match.group(1)), int(match.group(3))
        old_len = int(match.group(2)) if match.group(2) is not None else 1
        if old_len == 0:
            old_start += 1  # "-5,0" inserts after line 5: the hunk's old side starts at line 6
    elif header.rstrip().endswith("@@") or header.strip() == "@@" or header.startswith("@@ "):
        old_start = new_start = None
    else:
        raise patch_error(PatchErrorCode.MALFORMED_DIFF, f"bad hunk header {header!r}")
    body: list[tuple[str, str]] = []
    old_no_eol = new_no_eol = False
    i += 1
    while i < len(lines):
        line = lines[i]
        if line.startswith("@@") or line.startswith("diff --git "):
            break
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            break
        if line.startswith("\\"):
            if body and body[-1][0] in " -":
                old_no_eol = True
            if body and body[-1][0] in " +":
                new_no_eol = True
            i += 1
            continue
        if line == "":
            body.append((" ", ""))  # a blank context line whose leading space was stripped
        elif line[0] in " +-":
            body.append((line[0], line[1:]))
        elif strict and not line.startswith("```"):
            raise patch_error(PatchErrorCode.MALFORMED_DIFF, f"line {i + 1} is not a hunk line: {line[:60]!r}")
        else:
            break
        i += 1
    while body and body[-1] == (" ", "") and not lines[i - 1].startswith(" "):
        body.pop()  # trailing blank lines are separators, not context
        i -= 1
    if not body:
        raise patch_error(PatchErrorCode.MALFORMED_DIFF, f"empty hunk {header!r}")
    return Hunk(old_start, new_start, tuple(body), old_no_eol, new_no_eol), i


def _parse_hunks(
    lines: list[str], i: int, count: int, limits: PatchLimits, strict: bool
) -> tuple[tuple[Hunk, ...], int, int]:
    """The hunks starting at lines[i], the index after them and the running hunk count (capped by limits)."""
    hunks: list[Hunk] = []
    while i < len(lines) and lines[i].startswith("@@"):
        hunk, i = _parse_hunk(lines, i, strict=strict)
        hunks.append(hunk)
        count += 1
        if count > limits.max_hunks:
            raise patch_error(PatchErrorCode.TOO_LARGE, f"more than {limits.max_hunks} hunks")
    return tuple(hunks), i, count


def parse_unified_diff(
    text: str, *, limits: PatchLimits | None = None, default_path: str | None = None, strict: bool = False
) -> list[FilePatch]:
    """Parse a unified diff (plain or git flavoured) into file patches; prose around it is ignored.

    default_path: hunks before any file header patch this file (a one-file diff whose headers were left out);
    without it they are malformed_diff. strict: see _parse_hunk.
    Raises PatchError: binary_patch (GIT binary patch, "Binary files differ", NUL bytes), too_large, malformed_diff
    (no file header, a hunk outside a file, a bad hunk header).
    """
    limits = limits or PatchLimits()
    if len(text.encode(errors="replace")) > limits.max_diff_bytes:
        raise patch_error(PatchErrorCode.TOO_LARGE, f"diff is larger than {limits.max_diff_bytes} bytes")
    if "\0" in text:
        raise patch_error(PatchErrorCode.BINARY_PATCH, "diff contains NUL bytes")
    lines = text.split("\n")
    if any(line.endswith("\r") for line in lines if line.startswith(("--- ", "+++ ", "@@"))):
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]  # a CRLF diff: \r is a terminator
    patches: list[FilePatch] = []
    hunk_count = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("Binary files ") or line.startswith("GIT binary patch"):
            raise patch_error(PatchErrorCode.BINARY_PATCH, line.strip())
        if line.startswith("@@"):
            if default_path is None or patches:
                raise patch_error(PatchErrorCode.MALFORMED_DIFF, f"hunk without a file header at line {i + 1}")
            headless, i, hunk_count = _parse_hunks(lines, i, hunk_count, limits, strict)
            patches.append(FilePatch(default_path, default_path, headless))
            continue
        git = line.startswith("diff --git ")
        is_header = line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")
        if not git and not is_header:
            i += 1
            continue
        meta: dict[str, str] = {}
        git_old = git_new = None
        if git:
            match = re.match(r'^diff --git ("?a/.*"?) ("?b/.*"?)$', line)
            if match:
                git_old, git_new = _unquote(match.group(1))[2:], _unquote(match.group(2))[2:]
            i += 1
            while i < len(lines):
                ext = lines[i]
                if ext.startswith(("--- ", "@@", "diff --git ")) or not ext.strip():
                    break
                if ext.startswith("Binary files ") or ext.startswith("GIT binary patch"):
                    raise patch_error(PatchErrorCode.BINARY_PATCH, ext.strip())
                for name in ("new file mode", "deleted file mode", "old mode", "new mode", "rename from",
                             "rename to", "copy from", "copy to", "similarity index", "index"):  # fmt: skip
                    if ext.startswith(name + " "):
                        meta[name] = _unquote(ext[len(name) + 1 :].strip())
                        break
                else:
                    if not ext.startswith("dissimilarity index "):
                        break
                i += 1
        old: str | None
        new: str | None
        if i < len(lines) and lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old, new = _strip_prefix(_header_path(lines[i][4:]), _header_path(lines[i + 1][4:]))
            i += 2
        elif git:
            old = None if "new file mode" in meta else git_old
            new = None if "deleted file mode" in meta else git_new
        else:
            raise patch_error(PatchErrorCode.MALFORMED_DIFF, f"file header without +++ at line {i + 1}")
        rename = "rename from" in meta and "rename to" in meta
        copy = "copy from" in meta and "copy to" in meta
        if rename or copy:
            old, new = (meta["rename from"], meta["rename to"]) if rename else (meta["copy from"], meta["copy to"])
        if old is None and new is None:
            raise patch_error(PatchErrorCode.MALFORMED_DIFF, "file patch from /dev/null to /dev/null")
        hunks, i, hunk_count = _parse_hunks(lines, i, hunk_count, limits, strict)
        if not hunks and not (rename or copy or meta):
            raise patch_error(PatchErrorCode.MALFORMED_DIFF, f"file header for {new or old} without hunks")
        mode = meta.get("new file mode") or meta.get("new mode")
        patches.append(FilePatch(old, new, hunks, rename=rename, copy=copy, new_mode=mode))
        if len(patches) > limits.max_files:
            raise patch_error(PatchErrorCode.TOO_LARGE, f"more than {limits.max_files} files")
    if not patches and text.strip():
        raise patch_error(PatchErrorCode.MALFORMED_DIFF, "no file header (--- / +++ or diff --git) found")
    return patches


# ------------------------------------------------------------------------------------------------------- path rules
def normalize_path(raw: str) -> str:
    """A project-relative POSIX path, or PatchError(path_outside_project): no absolute paths, no "..", no backslashes,
    no control characters, nothing UTF-8 cannot encode, no .git metadata; or PatchError(too_large): longer than
    MAX_PATH_BYTES, a part longer than MAX_PATH_PART_BYTES, or more than MAX_PATH_PARTS parts."""
    shown = raw[:200]
    if not raw or _CONTROL.search(raw) or "\\" in raw or raw.startswith("/") or re.match(r"^[A-Za-z]:", raw):
        raise patch_error(PatchErrorCode.PATH_OUTSIDE_PROJECT, f"path {shown!r} is absolute or not a plain path", shown)
    try:
        size = len(raw.encode("utf-8"))
    except UnicodeEncodeError:
        raise patch_error(PatchErrorCode.PATH_OUTSIDE_PROJECT, f"path {shown!r} is not UTF-8 text", shown) from None
    parts = [part for part in raw.split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        raise patch_error(PatchErrorCode.PATH_OUTSIDE_PROJECT, f"path {shown!r} leaves the project", shown)
    if ".git" in parts:
        raise patch_error(PatchErrorCode.PATH_OUTSIDE_PROJECT, f"path {shown!r} is version-control metadata", shown)
    if (
        size > MAX_PATH_BYTES
        or len(parts) > MAX_PATH_PARTS
        or max(len(p.encode()) for p in parts) > MAX_PATH_PART_BYTES
    ):
        raise patch_error(PatchErrorCode.TOO_LARGE, f"path {shown!r} is too long or too deep", shown)
    return "/".join(parts)


def is_protected(path: str, patterns: Iterable[str]) -> bool:
    """True when path matches a pattern: fnmatch on the whole path ("tests/*" covers the folder), and patterns
    without "/" also on the file name at any depth ("conftest.py" covers sub/conftest.py)."""
    name = path.rsplit("/", 1)[-1]
    for pattern in patterns:
        if fnmatch.fnmatchcase(path, pattern):
            return True
        if "/" not in pattern and fnmatch.fnmatchcase(name, pattern):
            return True
        if pattern.endswith("/") and path.startswith(pattern):
            return True
    return False
