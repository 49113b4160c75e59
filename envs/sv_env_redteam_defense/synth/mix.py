"""The synthetic set: `synthesize_conversations` shares each kind's quota between templates, base variants and
E5 probes, plans the template rows evenly over topics and hazard categories, and keeps every conversation unique."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from sv_env_redteam_defense.policy import PolicyLibrary, load_policy_library
from sv_env_redteam_defense.schema import (
    BENIGN_TOPICS,
    HAZARD_CODES,
    SYNTHETIC_CORPUS,
    TACTICS,
    empty_frame,
    frame_from_rows,
    validate_conversations,
)
from sv_env_redteam_defense.synth.benign_templates import BENIGN_GENERATORS, TOPIC_ENTRIES
from sv_env_redteam_defense.synth.conversations import render
from sv_env_redteam_defense.synth.e5_probes import checked_probes, probe_rows
from sv_env_redteam_defense.synth.rows import UniqueRows, synthetic_row
from sv_env_redteam_defense.synth.variants import base_rows
from sv_shared.data.seeds import MAX_SEED, check_seed
from sv_shared.data.splits import allocate_counts

MAX_DRAWS = 200
"""Seeds tried for one planned row before the generator gives up on finding a conversation not yet generated."""


def _template_rows(
    plan: list[tuple[str, dict[str, Any]]], rng: np.random.Generator, library: PolicyLibrary, unique: UniqueRows
) -> None:
    for generator, params in plan:
        for _ in range(MAX_DRAWS):
            seed = int(rng.integers(0, MAX_SEED))
            turns = render(generator, seed, params)
            if "tactic" in params:
                kind, category, tactic = "adversarial", params["category"], params["tactic"]
                label = library.label(kind, category)
            else:
                kind, category, tactic = "benign", params["topic"], None
                label = library.label(kind, category, entry=params["entry"])
            row = synthetic_row(
                turns,
                kind=kind,
                category=category,
                label=label,
                generator=generator,
                params=params,
                seed=seed,
                tactic=tactic,
                source_ref=f"{SYNTHETIC_CORPUS}:{generator}:{seed}",
            )
            if unique.add(row):
                break
        else:
            raise RuntimeError(
                f"could not generate a new {generator} conversation for {params} in {MAX_DRAWS} draws: "
                "the templates' variety is exhausted; ask for fewer rows"
            )


def _benign_plan(count: int) -> list[tuple[str, dict[str, Any]]]:
    """Template slots spread evenly over the topics, entries cycled within each topic."""
    counts = allocate_counts(count, dict.fromkeys(BENIGN_TOPICS, 1 / len(BENIGN_TOPICS)))
    plan = []
    for topic in BENIGN_TOPICS:
        entries = TOPIC_ENTRIES[topic]
        for index in range(counts[topic]):
            plan.append((BENIGN_GENERATORS[topic], {"topic": topic, "entry": entries[index % len(entries)]}))
    return plan


def _adversarial_plan(count: int) -> list[tuple[str, dict[str, Any]]]:
    """Template slots spread evenly over the hazard categories, tactics cycled over the whole plan."""
    counts = allocate_counts(count, dict.fromkeys(HAZARD_CODES, 1 / len(HAZARD_CODES)))
    plan: list[tuple[str, dict[str, Any]]] = []
    for category in HAZARD_CODES:
        for _ in range(counts[category]):
            tactic = TACTICS[len(plan) % len(TACTICS)]
            plan.append(("adversarial_probe", {"category": category, "tactic": tactic}))
    return plan


def synthesize_conversations(
    n: int,
    *,
    seed: int,
    base: pl.DataFrame | None = None,
    attack_probes: Sequence[Mapping[str, Any]] = (),
    benign_share: float = 0.5,
    library: PolicyLibrary | None = None,
) -> pl.DataFrame:
    """n synthetic conversations, exactly round(n * benign_share) of them benign (halves round up).

    Each kind's quota is shared equally by its sources (largest remainder): templates always; variants of base
    conversations of that kind when base has any; E5 attack probes (adversarial only) when given. A source with
    fewer distinct rows than its share (each probe is used once) leaves the rest to the templates. Template rows
    spread evenly over topics (entries cycled) and hazard categories (tactics cycled). The same arguments give the
    same frame; no two rows are the same conversation. The templates hold enough variety for about 2,500 rows
    at the default share; beyond that a RuntimeError says the variety is exhausted.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    check_seed(seed)
    if not 0.0 <= benign_share <= 1.0:
        raise ValueError(f"benign_share must be in [0, 1], got {benign_share}")
    library = library if library is not None else load_policy_library()
    probes = checked_probes(attack_probes)
    pool = validate_conversations(base, check_hashes=False) if base is not None else empty_frame()
    rng = np.random.default_rng(seed)
    unique = UniqueRows()
    n_benign = math.floor(n * benign_share + 0.5)
    for kind, quota in (("benign", n_benign), ("adversarial", n - n_benign)):
        sources = ["templates"]
        if pool.filter(pl.col("kind") == kind).height:
            sources.append("base")
        if kind == "adversarial" and probes:
            sources.append("e5")
        shares = allocate_counts(quota, dict.fromkeys(sources, 1 / len(sources)))
        made = 0
        if "e5" in shares:
            made += probe_rows(probes, shares["e5"], rng, library, unique)
        if "base" in shares:
            made += base_rows(pool, kind, shares["base"], rng, library, unique)
        remaining = quota - made
        plan = _benign_plan(remaining) if kind == "benign" else _adversarial_plan(remaining)
        _template_rows(plan, rng, library, unique)
    frame = frame_from_rows(unique.rows, validate=False) if unique.rows else empty_frame()
    return validate_conversations(frame, library=library)
