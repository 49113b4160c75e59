"""Reviewers' decisions on a synthetic batch's review queue, and the batch's review status against a threshold.

reviews.jsonl, in the batch folder, is an append-only log: one decision a line (which kept example, who, when,
accept or reject, a note). Appends hold the batch's review lock, so two reviewers deciding at once both land whole.
A reviewer's later decision on an example supersedes their earlier one; both stay in the log. An example several
reviewers decided is rejected when any reviewer's current decision rejects it (a doubt about a training example is
enough to keep it out), accepted when all of them accept it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sv_shared.config import ConfigModel
from sv_shared.data.files import exclusive, json_text
from sv_shared.data.review import ReviewError, read_review_queue
from sv_shared.runs.folder import append_jsonl, read_jsonl
from sv_shared.runs.schema import RunRecordError

REVIEWS_FILE: Final = "reviews.jsonl"
REVIEW_LOCK_FILE: Final = ".review.lock"
REVIEW_LOCK_WAIT_S: Final = 30.0
MAX_REVIEWER_CHARS: Final = 200
_NOT_IN_A_NAME = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})

ReviewVerdict = Literal["accept", "reject"]


class ReviewSettings(ConfigModel):
    """The spot-check of synthetic batches (configs/sft_datasets.yaml, `review:`)."""

    sample_share: float = Field(default=0.05, gt=0.0, le=1.0)
    """Share of a batch's kept examples put in its review queue (at least one when any are kept)."""
    max_rejection_rate: float = Field(default=0.2, ge=0.0, le=1.0)
    """A batch whose reviewed sample has a larger share of rejected examples fails its review."""
    seed: int = 42


class ReviewDecision(BaseModel):
    """One line of reviews.jsonl."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    item: str = Field(min_length=1)
    """The kept example's id (kept.jsonl `id`)."""
    reviewer: str = Field(min_length=1)
    at: str
    """ISO 8601 UTC, to the second."""
    decision: ReviewVerdict
    note: str = ""


def check_reviewer(reviewer: object) -> str:
    """A reviewer's name: non-empty, one line, no control or invisible characters."""
    if not isinstance(reviewer, str) or not reviewer.strip():
        raise ReviewError("the reviewer must be named (an empty name reviews nothing)")
    name = reviewer.strip()
    if len(name) > MAX_REVIEWER_CHARS:
        raise ReviewError(f"the reviewer's name is longer than {MAX_REVIEWER_CHARS} characters")
    bad = sorted({f"U+{ord(char):04X}" for char in name if unicodedata.category(char) in _NOT_IN_A_NAME})
    if bad:
        raise ReviewError(f"the reviewer's name {name[:60]!r} holds control or invisible characters ({', '.join(bad)})")
    return name


def read_decisions(batch_dir: Path) -> list[ReviewDecision]:
    """Every decision in the log, in the order recorded (a last line cut off mid-write is skipped)."""
    path = batch_dir / REVIEWS_FILE
    try:
        lines = read_jsonl(path)
    except RunRecordError as error:
        raise ReviewError(str(error)) from None
    decisions = []
    for number, value in lines:
        try:
            decisions.append(ReviewDecision.model_validate(value))
        except ValidationError as error:
            raise ReviewError(f"{path} line {number}: not a review decision ({error.errors()[0]['msg']})") from None
    return decisions


def record_decisions(
    batch_dir: Path,
    example_ids: Sequence[str],
    decision: ReviewVerdict,
    *,
    reviewer: str,
    note: str = "",
    now: datetime | None = None,
) -> list[ReviewDecision]:
    """Append one decision per example to reviews.jsonl under the batch's review lock; returns them.

    Only examples in the batch's review queue can be decided (ReviewError names the others, and nothing is
    recorded). A rejection needs a note saying why."""
    name = check_reviewer(reviewer)
    if decision not in ("accept", "reject"):
        raise ReviewError(f"a decision is 'accept' or 'reject', not {decision!r}")
    if not isinstance(note, str):
        raise ReviewError(f"the note must be text, not {type(note).__name__}")
    if decision == "reject" and not note.strip():
        raise ReviewError("a rejection needs a note saying what is wrong with the example")
    if not example_ids:
        raise ReviewError("name at least one example to decide")
    queue = read_review_queue(batch_dir)
    if queue is None:
        raise ReviewError(f"{batch_dir} has no review queue: nothing to review")
    unknown = sorted(set(example_ids) - set(queue))
    if unknown:
        raise ReviewError(f"not in the review queue of {batch_dir.name}: {', '.join(unknown[:10])}; nothing recorded")
    at = (now or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="seconds")
    records = [
        ReviewDecision(item=example_id, reviewer=name, at=at, decision=decision, note=note)
        for example_id in dict.fromkeys(example_ids)
    ]
    with exclusive(batch_dir / REVIEW_LOCK_FILE, wait_s=REVIEW_LOCK_WAIT_S, what=f"reviews of batch {batch_dir.name}"):
        try:
            read_jsonl(batch_dir / REVIEWS_FILE, cut_torn_tail=True)  # a line cut off by a crash is removed first
        except RunRecordError as error:
            raise ReviewError(f"{error}; nothing recorded") from None
        append_jsonl(batch_dir / REVIEWS_FILE, [json_text(record.model_dump()) + "\n" for record in records])
    return records


@dataclass(frozen=True)
class ReviewStatus:
    """Where a batch's spot-check stands."""

    batch_id: str
    sampled: int
    reviewed: int
    accepted: int
    rejected: int
    unreviewed_ids: tuple[str, ...]
    rejected_ids: tuple[str, ...]
    max_rejection_rate: float
    queued: bool
    """False when the batch has no review queue (nothing was ever put up for review)."""

    @property
    def rejection_rate(self) -> float | None:
        """Rejected share of the reviewed examples; None before any review."""
        return self.rejected / self.reviewed if self.reviewed else None

    @property
    def complete(self) -> bool:
        return self.queued and not self.unreviewed_ids

    @property
    def passed(self) -> bool:
        """Every sampled example reviewed, and no more rejected than the threshold allows."""
        rate = self.rejection_rate
        return self.complete and (rate is None or rate <= self.max_rejection_rate)

    @property
    def reason(self) -> str:
        if not self.queued:
            return "no review queue"
        if self.unreviewed_ids:
            return f"{len(self.unreviewed_ids)} of {self.sampled} sampled examples not reviewed"
        rate = self.rejection_rate
        if rate is not None and rate > self.max_rejection_rate:
            return f"rejection rate {rate:.1%} above the allowed {self.max_rejection_rate:.1%}"
        return "reviewed" if self.sampled else "nothing kept, nothing to review"

    def as_dict(self) -> dict[str, object]:
        return {
            "batch_id": self.batch_id,
            "sampled": self.sampled,
            "reviewed": self.reviewed,
            "accepted": self.accepted,
            "rejected": self.rejected,
            "rejection_rate": self.rejection_rate,
            "max_rejection_rate": self.max_rejection_rate,
            "unreviewed_ids": list(self.unreviewed_ids),
            "rejected_ids": list(self.rejected_ids),
            "passed": self.passed,
            "reason": self.reason,
        }


def current_decisions(decisions: Sequence[ReviewDecision]) -> dict[str, dict[str, ReviewDecision]]:
    """example id → reviewer → that reviewer's latest decision (a later line supersedes an earlier one)."""
    latest: dict[str, dict[str, ReviewDecision]] = {}
    for decision in decisions:
        latest.setdefault(decision.item, {})[decision.reviewer] = decision
    return latest


def review_status(batch_dir: Path, *, max_rejection_rate: float) -> ReviewStatus:
    """The batch's review status from its queue and its decision log."""
    queue = read_review_queue(batch_dir)
    latest = current_decisions(read_decisions(batch_dir))
    sample = queue or []
    rejected = [
        example_id for example_id in sample if any(d.decision == "reject" for d in latest.get(example_id, {}).values())
    ]
    reviewed = [example_id for example_id in sample if latest.get(example_id)]
    return ReviewStatus(
        batch_id=batch_dir.name,
        sampled=len(sample),
        reviewed=len(reviewed),
        accepted=len(reviewed) - len(rejected),
        rejected=len(rejected),
        unreviewed_ids=tuple(example_id for example_id in sample if not latest.get(example_id)),
        rejected_ids=tuple(rejected),
        max_rejection_rate=max_rejection_rate,
        queued=queue is not None,
    )
