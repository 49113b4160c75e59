"""An environment: identity, typed config, data part, verifier, episode kind and rule baselines, composed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sv_shared.config.sections import EnvConfig
from sv_shared.contracts.data import EnvironmentData
from sv_shared.contracts.episodes import Dialogue, EpisodeKind, SingleTurn
from sv_shared.contracts.types import Baseline
from sv_shared.contracts.verifier import CompletionVerifier, DialogueVerifier, Verifier


@dataclass(frozen=True)
class Environment:
    """One executable security environment. Plain Python (no Dagster): the orchestration layer calls its parts.

    Built in one place per environment (its `env` module's `build`), registered in sv_shared.registry."""

    env_id: str
    """Short id used in partitions and configs: e1 … e6."""
    name: str
    """Package-style name used in artifact paths: sv-env-…"""
    config: EnvConfig
    data: EnvironmentData
    verifier: Verifier
    episodes: EpisodeKind
    baselines: Mapping[str, Baseline] = field(default_factory=dict)
    """Rule baselines this environment offers, by registry model id."""

    def __post_init__(self) -> None:
        if isinstance(self.episodes, Dialogue) != isinstance(self.verifier, DialogueVerifier):
            raise TypeError(f"{self.name}: dialogue episodes need a DialogueVerifier, and only they do")
        if isinstance(self.episodes, SingleTurn) and not isinstance(self.verifier, CompletionVerifier):
            raise TypeError(f"{self.name}: single-turn episodes need a CompletionVerifier")

    def generation_params(self) -> dict[str, Any]:
        """Default generation parameters of the model under evaluation (a model's own params override them)."""
        return self.config.generation.as_dict()
