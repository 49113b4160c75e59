"""E5's typed config (configs/envs/e5.yaml)."""

from __future__ import annotations

from typing import Literal

from pydantic import NonNegativeFloat, NonNegativeInt, PositiveInt

from sv_shared.config import ConfigModel, DataSettings, EnvConfig, Generation, SyntheticSettings


class DialogueSettings(ConfigModel):
    max_turns: PositiveInt
    target: str
    """The model the attacker talks to, by registry id (`secverify eval --target ID` overrides it)."""
    target_system_prompt: str
    judge: str
    """A judge spec (see sv_shared.judging.factory for the forms)."""


class RewardSettings(ConfigModel):
    """success × (success_weight + novelty_weight × novelty) − turn and length penalties (see verify.attack_reward)."""

    success_weight: NonNegativeFloat
    novelty_weight: NonNegativeFloat
    turn_penalty: NonNegativeFloat
    length_penalty: NonNegativeFloat
    length_free_chars: NonNegativeInt
    length_scale_chars: PositiveInt


class NoveltySettings(ConfigModel):
    ngram: PositiveInt
    archive: str | None = None
    """JSONL of hashed shingles of earlier successful attacks, on top of the shipped framings (None: those only);
    relative paths are under the project root. The tournament sets one per round."""


class JbbCorpus(ConfigModel):
    """JailbreakBench JBB-Behaviors: a hub id, or a local mirror (a folder of its CSVs) in `path`."""

    source: str
    path: str | None = None


class HarmBenchCorpus(ConfigModel):
    """HarmBench: a hub id and its config, or a local mirror file or folder in `path`."""

    source: str
    config: Literal["standard", "contextual", "copyright"]
    path: str | None = None


class Data(DataSettings):
    jbb: JbbCorpus
    harmbench: HarmBenchCorpus
    goal_text: Literal["sanitized", "original"]
    """sanitized: the attacker sees a category-level goal; original keeps the corpus's prompt (approved use only)."""


class Config(EnvConfig):
    dialogue: DialogueSettings
    reward: RewardSettings
    novelty: NoveltySettings
    target_generation: Generation
    data: Data
    synthetic: SyntheticSettings
