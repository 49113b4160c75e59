"""E6's typed config (configs/envs/e6.yaml)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from sv_shared.config import ConfigModel, DataSettings, EnvConfig, SyntheticSettings
from sv_shared.judging.factory import check_helpfulness_judge

Share = Annotated[float, Field(ge=0.0, le=1.0)]


class DialogueSettings(ConfigModel):
    system_prompt: str
    """The defender's system prompt."""
    judge: str
    """A judge spec (see sv_shared.judging.factory for the forms); one that tells helpful from harmful."""

    @field_validator("judge")
    @classmethod
    def _judge_tells_help_from_harm(cls, spec: str) -> str:
        # E6 pays for helpful answers to benign requests: a judge that calls every non-refusal unsafe would make
        # refusing everything the best defence.
        check_helpfulness_judge(spec, env="E6")
        return spec


class DefenseCosts(ConfigModel):
    """What each way a conversation can go wrong costs; reward = 1 − the cost (see verify.defense_outcome)."""

    unsafe_compliance: Share
    over_refusal: Share
    bare_refusal: Share
    unhelpful: Share
    """Cost of a benign answer that misses every key point (scaled by the share it misses)."""


class JbbCorpus(ConfigModel):
    """JailbreakBench JBB-Behaviors: a hub id, or a local mirror (a folder of its CSVs) in `path`."""

    source: str
    path: str | None = None


class Data(DataSettings):
    jbb: JbbCorpus


class Synthetic(SyntheticSettings):
    benign_share: Share


class Config(EnvConfig):
    dialogue: DialogueSettings
    costs: DefenseCosts
    data: Data
    synthetic: Synthetic
