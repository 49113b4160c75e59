"""The items a synthetic batch samples candidates for: a source frame, optionally narrowed to a targeted slice.

A slice is (any combination of) item ids, column filters (`scenario=port_scan`), and the items a model failed on in
an eval run, by triage category (sv_shared.runs.triage), together with their synthetic siblings: items the
recipe derived from a failed item, which name it in their generator_params as `base_id` or `base_<id column>` (E1's
perturbations `base_flow_id`, E2's mutations `base_id`). A batch is training data, so the source is the curated train
split or the synthetic set made from it: the failures of a run on the test split match nothing there (no test item
is ever copied into training data); a run on the train split targets them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import polars as pl

from sv_shared.contracts import Environment, Item
from sv_shared.runs.schema import ResultRecord
from sv_shared.runs.triage import CATEGORIES, triage_run

ITEM_SOURCES: Final = ("synthetic", "curated-train")
"""Where a batch's items come from: the synthetic set made from the curated train split, or that split itself."""


class ItemSliceError(ValueError):
    """A targeted slice that cannot be drawn (an unknown category or column, or nothing matches); the message says
    what was asked and what there is."""


@dataclass(frozen=True)
class FailedItems:
    """The items of one eval run whose samples fell in the asked triage categories."""

    run_id: str
    categories: tuple[str, ...]
    item_ids: frozenset[str]


def failed_items(run_id: str, records: Iterable[ResultRecord], categories: Sequence[str]) -> FailedItems:
    """The ids of a (single-turn) run's samples whose triage category is one of `categories`."""
    unknown = sorted(set(categories) - set(CATEGORIES))
    if unknown or not categories:
        raise ItemSliceError(f"triage categories must be some of {', '.join(CATEGORIES)}; got {list(categories)}")
    ids = frozenset(sample.id for sample in triage_run(records, dialogue=False) if sample.category in categories)
    return FailedItems(run_id, tuple(categories), ids)


def base_item_id(env: Environment, row: Mapping[str, Any]) -> str | None:
    """The id of the item a synthetic row was derived from, when its generator recorded one."""
    raw = row.get("generator_params")
    try:
        params = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return None
    if not isinstance(params, Mapping):
        return None
    for key in ("base_id", f"base_{env.data.id_column}"):
        value = params.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def parse_filters(expressions: Sequence[str]) -> dict[str, str]:
    """`column=value` pairs (a value may hold "=")."""
    filters: dict[str, str] = {}
    for expression in expressions:
        column, sep, value = expression.partition("=")
        if not sep or not column:
            raise ItemSliceError(f"a filter is COLUMN=VALUE, got {expression!r}")
        filters[column] = value
    return filters


def targeted_slice(
    env: Environment,
    frame: pl.DataFrame,
    *,
    item_ids: Sequence[str] = (),
    filters: Mapping[str, str] | None = None,
    failed: FailedItems | None = None,
) -> pl.DataFrame:
    """The rows of `frame` the slice names; the whole frame when it names nothing. Raises ItemSliceError when the
    slice matches no row, naming what was asked."""
    for column in filters or {}:
        if column not in frame.columns:
            raise ItemSliceError(
                f"{env.env_id}: no column {column!r} to filter on (columns: {', '.join(frame.columns)})"
            )
    wanted_ids = set(item_ids)
    keep = [_in_slice(env, row, wanted_ids, filters or {}, failed) for row in frame.to_dicts()]
    if not any(keep):
        asked = [
            *([f"{len(wanted_ids)} item ids"] if wanted_ids else []),
            *(f"{column}={value}" for column, value in (filters or {}).items()),
            *(
                [
                    f"the {len(failed.item_ids)} items run {failed.run_id} failed in {', '.join(failed.categories)} "
                    "or their synthetic siblings"
                ]
                if failed is not None
                else []
            ),
        ]
        hint = (
            "; a run on another split (test, dev) shares no items with the training source, whose synthetic items "
            "perturb train items only: evaluate with --split train to target what the model fails on in training data"
            if failed is not None
            else ""
        )
        matches = " and ".join(asked)
        raise ItemSliceError(f"{env.env_id}: no item of the {frame.height} in the source matches {matches}{hint}")
    return frame.filter(pl.Series(keep, dtype=pl.Boolean))


def _in_slice(
    env: Environment, row: Item, item_ids: set[str], filters: Mapping[str, str], failed: FailedItems | None
) -> bool:
    if any(str(row[column]) != value for column, value in filters.items()):
        return False
    item_id = str(row[env.data.id_column])
    if item_ids and item_id not in item_ids:
        return False
    return failed is None or item_id in failed.item_ids or base_item_id(env, row) in failed.item_ids


def select_items(env: Environment, frame: pl.DataFrame, n: int | None, seed: int) -> pl.DataFrame:
    """n items of the frame (all when n is None or larger), a seeded permutation of it in id order."""
    if n is not None and n < 1:
        raise ItemSliceError(f"n_items must be at least 1, got {n}")
    ordered = frame.sort(env.data.id_column)
    if n is None or n >= ordered.height:
        return ordered
    order = np.random.default_rng(seed).permutation(ordered.height)[:n]
    return ordered[sorted(order.tolist())]
