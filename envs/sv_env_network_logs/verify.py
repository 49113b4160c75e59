"""E1 verifier: parse the JSON answer, score it against the flow's label, aggregate a run's metrics."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sv_env_network_logs.config import Config
from sv_shared.answers.classification import ABSTAIN, DETECTION_REPORT_COLUMNS, DetectionTask
from sv_shared.answers.costs import CostTable
from sv_shared.answers.parsing import JsonClassificationParser
from sv_shared.answers.rewards import configured_reward
from sv_shared.contracts import CompletionVerifier, Item, ParseResult, ScoredSample

ANSWER_LABELS = ("Benign", "Malicious", ABSTAIN)
PARSER = JsonClassificationParser(labels=ANSWER_LABELS)
ID_COLUMN = "flow_id"

REFERENCE_CONFIDENCE = 0.9
"""The confidence of the reference answers SFT teaches. Not 1.0: the gold label is certain, but the policy that learns
to copy these answers will not be right every time, and calibration is a Brier score (a wrong answer at 1.0 loses
all of it). 0.9 is a high, honest confidence for a detector that is usually right: it costs 0.01 calibration on a
right answer (0.002 of the reward) and keeps 0.19 on a wrong one, where 1.0 would keep none."""

SCENARIO_RATIONALES: dict[str, str] = {
    "benign": "ordinary traffic, no attack pattern",
    "port_scan": "probing many ports: a port scan",
    "brute_force": "repeated short logins: brute-force attempt",
    "c2_beaconing": "periodic check-ins: command-and-control beaconing",
    "exfiltration": "large outbound transfer: data exfiltration",
    "ddos": "flood of traffic: denial of service",
}
"""The reference rationale (at most 8 words, as the prompt asks) for each scenario the data tags a flow with."""


def detection_task(config: Config) -> DetectionTask:
    return DetectionTask(
        positive_label="Malicious",
        negative_label="Benign",
        costs=CostTable(**config.costs.as_dict()),
        weights=configured_reward(config),
    )


class NetworkLogsVerifier(CompletionVerifier):
    """Accuracy, calibration and format of a {"label", "confidence", "rationale"} answer, less the asymmetric cost of
    its error (a penalty: configs/envs/e1.yaml's reward_penalties)."""

    version = "e1-verifier-4"
    answers_are_labels = True
    reference_confidence: float = REFERENCE_CONFIDENCE

    def __init__(self, config: Config) -> None:
        self.task = detection_task(config)
        self.reward_floor = self.task.weights.floor
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

    def reference_answer(self, item: Item) -> str | None:
        """The item's label at REFERENCE_CONFIDENCE, with a short rationale from the scenario the data tags it with
        (never "Abstain": every item has a label)."""
        label = item.get("label")
        if label not in ("Benign", "Malicious"):
            return None
        rationale = SCENARIO_RATIONALES.get(str(item.get("scenario")))
        if rationale is None:
            family = item.get("attack_family")
            rationale = f"known attack traffic ({family})" if label == "Malicious" and family else "no attack pattern"
        return json.dumps({"label": label, "confidence": self.reference_confidence, "rationale": rationale})

    def aggregate(self, records: Sequence[Mapping[str, Any]], items: Mapping[str, Item]) -> dict[str, Any]:
        truths = {item_id: item["label"] for item_id, item in items.items()}
        return self.task.aggregate(records, truths, seed=self.bootstrap_seed)

    def report_columns(self) -> list[tuple[str, str]]:
        return list(DETECTION_REPORT_COLUMNS)
