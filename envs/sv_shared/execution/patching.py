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

The diff's parts, the parser and the path rules are patch_format.py's; this module applies them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path

from sv_shared.execution.patch_format import (
    GITLINK_MODE,
    SYMLINK_MODE,
    DiffStats,
    FileChange,
    FileKind,
    FilePatch,
    Hunk,
    OnProtected,
    PatchErrorCode,
    PatchLimits,
    PatchResult,
    is_protected,
    normalize_path,
    parse_unified_diff,
    patch_error,
)


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
            raise patch_error(PatchErrorCode.TOO_LARGE, "the patch is too expensive to locate in the file")


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
            raise patch_error(PatchErrorCode.DOES_NOT_APPLY, f"hunk {number} does not match {path}", path)
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
        if patch.new_mode in (SYMLINK_MODE, GITLINK_MODE):
            raise patch_error(
                PatchErrorCode.PATH_OUTSIDE_PROJECT, f"{new or old} would become a symlink/submodule", new
            )
        touched = [p for p in (old, new) if p is not None and not (patch.copy and p == old)]
        hits = [p for p in touched if is_protected(p, protected)]
        if hits:
            if on_protected == "drop":
                dropped.extend(h for h in hits if h not in dropped)
                continue
            raise patch_error(PatchErrorCode.PROTECTED_FILE, f"the patch touches protected file {hits[0]}", hits[0])
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
                raise patch_error(PatchErrorCode.DOES_NOT_APPLY, f"{new} already exists", new)
            text = _apply_hunks(new, "", patch.hunks, budget)
            state[new] = text
            changes.append(FileChange(new, "created", added, removed))
        elif new is None:
            before = current(old)
            if before is None:
                raise patch_error(PatchErrorCode.DOES_NOT_APPLY, f"{old} does not exist", old)
            if patch.hunks and _apply_hunks(old, before, patch.hunks, budget) != "":
                raise patch_error(PatchErrorCode.DOES_NOT_APPLY, f"deletion of {old} does not match its content", old)
            state[old] = None
            changes.append(FileChange(old, "deleted", 0, len(_split(before)[0])))
        else:
            target = old
            if old != new and not (patch.rename or patch.copy):
                # plain diff between differently named copies (x.py.orig -> x.py): patch whichever exists
                target = new if current(new) is not None else old
            before = current(target)
            if before is None:
                raise patch_error(PatchErrorCode.DOES_NOT_APPLY, f"{target} does not exist", target)
            after = _apply_hunks(target, before, patch.hunks, budget)
            if patch.rename or patch.copy:
                if old != new and current(new) is not None:
                    raise patch_error(PatchErrorCode.DOES_NOT_APPLY, f"{new} already exists", new)
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
            raise patch_error(PatchErrorCode.TOO_LARGE, f"{path} would exceed {limits.max_file_bytes} bytes", path)
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
        raise patch_error(PatchErrorCode.BINARY_PATCH, f"{path} is a binary file", path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise patch_error(PatchErrorCode.BINARY_PATCH, f"{path} is not UTF-8 text", path) from exc


def _memory_reader(files: Mapping[str, str]) -> Reader:
    """A reader over an in-memory project (paths normalized first); a text with NUL bytes is binary, never patched."""
    originals = {normalize_path(raw): text for raw, text in files.items()}

    def read(path: str) -> str | None:
        text = originals.get(path)
        if text is not None and "\0" in text:
            raise patch_error(PatchErrorCode.BINARY_PATCH, f"{path} is a binary file", path)
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
        if patch.new_mode in (SYMLINK_MODE, GITLINK_MODE):
            raise patch_error(
                PatchErrorCode.PATH_OUTSIDE_PROJECT, f"{headers[-1]} would become a symlink/submodule", target
            )
        if len(headers) < 2 or patch.rename or patch.copy:
            raise patch_error(
                PatchErrorCode.FILE_OPERATION, "the patch creates, deletes, renames or copies a file", target
            )
    if len(patches) > 1:
        raise patch_error(PatchErrorCode.MULTIPLE_FILES, f"{len(patches)} file sections; only {target} may be patched")
    if not patches or not patches[0].hunks:
        raise patch_error(PatchErrorCode.MALFORMED_DIFF, "no hunk found")
    (patch,) = patches
    for header in (patch.old_path, patch.new_path):
        assert header is not None
        if not _names(normalize_path(header), target):
            raise patch_error(PatchErrorCode.OTHER_FILE, f"path {header!r} is not the file {target!r}", header)
    single = replace(patch, old_path=target, new_path=target)
    result = _apply([single], _memory_reader({target: text}), protected=(), on_protected="reject", limits=limits)
    return result.files[target]


def _inside(root: Path, rel: str) -> Path:
    """root/rel after checking that no existing component is a symlink and that it resolves inside root."""
    current = root
    for part in rel.split("/"):
        current = current / part
        if current.is_symlink():
            raise patch_error(PatchErrorCode.PATH_OUTSIDE_PROJECT, f"{rel} goes through a symlink", rel)
    if not current.resolve().is_relative_to(root.resolve()):
        raise patch_error(PatchErrorCode.PATH_OUTSIDE_PROJECT, f"{rel} resolves outside the project", rel)
    return current


def _check_folders(root: Path, rel: str, *, create: bool = False) -> None:
    """Every folder on the way to root/rel is a real folder (or absent, then created when asked)."""
    folder = root
    for part in rel.split("/")[:-1]:
        folder = folder / part
        if folder.is_symlink():
            raise patch_error(PatchErrorCode.PATH_OUTSIDE_PROJECT, f"{rel} goes through a symlink", rel)
        if folder.exists() and not folder.is_dir():
            raise patch_error(PatchErrorCode.DOES_NOT_APPLY, f"{rel}: {folder.name} is a file, not a folder", rel)
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
            raise patch_error(PatchErrorCode.DOES_NOT_APPLY, f"{path} is not a regular file", path)
        if target.stat().st_size > limits.max_file_bytes:
            raise patch_error(PatchErrorCode.TOO_LARGE, f"{path} is larger than {limits.max_file_bytes} bytes", path)
        return _decode(path, target.read_bytes())

    result = _apply(patches, read, protected=tuple(protected), on_protected=on_protected, limits=limits)
    for path, text in result.files.items():
        _check_folders(source, path)
        try:
            text.encode()
        except UnicodeEncodeError as exc:  # refused before the copy, not half-way through writing it
            raise patch_error(PatchErrorCode.BINARY_PATCH, f"{path} would not be UTF-8 text", path) from exc
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
