"""What a reviewer reads: one queued example shown whole, and the batch's review.md (queue, decisions, status).

Dialogue environments (E5, E6) hold attack and defence text: every text shown goes through the storage screen first,
and what it flags is replaced by its redaction marker (sv_shared.judging.redaction), as everywhere else text is
stored or shown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from sv_shared.contracts import DialogueVerifier, Environment
from sv_shared.data.files import exclusive, json_text, write_text_atomic
from sv_shared.data.review import REVIEW_QUEUE_FILE, ReviewError, read_review_queue
from sv_shared.data.review_batches import KeptExample, SyntheticBatch
from sv_shared.data.review_decisions import (
    REVIEW_LOCK_FILE,
    REVIEW_LOCK_WAIT_S,
    ReviewStatus,
    current_decisions,
    read_decisions,
    review_status,
)
from sv_shared.execution.dialogue import screen_for_storage
from sv_shared.judging.redaction import redact
from sv_shared.judging.verdict import Exchange

REVIEW_REPORT_FILE: Final = "review.md"


def _shown_texts(env: Environment, texts: list[str]) -> list[str]:
    """The texts as a reviewer may see them: screened and redacted in the dialogue environments."""
    if not isinstance(env.verifier, DialogueVerifier):
        return texts
    exchanges = [Exchange(request=texts[index - 1] if index else "", response=text) for index, text in enumerate(texts)]
    return [redact(text, verdict) for text, verdict in zip(texts, screen_for_storage(exchanges), strict=True)]


def _gold(env: Environment, items: list[dict[str, Any]], item_id: str) -> tuple[str, str | None]:
    for item in items:
        if str(item.get(env.data.id_column)) == item_id:
            label = item.get(env.data.label_column)
            reference = env.verifier.reference_answer(item) if not isinstance(env.verifier, DialogueVerifier) else None
            return json_text(label), reference
    return "(item not in the batch's items.parquet)", None


def show_example(env: Environment, batch: SyntheticBatch, example_id: str) -> str:
    """One queued example as plain text: its prompt, the completion, the verifier's reward and the item's gold."""
    queue = read_review_queue(batch.path) or []
    if example_id not in queue:
        raise ReviewError(f"{example_id!r} is not in the review queue of batch {batch.batch_id}")
    example: KeptExample | None = batch.kept_by_id().get(example_id)
    if example is None:
        raise ReviewError(f"{example_id!r} is queued but missing from {batch.path / 'kept.jsonl'}")
    shown = _shown_texts(env, [message.content for message in example.prompt] + [example.completion])
    gold, reference = _gold(env, batch.items(), example.item_id)
    lines = [
        f"example {example.id} (item {example.item_id}, batch {batch.batch_id}, {env.env_id})",
        f"reward {example.reward:.3f}"
        + (f", temperature {example.temperature:g}" if example.temperature is not None else ""),
        f"gold {env.data.label_column}: {gold}",
    ]
    if reference is not None:
        lines.append(f"reference answer: {reference}")
    for message, text in zip(example.prompt, shown[:-1], strict=True):
        lines += ["", f"--- {message.role} ---", text]
    lines += ["", "--- completion ---", shown[-1]]
    decisions = current_decisions(read_decisions(batch.path)).get(example.id, {})
    lines.append("")
    for reviewer, decision in sorted(decisions.items()):
        lines.append(
            f"{decision.decision} by {reviewer} at {decision.at}" + (f": {decision.note}" if decision.note else "")
        )
    if not decisions:
        lines.append("not reviewed yet")
    return "\n".join(lines)


def _cell(value: object) -> str:
    return " ".join(str(value).split()).replace("|", "\\|") or "-"


def render_review_report(batch: SyntheticBatch, status: ReviewStatus) -> str:
    """review.md: the batch, its review status, and every queued example with its reviewers' current decisions."""
    info = batch.info
    kept = {example.id: example for example in batch.kept()}
    latest = current_decisions(read_decisions(batch.path))
    rate = status.rejection_rate
    lines = [
        f"# Review of synthetic batch {batch.batch_id}",
        "",
        f"- environment: {info.get('env', '-')}; model: {info.get('model', '-')}; "
        f"created: {info.get('created_at', '-')}",
        f"- kept examples: {len(kept)}; sampled for review: {status.sampled} ({REVIEW_QUEUE_FILE})",
        f"- reviewed: {status.reviewed}; accepted: {status.accepted}; rejected: {status.rejected}; "
        f"rejection rate: {'-' if rate is None else f'{rate:.1%}'} (allowed: {status.max_rejection_rate:.1%})",
        f"- status: **{'PASSED' if status.passed else 'NOT PASSED'}**: {status.reason}",
        "",
        "| # | example | item | reward | decisions (reviewer: decision, at, note) |",
        "|---|---|---|---|---|",
    ]
    for rank, example_id in enumerate(read_review_queue(batch.path) or [], start=1):
        example = kept.get(example_id)
        decided = "; ".join(
            f"{reviewer}: {d.decision}, {d.at}" + (f", {d.note}" if d.note else "")
            for reviewer, d in sorted(latest.get(example_id, {}).items())
        )
        lines.append(
            f"| {rank} | {_cell(example_id)} | {_cell(example.item_id if example else 'missing')} | "
            f"{'-' if example is None else f'{example.reward:.3f}'} | {_cell(decided or 'not reviewed')} |"
        )
    lines += ["", f"Review with `secverify review --env {info.get('env', '<env>')} --batch {batch.batch_id} list`."]
    return "\n".join(lines) + "\n"


def write_review_report(batch: SyntheticBatch, *, max_rejection_rate: float) -> tuple[Path, ReviewStatus]:
    """Write review.md from the queue and decisions as they stand, under the review lock, so the last writer always
    sees every decision recorded before it (replaced atomically: a reader never sees half a report)."""
    lock = batch.path / REVIEW_LOCK_FILE
    with exclusive(lock, wait_s=REVIEW_LOCK_WAIT_S, what=f"reviews of batch {batch.batch_id}"):
        status = review_status(batch.path, max_rejection_rate=max_rejection_rate)
        path = batch.path / REVIEW_REPORT_FILE
        write_text_atomic(path, render_review_report(batch, status))
    return path, status
