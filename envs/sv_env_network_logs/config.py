"""E1's typed config (configs/envs/e1.yaml)."""

from __future__ import annotations

from sv_shared.config import (
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


class Data(DataSettings):
    iot23: HubCorpus
    cicids2017: MirrorCorpus = MirrorCorpus()
    unswnb15: MirrorCorpus = MirrorCorpus()


class Synthetic(SyntheticSettings):
    malicious_share: float
    perturb_share: float
    """Share of synthetic flows that perturb real ones (only when a base frame is given)."""


class Config(EnvConfig):
    reward_weights: RewardWeights
    costs: CostSettings
    data: Data
    synthetic: Synthetic
