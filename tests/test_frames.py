"""Shared corpus-frame validation: lossy casts are named, failures list rules with example rows."""

import pandera.polars as pa
import polars as pl
import pytest

from sv_shared.data.errors import CorpusValidationError
from sv_shared.data.frames import FrameRules, json_object_rows

RULES = FrameRules("test frame", {"id": pl.Utf8, "port": pl.Int64, "note": pl.Utf8}, shown=["id"])


class PortSchema(pa.DataFrameModel):
    id: str
    port: int = pa.Field(ge=0, le=65535)
    note: str


def test_cast_orders_columns_and_drops_extras() -> None:
    frame = pl.DataFrame({"note": ["a"], "extra": [1], "port": ["80"], "id": ["x"]})
    assert RULES.cast(frame).to_dicts() == [{"id": "x", "port": 80, "note": "a"}]


@pytest.mark.parametrize(
    ("ports", "rule"),
    [(["80", "http"], "cast String to Int64"), ([80.0, 80.5], "cast Float64 to Int64")],
)
def test_lossy_casts_are_named_with_the_row(ports: list, rule: str) -> None:
    frame = pl.DataFrame({"id": ["a", "b"], "port": ports, "note": ["", ""]})
    with pytest.raises(CorpusValidationError) as error:
        RULES.cast(frame)
    assert f"column 'port' rule '{rule}': 1 row(s); row 1: {{'id': 'b', 'port':" in str(error.value)


def test_missing_columns_are_listed() -> None:
    with pytest.raises(CorpusValidationError, match=r"missing column\(s\) \['note'\]"):
        RULES.cast(pl.DataFrame({"id": ["a"], "port": [1]}))


def test_schema_failures_group_by_column_and_check() -> None:
    typed = RULES.cast(pl.DataFrame({"id": ["a", "b", "c"], "port": [1, 70000, -1], "note": ["x" * 100, "", ""]}))
    failures = RULES.schema_failures(PortSchema, typed)
    assert sorted((column, rows) for column, _, rows in failures) == [("port", [1]), ("port", [2])]
    with pytest.raises(CorpusValidationError) as error:
        RULES.fail(typed, [("note", "short", [0])])
    assert "x" * 60 + "…" in str(error.value)


def test_json_object_rows() -> None:
    assert json_object_rows(pl.Series([None, '{"a": 1}', "[1]", "nope"])) == [2, 3]
