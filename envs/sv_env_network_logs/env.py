"""E1 sv-env-network-logs: calibrated anomaly detection on network flow records."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from sv_env_network_logs import baseline, data, prompts, schema, synth
from sv_env_network_logs import views as field_views
from sv_env_network_logs.config import Config
from sv_env_network_logs.verify import ID_COLUMN, NetworkLogsVerifier
from sv_shared.contracts import Environment, EnvironmentData, Item, Message, SingleTurn
from sv_shared.runs.records import FinishedRun


class NetworkLogsData(EnvironmentData):
    id_column = ID_COLUMN

    def __init__(self, config: Config) -> None:
        self.config = config

    def sources(self) -> list[str]:
        return ["embedded", "iot23", "cicids2017", "unswnb15"]

    def load_source(self, source: str) -> pl.DataFrame:
        settings = self.config.data
        if source == "embedded":
            return data.load_embedded()
        if source == "iot23":
            return data.load_iot23(settings.iot23.source, split=settings.iot23.split)
        if source in ("cicids2017", "unswnb15"):
            path = getattr(settings, source).path
            if not path:
                raise FileNotFoundError(
                    f"{source} has no local mirror configured: set data.{source}.path in configs/envs/e1.yaml"
                )
            loader = data.load_cicids2017 if source == "cicids2017" else data.load_unswnb15
            return loader(Path(path))
        raise KeyError(f"unknown E1 corpus {source!r}; known: {', '.join(self.sources())}")

    def validate(self, frame: pl.DataFrame) -> pl.DataFrame:
        return schema.validate_flows(frame)

    views: tuple[str, ...] = field_views.ABLATED_VIEWS
    """Feature-ablated views of any split (sv_env_network_logs.views), each an eval dataset of its own."""

    def view(self, frame: pl.DataFrame, name: str) -> pl.DataFrame:
        """The frame's flows with the fields the named view hides set to null (ids and labels kept)."""
        return field_views.ablate(frame, name)

    def curate(self, frames: Sequence[pl.DataFrame], *, seed: int) -> dict[str, pl.DataFrame]:
        return data.curate(list(frames), seed=seed, fractions=self.config.data.split_fractions.as_dict())

    def synthesize(
        self, n: int, *, seed: int, base: pl.DataFrame | None = None, feedback: Sequence[FinishedRun] = ()
    ) -> pl.DataFrame:
        settings = self.config.synthetic
        return synth.generate(
            n,
            seed,
            base,
            malicious_share=settings.malicious_share,
            perturb_share=settings.perturb_share if base is not None else 0.0,
        )


class NetworkLogsEpisodes(SingleTurn):
    def observation(self, item: Item) -> dict[str, Any]:
        return {column: item.get(column) for column in schema.FEATURE_COLUMNS}

    def messages(self, item: Item) -> list[Message]:
        return prompts.build_messages(self.observation(item))


def build(config: Config) -> Environment:
    flows = NetworkLogsData(config)

    def embedded_splits() -> dict[str, pl.DataFrame]:
        """The embedded corpus curated as evals curate it; the heuristic fits on its train split alone."""
        return flows.curate([flows.load_source("embedded")], seed=config.eval.seed)

    return Environment(
        env_id="e1",
        name="sv-env-network-logs",
        config=config,
        data=flows,
        verifier=NetworkLogsVerifier(config),
        episodes=NetworkLogsEpisodes(),
        baselines={"heuristic": baseline.HeuristicBaseline(embedded_splits)},
    )
