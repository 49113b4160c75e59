"""E4's typed config (configs/envs/e4.yaml)."""

from __future__ import annotations

from pydantic import Field, NonNegativeFloat, NonNegativeInt, field_validator

from sv_shared.config import (
    ConfigModel,
    CostSettings,
    DataSettings,
    EnvConfig,
    HubCorpus,
    MirrorCorpus,
    RewardWeightSettings,
    SyntheticSettings,
)


class RewardWeights(RewardWeightSettings):
    accuracy: float
    calibration: float
    asymmetric_cost: float
    format: float
    evidence_precision: float
    evidence_recall: float
    grounding: float


class Abstention(ConfigModel):
    mixed_band: list[float] = Field(min_length=2, max_length=2)
    """[low, high): the detectors' suspicion where the evidence is genuinely mixed and abstaining costs only
    `costs.abstain`."""

    @field_validator("mixed_band")
    @classmethod
    def _ordered(cls, band: list[float]) -> list[float]:
        low, high = band
        if not 0.0 <= low < high <= 1.0:
            raise ValueError(f"mixed_band must satisfy 0 <= low < high <= 1, got {band}")
        return band


class UrlReputation(ConfigModel):
    budget: NonNegativeInt
    """Look-ups a model may make per email."""
    apwg_blocklist: str | None = None
    """A local APWG feed file whose URLs' domains are block-listed (None: the shipped store only)."""


class ToolSettings(ConfigModel):
    url_reputation: UrlReputation


class ApwgCorpus(MirrorCorpus):
    min_confidence: NonNegativeFloat = 90.0
    """Feed rows reported with a lower confidence_level are dropped."""
    seed: int = 0
    """Seeds the synthetic lures built around URL-only rows."""


class Data(DataSettings):
    zefang: HubCorpus
    enron: MirrorCorpus = MirrorCorpus()
    apwg: ApwgCorpus = ApwgCorpus()


class Synthetic(SyntheticSettings):
    phishing_share: float = Field(ge=0.0, le=1.0)
    perturb_share: float = Field(ge=0.0, le=1.0)
    """Share of synthetic emails that perturb real ones (only when a base frame is given)."""


class Config(EnvConfig):
    reward_weights: RewardWeights
    costs: CostSettings
    abstention: Abstention
    tools: ToolSettings
    data: Data
    synthetic: Synthetic
