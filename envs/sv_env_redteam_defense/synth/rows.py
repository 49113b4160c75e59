"""A synthetic conversation's row (labels, provenance) and the collector that keeps every generated conversation
unique by its content hash."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sv_env_redteam_defense.policy import Label
from sv_env_redteam_defense.schema import SYNTHETIC_CORPUS, conversation_row, row_hash
from sv_shared.data.hashing import stable_json


def synthetic_row(
    turns: list[str],
    *,
    kind: str,
    category: str,
    label: Label,
    generator: str,
    params: Mapping[str, Any],
    seed: int,
    source_ref: str,
    tactic: str | None = None,
) -> dict[str, Any]:
    """A generated conversation's row: its turns, label and provenance, in the synthetic corpus."""
    return conversation_row(
        turns,
        kind=kind,
        category=category,
        label=label,
        tactic=tactic,
        source_ref=source_ref,
        source_corpus=SYNTHETIC_CORPUS,
        generator=generator,
        generator_params=stable_json(dict(params)),
        generator_seed=seed,
    )


class UniqueRows:
    """Collects rows, refusing a conversation (content hash) that was already generated."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.seen: set[str] = set()

    def add(self, row: dict[str, Any]) -> bool:
        key = row_hash(row["turns"], row["kind"], row["category"])
        if key in self.seen:
            return False
        self.seen.add(key)
        self.rows.append(row)
        return True
