"""E1 sv-env-network-logs: calibrated anomaly detection on network flow records."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from sv_env_network_logs import baseline, data, prompts, schema, synth, verify
from sv_shared.contracts import Baseline, Environment, Item, Message, ParseResult, ScoredSample


class NetworkLogsEnvironment(Environment):
    env_id = "e1"
    name = "sv-env-network-logs"
    verifier_version = "e1-verifier-1"
    id_column = "flow_id"

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self.task = verify.detection_task(self.config)

    def sources(self) -> list[str]:
        return ["embedded", "iot23", "cicids2017", "unswnb15"]

    def load_source(self, source: str) -> pl.DataFrame:
        settings = self.config.get("data", {})
        if source == "embedded":
            return data.load_embedded()
        if source == "iot23":
            iot23 = settings.get("iot23", {})
            return data.load_iot23(
                iot23.get("source", "19kmunz/iot-23-preprocessed"), split=iot23.get("split", "train")
            )
        if source in ("cicids2017", "unswnb15"):
            path = settings.get(source, {}).get("path")
            if not path:
                raise FileNotFoundError(
                    f"{source} has no local mirror configured: set data.{source}.path in configs/envs/e1.yaml"
                )
            loader = data.load_cicids2017 if source == "cicids2017" else data.load_unswnb15
            return loader(Path(path))
        raise KeyError(f"unknown E1 corpus {source!r}; known: {', '.join(self.sources())}")

    def validate(self, frame: pl.DataFrame) -> pl.DataFrame:
        return schema.validate_flows(frame)

    def curate(self, frames: Sequence[pl.DataFrame], *, seed: int) -> dict[str, pl.DataFrame]:
        fractions = self.config.get("data", {}).get("split_fractions", {"train": 0.7, "dev": 0.15, "test": 0.15})
        return data.curate(list(frames), seed=seed, fractions=fractions)

    def synthesize(self, n: int, *, seed: int, base: pl.DataFrame | None = None) -> pl.DataFrame:
        settings = self.config.get("synthetic", {})
        return synth.generate(
            n,
            seed,
            base,
            malicious_share=float(settings.get("malicious_share", 0.5)),
            perturb_share=float(settings.get("perturb_share", 0.3)) if base is not None else 0.0,
        )

    def observation(self, item: Item) -> dict[str, Any]:
        return {column: item.get(column) for column in schema.FEATURE_COLUMNS}

    def messages(self, item: Item) -> list[Message]:
        return prompts.build_messages(self.observation(item))

    def parse(self, completion: str) -> ParseResult:
        return verify.PARSER.parse(completion)

    def score(self, item: Item, completion: str) -> ScoredSample:
        return verify.score_completion(self.task, item[self.id_column], item["label"], completion)

    def aggregate(self, records: Sequence[Mapping[str, Any]], items: Mapping[str, Item]) -> dict[str, Any]:
        truths = {item_id: item["label"] for item_id, item in items.items()}
        return self.task.aggregate(records, truths, seed=int(self.config.get("eval", {}).get("seed", 42)))

    def report_columns(self) -> list[tuple[str, str]]:
        return [
            ("accuracy", "accuracy"),
            ("F1", "f1"),
            ("FNR", "fnr"),
            ("FPR", "fpr"),
            ("abstain", "abstention_rate"),
            ("format fail", "format_failure_rate"),
            ("ECE", "ece"),
            ("Brier", "brier"),
            ("AURC", "aurc"),
            ("cost-wtd error", "cost_weighted_error"),
        ]

    def baselines(self) -> dict[str, Baseline]:
        return {"heuristic": baseline.heuristic_answer}
