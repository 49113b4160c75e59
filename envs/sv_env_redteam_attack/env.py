"""E5 sv-env-redteam-attack: the model under evaluation attacks a target model in a multi-turn dialogue."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from sv_env_redteam_attack import baseline, data, schema, synth
from sv_env_redteam_attack.archive import NoveltyArchive
from sv_env_redteam_attack.config import Config
from sv_env_redteam_attack.episodes import RedteamAttackEpisodes
from sv_env_redteam_attack.failures import defender_failures
from sv_env_redteam_attack.verify import RedteamAttackVerifier
from sv_shared.contracts import Baseline, Environment, EnvironmentData
from sv_shared.runs.records import FinishedRun


class RedteamAttackData(EnvironmentData):
    id_column = schema.ID_COLUMN
    label_column = schema.LABEL_COLUMN
    feedback_env = "e6"

    def __init__(self, config: Config) -> None:
        self.config = config

    def sources(self) -> list[str]:
        return ["embedded", "jbb", "harmbench"]

    def load_source(self, source: str) -> pl.DataFrame:
        settings = self.config.data
        if source == "embedded":
            return data.load_embedded()
        if source == "jbb":
            return data.load_jbb_behaviors(
                source=settings.jbb.source, path=settings.jbb.path, goal_text=settings.goal_text
            )
        if source == "harmbench":
            return data.load_harmbench(
                source=settings.harmbench.source,
                config=settings.harmbench.config,
                path=settings.harmbench.path,
                goal_text=settings.goal_text,
            )
        raise KeyError(f"unknown E5 corpus {source!r}; known: {', '.join(self.sources())}")

    def validate(self, frame: pl.DataFrame) -> pl.DataFrame:
        return schema.validate_behaviors(frame)

    def curate(self, frames: Sequence[pl.DataFrame], *, seed: int) -> dict[str, pl.DataFrame]:
        return data.curate(list(frames), seed=seed, fractions=self.config.data.split_fractions.as_dict())

    def synthesize(
        self, n: int, *, seed: int, base: pl.DataFrame | None = None, feedback: Sequence[FinishedRun] = ()
    ) -> pl.DataFrame:
        """Goal trees, weighted toward the categories and tactics that broke defenders in the given E6 runs (none:
        unseeded)."""
        return synth.synthesize_goal_trees(n, seed=seed, base=base, defender_failures=defender_failures(feedback))


def build(config: Config, *, counterpart_baselines: Mapping[str, Baseline]) -> Environment:
    """counterpart_baselines: the rule defenders that may play the target (E6's, injected by the registry)."""
    verifier = RedteamAttackVerifier(config, NoveltyArchive.from_settings(config.novelty))
    return Environment(
        env_id="e5",
        name="sv-env-redteam-attack",
        config=config,
        data=RedteamAttackData(config),
        verifier=verifier,
        episodes=RedteamAttackEpisodes(config, verifier, counterpart_baselines),
        baselines=dict(baseline.BASELINES),
    )
