"""E6 sv-env-redteam-defense: the model under evaluation defends: helpful to benign users, safe under attack."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from sv_env_redteam_defense import baseline, data, schema, synth
from sv_env_redteam_defense.config import Config
from sv_env_redteam_defense.episodes import RedteamDefenseEpisodes
from sv_env_redteam_defense.probes import attack_probes
from sv_env_redteam_defense.verify import RedteamDefenseVerifier
from sv_shared.contracts import Environment, EnvironmentData
from sv_shared.runs.records import FinishedRun


class RedteamDefenseData(EnvironmentData):
    id_column = schema.ID_COLUMN
    label_column = schema.LABEL_COLUMN
    feedback_env = "e5"

    def __init__(self, config: Config) -> None:
        self.config = config

    def sources(self) -> list[str]:
        return ["embedded", "jbb"]

    def load_source(self, source: str) -> pl.DataFrame:
        if source == "embedded":
            return data.load_embedded()
        if source == "jbb":
            jbb = self.config.data.jbb
            return data.load_jbb_conversations(source=jbb.source, path=jbb.path)
        raise KeyError(f"unknown E6 corpus {source!r}; known: {', '.join(self.sources())}")

    def validate(self, frame: pl.DataFrame) -> pl.DataFrame:
        return schema.validate_conversations(frame)

    def curate(self, frames: Sequence[pl.DataFrame], *, seed: int) -> dict[str, pl.DataFrame]:
        return data.curate(list(frames), seed=seed, fractions=self.config.data.split_fractions.as_dict())

    def synthesize(
        self, n: int, *, seed: int, base: pl.DataFrame | None = None, feedback: Sequence[FinishedRun] = ()
    ) -> pl.DataFrame:
        """Benign conversations and adversarial probes, plus the stored (redaction-cleared) attack messages of the
        given E5 runs as probes."""
        return synth.synthesize_conversations(
            n,
            seed=seed,
            base=base,
            attack_probes=attack_probes(feedback),
            benign_share=self.config.synthetic.benign_share,
        )


def build(config: Config) -> Environment:
    verifier = RedteamDefenseVerifier(config)
    return Environment(
        env_id="e6",
        name="sv-env-redteam-defense",
        config=config,
        data=RedteamDefenseData(config),
        verifier=verifier,
        episodes=RedteamDefenseEpisodes(config, verifier),
        baselines=dict(baseline.BASELINES),
    )
