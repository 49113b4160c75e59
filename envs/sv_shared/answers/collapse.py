"""A policy's answers against the split's labels: how varied they are, how each class is recalled, and whether the
policy has collapsed onto one answer.

A fine-tuned model can learn the format and one safe-looking label ("Benign" at 0.9 on 30 of 32 items) and still
gain reward. Its mean reward hides that; these figures do not. Every detection run's metrics carry them
(`metrics["answers"]`), so eval summaries, reports, trajectory pages and iteration notes show them, and a collapsed
checkpoint cannot be promoted.

The best constant strategy is the split's most common label given on every item (the constant with the highest
accuracy). A policy is collapsed when its most common answer covers at least COLLAPSE_SHARE of the items and at
least COLLAPSE_EXCESS more of them than that answer is right on: on a split where one label really is 95% of the
items, answering it 95% of the time is no collapse.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

COLLAPSE_SHARE = 0.9
"""The most common answer's share of items from which a policy can count as collapsed."""

COLLAPSE_EXCESS = 0.2
"""How far that share must exceed the label's share of the split."""

NO_ANSWER = "(no answer)"
"""The answer of an item whose completion did not parse."""


def _shares(counter: Counter[str], n: int) -> dict[str, float]:
    return {label: count / n for label, count in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))}


def answer_profile(
    answers: Sequence[str | None], truths: Sequence[str], confidences: Sequence[float | None] = ()
) -> dict[str, Any]:
    """The answer distribution against the split's, distinct answers and confidences, per-class recall, balanced
    accuracy, agreement with the best constant strategy, and the collapse verdict in words.

    answers[i] is item i's answer label (None: it did not parse; an abstention is its own label), truths[i] its
    true label, confidences[i] the stated confidence when there is one."""
    if len(answers) != len(truths):
        raise ValueError(f"{len(answers)} answers for {len(truths)} labels")
    n = len(truths)
    if n == 0:
        return {"n": 0, "collapsed": False, "collapse": None}
    given = [NO_ANSWER if answer is None else answer for answer in answers]
    answer_counts, truth_counts = Counter(given), Counter(truths)
    recall = {
        label: sum(1 for answer, truth in zip(given, truths, strict=True) if truth == label and answer == label) / count
        for label, count in sorted(truth_counts.items())
    }
    constant, constant_count = max(sorted(truth_counts.items()), key=lambda kv: kv[1])
    # Completions that did not parse are a format failure, reported as such, not an answer to collapse onto.
    real = sorted((label, count) for label, count in answer_counts.items() if label != NO_ANSWER)
    top, top_count = max(real, key=lambda kv: kv[1]) if real else (NO_ANSWER, 0)
    top_share, top_truth_share = top_count / n, truth_counts.get(top, 0) / n
    collapsed = len(truth_counts) > 1 and top_share >= COLLAPSE_SHARE and top_share - top_truth_share >= COLLAPSE_EXCESS
    balanced_accuracy = sum(recall.values()) / len(recall)
    stated = [confidence for confidence in confidences if confidence is not None]
    return {
        "n": n,
        "answers": _shares(answer_counts, n),
        "split": _shares(truth_counts, n),
        "distinct_answers": len(answer_counts),
        "distinct_confidences": len(set(stated)) if stated else None,
        "recall": recall,
        "balanced_accuracy": balanced_accuracy,
        "best_constant": {
            "answer": constant,
            "accuracy": constant_count / n,
            "agreement": answer_counts.get(constant, 0) / n,
        },
        "collapsed": collapsed,
        "collapse": (
            f"COLLAPSED: answers {top!r} on {top_share:.0%} of items, where the split has {top_truth_share:.0%} "
            f"{top!r}; balanced accuracy {balanced_accuracy:.2f}"
            if collapsed
            else None
        ),
    }


def shares_text(shares: dict[str, float]) -> str:
    """ "Benign 94%, Malicious 6%": label shares as a reader reads them."""
    return ", ".join(f"{label} {share:.0%}" for label, share in shares.items())


def profile_line(profile: dict[str, Any]) -> str:
    """One line for summaries and notes: answers vs split, distinct answers, balanced accuracy and agreement with the
    best constant (the collapse flag, profile["collapse"], goes on a line of its own above it)."""
    if not profile.get("n"):
        return "answers: none scored"
    shares, split = shares_text(profile["answers"]), shares_text(profile["split"])
    constant = profile["best_constant"]
    confidences = profile.get("distinct_confidences")
    return (
        f"answers {shares} (split: {split}); {profile['distinct_answers']} distinct answers"
        + (f", {confidences} distinct confidences" if confidences is not None else "")
        + f"; balanced accuracy {profile['balanced_accuracy']:.3f}; agrees with always {constant['answer']!r} on "
        f"{constant['agreement']:.0%}"
    )
