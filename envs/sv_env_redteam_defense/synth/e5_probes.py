"""E5 attacker messages as adversarial conversations (generator "e5_attacks"): the caller's probes checked,
deduplicated and put in a canonical order, then drawn once each into rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sv_env_redteam_defense.policy import PolicyLibrary
from sv_env_redteam_defense.schema import HAZARD_CODES, MAX_TURN_CHARS, TACTICS
from sv_env_redteam_defense.synth.rows import UniqueRows, synthetic_row
from sv_shared.data.hashing import sha256_hex, stable_json
from sv_shared.data.seeds import MAX_SEED


def checked_probes(attack_probes: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """E5 attacker messages, checked (a malformed probe is the caller's bug and raises), deduplicated and in a
    canonical order, so the input order does not matter."""
    probes: dict[str, dict[str, Any]] = {}
    for index, probe in enumerate(attack_probes):
        message, category = probe.get("message"), probe.get("category")
        if not isinstance(message, str) or not message.strip():
            raise ValueError(f"attack_probes[{index}]: message must be a non-empty string")
        if len(message) > MAX_TURN_CHARS:
            raise ValueError(f"attack_probes[{index}]: message longer than {MAX_TURN_CHARS:,} characters")
        if category not in HAZARD_CODES:
            raise ValueError(f"attack_probes[{index}]: category must be one of {list(HAZARD_CODES)}, got {category!r}")
        tactic = probe.get("tactic")
        if tactic is not None and not isinstance(tactic, str):
            raise ValueError(f"attack_probes[{index}]: tactic must be a string or None, got {tactic!r}")
        checked = {
            "message": message,
            "category": category,
            "tactic": tactic,
            "behavior_id": str(probe.get("behavior_id") or ""),
            "run": str(probe.get("run") or ""),
        }
        probes.setdefault(sha256_hex(stable_json([message, category])), checked)
    return [probes[key] for key in sorted(probes)]


def probe_rows(
    probes: list[dict[str, Any]], count: int, rng: np.random.Generator, library: PolicyLibrary, unique: UniqueRows
) -> int:
    """Up to `count` rows from probes drawn in a seeded order, each probe at most once; returns how many were made."""
    made = 0
    for position in rng.permutation(len(probes)) if probes else []:
        if made == count:
            break
        probe = probes[int(position)]
        seed = int(rng.integers(0, MAX_SEED))
        tactic = probe["tactic"] if probe["tactic"] in TACTICS else "direct"
        params = {"behavior_id": probe["behavior_id"], "run": probe["run"], "e5_tactic": probe["tactic"]}
        made += unique.add(
            synthetic_row(
                [probe["message"]],
                kind="adversarial",
                category=probe["category"],
                label=library.label("adversarial", probe["category"]),
                generator="e5_attacks",
                params=params,
                seed=seed,
                tactic=tactic,
                source_ref=f"e5:{probe['run']}:{probe['behavior_id']}",
            )
        )
    return made
