"""A synthetic batch's folder: outputs/datasets/<env>/batches/<batch id>/, named by its settings and written whole.

The batch id is `<date>-<sha256 of the settings, 12 hex>`: the settings (environment, model, temperatures, samples,
seed, threshold, items, verifier version) decide the candidates, so building the same batch again, after a crash or
on another day, finds the same folder (any date with that hash) and resumes it. One process builds a batch at a time
(`batch_lock`); the files are each replaced atomically, and batch.json, which marks a batch finished
(sv_shared.data.review_batches lists only folders that have it), is written last, after the review queue.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import polars as pl

from sv_shared.data.files import exclusive, json_text, replacing, write_bytes_atomic, write_json_atomic
from sv_shared.data.hashing import sha256_hex, stable_json
from sv_shared.data.review import write_review_queue
from sv_shared.data.review_batches import BATCH_FILE, ITEMS_FILE, KEPT_FILE
from sv_shared.training.candidates import Candidate

CANDIDATES_FILE: Final = "candidates.jsonl"
SAMPLES_DIR: Final = "samples"
"""The eval runs that sampled the candidates (one per temperature × sample), kept apart from outputs/evals so
reports never mistake them for evaluations."""
HASH_LENGTH: Final = 12
BATCH_LOCK_WAIT_S: Final = 600.0
"""How long a second builder of the same batch waits for the first (a local-model batch takes minutes)."""


def settings_hash(settings: Mapping[str, Any]) -> str:
    return sha256_hex(stable_json(dict(settings)))[:HASH_LENGTH]


def batch_dir_for(batches_root: Path, settings: Mapping[str, Any], *, today: datetime | None = None) -> Path:
    """The batch's folder: an existing one with these settings (any date), else `<today>-<hash>`."""
    digest = settings_hash(settings)
    existing = sorted(path for path in batches_root.glob(f"*-{digest}") if path.is_dir())
    if existing:
        return existing[0]
    date = (today or datetime.now(UTC)).strftime("%Y-%m-%d")
    return batches_root / f"{date}-{digest}"


@contextlib.contextmanager
def batch_lock(batch_dir: Path, *, wait_s: float, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Own the batch folder while building it: a second builder waits, then finds it finished (or fails naming the
    holder after wait_s)."""
    with exclusive(batch_dir / ".lock", wait_s=wait_s, what=f"synthetic batch {batch_dir}", on_wait=on_wait):
        yield


def write_batch(
    batch_dir: Path,
    info: Mapping[str, Any],
    items: pl.DataFrame,
    candidates: Sequence[Candidate],
    *,
    review_share: float,
    review_seed: int,
) -> dict[str, Any]:
    """Write items, candidates, kept examples, the review queue and last batch.json; returns batch.json's content."""
    with replacing(batch_dir / ITEMS_FILE) as tmp:
        items.write_parquet(tmp)
    write_bytes_atomic(
        batch_dir / CANDIDATES_FILE,
        "".join(json_text(candidate.as_line()) + "\n" for candidate in candidates).encode("utf-8"),
    )
    kept = [candidate for candidate in candidates if candidate.kept]
    write_bytes_atomic(
        batch_dir / KEPT_FILE,
        "".join(json_text(candidate.as_kept_example()) + "\n" for candidate in kept).encode("utf-8"),
    )
    queued = write_review_queue(
        batch_dir, [candidate.sampled.candidate_id for candidate in kept], share=review_share, seed=review_seed
    )
    finished = {
        **info,
        "batch_id": batch_dir.name,
        "created_at": datetime.now(UTC).isoformat(),
        "review_queue": {"size": len(queued), "share": review_share, "seed": review_seed},
    }
    write_json_atomic(batch_dir / BATCH_FILE, finished, sort_keys=True, allow_nan=False)
    return finished
