"""A report's answers against the split (collapse onto one label, the answer profile table) and the promotion state
of the checkpoints it shows."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from secverify_dagster.reports.runs import RunView
from secverify_dagster.training.paths import TrainingPaths
from secverify_dagster.training.statuses import checkpoint_rows
from sv_shared.answers.collapse import COLLAPSE_EXCESS, COLLAPSE_SHARE, shares_text


def collapse_lines(runs: Sequence[RunView]) -> list[str]:
    """Right under the title: every model whose answers collapsed onto one label, in words nobody can miss."""
    flagged = [run for run in runs if (run.metrics.get("answers") or {}).get("collapsed")]
    return [f"**{run.model_id}: {run.metrics['answers']['collapse']}**" for run in flagged] + ([""] if flagged else [])


def answer_lines(runs: Sequence[RunView]) -> list[str]:
    """Each model's answers against the split's labels: distribution, distinct answers, per-class recall, balanced
    accuracy and agreement with the best constant strategy."""
    profiled = [run for run in runs if (run.metrics.get("answers") or {}).get("n")]
    if not profiled:
        return []
    lines = [
        "",
        "## Answers against the split",
        "",
        "| model | answers | split | distinct answers | distinct confidences | recall per class | balanced acc. "
        "| agrees with best constant | collapsed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run in profiled:
        p = run.metrics["answers"]
        shares, split = shares_text(p["answers"]), shares_text(p["split"])
        recall = ", ".join(f"{label} {value:.2f}" for label, value in p["recall"].items())
        constant = p["best_constant"]
        confidences = "–" if p["distinct_confidences"] is None else p["distinct_confidences"]
        lines.append(
            f"| {run.model_id} | {shares} | {split} | {p['distinct_answers']} | {confidences} | {recall} | "
            f"{p['balanced_accuracy']:.3f} | always {constant['answer']}: {constant['agreement']:.0%} | "
            f"{'**yes**' if p['collapsed'] else 'no'} |"
        )
    lines += [
        "",
        "Best constant: the split's most common label on every item. Collapsed: one answer on at least "
        f"{COLLAPSE_SHARE:.0%} of items, at least {COLLAPSE_EXCESS * 100:.0f} points above that label's share of the "
        "split.",
    ]
    return lines


def checkpoint_lines(runs: Sequence[RunView], outputs_root: Path) -> list[str]:
    """Which of the report's models are checkpoints, and whether each is promoted, unpromoted, collapsed or failed
    its safety scan."""
    shown = {run.model_id for run in runs}
    rows = [row for row in checkpoint_rows(TrainingPaths(outputs_root)) if row["model_id"] in shown]
    if not rows:
        return []
    return [
        "",
        "## Checkpoints: promotion",
        "",
        "| checkpoint | stage | parent | state | why |",
        "|---|---|---|---|---|",
        *(
            f"| {row['model_id']} | {row['stage']} | {row['parent_model']} | {row['state']} | {row['promotion']} |"
            for row in rows
        ),
    ]
