"""Labelled raw email as E4 items: messages as they were received plus a label file, derived like every corpus.

The messages are one of
- a directory of message files (.eml or any name; sub-directories are read too; hidden files are skipped),
- a maildir (a directory with cur/ and/or new/; tmp/ is skipped, as mail there is still being delivered),
- an mbox file (starts with "From "), or a directory holding mbox files among message files.

The label file is CSV (with a header row) or JSON lines, one message a row:
- `label`: phishing or benign (case-insensitive; phish, malicious / legitimate, ham, safe are read the same),
- and `file` (the message's path inside the directory, or its bare file name when that is unique; a maildir
  message also by its unique name without the ":2,FLAGS" suffix; an mbox message as `<mbox file name>:<n>`,
  counted from 1) and/or `message_id` (its Message-ID header, with or without the angle brackets).

Found beside the messages when not given: `labels.csv` or `labels.jsonl` inside the directory (never read as a
message), or `<mbox>.labels.csv` / `<mbox>.labels.jsonl` next to an mbox file.

Every message becomes an item through the same derivation as the embedded corpus (data._finish: the detectors'
fields, the guessed language, content hash, deduplication, validation); the scenario is "unspecified". What cannot be
trusted raises a named error before anything is evaluated: a label outside the vocabulary (UnknownLabelError), a
message no label names (MissingLabelError), a label row naming no message (UnmatchedLabelError), two labels for one
message (ConflictingLabelError). Each error names the file, what was expected and the label keys that would name
the message; a file read as an mbox because it starts with a "From " line (as some mail clients save a single
message) says so, with the `<file>:<n>` names of its messages. A message that cannot be read as RFC 5322 (empty, no
header lines, larger than schema.MAX_RAW_CHARS, unreadable) is skipped and counted in the LoadReport by reason; the
others still load.
"""

from __future__ import annotations

import csv
import io
import json
import mailbox
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from sv_env_phishing_detection.data import LoadReport, decode_message_bytes, is_mbox, is_message, message_items
from sv_env_phishing_detection.detectors import parse_email
from sv_env_phishing_detection.schema import MAX_RAW_CHARS
from sv_shared.data.errors import CorpusValidationError

CORPUS = "labelled-mail"
LABEL_FILE_NAMES: tuple[str, ...] = ("labels.csv", "labels.jsonl")
LABEL_WORDS: dict[str, str] = {
    "phishing": "Phishing",
    "phish": "Phishing",
    "malicious": "Phishing",
    "benign": "Legitimate",
    "legitimate": "Legitimate",
    "ham": "Legitimate",
    "safe": "Legitimate",
}
"""Label file words (casefolded) and the item label each one means."""
MAX_LISTED = 10
"""How many offending rows or messages an error message names."""
LABEL_COLUMNS = "a `label` column (phishing or benign) and `file` and/or `message_id`"
"""What a label file row must carry, as errors say it."""
MBOX_NOTE = 'starts with a "From " line, so it is read as an mbox'
"""Why a file is read as several messages, as errors say it."""


class LabelFileError(CorpusValidationError):
    """The label file is missing, unreadable or has the wrong columns."""


class UnknownLabelError(LabelFileError):
    """A label file row carries a label outside LABEL_WORDS."""


class MissingLabelError(CorpusValidationError):
    """A message that no row of the label file names."""


class UnmatchedLabelError(CorpusValidationError):
    """A label file row that names no message."""


class ConflictingLabelError(CorpusValidationError):
    """One message named by label rows that disagree."""


class MessagesPathError(CorpusValidationError):
    """The messages path is a file that is not an mbox (a single message belongs in a directory)."""


@dataclass(frozen=True)
class RawMessage:
    """One message as read: the names a label file may use for it, where it is (for reports) and its bytes."""

    names: tuple[str, ...]
    where: str
    data: bytes
    mbox: str | None = None
    """The mbox file it was read from (its path inside the messages directory), None for a message file."""


@dataclass(frozen=True)
class LabelRow:
    line: int
    file: str | None
    message_id: str | None
    label: str


def is_raw_mail(path: Path) -> bool:
    """Whether a --dataset path holds raw messages (a directory or an mbox file) rather than an items file."""
    return path.is_dir() or (path.is_file() and is_mbox(path))


def label_file_for(path: Path) -> Path:
    """The label file that goes with the messages at path, found by the convention in the module docstring."""
    candidates = (
        [path / name for name in LABEL_FILE_NAMES]
        if path.is_dir()
        else [path.with_name(f"{path.name}.{name}") for name in LABEL_FILE_NAMES]
    )
    found = [candidate for candidate in candidates if candidate.is_file()]
    if len(found) != 1:
        problem = "none of" if not found else "more than one of"
        names = (
            "`file` (a message's path inside the directory)"
            if path.is_dir()
            else f"`file` (`{path.name}:1` for its first message, counted from 1)"
        )
        read_as = "" if path.is_dir() else f" {path.name} {MBOX_NOTE}."
        raise LabelFileError(
            f"{path}: {problem} {[str(c) for c in candidates]} exists; give exactly one label file.{read_as} "
            f"A label file is CSV or JSON lines with a `label` column (phishing or benign) and {names} "
            "and/or `message_id`"
        )
    return found[0]


# --- the label file -----------------------------------------------------------------------------------------------


def _label_records(path: Path) -> list[tuple[int, dict[str, object]]]:
    """(line number, record) of every row of a CSV or JSON-lines label file."""
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix.casefold() == ".csv":
        return [(number, dict(row)) for number, row in enumerate(csv.DictReader(io.StringIO(text)), start=2)]
    if path.suffix.casefold() in (".jsonl", ".ndjson"):
        records = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise LabelFileError(f"{path} line {number}: not JSON ({error})") from error
            if not isinstance(record, dict):
                raise LabelFileError(f"{path} line {number}: a row must be a JSON object")
            records.append((number, record))
        return records
    raise LabelFileError(f"{path}: a label file is .csv or .jsonl")


def _cell(record: dict[str, object], column: str) -> str | None:
    value = record.get(column)
    text = str(value).strip() if value is not None else ""
    return text or None


def message_id_key(value: str) -> str:
    """A Message-ID as compared: angle brackets and surrounding whitespace dropped."""
    return value.strip().strip("<>").strip()


def read_labels(path: Path) -> list[LabelRow]:
    """The rows of a label file; raises LabelFileError on its layout (naming the columns a row has and those it
    needs) and UnknownLabelError naming every row whose label is not a known word."""
    rows, unknown = [], []
    for line, record in _label_records(path):
        file, message_id, word = _cell(record, "file"), _cell(record, "message_id"), _cell(record, "label")
        columns = sorted(str(name) for name in record if name is not None)
        if file is None and message_id is None:
            raise LabelFileError(
                f"{path} line {line}: a row names its message by `file` or `message_id`; "
                f"this row has {columns}, a label file needs {LABEL_COLUMNS}"
            )
        if "label" not in record:
            raise LabelFileError(
                f"{path} line {line}: no `label` column in {columns}; a label file needs {LABEL_COLUMNS}"
            )
        label = LABEL_WORDS.get((word or "").casefold())
        if label is None:
            unknown.append(f"line {line}: {word!r}")
            continue
        rows.append(LabelRow(line, file, message_id_key(message_id) if message_id else None, label))
    if unknown:
        raise UnknownLabelError(
            f"{path}: {len(unknown)} row(s) with a label outside {sorted(LABEL_WORDS)}: "
            + ", ".join(unknown[:MAX_LISTED])
        )
    return rows


# --- the messages -------------------------------------------------------------------------------------------------


def _maildir_messages(path: Path) -> Iterator[RawMessage]:
    for folder in ("cur", "new"):
        if not (path / folder).is_dir():
            continue
        for file in sorted(child for child in (path / folder).iterdir() if child.is_file()):
            if file.name.startswith("."):
                continue
            unique = file.name.split(":2,", 1)[0]
            yield RawMessage((f"{folder}/{file.name}", file.name, unique), f"{folder}/{file.name}", file.read_bytes())


def _mbox_messages(file: Path, shown: str) -> Iterator[RawMessage]:
    box = mailbox.mbox(file, create=False)
    try:
        for number, key in enumerate(box.keys(), start=1):
            yield RawMessage(
                (f"{shown}:{number}", f"{file.name}:{number}"), f"{shown} message {number}", box.get_bytes(key), shown
            )
    finally:
        box.close()


def read_messages(path: Path, *, label_file: Path | None = None) -> Iterator[RawMessage]:
    """Every message under path (see the module docstring), in a stable order; the label file is not a message."""
    if path.is_file():
        if not is_mbox(path):
            raise MessagesPathError(
                f'{path}: a single file is read as an mbox only when it starts with a "From " line; put message '
                f"files in a directory with a labels.csv or labels.jsonl ({LABEL_COLUMNS})"
            )
        yield from _mbox_messages(path, path.name)
        return
    if not path.is_dir():
        raise FileNotFoundError(f"messages path {path} does not exist")
    if (path / "cur").is_dir() or (path / "new").is_dir():
        yield from _maildir_messages(path)
        return
    for file in sorted(candidate for candidate in path.rglob("*") if candidate.is_file()):
        relative = file.relative_to(path)
        if any(part.startswith(".") for part in relative.parts) or (label_file and file.samefile(label_file)):
            continue
        if is_mbox(file):
            yield from _mbox_messages(file, relative.as_posix())
        else:
            yield RawMessage((relative.as_posix(), file.name), relative.as_posix(), file.read_bytes())


def _read(raw: str) -> tuple[str | None, str | None]:
    """(why the decoded message cannot be an item or None, its Message-ID key or None)."""
    if not raw.strip():
        return "empty message", None
    if len(raw) > MAX_RAW_CHARS:
        return f"message larger than {MAX_RAW_CHARS:,} characters", None
    if not is_message(raw):
        return "not an RFC 5322 message (no header lines)", None
    parsed = parse_email(raw)
    if any(warning.startswith("unparseable message") for warning in parsed.warnings):
        return "unparseable message", None
    header = next((value for name, value in parsed.headers if name == "message-id"), None)
    return None, message_id_key(header) if header else None


# --- matching -----------------------------------------------------------------------------------------------------


@dataclass
class _Labels:
    """The label rows indexed by the names they use, and which rows a message has claimed."""

    by_file: dict[str, list[LabelRow]]
    by_id: dict[str, list[LabelRow]]
    used: set[int]

    @classmethod
    def of(cls, rows: list[LabelRow]) -> _Labels:
        labels = cls({}, {}, set())
        for row in rows:
            if row.file:
                labels.by_file.setdefault(row.file, []).append(row)
            if row.message_id:
                labels.by_id.setdefault(row.message_id, []).append(row)
        return labels

    def claim(self, message: RawMessage, message_id: str | None) -> list[LabelRow]:
        """The rows naming the message (by its first name a row uses, and by Message-ID), marked as used."""
        names = [name for name in message.names if name in self.by_file]
        matched = [row for name in names[:1] for row in self.by_file[name]]
        matched += self.by_id.get(message_id, []) if message_id else []
        self.used.update(row.line for row in matched)
        return matched


def _unlabelled(message: RawMessage, message_id: str | None) -> str:
    """A message no row names, with the label keys that would name it."""
    keys = f"file `{message.names[0]}`" + (f" or message_id `{message_id}`" if message_id else "")
    read_as = f"; {message.mbox} {MBOX_NOTE}" if message.mbox is not None else ""
    return f"{message.where} (a row names it by {keys}{read_as})"


def _unmatched(row: LabelRow, mbox_sizes: dict[str, int]) -> str:
    """A label row that names no message; a row naming an mbox file as a whole is told its messages' names."""
    size = mbox_sizes.get(row.file) if row.file else None
    if size:
        return f"line {row.line} ({row.file} {MBOX_NOTE}: name its messages `{row.file}:1` to `{row.file}:{size}`)"
    return f"line {row.line} ({row.file or row.message_id})"


def load_labelled(
    messages: str | Path,
    labels: str | Path | None = None,
    *,
    report: LoadReport | None = None,
) -> pl.DataFrame:
    """Items from raw messages and their label file (found beside them when not given); see the module docstring
    for the formats and the named errors."""
    messages = Path(messages)
    label_path = Path(labels) if labels is not None else label_file_for(messages)
    report = report if report is not None else LoadReport(source=str(messages))
    rows = read_labels(label_path)
    labels = _Labels.of(rows)
    items: list[tuple[str, str, str]] = []
    missing: list[str] = []
    conflicts: list[str] = []
    mbox_sizes: dict[str, int] = {}
    for message in read_messages(messages, label_file=label_path):
        report.rows_read += 1
        if message.mbox is not None:
            for name in {message.mbox, Path(message.mbox).name}:
                mbox_sizes[name] = mbox_sizes.get(name, 0) + 1
        raw = decode_message_bytes(message.data).replace("\r\n", "\n")
        problem, message_id = _read(raw)
        matched = labels.claim(message, message_id)  # a skipped message's label row is accounted for, not unmatched
        if problem is not None:
            report.drop(problem, message.where, strict=False)
            continue
        found = {row.label for row in matched}
        if not found:
            missing.append(_unlabelled(message, message_id))
        elif len(found) > 1:
            conflicts.append(f"{message.where} (lines {sorted(row.line for row in matched)})")
        else:
            items.append((raw, found.pop(), message.where))
    unmatched = [_unmatched(row, mbox_sizes) for row in rows if row.line not in labels.used]
    for error, what, listed in (
        (ConflictingLabelError, "message(s) with disagreeing labels", conflicts),
        (MissingLabelError, f"message(s) that no row of {label_path} names", missing),
        (UnmatchedLabelError, f"row(s) of {label_path} naming no message", unmatched),
    ):
        if listed:
            raise error(f"{messages}: {len(listed)} {what}: {', '.join(listed[:MAX_LISTED])}")
    return message_items(items, corpus=CORPUS, report=report)
