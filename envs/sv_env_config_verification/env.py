"""E2 sv-env-config-verification: find and fix misconfigurations in Kubernetes manifests and Terraform modules,
verified by re-running the scanners (the oracle) on the model's patch.

The oracle is the verifier's tool; the data loaders (which label corpora with it), the tool-oracle baseline and
the tool episodes reach it through the verifier, so one environment starts the scanners at most once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from sv_env_config_verification import baseline, data, schema, synth
from sv_env_config_verification.config import Config
from sv_env_config_verification.data import Scanner
from sv_env_config_verification.episodes import ConfigEpisodes
from sv_env_config_verification.rollout import Budget
from sv_env_config_verification.verify import ID_COLUMN, ConfigVerifier
from sv_shared.contracts import Environment, EnvironmentData
from sv_shared.runs.records import FinishedRun

if TYPE_CHECKING:
    from sv_env_config_verification.oracle import Oracle


class ConfigVerificationData(EnvironmentData):
    id_column = ID_COLUMN

    def __init__(self, config: Config, oracle: Callable[[], Scanner]) -> None:
        self.config = config
        self.oracle = oracle

    def sources(self) -> list[str]:
        return ["embedded", "genkubesec", "k8s_policy_samples", "terraform"]

    def load_source(self, source: str) -> pl.DataFrame:
        settings = self.config.data
        if source == "embedded":
            return data.load_embedded()
        if source == "genkubesec":
            genkubesec = settings.genkubesec
            return data.load_genkubesec(
                genkubesec.source, split=genkubesec.split, limit=genkubesec.limit, oracle=self.oracle()
            )
        if source in ("k8s_policy_samples", "terraform"):
            path = getattr(settings, source).path
            if not path:
                raise FileNotFoundError(
                    f"{source} has no local mirror configured: set data.{source}.path in configs/envs/e2.yaml"
                )
            if source == "terraform":
                return data.load_terraform_dir(Path(path), per=settings.terraform.per, oracle=self.oracle())
            return data.load_manifest_dir(Path(path), oracle=self.oracle())
        raise KeyError(f"unknown E2 corpus {source!r}; known: {', '.join(self.sources())}")

    def validate(self, frame: pl.DataFrame) -> pl.DataFrame:
        return schema.validate_items(frame)

    def curate(self, frames: Sequence[pl.DataFrame], *, seed: int) -> dict[str, pl.DataFrame]:
        return data.curate(list(frames), seed=seed, fractions=self.config.data.split_fractions.as_dict())

    def synthesize(
        self, n: int, *, seed: int, base: pl.DataFrame | None = None, feedback: Sequence[FinishedRun] = ()
    ) -> pl.DataFrame:
        """n oracle-confirmed vulnerable variants of the secure configs in `base` (default: the embedded corpus)."""
        return synth.generate(base if base is not None else data.load_embedded(), n, seed, self.oracle())


def build(config: Config, *, oracle: Oracle | None = None) -> Environment:
    """E2 from its config; `oracle` replaces the scanners built on first use (tests, benchmarks)."""
    verifier = ConfigVerifier(config, oracle=oracle)

    def shared_oracle() -> Oracle:
        return verifier.oracle

    return Environment(
        env_id="e2",
        name="sv-env-config-verification",
        config=config,
        data=ConfigVerificationData(config, shared_oracle),
        verifier=verifier,
        episodes=ConfigEpisodes(verifier, Budget.from_config(config.tools)),
        baselines={"tool-oracle": baseline.tool_oracle(shared_oracle)},
    )
