"""E1 verifier: parse the JSON answer, score it against the flow's label, aggregate a run's metrics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sv_env_network_logs.config import Config
from sv_shared.answers.classification import ABSTAIN, DETECTION_REPORT_COLUMNS, DetectionTask
from sv_shared.answers.costs import CostTable
from sv_shared.answers.parsing import JsonClassificationParser
from sv_shared.answers.rewards import RewardWeights
from sv_shared.contracts import CompletionVerifier, Item, ParseResult, ScoredSample

ANSWER_LABELS = ("Benign", "Malicious", ABSTAIN)
PARSER = JsonClassificationParser(labels=ANSWER_LABELS)
ID_COLUMN = "flow_id"


def detection_task(config: Config) -> DetectionTask:
    return DetectionTask(
        positive_label="Malicious",
        negative_label="Benign",
        costs=CostTable(**config.costs.as_dict()),
        weights=RewardWeights(config.reward_weights.as_mapping()),
    )


class NetworkLogsVerifier(CompletionVerifier):
    """Accuracy, calibration, asymmetric cost and format of a {"label", "confidence", "rationale"} answer."""

    version = "e1-verifier-2"

    def __init__(self, config: Config) -> None:
        self.task = detection_task(config)
        self.bootstrap_seed = config.eval.seed

    def parse(self, completion: str) -> ParseResult:
        return PARSER.parse(completion)

    def score(self, item: Item, completion: str) -> ScoredSample:
        parsed = self.parse(completion)
        components = self.task.components(item["label"], parsed)
        return ScoredSample(
            item_id=item[ID_COLUMN],
            reward=self.task.weights.combine(components),
            components=components,
            parsed=parsed.output,
            error=parsed.error,
        )

    def aggregate(self, records: Sequence[Mapping[str, Any]], items: Mapping[str, Item]) -> dict[str, Any]:
        truths = {item_id: item["label"] for item_id, item in items.items()}
        return self.task.aggregate(records, truths, seed=self.bootstrap_seed)

    def report_columns(self) -> list[tuple[str, str]]:
        return list(DETECTION_REPORT_COLUMNS)
