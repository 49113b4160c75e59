"""What the environments' corpus loaders share: the LoadReport, reading mirror files and the hub, deduplication and
small-strata pooling.

A loader reads a local mirror (read_table, one file at a time) or a Hugging Face hub id, drops (never coerces) rows it
cannot trust and counts them by reason in a LoadReport, deduplicates on content_hash and validates.
Environment-specific counters subclass LoadReport and add their part of the summary in `_summary_extras`.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal

import polars as pl

from sv_shared.data.errors import CorpusUnavailableError, CorpusValidationError

MAX_EXAMPLES = 5
"""How many example rows a LoadReport keeps (the first ones dropped)."""

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
"""The shape of a Hugging Face dataset id ("owner/name")."""

TABLE_SUFFIXES = (".parquet", ".jsonl", ".ndjson", ".json", ".csv")
"""The file endings read_table reads (by default all of them)."""


def is_hub_id(source: object) -> bool:
    """Whether `source` is a string shaped like a hub dataset id (callers check for a local path first)."""
    return isinstance(source, str) and HUB_ID.match(source) is not None


@dataclass
class LoadReport:
    """What a load read, kept and dropped (by reason), with example rows, for asset metadata and logs."""

    unit: ClassVar[str] = "rows"
    """What rows_read counts, as the summary names it."""

    source: str
    rows_read: int = 0
    rows_loaded: int = 0
    rows_dropped: int = 0
    duplicates: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    """Dropped rows per reason."""
    examples: list[str] = field(default_factory=list)

    def drop(self, reason: str, where: str, *, strict: bool) -> None:
        """Count one untrusted row (and keep it as an example); with strict=True raise instead of dropping it."""
        self.rows_dropped += 1
        self.dropped[reason] = self.dropped.get(reason, 0) + 1
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(f"{where} ({reason})")
        if strict:
            raise CorpusValidationError(f"{self.source}: untrusted row with strict=True: {where}: {reason}")

    def discard(self, reason: str) -> None:
        """Count one row left out on purpose (a filter, not bad data): no example, never raises."""
        self.rows_dropped += 1
        self.dropped[reason] = self.dropped.get(reason, 0) + 1

    def record_load(self, frame: pl.DataFrame, deduped: pl.DataFrame, log: logging.Logger) -> None:
        """Count the duplicates deduplication removed and the rows left; log the summary (a warning if any dropped)."""
        self.duplicates += frame.height - deduped.height
        self.rows_loaded = deduped.height
        (log.warning if self.rows_dropped else log.info)(self.summary())

    def summary(self) -> str:
        reasons = ", ".join(f"{reason}: {count}" for reason, count in sorted(self.dropped.items())) or "none"
        return (
            f"{self.source}: read {self.rows_read} {self.unit}, loaded {self.rows_loaded}, dropped {self.rows_dropped} "
            f"({reasons}), {self.duplicates} duplicates removed"
            + self._summary_extras()
            + (f"; e.g. {'; '.join(self.examples)}" if self.examples else "")
        )

    def _summary_extras(self) -> str:
        """What a subclass adds to the summary, after the duplicates and before the examples."""
        return ""


def load_from_hub(
    dataset_id: str, *, config: str | None = None, split: str, limit: int | None = None, mirror_hint: str
) -> pl.DataFrame:
    """One (config and) split of a hub dataset through `datasets`, at most `limit` rows. Offline only a cached copy
    loads; an unreachable hub raises CorpusUnavailableError naming the id and how to pass a local mirror
    (`mirror_hint`, e.g. "load_zefang('/data/Phishing_Email.csv')")."""
    import datasets  # heavy; only the hub path needs it

    try:
        if config is None:
            dataset = datasets.load_dataset(dataset_id, split=split)
        else:
            dataset = datasets.load_dataset(dataset_id, config, split=split)
    except (ConnectionError, FileNotFoundError) as error:
        which = f"config {config!r}, split {split!r}" if config is not None else f"split {split!r}"
        raise CorpusUnavailableError(
            f"cannot load {dataset_id!r} ({which}) from the Hugging Face hub: {error}. The hub is not reachable from "
            f"here and no cached copy exists; download the dataset elsewhere and pass the local mirror instead, "
            f"e.g. {mirror_hint}."
        ) from error
    if limit is not None:
        dataset = dataset.select(range(min(limit, len(dataset))))
    return dataset.to_polars()


def read_table(
    path: Path,
    *,
    limit: int | None = None,
    formats: Collection[str] = TABLE_SUFFIXES,
    columns: Sequence[str] | None = None,
    encoding: Literal["utf8", "utf8-lossy"] = "utf8-lossy",
    ragged: bool = False,
) -> pl.DataFrame:
    """One local corpus file as a frame, at most `limit` rows, read by its ending (one of `formats`, which a loader
    narrows to what its corpus is published as), so every mirror format reads alike and fails with one wording.

    Parquet and JSON lines keep their types. A .json file holds a JSON array of objects, or JSON lines (mirrors
    name them either way). CSV cells are all read as text, parsed per column later, so one odd value cannot retype
    or fail a whole column; invalid UTF-8 becomes U+FFFD unless encoding="utf8" (a loader that must not coerce bytes
    it scans), only the listed `columns` the header has are read (a wide CSV costs memory), and ragged=True cuts rows
    with extra fields instead of raising (CIC-IDS-2017 and Big-Vul have some).
    """
    suffix = path.suffix.lower()
    if suffix not in formats or suffix not in TABLE_SUFFIXES:
        raise CorpusValidationError(
            f"{path}: unsupported file type {suffix or '(none)'!r}; expected one of {', '.join(formats)}"
        )
    if suffix == ".parquet":
        return pl.read_parquet(path, n_rows=limit)
    if suffix in (".jsonl", ".ndjson"):
        return pl.read_ndjson(path, n_rows=limit, infer_schema_length=None)
    if suffix == ".json":
        wrong = f"{path}: expected a JSON array of objects or JSON lines"
        with path.open("rb") as handle:
            is_array = handle.read(64).lstrip().startswith(b"[")
        if not is_array:
            try:
                return pl.read_ndjson(path, n_rows=limit, infer_schema_length=None)
            except pl.exceptions.ComputeError as error:  # e.g. one pretty-printed object
                raise CorpusValidationError(wrong) from error
        records = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(records, list) or not all(isinstance(record, dict) for record in records):
            raise CorpusValidationError(wrong)
        records = records[:limit] if limit is not None else records
        return pl.DataFrame(records, infer_schema_length=None) if records else pl.DataFrame()
    wanted = None
    if columns is not None:
        header = pl.read_csv(path, n_rows=0, infer_schema=False, encoding=encoding).columns
        wanted = [name for name in columns if name in header]
    return pl.read_csv(
        path, infer_schema=False, n_rows=limit, columns=wanted, encoding=encoding, truncate_ragged_lines=ragged
    )


def dedupe(frame: pl.DataFrame) -> pl.DataFrame:
    """Drop rows whose content_hash occurred earlier, keeping the first."""
    return frame.unique(subset="content_hash", keep="first", maintain_order=True)


def min_stratum_rows(fractions: Mapping[str, float]) -> int:
    """How many rows a stratum needs to put one in every split: ceil(1 / the smallest non-zero fraction)."""
    smallest = min(value for value in fractions.values() if value > 0)
    return math.ceil(round(1 / smallest, 9))


def fallback_strata(
    frame: pl.DataFrame, columns: Sequence[str], fractions: Mapping[str, float], *, keep_first: bool = True
) -> pl.Series:
    """Each row's stratum, "/"-joined values of `columns` (null as "none"), pooling cells too small to reach every
    split: the longest prefix of `columns` whose cell has min_stratum_rows rows is kept, the rest become "*".

    The first column is always kept (label/* pools the small scenarios of a label); with keep_first=False a row no
    prefix can carry goes to the single stratum "*" (for one column: the category, else "*").
    """
    minimum = min_stratum_rows(fractions)
    values = [pl.col(column).fill_null("none") for column in columns]

    def cell(kept: int) -> pl.Expr:
        return pl.concat_str(values[:kept] + [pl.lit("*")] * (len(columns) - kept), separator="/")

    coarsest = 1 if keep_first else 0
    stratum = cell(coarsest)
    for kept in range(coarsest + 1, len(columns) + 1):
        stratum = pl.when(pl.len().over(columns[:kept]) >= minimum).then(cell(kept)).otherwise(stratum)
    return frame.select(stratum).to_series()
