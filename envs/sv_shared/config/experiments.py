"""Experiment records: configs/experiments/<env>/<date>.yaml, one research-loop iteration written down.

An experiment names what it tests (hypothesis, owner, date) and what it changes: a training recipe with overrides
(validated by the recipe's own model), the data slices an RLFT run draws its prompts from, the reward config (an
ablation of configs/ablations/<env>.yaml, or explicit reward-weight overrides) and the eval settings of its fast
eval. A run or checkpoint made from one records an ExperimentRef: the file's path relative to the project root and
the sha256 of its bytes, so an edited record is told apart from the one that made it.

The model is strict and closed like every project config: an unknown key or a wrong type fails naming the file and
the field. Plain Python: the recipes and ablations it names are read by sv_shared.training and sv_shared.runs.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PositiveInt, field_validator, model_validator

from sv_shared.config.paths import project_root
from sv_shared.config.reading import ConfigError, read_yaml, validate_config
from sv_shared.config.sections import ConfigModel
from sv_shared.runs.schema import ExperimentRef
from sv_shared.training.synthetic_gate import ReviewOverride

FILE_STEM = re.compile(r"^(\d{4}-\d{2}-\d{2})(-[a-z0-9]+)?$")
"""<date>.yaml, optionally suffixed (2026-11-24-b.yaml): the date must be the record's own."""

NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")

RECIPE = re.compile(r"^(sft|rlft)/([a-z0-9][a-z0-9._-]*)$")

FIXED_RECIPE_FIELDS = frozenset({"name", "stage", "envs"})
"""What an override may not change: the recipe it names stays that recipe (its file, its stage, its environments)."""


class ExperimentError(ConfigError):
    """An experiment record that cannot be read or used; the message names the file."""


class TrainingChange(ConfigModel):
    """The recipe the experiment trains with (`rlft/e1`, `sft/e1`) and the fields it overrides."""

    recipe: str
    """<kind>/<name>: configs/<kind>/<name>.yaml."""
    overrides: dict[str, Any] = Field(default_factory=dict)
    """Top-level recipe fields → values, validated with the whole recipe by its own model."""

    @field_validator("recipe")
    @classmethod
    def _recipe(cls, value: str) -> str:
        if not RECIPE.fullmatch(value):
            raise ValueError(f"{value!r} is not a recipe (sft/<name> or rlft/<name>)")
        return value

    @field_validator("overrides")
    @classmethod
    def _overrides(cls, value: dict[str, Any]) -> dict[str, Any]:
        fixed = sorted(FIXED_RECIPE_FIELDS & set(value))
        if fixed:
            raise ValueError(f"{fixed} cannot be overridden (name another recipe instead)")
        return value

    @property
    def kind(self) -> Literal["sft", "rlft"]:
        return "sft" if self.recipe.startswith("sft/") else "rlft"

    @property
    def recipe_name(self) -> str:
        return self.recipe.split("/", 1)[1]


class DataSlices(ConfigModel):
    """Which items an RLFT run draws its prompts from; for SFT, which synthetic batches' examples of the SFT dataset
    it keeps (the reference and teacher examples always, and only the named batches' examples)."""

    splits: list[Literal["train", "dev"]] = Field(default_factory=lambda: ["train"], min_length=1)
    """Curated splits; never test (what a checkpoint is measured on)."""
    synthetic_batches: list[str] = Field(default_factory=list)
    """Synthetic batch ids (outputs/datasets/<env>/batches/<id>/) whose items join the prompts, held-out overlap
    dropped."""
    labels: list[str] | None = None
    """Keep only items with one of these labels (None: every label)."""
    override_review: list[ReviewOverride] = Field(default_factory=list)
    """Train on a named batch whose human spot-check has not passed: which batch, why, and who decided (recorded
    with the experiment file, whose hash the checkpoint carries)."""

    @field_validator("splits", "synthetic_batches")
    @classmethod
    def _distinct(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError(f"lists an entry twice: {value}")
        for entry in value:
            if not NAME.fullmatch(entry):
                raise ValueError(f"{entry!r} is not an id (lower case letters, digits, '.', '_', '-')")
        return value

    @property
    def is_default(self) -> bool:
        return self == DataSlices()


class RewardChange(ConfigModel):
    """The reward config: a named ablation, or explicit reward-weight overrides (not both), or neither (default)."""

    ablation: str | None = None
    reward_weights: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one(self) -> RewardChange:
        if self.ablation is not None and self.reward_weights:
            raise ValueError("give an ablation or reward_weights, not both (declare the mix as an ablation)")
        return self


class EvalChange(ConfigModel):
    """The fast eval: N items of a split of the embedded corpus, drawn with a seed."""

    n: PositiveInt = 10
    seed: int = 42
    split: Literal["train", "dev", "test"] = "test"


class Experiment(ConfigModel):
    """One experiment record (configs/experiments/<env>/<date>.yaml)."""

    name: str
    env: str
    date: dt.date
    hypothesis: str = Field(min_length=1)
    owner: str = Field(min_length=1)
    training: TrainingChange | None = None
    data: DataSlices = DataSlices()
    reward: RewardChange = RewardChange()
    eval: EvalChange = EvalChange()

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME.fullmatch(value):
            raise ValueError(f"{value!r} is not a name (lower case letters, digits, '.', '_', '-')")
        return value

    @field_validator("date", mode="before")
    @classmethod
    def _date(cls, value: Any) -> Any:
        # YAML reads 2026-11-24 as a date already; a quoted one arrives as text.
        return dt.date.fromisoformat(value) if isinstance(value, str) else value

    def changes(self) -> list[str]:
        """What the experiment changes, in a line each (for notes and logs)."""
        lines = []
        if self.training is not None:
            overrides = ", ".join(f"{key}={value}" for key, value in self.training.overrides.items())
            lines.append(f"training: {self.training.recipe}" + (f" with {overrides}" if overrides else ""))
        if not self.data.is_default:
            batches = ", ".join(self.data.synthetic_batches) or "none"
            labels = ", ".join(self.data.labels) if self.data.labels is not None else "all"
            lines.append(f"data: splits {', '.join(self.data.splits)}; synthetic batches {batches}; labels {labels}")
        if self.reward.ablation is not None:
            lines.append(f"reward: ablation {self.reward.ablation} (configs/ablations/{self.env}.yaml)")
        elif self.reward.reward_weights:
            weights = ", ".join(f"{key}={value}" for key, value in self.reward.reward_weights.items())
            lines.append(f"reward: weights {weights}")
        lines.append(f"eval: n={self.eval.n}, seed={self.eval.seed}, split={self.eval.split}")
        return lines


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        raise ExperimentError(f"{path}: an experiment record must live under {root}/configs/experiments/") from None


def file_sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def load_experiment(path: Path, root: Path | None = None) -> tuple[Experiment, ExperimentRef]:
    """The record at `path` (absolute, or relative to the project root), validated against its file name, its
    folder, its environment's reward components and the recipe and ablation it names; and its ExperimentRef."""
    root = root or project_root()
    path = path if path.is_absolute() else root / path
    if not path.is_file():
        raise ExperimentError(f"{path}: no such experiment record")
    relative = _relative(path, root)
    data = read_yaml(path)
    experiment = validate_config(Experiment, data, source=relative)
    _check_place(experiment, path, relative)
    _check_references(experiment, relative, root)
    return experiment, ExperimentRef(name=experiment.name, path=relative, sha256=file_sha256(path))


def _check_place(experiment: Experiment, path: Path, relative: str) -> None:
    stem = FILE_STEM.fullmatch(path.stem)
    if path.suffix != ".yaml" or stem is None:
        raise ExperimentError(f"{relative}: the file must be named <date>.yaml or <date>-<suffix>.yaml")
    if stem[1] != experiment.date.isoformat():
        raise ExperimentError(f"{relative}: date {experiment.date} is not the file's date {stem[1]}")
    if path.parent.name != experiment.env:
        raise ExperimentError(f"{relative}: env {experiment.env!r} but the file is under {path.parent.name}/")


def _check_references(experiment: Experiment, relative: str, root: Path) -> None:
    """The environment, the recipe with its overrides, the ablation and the reward components must all exist."""
    from sv_shared.registry import EnvironmentNotAvailable, config_model

    try:
        config_model(experiment.env)
    except EnvironmentNotAvailable as error:
        raise ExperimentError(f"{relative}: env: {error}") from None
    try:
        if experiment.reward.ablation is not None:
            from sv_shared.runs.ablations import AblationError, load_ablation

            try:
                load_ablation(experiment.env, experiment.reward.ablation, root)
            except AblationError as error:
                raise ExperimentError(f"{relative}: reward.ablation: {error}") from None
        if experiment.reward.reward_weights:
            from sv_shared.training.recipes import check_reward_components

            check_reward_components(experiment.env, experiment.reward.reward_weights)
        if experiment.training is not None:
            experiment_recipe(experiment, root, source=relative)
    except ValueError as error:
        raise ExperimentError(f"{relative}: {error}") from None


def experiment_recipe(experiment: Experiment, root: Path | None = None, *, source: str = "experiment") -> Any:
    """The recipe the experiment trains with: configs/<kind>/<name>.yaml with the overrides, the data slices' and
    the reward change applied, validated by the recipe's own model (an RLFT recipe's ablation resolved)."""
    from sv_shared.training.recipes import (
        RlftRecipe,
        SftRecipe,
        load_rlft_recipe,
        load_sft_recipe,
        resolve_ablation,
    )

    training = experiment.training
    if training is None:
        raise ExperimentError(f"{source}: names no training recipe (add a training section)")
    where = f"{source}: training.recipe {training.recipe}"
    if training.kind == "sft":
        base = load_sft_recipe(training.recipe_name, root, check_references=False)
        if experiment.data.model_copy(update={"synthetic_batches": []}) != DataSlices():
            raise ExperimentError(
                f"{where}: an SFT recipe trains on its SFT datasets; of the data slices it takes only "
                "synthetic_batches (which batches' examples to keep)"
            )
        recipe = validate_config(SftRecipe, base.as_dict() | training.overrides, source=where)
    else:
        base = load_rlft_recipe(training.recipe_name, root, check_references=False)
        fields = base.as_dict() | training.overrides
        if experiment.reward.ablation is not None:
            if base.ablation not in (None, experiment.reward.ablation):
                raise ExperimentError(f"{where} already trains under ablation {base.ablation!r}")
            fields["ablation"] = experiment.reward.ablation
        if experiment.reward.reward_weights:
            fields["reward_weights"] = {**fields["reward_weights"], experiment.env: experiment.reward.reward_weights}
        recipe = resolve_ablation(validate_config(RlftRecipe, fields, source=where), root)
    if experiment.env not in recipe.envs:
        raise ExperimentError(f"{where} trains {recipe.envs}, not the experiment's env {experiment.env}")
    return recipe


def ref_status(ref: ExperimentRef, root: Path | None = None) -> str | None:
    """None when the recorded file still has its hash; else what changed ("changed since …" or "missing")."""
    path = (root or project_root()) / ref.path
    if not path.is_file():
        return f"{ref.path} no longer exists (recover it from the code version's commit)"
    current = file_sha256(path)
    return None if current == ref.sha256 else f"changed since (the file now hashes to {current[:12]}…)"
