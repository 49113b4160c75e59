"""Feature-ablated views of E1 flows: the same items with some recorded fields blanked, as real logs often lack them.

A view keeps every row, its id and its label, and sets the fields it hides to null ("not recorded", exactly what the
loaders produce for Zeek's "-"), so a run on a view is paired item by item with a run on the full split. A row's
flow_id and content_hash stay those of the flow it blanks: the view names itself in the dataset source instead
(e.g. "embedded:test:no-bytes"), so view runs stay distinct from, and comparable with, the full one.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations

import polars as pl

from sv_env_network_logs.schema import FEATURE_COLUMNS

FULL_VIEW = "full"

FIELD_VIEWS: Mapping[str, tuple[str, ...]] = {
    FULL_VIEW: (),
    "no-bytes": ("bytes_out", "bytes_in"),
    "no-packets": ("packets_out", "packets_in"),
    # The Zeek history string spells out the connection state; hiding one and not the other hides nothing.
    "no-state": ("conn_state", "history"),
    "no-service": ("service",),
}
"""View name → the flow fields it hides. "full" hides nothing: the split as curated."""

ABLATED_VIEWS: tuple[str, ...] = tuple(name for name in FIELD_VIEWS if name != FULL_VIEW)

ENDPOINT_FIELDS: tuple[str, ...] = ("ts", "src_ip", "src_port", "dst_ip", "dst_port", "protocol", "service")
"""What a log that records only a connection's endpoints shows: hosts, ports, protocol and service, as in the public
IoT-23-derived benchmark whose prompts carry nothing else (no sizes, counts, duration or state)."""


class UnknownViewError(KeyError):
    """A view name no environment defines."""

    def __init__(self, view: str) -> None:
        super().__init__(f"unknown E1 view {view!r}; known: {', '.join(FIELD_VIEWS)}")


def hidden_fields(view: str) -> tuple[str, ...]:
    if view not in FIELD_VIEWS:
        raise UnknownViewError(view)
    return FIELD_VIEWS[view]


def ablate(frame: pl.DataFrame, view: str) -> pl.DataFrame:
    """The frame's rows with the view's fields set to null (same order, dtypes, ids and labels)."""
    fields = hidden_fields(view)
    missing = [field for field in fields if field not in frame.columns]
    if missing:
        raise ValueError(f"view {view!r} hides column(s) {missing} that the frame does not have")
    return frame.with_columns([pl.lit(None, dtype=frame.schema[field]).alias(field) for field in fields])


def missing_groups() -> tuple[tuple[str, ...], ...]:
    """Every combination of the ablated views' field groups missing together (all 2^k subsets): none first (the
    full split), then by how many are missing, each in ABLATED_VIEWS order."""
    return tuple(chosen for size in range(len(ABLATED_VIEWS) + 1) for chosen in combinations(ABLATED_VIEWS, size))


def combined_name(views: tuple[str, ...]) -> str:
    """A combination's name: "full" when nothing is missing, else its views joined by "+" ("no-bytes+no-packets")."""
    return "+".join(views) if views else FULL_VIEW


def ablate_together(frame: pl.DataFrame, views: tuple[str, ...]) -> pl.DataFrame:
    """The frame with every field the named views hide set to null at once."""
    for view in views:
        frame = ablate(frame, view)
    return frame


def keep_only(frame: pl.DataFrame, fields: tuple[str, ...]) -> pl.DataFrame:
    """The frame with every flow field but `fields` set to null (ids, labels and provenance kept)."""
    hidden = [column for column in FEATURE_COLUMNS if column not in fields]
    return frame.with_columns([pl.lit(None, dtype=frame.schema[column]).alias(column) for column in hidden])


def view_source(source: str, view: str) -> str:
    """The dataset source a view run records: the full dataset's source with the view appended."""
    hidden_fields(view)
    return source if view == FULL_VIEW else f"{source}:{view}"
