"""Runs and checkpoints made from an experiment record: what `secverify eval --experiment` and `secverify train
--experiment` take from configs/experiments/<env>/<date>.yaml, and the ref they record."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from secverify_dagster.training.inputs import ExperimentInputs
from sv_shared.config.experiments import Experiment, ExperimentError, experiment_recipe, load_experiment
from sv_shared.contracts import Environment
from sv_shared.registry import build_environment, get_environment
from sv_shared.runs.schema import ExperimentRef
from sv_shared.training.recipes import shaped_env_config


@dataclass(frozen=True)
class ExperimentEval:
    """An eval as an experiment asks for it: the environment under its reward config, N, seed and split."""

    experiment: Experiment
    ref: ExperimentRef
    env: Environment
    n: int
    seed: int
    split: str


def experiment_environment(experiment: Experiment) -> Environment:
    """The experiment's environment under its reward change: an ablation, explicit weights, or the config as is."""
    if experiment.reward.ablation is not None:
        from sv_shared.runs.ablations import ablated_environment, load_ablation

        return ablated_environment(load_ablation(experiment.env, experiment.reward.ablation))
    if experiment.reward.reward_weights:
        return build_environment(experiment.env, shaped_env_config(experiment.env, experiment.reward.reward_weights))
    return get_environment(experiment.env)


def experiment_eval(
    path: Path,
    *,
    env_id: str | None,
    n: int | None = None,
    seed: int | None = None,
    split: str | None = None,
    dataset: str = "embedded",
) -> ExperimentEval:
    """The eval the record at `path` describes; an n, seed or split given besides it must agree with it (a run is
    recorded as made from the experiment, so it must be the experiment's eval), on the embedded corpus's split."""
    experiment, ref = load_experiment(path)
    if env_id is not None and experiment.env != env_id:
        raise ExperimentError(f"{ref.path} is an experiment on {experiment.env}, not {env_id}")
    if dataset != "embedded":
        raise ExperimentError(f"{ref.path} evaluates a split of the embedded corpus, not --dataset {dataset}")
    asked = {"n": n, "seed": seed, "split": split}
    recorded = {"n": experiment.eval.n, "seed": experiment.eval.seed, "split": experiment.eval.split}
    differ = [
        f"{key} {asked[key]!r} (it says {recorded[key]!r})" for key in asked if asked[key] not in (None, recorded[key])
    ]
    if differ:
        raise ExperimentError(f"{ref.path} sets the eval; drop or match: {', '.join(differ)}")
    return ExperimentEval(experiment, ref, experiment_environment(experiment), **recorded)


def training_inputs(path: Path) -> tuple[str, ExperimentInputs]:
    """(kind, inputs) of the training run the record at `path` describes."""
    experiment, ref = load_experiment(path)
    recipe = experiment_recipe(experiment, source=ref.path)
    kind = experiment.training.kind if experiment.training else "sft"
    return kind, ExperimentInputs(ref=ref, env_id=experiment.env, recipe=recipe, slices=experiment.data)
