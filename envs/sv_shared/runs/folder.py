"""Reading and writing an eval run folder: the one place that knows its files' names and formats.

JSON is written as UTF-8 with ensure_ascii=False, metadata and summary atomically (a temporary file replaced), results
and errors appended a batch at a time and fsynced, so a crash loses at most the lines being written. A line cut off
mid-write can only be the last one: readers skip it, and `resume_results` cuts it off so appends stay valid. Any other
line that is not a valid record is refused, naming the file and the line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sv_shared.runs.schema import ErrorRecord, RecordModel, ResultRecord, RunMetadata, RunRecordError, RunSummary

R = TypeVar("R", bound=RecordModel)


def read_json(path: Path) -> Any:
    """A JSON file's value; a file that is not JSON is refused, naming it (a missing one raises FileNotFoundError)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise RunRecordError(f"{path}: not valid JSON ({error})") from None


def write_json(path: Path, value: Mapping[str, Any]) -> None:
    """Write atomically: readers see the old file or the new one, never half of one."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    tmp.replace(path)


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
                except ValueError as error:
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


def append_jsonl(path: Path, values: Iterable[Mapping[str, Any]]) -> None:
    """Append one line per value in a single write, flushed to disk before returning."""
    lines = "".join(json.dumps(value, ensure_ascii=False, default=str) + "\n" for value in values)
    if not lines:
        return
    with path.open("a", encoding="utf-8") as handle:
        handle.write(lines)
        handle.flush()
        os.fsync(handle.fileno())


def write_jsonl(path: Path, records: Iterable[RecordModel]) -> None:
    """Write records as a new JSONL file, replacing any file there."""
    path.write_text(
        "".join(json.dumps(record.as_dict(), ensure_ascii=False, default=str) + "\n" for record in records),
        encoding="utf-8",
    )


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

    def read_metadata(self) -> RunMetadata:
        return RunMetadata.parse(read_json(self.metadata_path), str(self.metadata_path))

    def write_metadata(self, metadata: RunMetadata) -> None:
        write_json(self.metadata_path, metadata.as_dict())

    def read_summary(self) -> RunSummary:
        return RunSummary.parse(read_json(self.summary_path), str(self.summary_path))

    def write_summary(self, summary: RunSummary) -> None:
        write_json(self.summary_path, summary.as_dict())

    def read_results(self) -> list[ResultRecord]:
        """The scored samples written so far (a line being written right now is not one yet)."""
        return _parse_lines(ResultRecord, self.results_path, read_jsonl(self.results_path))

    def resume_results(self) -> list[ResultRecord]:
        """The scored samples of an interrupted run, its torn last line cut off: for the runner, before appending."""
        return _parse_lines(ResultRecord, self.results_path, read_jsonl(self.results_path, cut_torn_tail=True))

    def append_results(self, records: Iterable[ResultRecord]) -> None:
        append_jsonl(self.results_path, (record.as_dict() for record in records))

    def read_errors(self) -> list[ErrorRecord]:
        return _parse_lines(ErrorRecord, self.errors_path, read_jsonl(self.errors_path))

    def append_errors(self, errors: Iterable[ErrorRecord]) -> None:
        append_jsonl(self.errors_path, (error.as_dict() for error in errors))


def _parse_lines(model: type[R], path: Path, lines: list[tuple[int, Any]]) -> list[R]:
    return [model.parse(value, f"{path} line {number}") for number, value in lines]
