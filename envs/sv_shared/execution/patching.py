"""Apply a model's unified diff safely, to a fresh copy of a project dir or to an in-memory {path: text} mapping.

Why our own parser (no ``patch`` / ``git apply``): every path is validated before anything is touched, so a diff
cannot write outside the project (absolute paths, ``..``, symlinks), cannot rename, delete or edit protected files
(the tests, conftest.py, pytest configuration: a patch that "fixes" the tests is rejected, or dropped on request),
and cannot smuggle binary content. Failures are named (PatchError.code) so rewards and reports can tell a hostile or
broken patch from one that merely fails its tests. The stats (files touched, lines added/removed) feed the
"minimal diff" reward. E2 applies its configuration patches with apply_patch_to_file: one in-memory file, headers
optional, stricter on shape (a diff there may touch nothing but that file).

Leniency, for small models: hunk line counts are recounted from the hunk body (like ``git apply --recount``), a bare
``@@`` header is accepted (the position is then searched for), a hunk may sit at another line than its header says
(nearest exact match wins), and trailing-whitespace / CRLF differences are tolerated when nothing matches exactly.
Prose and markdown fences around the diff are ignored.
"""

from __future__ import annotations

import enum
import fnmatch
import os
import re
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
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
_SYMLINK_MODE = "120000"
_GITLINK_MODE = "160000"
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


def _err(code: PatchErrorCode, message: str, path: str | None = None) -> PatchError:
    return PatchError(code, message, path)


# ----------------------------------------------------------------------------------------------------------- parsing
def _unquote(raw: str) -> str:
    """Git C-quotes paths with unusual characters ("a/sp ace\\t"); undo that."""
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        body = raw[1:-1]
        try:
            return body.encode("latin-1", "backslashreplace").decode("unicode_escape").encode("latin-1").decode()
        except (UnicodeDecodeError, UnicodeEncodeError) as exc:
            raise _err(PatchErrorCode.MALFORMED_DIFF, f"bad quoted path {raw!r}") from exc
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
        raise _err(PatchErrorCode.MALFORMED_DIFF, f"line number out of range in hunk header {header[:60]!r}")
    if match:
        old_start, new_start = int(match.group(1)), int(match.group(3))
        old_len = int(match.group(2)) if match.group(2) is not None else 1
        if old_len == 0:
            old_start += 1  # "-5,0" inserts after line 5: the hunk's old side starts at line 6
    elif header.rstrip().endswith("@@") or header.strip() == "@@" or header.startswith("@@ "):
        old_start = new_start = None
    else:
        raise _err(PatchErrorCode.MALFORMED_DIFF, f"bad hunk header {header!r}")
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
            raise _err(PatchErrorCode.MALFORMED_DIFF, f"line {i + 1} is not a hunk line: {line[:60]!r}")
        else:
            break
        i += 1
    while body and body[-1] == (" ", "") and not lines[i - 1].startswith(" "):
        body.pop()  # trailing blank lines are separators, not context
        i -= 1
    if not body:
        raise _err(PatchErrorCode.MALFORMED_DIFF, f"empty hunk {header!r}")
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
            raise _err(PatchErrorCode.TOO_LARGE, f"more than {limits.max_hunks} hunks")
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
        raise _err(PatchErrorCode.TOO_LARGE, f"diff is larger than {limits.max_diff_bytes} bytes")
    if "\0" in text:
        raise _err(PatchErrorCode.BINARY_PATCH, "diff contains NUL bytes")
    lines = text.split("\n")
    if any(line.endswith("\r") for line in lines if line.startswith(("--- ", "+++ ", "@@"))):
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]  # a CRLF diff: \r is a terminator
    patches: list[FilePatch] = []
    hunk_count = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("Binary files ") or line.startswith("GIT binary patch"):
            raise _err(PatchErrorCode.BINARY_PATCH, line.strip())
        if line.startswith("@@"):
            if default_path is None or patches:
                raise _err(PatchErrorCode.MALFORMED_DIFF, f"hunk without a file header at line {i + 1}")
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
                    raise _err(PatchErrorCode.BINARY_PATCH, ext.strip())
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
            raise _err(PatchErrorCode.MALFORMED_DIFF, f"file header without +++ at line {i + 1}")
        rename = "rename from" in meta and "rename to" in meta
        copy = "copy from" in meta and "copy to" in meta
        if rename or copy:
            old, new = (meta["rename from"], meta["rename to"]) if rename else (meta["copy from"], meta["copy to"])
        if old is None and new is None:
            raise _err(PatchErrorCode.MALFORMED_DIFF, "file patch from /dev/null to /dev/null")
        hunks, i, hunk_count = _parse_hunks(lines, i, hunk_count, limits, strict)
        if not hunks and not (rename or copy or meta):
            raise _err(PatchErrorCode.MALFORMED_DIFF, f"file header for {new or old} without hunks")
        mode = meta.get("new file mode") or meta.get("new mode")
        patches.append(FilePatch(old, new, hunks, rename=rename, copy=copy, new_mode=mode))
        if len(patches) > limits.max_files:
            raise _err(PatchErrorCode.TOO_LARGE, f"more than {limits.max_files} files")
    if not patches and text.strip():
        raise _err(PatchErrorCode.MALFORMED_DIFF, "no file header (--- / +++ or diff --git) found")
    return patches


# ------------------------------------------------------------------------------------------------------- path rules
def normalize_path(raw: str) -> str:
    """A project-relative POSIX path, or PatchError(path_outside_project): no absolute paths, no "..", no backslashes,
    no control characters, nothing UTF-8 cannot encode, no .git metadata; or PatchError(too_large): longer than
    MAX_PATH_BYTES, a part longer than MAX_PATH_PART_BYTES, or more than MAX_PATH_PARTS parts."""
    shown = raw[:200]
    if not raw or _CONTROL.search(raw) or "\\" in raw or raw.startswith("/") or re.match(r"^[A-Za-z]:", raw):
        raise _err(PatchErrorCode.PATH_OUTSIDE_PROJECT, f"path {shown!r} is absolute or not a plain path", shown)
    try:
        size = len(raw.encode("utf-8"))
    except UnicodeEncodeError:
        raise _err(PatchErrorCode.PATH_OUTSIDE_PROJECT, f"path {shown!r} is not UTF-8 text", shown) from None
    parts = [part for part in raw.split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        raise _err(PatchErrorCode.PATH_OUTSIDE_PROJECT, f"path {shown!r} leaves the project", shown)
    if ".git" in parts:
        raise _err(PatchErrorCode.PATH_OUTSIDE_PROJECT, f"path {shown!r} is version-control metadata", shown)
    if (
        size > MAX_PATH_BYTES
        or len(parts) > MAX_PATH_PARTS
        or max(len(p.encode()) for p in parts) > MAX_PATH_PART_BYTES
    ):
        raise _err(PatchErrorCode.TOO_LARGE, f"path {shown!r} is too long or too deep", shown)
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


# ----------------------------------------------------------------------------------------------------------- applying
def _split(text: str) -> tuple[list[str], bool]:
    """Lines without their "\\n", and whether the text ends with a newline."""
    if text == "":
        return [], True
    parts = text.split("\n")
    if parts[-1] == "":
        return parts[:-1], True
    return parts, False


def _join(lines: list[str], eol: bool) -> str:
    if not lines:
        return ""
    return "\n".join(lines) + ("\n" if eol else "")


def _matches(lines: list[str], pos: int, want: list[str], loose: bool) -> bool:
    if loose:
        return all(lines[pos + k].rstrip() == w.rstrip() for k, w in enumerate(want))
    return lines[pos : pos + len(want)] == want


class _Budget:
    """Caps the line comparisons spent searching for hunks, so a crafted diff cannot make applying it quadratic."""

    def __init__(self, max_line_compares: int) -> None:
        self.left = max_line_compares

    def spend(self, count: int) -> None:
        self.left -= count
        if self.left < 0:
            raise _err(PatchErrorCode.TOO_LARGE, "the patch is too expensive to locate in the file")


def _nearest_first(hint: int, floor: int, last: int) -> Iterator[int]:
    """floor..last ordered by distance from hint, the lower first on ties, without sorting the whole range."""
    yield hint
    for distance in range(1, max(hint - floor, last - hint) + 1):
        if hint - distance >= floor:
            yield hint - distance
        if hint + distance <= last:
            yield hint + distance


def _find(lines: list[str], want: list[str], hint: int | None, floor: int, budget: _Budget) -> int | None:
    """Where want occurs in lines at or after floor: exact match nearest the hint first, then whitespace-loose.

    Every position tried costs the budget, so many hunks over a long file stay linear work, not hunks x lines."""
    last = len(lines) - len(want)
    if last < floor:
        return None
    first = want[0].rstrip()
    for loose in (False, True):
        positions = range(floor, last + 1) if hint is None else _nearest_first(min(max(hint, floor), last), floor, last)
        for pos in positions:
            budget.spend(1)
            if lines[pos].rstrip() != first:
                continue
            budget.spend(len(want))
            if _matches(lines, pos, want, loose):
                return pos
    return None


def _apply_hunks(path: str, text: str, hunks: Iterable[Hunk], budget: _Budget) -> str:
    """text with the hunks applied in order; the file's own context lines are kept (not the diff's copies)."""
    lines, eol = _split(text)
    crlf = bool(lines) and all(line.endswith("\r") for line in lines[:-1] or lines)
    floor = 0
    shift = 0
    for number, hunk in enumerate(hunks, 1):
        old = [t for op, t in hunk.lines if op != "+"]
        hint = None if hunk.old_start is None else max(hunk.old_start - 1 + shift, 0)
        if old:
            pos = _find(lines, old, hint, floor, budget)
        elif hint is not None and floor <= hint <= len(lines):
            pos = hint
        elif not lines:
            pos = 0
        else:
            pos = None
        if pos is None:
            raise _err(PatchErrorCode.DOES_NOT_APPLY, f"hunk {number} does not match {path}", path)
        replacement: list[str] = []
        cursor = pos
        for op, t in hunk.lines:
            if op == " ":
                replacement.append(lines[cursor])
                cursor += 1
            elif op == "-":
                cursor += 1
            else:
                replacement.append(t + "\r" if crlf and not t.endswith("\r") else t)
        end = pos + len(old)
        touches_end = end == len(lines)
        lines[pos:end] = replacement
        if hunk.old_start is not None:
            shift = pos + len(replacement) - (hunk.old_start - 1 + len(old))
        floor = pos + len(replacement)
        if touches_end:
            if hunk.new_no_eol:
                eol = False
            elif hunk.old_no_eol or hunk.lines[-1][0] == "+":
                eol = True
    return _join(lines, eol)


Reader = Callable[[str], "str | None"]


def _apply(
    patches: list[FilePatch],
    read: Reader,
    *,
    protected: tuple[str, ...],
    on_protected: OnProtected,
    limits: PatchLimits,
) -> PatchResult:
    """Validate every path first, then apply against read() (None = no such file); nothing is written here."""
    checked: list[tuple[FilePatch, str | None, str | None]] = []
    dropped: list[str] = []
    for patch in patches:
        old = normalize_path(patch.old_path) if patch.old_path is not None else None
        new = normalize_path(patch.new_path) if patch.new_path is not None else None
        if patch.new_mode in (_SYMLINK_MODE, _GITLINK_MODE):
            raise _err(PatchErrorCode.PATH_OUTSIDE_PROJECT, f"{new or old} would become a symlink/submodule", new)
        touched = [p for p in (old, new) if p is not None and not (patch.copy and p == old)]
        hits = [p for p in touched if is_protected(p, protected)]
        if hits:
            if on_protected == "drop":
                dropped.extend(h for h in hits if h not in dropped)
                continue
            raise _err(PatchErrorCode.PROTECTED_FILE, f"the patch touches protected file {hits[0]}", hits[0])
        checked.append((patch, old, new))

    budget = _Budget(limits.max_line_compares)
    state: dict[str, str | None] = {}  # path -> current text (None: deleted) for paths the patch touched

    def current(path: str) -> str | None:
        return state[path] if path in state else read(path)

    changes: list[FileChange] = []
    for patch, old, new in checked:
        added = sum(h.added for h in patch.hunks)
        removed = sum(h.removed for h in patch.hunks)
        if old is None:
            assert new is not None
            if current(new) is not None:
                raise _err(PatchErrorCode.DOES_NOT_APPLY, f"{new} already exists", new)
            text = _apply_hunks(new, "", patch.hunks, budget)
            state[new] = text
            changes.append(FileChange(new, "created", added, removed))
        elif new is None:
            before = current(old)
            if before is None:
                raise _err(PatchErrorCode.DOES_NOT_APPLY, f"{old} does not exist", old)
            if patch.hunks and _apply_hunks(old, before, patch.hunks, budget) != "":
                raise _err(PatchErrorCode.DOES_NOT_APPLY, f"deletion of {old} does not match its content", old)
            state[old] = None
            changes.append(FileChange(old, "deleted", 0, len(_split(before)[0])))
        else:
            target = old
            if old != new and not (patch.rename or patch.copy):
                # plain diff between differently named copies (x.py.orig -> x.py): patch whichever exists
                target = new if current(new) is not None else old
            before = current(target)
            if before is None:
                raise _err(PatchErrorCode.DOES_NOT_APPLY, f"{target} does not exist", target)
            after = _apply_hunks(target, before, patch.hunks, budget)
            if patch.rename or patch.copy:
                if old != new and current(new) is not None:
                    raise _err(PatchErrorCode.DOES_NOT_APPLY, f"{new} already exists", new)
                if patch.rename:
                    state[old] = None
                state[new] = after
                kind: FileKind = "renamed" if patch.rename else "copied"
                changes.append(FileChange(new, kind, added, removed, old_path=old))
            else:
                state[target] = after
                changes.append(FileChange(target, "modified", added, removed))
    files = {path: text for path, text in state.items() if text is not None}
    for path, text in files.items():
        if len(text.encode(errors="surrogatepass")) > limits.max_file_bytes:  # counted, not judged here
            raise _err(PatchErrorCode.TOO_LARGE, f"{path} would exceed {limits.max_file_bytes} bytes", path)
    return PatchResult(
        files=files,
        deleted=tuple(path for path, text in state.items() if text is None),
        changes=tuple(changes),
        stats=DiffStats(
            files_touched=len({c.path for c in changes}),
            lines_added=sum(c.added for c in changes),
            lines_removed=sum(c.removed for c in changes),
        ),
        dropped=tuple(dropped),
    )


def _decode(path: str, data: bytes) -> str:
    if b"\0" in data:
        raise _err(PatchErrorCode.BINARY_PATCH, f"{path} is a binary file", path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _err(PatchErrorCode.BINARY_PATCH, f"{path} is not UTF-8 text", path) from exc


def _memory_reader(files: Mapping[str, str]) -> Reader:
    """A reader over an in-memory project (paths normalized first); a text with NUL bytes is binary, never patched."""
    originals = {normalize_path(raw): text for raw, text in files.items()}

    def read(path: str) -> str | None:
        text = originals.get(path)
        if text is not None and "\0" in text:
            raise _err(PatchErrorCode.BINARY_PATCH, f"{path} is a binary file", path)
        return text

    return read


def apply_patch_to_files(
    diff: str,
    files: Mapping[str, str],
    *,
    protected: Iterable[str] = (),
    on_protected: OnProtected = "reject",
    limits: PatchLimits | None = None,
) -> PatchResult:
    """Apply diff to an in-memory project {relative path: text}; files is not modified (see PatchResult.updated)."""
    limits = limits or PatchLimits()
    read = _memory_reader(files)
    patches = parse_unified_diff(diff, limits=limits)
    return _apply(patches, read, protected=tuple(protected), on_protected=on_protected, limits=limits)


def _names(header: str, target: str) -> bool:
    """Whether a normalized header path is target, with or without git's a/ or b/ prefix (either side alone)."""
    return header == target or (header[:2] in ("a/", "b/") and header[2:] == target)


def apply_patch_to_file(diff: str, path: str, text: str, *, limits: PatchLimits | None = None) -> str:
    """The new text of the one file path after diff, for callers whose patch may touch nothing else (E2's configs).

    Hunks may come without file headers (they patch path) and a stray line inside a hunk is refused (strict parsing:
    with one file there is no project around it to excuse trailing junk). Every header path is checked with
    normalize_path first; then refused: creating, deleting, renaming or copying a file (creates_or_deletes_file),
    more than one file section (multiple_files), a section for another file (touches_other_file), no hunk at all
    (malformed_diff); the usual does_not_apply / binary_patch / too_large rules follow.
    """
    limits = limits or PatchLimits()
    target = normalize_path(path)
    patches = parse_unified_diff(diff, limits=limits, default_path=target, strict=True)
    for patch in patches:
        headers = [normalize_path(p) for p in (patch.old_path, patch.new_path) if p is not None]
        if patch.new_mode in (_SYMLINK_MODE, _GITLINK_MODE):
            raise _err(PatchErrorCode.PATH_OUTSIDE_PROJECT, f"{headers[-1]} would become a symlink/submodule", target)
        if len(headers) < 2 or patch.rename or patch.copy:
            raise _err(PatchErrorCode.FILE_OPERATION, "the patch creates, deletes, renames or copies a file", target)
    if len(patches) > 1:
        raise _err(PatchErrorCode.MULTIPLE_FILES, f"{len(patches)} file sections; only {target} may be patched")
    if not patches or not patches[0].hunks:
        raise _err(PatchErrorCode.MALFORMED_DIFF, "no hunk found")
    (patch,) = patches
    for header in (patch.old_path, patch.new_path):
        assert header is not None
        if not _names(normalize_path(header), target):
            raise _err(PatchErrorCode.OTHER_FILE, f"path {header!r} is not the file {target!r}", header)
    single = replace(patch, old_path=target, new_path=target)
    result = _apply([single], _memory_reader({target: text}), protected=(), on_protected="reject", limits=limits)
    return result.files[target]


def _inside(root: Path, rel: str) -> Path:
    """root/rel after checking that no existing component is a symlink and that it resolves inside root."""
    current = root
    for part in rel.split("/"):
        current = current / part
        if current.is_symlink():
            raise _err(PatchErrorCode.PATH_OUTSIDE_PROJECT, f"{rel} goes through a symlink", rel)
    if not current.resolve().is_relative_to(root.resolve()):
        raise _err(PatchErrorCode.PATH_OUTSIDE_PROJECT, f"{rel} resolves outside the project", rel)
    return current


def _check_folders(root: Path, rel: str, *, create: bool = False) -> None:
    """Every folder on the way to root/rel is a real folder (or absent, then created when asked)."""
    folder = root
    for part in rel.split("/")[:-1]:
        folder = folder / part
        if folder.is_symlink():
            raise _err(PatchErrorCode.PATH_OUTSIDE_PROJECT, f"{rel} goes through a symlink", rel)
        if folder.exists() and not folder.is_dir():
            raise _err(PatchErrorCode.DOES_NOT_APPLY, f"{rel}: {folder.name} is a file, not a folder", rel)
        if create:
            folder.mkdir(exist_ok=True)


def apply_patch_to_dir(
    diff: str,
    source: Path,
    dest: Path,
    *,
    protected: Iterable[str] = (),
    on_protected: OnProtected = "reject",
    limits: PatchLimits | None = None,
) -> PatchResult:
    """Copy the project source to a fresh dest (which must not exist) and apply diff there.

    The patch is checked and applied in memory against source first, so a refused patch (PatchError) creates no
    dest; source is never modified. Files are written without following symlinks.
    """
    limits = limits or PatchLimits()
    source = Path(source).resolve(strict=True)
    dest = Path(dest)
    if os.path.lexists(dest):
        raise FileExistsError(f"{dest} already exists: patches go to a fresh copy")
    patches = parse_unified_diff(diff, limits=limits)

    def read(path: str) -> str | None:
        target = _inside(source, path)
        if not os.path.lexists(target):
            return None
        if not target.is_file():
            raise _err(PatchErrorCode.DOES_NOT_APPLY, f"{path} is not a regular file", path)
        if target.stat().st_size > limits.max_file_bytes:
            raise _err(PatchErrorCode.TOO_LARGE, f"{path} is larger than {limits.max_file_bytes} bytes", path)
        return _decode(path, target.read_bytes())

    result = _apply(patches, read, protected=tuple(protected), on_protected=on_protected, limits=limits)
    for path, text in result.files.items():
        _check_folders(source, path)
        try:
            text.encode()
        except UnicodeEncodeError as exc:  # refused before the copy, not half-way through writing it
            raise _err(PatchErrorCode.BINARY_PATCH, f"{path} would not be UTF-8 text", path) from exc
    shutil.copytree(source, dest, symlinks=True)
    root = dest.resolve()
    for path in result.deleted:
        _inside(root, path).unlink()
    for path, text in result.files.items():
        target = _inside(root, path)
        _check_folders(root, path, create=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
    return result
