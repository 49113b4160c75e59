"""Typed config sections every environment shares; each environment's config model (its `config` module) extends
`EnvConfig` with its own reward weights, corpora and settings.

The models are strict and closed: a string where a number belongs, or a key the model does not know, is an error,
not a silent default. Values live in configs/envs/<env>.yaml; a default here exists only where a key may be left
out of every file (optional corpora, optional settings).
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, PositiveInt, model_validator

from sv_shared.data.splits import validate_fractions


class ConfigModel(BaseModel):
    """Strict (no string-to-number coercion), closed (unknown keys fail) and immutable."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values, as stored in run metadata and hashed into run fingerprints."""
        return self.model_dump(mode="json")


class Generation(ConfigModel):
    """Generation defaults for the model under evaluation (a model's own registry params override them)."""

    max_tokens: PositiveInt
    temperature: NonNegativeFloat


class EvalSettings(ConfigModel):
    default_n: PositiveInt
    split: str
    seed: int
    default_models: list[str] | None = None
    """Models `secverify eval` / `secverify run` use when none are named (None: the project's default pair)."""


class SplitFractions(ConfigModel):
    train: NonNegativeFloat
    dev: NonNegativeFloat
    test: NonNegativeFloat

    @model_validator(mode="after")
    def _sum_to_one(self) -> SplitFractions:
        validate_fractions(self.model_dump())
        return self


class HubCorpus(ConfigModel):
    """A corpus read from a Hugging Face hub id, or from a local mirror file or folder given in `source`."""

    source: str
    split: str = "train"


class MirrorCorpus(ConfigModel):
    """A corpus that exists here only as a local mirror (None: not configured)."""

    path: str | None = None


class DataSettings(ConfigModel):
    """Corpora the curated splits are built from, and how they are split; environments add their corpora."""

    train_sources: list[str] = Field(min_length=1)
    ood_sources: list[str] = []
    split_fractions: SplitFractions


class SyntheticSettings(ConfigModel):
    n: PositiveInt
    seed: int


class ChecksSettings(ConfigModel):
    """Thresholds of the data asset checks."""

    min_class_share: float = Field(ge=0.0, le=1.0)
    synthetic_min_class_share: float | None = Field(default=None, ge=0.0, le=1.0)
    """The synthetic set's own floor where it is one-sided by design (None: min_class_share)."""


class CostSettings(ConfigModel):
    """Asymmetric error costs of the detection environments (see sv_shared.answers.costs.CostTable)."""

    miss: NonNegativeFloat
    false_alarm: NonNegativeFloat
    abstain: NonNegativeFloat


class RewardWeightSettings(ConfigModel):
    """Reward weights by component name; each environment declares its components as fields."""

    @model_validator(mode="after")
    def _usable(self) -> RewardWeightSettings:
        values = self.as_mapping().values()
        if any(not math.isfinite(value) or value < 0 for value in values) or not sum(values) > 0:
            raise ValueError("reward weights must be finite, non-negative and not all zero")
        return self

    def as_mapping(self) -> dict[str, float]:
        return {name: float(value) for name, value in self.model_dump().items()}


class EnvConfig(ConfigModel):
    """What every environment's config holds; subclasses narrow `data` and `synthetic` and add their sections."""

    env_id: str
    name: str
    generation: Generation
    eval: EvalSettings
    data: DataSettings
    synthetic: SyntheticSettings
    checks: ChecksSettings
    reward_penalties: list[str] = Field(default_factory=list)
    """Reward components that are penalties: each subtracts weight × (1 − component) from the weighted mean of the
    others (sv_shared.answers.rewards.RewardWeights)."""

    @model_validator(mode="after")
    def _penalties_are_components(self) -> EnvConfig:
        weights = getattr(self, "reward_weights", None)
        known = set(weights.as_mapping()) if isinstance(weights, RewardWeightSettings) else set()
        unknown = sorted(set(self.reward_penalties) - known)
        if unknown:
            raise ValueError(f"reward_penalties {unknown} are not components of reward_weights ({sorted(known)})")
        return self
