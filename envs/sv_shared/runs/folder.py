"""Reading and writing an eval run folder: the one place that knows its files' names and formats.

JSON is written by the rules of sv_shared.data.files: UTF-8 that any text encodes to (a lone surrogate is written as
its escape and reads back unchanged), metadata and summary replaced atomically, results and errors appended a batch
at a time and fsynced, so a crash loses at most the lines being written. A record that cannot be written as a line
that reads back (a verifier's details nested too deep, a key JSON has no form for) is left out and reported to the
caller, never written half. A line cut off mid-write can only be the last one: readers skip it, and `resume_results`
and `resume_errors` cut it off so appends stay valid. Any other line that is not a valid record is refused, naming
the file and the line.

One process writes a run folder at a time (`RunFolder.lock`). Folders written by two processes at once before that
lock existed hold some samples twice: readers keep the first record of each id and warn, naming the file.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sv_shared.data.files import append_bytes, exclusive, json_text, write_json_atomic, write_text_atomic
from sv_shared.runs.schema import (
    ErrorRecord,
    RecordModel,
    ResultRecord,
    RunMetadata,
    RunRecordError,
    RunSummary,
    Session,
)

R = TypeVar("R", bound=RecordModel)

LOCK_WAIT_S = 600.0
"""How long a second writer of a run folder waits for the first (which may be midway through a long eval) before
failing with a message naming it. When the first finishes, the second resumes a run with nothing left to do."""


def read_json(path: Path) -> Any:
    """A JSON file's value; a file that is not JSON is refused, naming it (a missing one raises FileNotFoundError)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as error:
        raise RunRecordError(f"{path}: not valid JSON ({error})") from None


class RunRecordWarning(UserWarning):
    """A run file a reader could read, but only by leaving something out (a sample recorded twice)."""


def write_json(path: Path, value: Mapping[str, Any]) -> None:
    """Write atomically: readers see the old file or the new one, never half of one."""
    write_json_atomic(path, value, default=str)


class UnwritableRecordError(ValueError):
    """A record that cannot be written as a JSON line that reads back (nested too deep, a key JSON cannot hold)."""


def jsonl_line(value: Mapping[str, Any] | RecordModel) -> str:
    """One JSONL line for a value or record, checked to read back; UnwritableRecordError names the problem."""
    try:
        line = json_text(value.as_dict() if isinstance(value, RecordModel) else value, default=str)
        json.loads(line)
    except (TypeError, ValueError, RecursionError) as error:
        raise UnwritableRecordError(f"cannot be written as a JSON line: {type(error).__name__}: {error}") from None
    return line + "\n"


def read_jsonl(path: Path, *, cut_torn_tail: bool = False) -> list[tuple[int, Any]]:
    """(line number, value) of every line of a JSONL file (none if it does not exist), blank lines skipped.

    An unterminated last line that does not parse was cut off mid-write: it is skipped, and with cut_torn_tail
    removed from the file (an unterminated one that parses gets its newline), so the next append starts a line."""
    if not path.exists():
        return []
    values: list[tuple[int, Any]] = []
    good_bytes = 0
    unterminated = False
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    values.append((number, json.loads(line)))
                except (ValueError, RecursionError) as error:
                    if line.endswith(b"\n"):
                        raise RunRecordError(
                            f"{path} line {number}: not valid JSON ({error}); only a last line cut off mid-write "
                            "is skipped"
                        ) from None
                    break
            good_bytes += len(line)
            unterminated = not line.endswith(b"\n")
    if cut_torn_tail:
        if good_bytes != path.stat().st_size:
            with path.open("r+b") as handle:
                handle.truncate(good_bytes)
        elif unterminated:
            with path.open("ab") as handle:
                handle.write(b"\n")
    return values


def append_jsonl(path: Path, lines: Iterable[str]) -> None:
    """Append lines made by jsonl_line in a single write, flushed to disk before returning."""
    data = "".join(lines).encode("utf-8")
    if data:
        append_bytes(path, data)


def write_jsonl(path: Path, records: Iterable[RecordModel]) -> None:
    """Write records as a new JSONL file, replacing any file there atomically."""
    write_text_atomic(path, "".join(jsonl_line(record) for record in records))


class RunMismatchError(ValueError):
    """A run folder exists for this run but was made from other inputs (its fingerprint differs)."""


@dataclass(frozen=True)
class RunFolder:
    """outputs/evals/<env name>--<model id>/<run id>/ and its four files, read and written typed."""

    path: Path

    @property
    def metadata_path(self) -> Path:
        return self.path / "metadata.json"

    @property
    def summary_path(self) -> Path:
        return self.path / "summary.json"

    @property
    def results_path(self) -> Path:
        return self.path / "results.jsonl"

    @property
    def errors_path(self) -> Path:
        return self.path / "errors.jsonl"

    @property
    def lock_path(self) -> Path:
        return self.path / ".lock"

    @contextmanager
    def lock(self, *, wait_s: float, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
        """Own the folder for the block: a second writer waits up to wait_s, then fails naming the holder."""
        with exclusive(self.lock_path, wait_s=wait_s, what=f"run folder {self.path}", on_wait=on_wait):
            yield

    def read_metadata(self) -> RunMetadata:
        return RunMetadata.parse(read_json(self.metadata_path), str(self.metadata_path))

    def write_metadata(self, metadata: RunMetadata) -> None:
        write_json(self.metadata_path, metadata.as_dict())

    def resume(self, fingerprint_hash: str, session: Session) -> RunMetadata | None:
        """The folder's run with `session` appended and status running (written back), or None for a new folder.
        Raises RunMismatchError when the folder holds a run made from other inputs. Call under the folder's lock."""
        if not self.metadata_path.exists():
            return None
        previous = self.read_metadata()
        if previous.fingerprint_hash != fingerprint_hash:
            raise RunMismatchError(
                f"{self.path} holds a run with different inputs (fingerprint {previous.fingerprint_hash}, now "
                f"{fingerprint_hash}); give the new run another folder (secverify eval --run-id)"
            )
        resumed = previous.replace(sessions=[*previous.sessions, session], status="running")
        self.write_metadata(resumed)
        return resumed

    def read_summary(self) -> RunSummary:
        return RunSummary.parse(read_json(self.summary_path), str(self.summary_path))

    def write_summary(self, summary: RunSummary) -> None:
        write_json(self.summary_path, summary.as_dict())

    def read_results(self) -> list[ResultRecord]:
        """The scored samples written so far, one per id (a line being written right now is not one yet)."""
        return _first_of_each_id(self.results_path, read_jsonl(self.results_path))

    def resume_results(self) -> list[ResultRecord]:
        """The scored samples of an interrupted run, its torn last line cut off: for the runner, before appending."""
        return _first_of_each_id(self.results_path, read_jsonl(self.results_path, cut_torn_tail=True))

    def append_results(self, records: Iterable[ResultRecord]) -> list[tuple[ResultRecord, str]]:
        """Append the records that can be written; the others are left out and returned, each with why."""
        lines: list[str] = []
        unwritable: list[tuple[ResultRecord, str]] = []
        for record in records:
            try:
                lines.append(jsonl_line(record))
            except UnwritableRecordError as error:
                unwritable.append((record, str(error)))
        append_jsonl(self.results_path, lines)
        return unwritable

    def read_errors(self) -> list[ErrorRecord]:
        return _parse_lines(ErrorRecord, self.errors_path, read_jsonl(self.errors_path))

    def resume_errors(self) -> list[ErrorRecord]:
        """The failed attempts of an interrupted run, its torn last line cut off: for the runner, before appending."""
        return _parse_lines(ErrorRecord, self.errors_path, read_jsonl(self.errors_path, cut_torn_tail=True))

    def append_errors(self, errors: Iterable[ErrorRecord]) -> None:
        """Append error records (their fields are plain strings and numbers: every one can be written)."""
        append_jsonl(self.errors_path, (jsonl_line(error) for error in errors))


def _parse_lines(model: type[R], path: Path, lines: list[tuple[int, Any]]) -> list[R]:
    return [model.parse(value, f"{path} line {number}") for number, value in lines]


def _first_of_each_id(path: Path, lines: list[tuple[int, Any]]) -> list[ResultRecord]:
    """Each id's first record: a later one for the same id can only come from two writers at once, and the first
    is what any earlier reader saw."""
    kept: dict[str, ResultRecord] = {}
    repeated: list[int] = []
    for record, (number, _) in zip(_parse_lines(ResultRecord, path, lines), lines, strict=True):
        if record.id in kept:
            repeated.append(number)
        else:
            kept[record.id] = record
    if repeated:
        warnings.warn(
            f"{path}: {len(repeated)} lines repeat a sample already recorded (lines {_some(repeated)}); the first "
            "record of each sample is used (two processes wrote this run at once)",
            RunRecordWarning,
            stacklevel=3,
        )
    return list(kept.values())


def _some(numbers: list[int], limit: int = 5) -> str:
    shown = ", ".join(str(number) for number in numbers[:limit])
    return shown + (f", … ({len(numbers) - limit} more)" if len(numbers) > limit else "")
