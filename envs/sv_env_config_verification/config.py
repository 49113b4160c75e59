"""E2's typed config (configs/envs/e2.yaml)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, NonNegativeInt, PositiveInt

from sv_shared.config import (
    ConfigModel,
    DataSettings,
    EnvConfig,
    HubCorpus,
    MirrorCorpus,
    RewardWeightSettings,
)


class RewardWeights(RewardWeightSettings):
    detection: float
    patch: float
    format: float


class PatchSettings(ConfigModel):
    introduced_penalty: float = Field(ge=0.0, allow_inf_nan=False)
    """Severity weight subtracted per unit of weight a patch introduces."""


class OracleSettings(ConfigModel):
    persistent_cache: bool
    """Cache scanner output in outputs/cache/scanners.sqlite (keyed by content, tool version and ruleset)."""


class ToolSettings(ConfigModel):
    """The per-episode budget of the tool-using mode, enforced by the rollout."""

    max_turns: PositiveInt
    max_tool_calls: NonNegativeInt


class GenKubeSecCorpus(HubCorpus):
    limit: PositiveInt | None = None
    """Rows read at most (None: all)."""


class TerraformCorpus(MirrorCorpus):
    per: Literal["file", "module"] = "file"
    """One item per .tf file, or per module directory (its files joined)."""


class Data(DataSettings):
    genkubesec: GenKubeSecCorpus
    k8s_policy_samples: MirrorCorpus = MirrorCorpus()
    terraform: TerraformCorpus = TerraformCorpus()


class Config(EnvConfig):
    reward_weights: RewardWeights
    patch: PatchSettings
    oracle: OracleSettings
    tools: ToolSettings
    data: Data
