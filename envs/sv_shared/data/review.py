"""Human spot-check of synthetic batches: the seeded review queue a batch puts a share of its kept examples in.

The sample is drawn by ranking each kept id by a hash of (seed, id) and taking the lowest ranks, so it depends only on
the set of ids and the seed: not on their order, not on Python's hash seed, not on the process that draws it.
"""

from __future__ import annotations

import json
import math
import os
import secrets
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from sv_shared.data.files import json_text
from sv_shared.data.hashing import sha256_hex

REVIEW_QUEUE_FILE = "review_queue.jsonl"


class ReviewError(ValueError):
    """A review queue or decision is inconsistent with the batch; the message says which and how."""


def sample_for_review(kept_ids: Sequence[str], *, share: float, seed: int) -> list[str]:
    """ceil(share × len) of the kept ids (at least 1 when any), chosen by seed alone, in rank order."""
    if not 0 < share <= 1:
        raise ReviewError(f"review share must be in (0, 1], got {share!r}")
    duplicates = sorted(example_id for example_id, count in Counter(kept_ids).items() if count > 1)
    if duplicates:
        raise ReviewError(f"kept example ids must be unique; repeated: {duplicates[:5]}")
    if not kept_ids:
        return []
    size = max(1, math.ceil(share * len(kept_ids)))
    ranked = sorted(kept_ids, key=lambda example_id: (sha256_hex(f"{seed}:{example_id}"), example_id))
    return ranked[:size]


def read_review_queue(batch_dir: Path) -> list[str] | None:
    """The sampled example ids of a batch's review queue, in queue order; None when the batch has no queue."""
    path = batch_dir / REVIEW_QUEUE_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    ids: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            ids.append(str(entry["id"]))
        except (ValueError, KeyError, TypeError) as error:
            raise ReviewError(f"{path}:{number} is not a review queue entry ({error})") from None
    return ids


def write_review_queue(batch_dir: Path, kept_ids: Sequence[str], *, share: float = 0.05, seed: int = 42) -> list[str]:
    """Put a seeded sample of the kept examples in the batch's review queue and return the sampled ids.

    The queue is created once: written whole under a temporary name and linked into place, which fails if a queue is
    already there, so two writers never interleave. An existing queue with the same sample is returned as it is; one
    with another sample raises ReviewError (the batch's kept set or the seed changed after it was queued)."""
    sample = sample_for_review(list(kept_ids), share=share, seed=seed)
    path = batch_dir / REVIEW_QUEUE_FILE
    text = "".join(
        json_text({"id": example_id, "rank": rank, "seed": seed, "share": share, "population": len(kept_ids)}) + "\n"
        for rank, example_id in enumerate(sample, start=1)
    )
    batch_dir.mkdir(parents=True, exist_ok=True)
    tmp = batch_dir / f".{REVIEW_QUEUE_FILE}.{os.getpid()}-{secrets.token_hex(4)}"
    try:
        with tmp.open("x", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.link(tmp, path)
    except FileExistsError:
        existing = read_review_queue(batch_dir) or []
        if sorted(existing) != sorted(sample):
            raise ReviewError(
                f"{path} already holds a different sample ({len(existing)} ids) from the one seed {seed} and share "
                f"{share:g} draw from these {len(kept_ids)} kept examples ({len(sample)} ids); a queue is never "
                "redrawn once reviewers may have seen it: make a new batch instead"
            ) from None
        return existing
    finally:
        tmp.unlink(missing_ok=True)
    return sample
