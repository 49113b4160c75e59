"""Splits that hold out whole templates, so no flow pattern an eval tests was seen in training.

A template is one host's activity of one kind: the flows of one source address under one label and scenario (one
scan, one brute-force run, one beacon, one client's ordinary traffic). Its flows are near-copies of each other (the
same ports, sizes and timing), so splitting them row by row would put one scan's probes in train and the rest in
test. A flow with no source address (UNSW-NB15 records none) is a template of its own.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from sv_shared.data.hashing import sha256_hex, stable_json
from sv_shared.data.splits import allocate_counts, validate_fractions

TEMPLATE_COLUMN = "__template"


def template_keys(frame: pl.DataFrame) -> pl.Expr:
    """Each flow's template: label/scenario/source address, or its own flow_id when the source is not recorded."""
    return (
        pl.when(pl.col("src_ip").is_not_null())
        .then(pl.concat_str([pl.col("label"), pl.col("scenario"), pl.col("src_ip")], separator="/"))
        .otherwise(pl.col("flow_id"))
    )


def template_split(
    frame: pl.DataFrame,
    *,
    fractions: Mapping[str, float],
    seed: int,
    by: str = "label",
    id_column: str = "flow_id",
) -> dict[str, pl.DataFrame]:
    """Split whole templates into named parts, per value of `by` (the stratum): each stratum's templates, in an
    order seeded by `seed` and the stratum, each go to the split furthest below its share of the stratum's rows (ties
    to the split listed first); a stratum with at least one template per split first gives each split one, so every
    split holds every such stratum. Depends only on the rows' content; parts come back in the order of `fractions`,
    each sorted by `id_column`. A split can miss its share by up to one template's size."""
    checked = validate_fractions(fractions)
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    names = list(checked)
    keyed = frame.sort(id_column).with_columns(template_keys(frame).alias(TEMPLATE_COLUMN))
    assignment: dict[str, str] = {}
    sizes = keyed.group_by(by, TEMPLATE_COLUMN).len().sort(by, TEMPLATE_COLUMN)
    for (stratum,), templates in sizes.group_by([by], maintain_order=True):
        digest = int(sha256_hex(stable_json([stratum]))[:16], 16)
        order = np.random.default_rng([seed, digest]).permutation(templates.height)
        targets = allocate_counts(int(templates["len"].sum()), checked)
        filled = dict.fromkeys(names, 0)
        empty = set(names) if templates.height >= len(names) else set()
        for index in order.tolist():
            template, size = templates[TEMPLATE_COLUMN][index], templates["len"][index]
            candidates = [name for name in names if name in empty] or names
            chosen = max(candidates, key=lambda name: (targets[name] - filled[name], -names.index(name)))
            filled[chosen] += size
            empty.discard(chosen)
            assignment[template] = chosen
    split = keyed.with_columns(pl.col(TEMPLATE_COLUMN).replace_strict(assignment).alias("__split"))
    return {name: split.filter(pl.col("__split") == name).drop(TEMPLATE_COLUMN, "__split") for name in names}
