"""A baseline's figures on each split and each combination of missing field groups (sv_env_network_logs.views), and
on logs that record only a connection's endpoints: what `bench/bench_e1_fields.py` prints and E1's report can show.

Accuracy, F1 and balanced accuracy are intent-to-treat (an abstention counts as a wrong answer); abstention and recall
are given per true class, so a baseline that abstains on one class (and so never catches it) shows it. Calibration
(mean confidence, ECE, Brier) is over the answered flows, beside the Brier the same labels would score at confidence 1:
the reward pays calibration as 1 - Brier, so confidences whose Brier is above that bar earn less than stating
certainty on every answer would (the hole tests/test_reward_hacking.py looks for).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from sv_env_network_logs.views import ENDPOINT_FIELDS, ablate_together, combined_name, keep_only, missing_groups
from sv_shared.answers.classification import ABSTAIN
from sv_shared.contracts import Environment

SPLITS: tuple[str, ...] = ("train", "dev", "test")
CLASSES: tuple[str, ...] = ("Benign", "Malicious")
ENDPOINTS_ONLY = "endpoints only"
ENDPOINTS_AND_STATE = "endpoints + conn_state"


@dataclass(frozen=True)
class ViewFigures:
    """One baseline on one split seen through one view."""

    split: str
    view: str
    n: int
    reward: float
    accuracy: float
    f1: float | None
    balanced_accuracy: float
    abstention: Mapping[str, float]
    """True class → share of its flows answered "Abstain"."""
    recall: Mapping[str, float]
    """True class → share of its flows answered with that class."""
    mean_confidence: float | None
    ece: float | None
    brier: float | None
    brier_at_certainty: float | None
    """The Brier score of the same answers at confidence 1: the share of answered flows answered wrong."""


def views_of(frame: pl.DataFrame) -> Iterator[tuple[str, pl.DataFrame]]:
    """The frame with each combination of field groups missing (the full split first), then with only its endpoints
    recorded, and with its endpoints and Zeek's conn_state."""
    for missing in missing_groups():
        yield combined_name(missing), ablate_together(frame, missing)
    yield ENDPOINTS_ONLY, keep_only(frame, ENDPOINT_FIELDS)
    yield ENDPOINTS_AND_STATE, keep_only(frame, (*ENDPOINT_FIELDS, "conn_state"))


def measure(
    env: Environment, answer: Callable[[Mapping[str, Any]], str], frame: pl.DataFrame, *, split: str, view: str
) -> ViewFigures:
    """Score `answer` (an observation → completion function) on every flow of `frame` with the env's verifier."""
    items = frame.to_dicts()
    scored = [env.verifier.score(item, answer(env.episodes.observation(item))) for item in items]
    records = [
        {"id": s.item_id, "reward": s.reward, "components": s.components, "parsed": s.parsed, "error": s.error}
        for s in scored
    ]
    metrics = env.verifier.aggregate(records, {item["flow_id"]: item for item in items})
    given = [s.parsed["label"] if s.parsed else None for s in scored]
    truths = [item["label"] for item in items]

    def share(label: str, answered: str) -> float:
        flows = [given_label for given_label, truth in zip(given, truths, strict=True) if truth == label]
        return sum(given_label == answered for given_label in flows) / len(flows) if flows else 0.0

    present = [label for label in CLASSES if label in truths]
    answered = [
        (sample.parsed["confidence"], given_label == truth)
        for sample, given_label, truth in zip(scored, given, truths, strict=True)
        if given_label in CLASSES
    ]
    return ViewFigures(
        split=split,
        view=view,
        n=len(items),
        reward=metrics["reward"]["mean"],
        accuracy=metrics["accuracy"],
        f1=metrics["rates"]["itt"]["f1"],
        balanced_accuracy=metrics["answers"]["balanced_accuracy"],
        abstention={label: share(label, ABSTAIN) for label in present},
        recall={label: share(label, label) for label in present},
        mean_confidence=sum(confidence for confidence, _ in answered) / len(answered) if answered else None,
        ece=metrics["ece"],
        brier=metrics["brier"],
        brier_at_certainty=sum(not right for _, right in answered) / len(answered) if answered else None,
    )


def baseline_figures(
    env: Environment, splits: Mapping[str, pl.DataFrame], *, baseline: str = "heuristic"
) -> list[ViewFigures]:
    """The named baseline's figures on each of SPLITS that `splits` holds, through every view of views_of."""
    answer = env.baselines[baseline]
    return [
        measure(env, answer, viewed, split=split, view=view)
        for split in SPLITS
        if split in splits
        for view, viewed in views_of(splits[split])
    ]
