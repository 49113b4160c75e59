"""Variants of a base corpus's conversations: a harmful request re-framed by a tactic, a benign question re-asked
with a new opener, each labelled as its base and naming it in generator_params.base_conversation_id, so curation
keeps it in its base's split."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import polars as pl

from sv_env_redteam_defense.policy import Label, PolicyLibrary, load_policy_library
from sv_env_redteam_defense.schema import (
    MAX_TURN_CHARS,
    SYNTHETIC_CORPUS,
    empty_frame,
    frame_from_rows,
    row_hash,
    validate_conversations,
)
from sv_env_redteam_defense.synth.adversarial_templates import BASE_TACTICS, BENIGN_FRAMES, MAX_OBFUSCATED_CHARS
from sv_env_redteam_defense.synth.rows import UniqueRows, synthetic_row
from sv_env_redteam_defense.synth.tactics import reframe
from sv_shared.data.seeds import MAX_SEED


def base_rows(
    base: pl.DataFrame, kind: str, count: int, rng: np.random.Generator, library: PolicyLibrary, unique: UniqueRows
) -> int:
    """Up to `count` variants of base conversations of one kind; returns how many were made."""
    pool = base.filter(pl.col("kind") == kind).sort("conversation_id")
    if kind == "adversarial":
        candidates = [
            (row, tactic)
            for row in pool.iter_rows(named=True)
            for tactic in BASE_TACTICS
            if tactic != "obfuscation" or len(json.loads(row["turns"])[-1]) <= MAX_OBFUSCATED_CHARS
        ]
    else:
        candidates = [(row, frame) for row in pool.iter_rows(named=True) for frame in BENIGN_FRAMES]
    made = 0
    for position in rng.permutation(len(candidates)) if candidates else []:
        if made == count:
            break
        row, variant = candidates[int(position)]
        seed = int(rng.integers(0, MAX_SEED))
        turns = json.loads(row["turns"])
        params: dict[str, Any] = {"base_conversation_id": row["conversation_id"], "base_corpus": row["source_corpus"]}
        if kind == "adversarial":
            turns = [reframe(turns[-1], variant, np.random.default_rng(seed))]
            params["tactic"] = variant
            label = library.label("adversarial", row["category"])
        else:
            turns = [variant.format(text=turns[0]), *turns[1:]]
            params["frame"] = BENIGN_FRAMES.index(variant)
            label = Label(row["desired"], row["policy_id"], tuple(json.loads(row["guidance"])))
        if len(turns[0]) > MAX_TURN_CHARS:
            continue
        made += unique.add(
            synthetic_row(
                turns,
                kind=kind,
                category=row["category"],
                label=label,
                generator="base_reframe",
                params=params,
                seed=seed,
                tactic=params.get("tactic"),
                source_ref=f"{SYNTHETIC_CORPUS}:base_reframe:{row['conversation_id']}",
            )
        )
    return made


def base_variants(n: int, *, seed: int, base: pl.DataFrame, library: PolicyLibrary | None = None) -> pl.DataFrame:
    """n variants of base conversations only (no template rows), half of them benign (halves round up): harmful
    requests re-framed by a tactic, benign questions with a new opener, each labelled as its base. None repeats a
    base conversation. Fewer come back when the base holds fewer distinct variants."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    library = library if library is not None else load_policy_library()
    pool = validate_conversations(base, check_hashes=False)
    rng = np.random.default_rng(seed)
    unique = UniqueRows()
    unique.seen.update(row_hash(json.loads(turns), kind, category) for turns, kind, category in
                       pool.select("turns", "kind", "category").iter_rows())  # fmt: skip
    n_benign = math.floor(n * 0.5 + 0.5)
    for kind, quota in (("benign", n_benign), ("adversarial", n - n_benign)):
        base_rows(pool, kind, quota, rng, library, unique)
    frame = frame_from_rows(unique.rows, validate=False) if unique.rows else empty_frame()
    return validate_conversations(frame, library=library)
