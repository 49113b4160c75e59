"""sv_shared.data.splits: exact largest-remainder sizes, disjoint covering parts, independence from row order."""

from __future__ import annotations

import polars as pl
import pytest

from sv_shared.data.hashing import frame_hash
from sv_shared.data.splits import allocate_counts, stratified_split, validate_fractions

FRACTIONS = {"train": 0.7, "dev": 0.15, "test": 0.15}


def _frame(groups: dict[str, int]) -> pl.DataFrame:
    ids, strata = [], []
    for group, count in groups.items():
        for index in range(count):
            ids.append(f"{group}-{index:03d}")
            strata.append(group)
    return pl.DataFrame({"id": ids, "group": strata, "value": list(range(len(ids)))})


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (0, {"train": 0, "dev": 0, "test": 0}),
        (1, {"train": 1, "dev": 0, "test": 0}),
        (10, {"train": 7, "dev": 2, "test": 1}),  # dev and test tie at .5: the split listed first wins
        (20, {"train": 14, "dev": 3, "test": 3}),
        (165, {"train": 115, "dev": 25, "test": 25}),
    ],
)
def test_allocate_counts_is_largest_remainder(n: int, expected: dict[str, int]) -> None:
    assert allocate_counts(n, FRACTIONS) == expected


def test_allocate_counts_survives_float_error() -> None:
    # 0.1 * 30 is 3.0000000000000004 in floating point; every part must still get exactly 3.
    assert allocate_counts(30, {str(index): 0.1 for index in range(10)}) == {str(index): 3 for index in range(10)}


@pytest.mark.parametrize(
    ("fractions", "message"),
    [
        ({}, "at least one split"),
        ({"train": 0.7, "test": 0.2}, "sum to 1"),
        ({"train": 1.2, "test": -0.2}, ">= 0"),
        ({"train": float("nan"), "test": 1.0}, "finite"),
        ({"": 1.0}, "non-empty"),
    ],
)
def test_validate_fractions_rejects_bad_input(fractions: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        validate_fractions(fractions)


def test_split_sizes_are_exact_per_stratum() -> None:
    frame = _frame({"a": 60, "b": 30, "c": 10})
    parts = stratified_split(frame, by=["group"], fractions=FRACTIONS, seed=7, id_column="id")
    assert list(parts) == ["train", "dev", "test"]
    counts = {name: dict(part.group_by("group").len().sort("group").iter_rows()) for name, part in parts.items()}
    assert counts == {
        "train": {"a": 42, "b": 21, "c": 7},
        "dev": {"a": 9, "b": 5, "c": 2},
        "test": {"a": 9, "b": 4, "c": 1},
    }
    assert [part.height for part in parts.values()] == [70, 16, 14]


def test_parts_are_disjoint_cover_the_input_and_keep_rows_intact() -> None:
    frame = _frame({"a": 37, "b": 11})
    parts = stratified_split(frame, by=["group"], fractions=FRACTIONS, seed=3, id_column="id")
    ids = [identifier for part in parts.values() for identifier in part["id"].to_list()]
    assert len(ids) == len(set(ids)) == frame.height
    assert pl.concat(parts.values()).sort("id").equals(frame.sort("id"))
    for part in parts.values():
        assert part["id"].to_list() == sorted(part["id"].to_list())


def test_split_does_not_depend_on_input_order() -> None:
    frame = _frame({"a": 50, "b": 25})
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=11).select(["value", "group", "id"])
    first = stratified_split(frame, by=["group"], fractions=FRACTIONS, seed=5, id_column="id")
    second = stratified_split(shuffled, by=["group"], fractions=FRACTIONS, seed=5, id_column="id")
    assert {name: frame_hash(part) for name, part in first.items()} == {
        name: frame_hash(part) for name, part in second.items()
    }


def test_seed_changes_assignment_but_not_sizes() -> None:
    frame = _frame({"a": 50})
    first = stratified_split(frame, by=["group"], fractions=FRACTIONS, seed=1, id_column="id")
    second = stratified_split(frame, by=["group"], fractions=FRACTIONS, seed=2, id_column="id")
    assert [part.height for part in first.values()] == [part.height for part in second.values()]
    assert first["test"]["id"].to_list() != second["test"]["id"].to_list()


def test_adding_a_stratum_leaves_the_others_where_they_were() -> None:
    before = stratified_split(_frame({"a": 40, "b": 20}), by=["group"], fractions=FRACTIONS, seed=9, id_column="id")
    after = stratified_split(
        _frame({"a": 40, "b": 20, "c": 13}), by=["group"], fractions=FRACTIONS, seed=9, id_column="id"
    )
    for name in FRACTIONS:
        assert after[name].filter(pl.col("group") != "c")["id"].to_list() == before[name]["id"].to_list()


def test_split_rejects_unusable_frames() -> None:
    frame = _frame({"a": 5})
    with pytest.raises(ValueError, match="missing"):
        stratified_split(frame, by=["nope"], fractions=FRACTIONS, seed=1, id_column="id")
    with pytest.raises(ValueError, match="not unique"):
        stratified_split(pl.concat([frame, frame]), by=["group"], fractions=FRACTIONS, seed=1, id_column="id")
    with pytest.raises(ValueError, match="seed"):
        stratified_split(frame, by=["group"], fractions=FRACTIONS, seed=-1, id_column="id")
