"""Which synthetic batches an SFT dataset may train on: those whose human spot-check passed, or an explicit override.

Every finished batch of the environment (outputs/datasets/<env>/batches/) is considered: a batch exists because
someone generated it for training, and the review, not a list kept by hand, decides whether it is used. A batch
whose sample is not fully reviewed, or whose rejection rate is above the configured threshold, is dropped and named
with its reason. An override (batch, reason, by) includes it anyway; the override is recorded in the provenance.
An override naming a batch that does not exist is an error: a typo must not look like a decision.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from sv_shared.config import ConfigModel
from sv_shared.data.review import ReviewError
from sv_shared.data.review_batches import SyntheticBatch
from sv_shared.data.review_decisions import ReviewSettings, review_status


class ReviewOverride(ConfigModel):
    """Train on a batch whose review did not pass: which batch, why, and who decided."""

    batch: str = Field(min_length=1)
    reason: str = Field(min_length=1)
    by: str = Field(min_length=1)


@dataclass(frozen=True)
class BatchGate:
    """The batches an SFT dataset includes, and the provenance of that choice."""

    included: tuple[SyntheticBatch, ...] = ()
    provenance: dict[str, Any] = field(default_factory=dict)


UNFINISHED = "unfinished: no batch.json (its build is still running, or stopped part-way: build it again to resume)"


def gate_batches(
    batches: Sequence[SyntheticBatch],
    settings: ReviewSettings,
    overrides: Sequence[ReviewOverride] = (),
    unfinished: Sequence[str] = (),
) -> BatchGate:
    """Split the batches into included (review passed, or overridden) and dropped, each with its review status;
    unfinished batch folders (by id) are dropped with that reason."""
    by_batch = {override.batch: override for override in overrides}
    unknown = sorted(set(by_batch) - {batch.batch_id for batch in batches})
    if unknown:
        raise ReviewError(f"override_review names batches that do not exist: {', '.join(unknown)}")
    included: list[SyntheticBatch] = []
    included_rows: list[dict[str, Any]] = []
    dropped_rows: list[dict[str, Any]] = [{"batch": batch_id, "reason": UNFINISHED} for batch_id in unfinished]
    override_rows: list[dict[str, Any]] = []
    for batch in batches:
        status = review_status(batch.path, max_rejection_rate=settings.max_rejection_rate)
        row = {
            "batch": batch.batch_id,
            "created_at": batch.created_at,
            "model": batch.info.get("model"),
            "review": status.as_dict(),
        }
        override = by_batch.get(batch.batch_id)
        if status.passed:
            included.append(batch)
            included_rows.append(row)
        elif override is not None:
            included.append(batch)
            included_rows.append({**row, "override": override.as_dict()})
            override_rows.append({**override.as_dict(), "review_reason": status.reason})
        else:
            dropped_rows.append({**row, "reason": status.reason})
    provenance = {
        "review": settings.as_dict(),
        "included": included_rows,
        "dropped_batches": dropped_rows,
        "overrides": override_rows,
    }
    return BatchGate(included=tuple(included), provenance=provenance)
