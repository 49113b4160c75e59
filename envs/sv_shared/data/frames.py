"""Validating corpus frames against an environment's schema, with errors a person can act on.

Every environment casts its corpus to the schema's dtypes (naming cells a cast would silently turn into nulls or
truncate), runs its pandera model lazily, adds its own row rules, and raises one CorpusValidationError that lists
each failed rule with a few example rows. This module is that shared machinery.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import pandera.errors
import polars as pl

from sv_shared.data.errors import CorpusValidationError

RuleFailure = tuple[str, str, list[int]]
"""(column, or a frame-level rule's scope; rule name; indices of the failing rows)."""

_SHOWN_CHARS = 60

PROVENANCE_COLUMNS: list[str] = ["source_corpus", "generator", "generator_params", "generator_seed"]
"""Columns of the rule every corpus shares: generator, parameters and seed are set exactly on synthetic rows."""


def provenance_matches_source(synthetic_corpus: str) -> pl.Expr:
    """True where a row's generator fields are all set iff the row comes from the synthetic corpus."""
    synthetic = pl.col("source_corpus") == synthetic_corpus
    return (
        (pl.col("generator").is_not_null() == synthetic)
        & (pl.col("generator_params").is_not_null() == synthetic)
        & (pl.col("generator_seed").is_not_null() == synthetic)
    )


def _short(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        key: (value[:_SHOWN_CHARS] + "…" if isinstance(value, str) and len(value) > _SHOWN_CHARS else value)
        for key, value in row.items()
    }


def json_object_rows(series: pl.Series) -> list[int]:
    """Rows whose non-null text is not a JSON object (provenance parameters must be)."""
    bad = []
    for index, text in enumerate(series.to_list()):
        if text is None:
            continue
        try:
            if not isinstance(json.loads(text), dict):
                bad.append(index)
        except (TypeError, json.JSONDecodeError):
            bad.append(index)
    return bad


@dataclass(frozen=True)
class FrameRules:
    """One environment's corpus frame: its dtypes, and which columns identify a row in error examples."""

    what: str
    dtypes: Mapping[str, pl.DataType]
    shown: Sequence[str]
    rule_columns: Mapping[str, Sequence[str]] = field(default_factory=dict)
    hidden: frozenset[str] = frozenset()
    max_examples: int = 3

    def cast(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The schema's columns in order (extras dropped), cast; cells a cast would lose or truncate are errors."""
        missing = [column for column in self.dtypes if column not in frame.columns]
        if missing:
            raise CorpusValidationError(f"invalid {self.what}: missing column(s) {missing}; it has {frame.columns}")
        failures: list[RuleFailure] = []
        columns = []
        for column, dtype in self.dtypes.items():
            source = frame[column]
            if source.dtype == dtype:
                columns.append(source)
                continue
            cast = source.cast(dtype, strict=False)
            lost = source.is_not_null() & cast.is_null()
            if source.dtype.is_float() and dtype.is_integer():  # 80.5 would silently become 80
                lost = lost | (source != source.floor()).fill_null(False)
            rows = lost.arg_true().to_list()
            if rows:
                failures.append((column, f"cast {source.dtype} to {dtype}", rows))
            columns.append(cast)
        if failures:
            self.fail(frame, failures)
        return pl.DataFrame(columns)

    def schema_failures(self, model: Any, typed: pl.DataFrame) -> list[RuleFailure]:
        """Every failed check of a pandera (polars) model, grouped by column and check."""
        try:
            model.validate(typed, lazy=True)
        except pandera.errors.SchemaErrors as error:
            return [
                (str(key[0]), str(key[1]), sorted({int(index) for index in group["index"].drop_nulls().to_list()}))
                for key, group in error.failure_cases.group_by(["column", "check"], maintain_order=True)
            ]
        return []

    def _examples(self, frame: pl.DataFrame, rows: list[int], columns: Sequence[str]) -> str:
        shown = [
            name for name in dict.fromkeys([*self.shown, *columns]) if name in frame.columns and name not in self.hidden
        ]
        view = frame.select(shown)
        return "; ".join(f"row {row}: {_short(view.row(row, named=True))}" for row in rows[: self.max_examples])

    def fail(self, frame: pl.DataFrame, failures: Sequence[RuleFailure]) -> NoReturn:
        """Raise one error listing every failed rule: column, rule, how many rows and a few example rows."""
        lines = [f"invalid {self.what} ({frame.height} rows): {len(failures)} rule(s) failed"]
        for column, rule, rows in failures:
            where = f"column {column!r}" if column in self.dtypes else "frame"
            detail = self._examples(frame, rows, self.rule_columns.get(rule, [column])) if rows else "no row index"
            lines.append(f"  - {where} rule {rule!r}: {len(rows)} row(s); {detail}")
        raise CorpusValidationError("\n".join(lines))
