"""E1 verifier: parse the JSON answer, score it against the flow's label, aggregate a run's metrics."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sv_shared.classification import ABSTAIN, DetectionTask
from sv_shared.contracts import ScoredSample
from sv_shared.costs import CostTable
from sv_shared.parsing import JsonClassificationParser
from sv_shared.rewards import RewardWeights

ANSWER_LABELS = ("Benign", "Malicious", ABSTAIN)
PARSER = JsonClassificationParser(labels=ANSWER_LABELS)


def detection_task(config: Mapping[str, Any]) -> DetectionTask:
    return DetectionTask(
        positive_label="Malicious",
        negative_label="Benign",
        costs=CostTable.from_config(config["costs"]),
        weights=RewardWeights.from_config(config["reward_weights"]),
    )


def score_completion(task: DetectionTask, item_id: str, truth_label: str, completion: str) -> ScoredSample:
    parsed = PARSER.parse(completion)
    components = task.components(truth_label, parsed)
    return ScoredSample(
        item_id=item_id,
        reward=task.weights.combine(components),
        components=components,
        parsed=parsed.output,
        error=parsed.error,
    )
