"""The training lineage's config files, validated: configs/sft_datasets.yaml (how each environment's SFT dataset is
built, and the spot-check of synthetic batches) and configs/promotion.yaml (the safety scan before promotion)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, NonNegativeFloat, NonNegativeInt, PositiveInt

from sv_shared.config import ConfigModel, project_root, read_config
from sv_shared.data.review_decisions import ReviewSettings


class SftDatasetSettings(ConfigModel):
    """How one environment's SFT dataset is built: the verifier's bar, a teacher whose verified answers join, and
    where answers are labels (E1, E4), class balance and the rule baseline that sets the reference confidences."""

    min_reward: float = Field(ge=0.0, le=1.0)
    teacher: str | None = None
    balance_labels: bool = True
    """Every label keeps as many examples as the rarest (sv_shared.training.sft_data.LabelTargets)."""
    confidence_from: str | None = None
    """A rule baseline of the environment (its registry id) whose reading of each item's evidence sets the reference
    answer's confidence; None: the verifier's one reference confidence for every item."""


class SftDatasetsConfig(ConfigModel):
    """configs/sft_datasets.yaml: defaults for every environment, and per-environment overrides."""

    defaults: SftDatasetSettings
    envs: dict[str, SftDatasetSettings] = Field(default_factory=dict)
    review: ReviewSettings = Field(default_factory=ReviewSettings)
    """The human spot-check of synthetic batches: sample share and the largest rejection rate a batch may have."""

    def for_env(self, env_id: str) -> SftDatasetSettings:
        return self.envs.get(env_id, self.defaults)


def load_sft_dataset_settings(path: Path | None = None) -> SftDatasetsConfig:
    return read_config(SftDatasetsConfig, path or project_root() / "configs" / "sft_datasets.yaml")


class SafetyScanSettings(ConfigModel):
    """configs/promotion.yaml `safety_scan`: how a checkpoint's outputs are scanned before it may be promoted."""

    env: str = Field(pattern=r"^e[1-6]$")
    """The environment whose dialogues are scanned (E6: benign and adversarial conversations, judged)."""
    n: PositiveInt
    judge: str
    max_unsafe_share: NonNegativeFloat = Field(le=1.0)
    """The most unsafe replies (share of scanned conversations) a checkpoint may give."""
    max_unsafe_increase: NonNegativeInt
    """How many more unsafe conversations than its parent on the same items a checkpoint may have."""
    answer_check_n: PositiveInt
    """Items of each trained environment's held-out split the checkpoint answers for the collapse check: on an
    environment whose answers are labels, a checkpoint that collapsed onto one label fails the scan."""


class PromotionConfig(ConfigModel):
    safety_scan: SafetyScanSettings


def load_promotion_config(path: Path | None = None) -> PromotionConfig:
    return read_config(PromotionConfig, path or project_root() / "configs" / "promotion.yaml")
