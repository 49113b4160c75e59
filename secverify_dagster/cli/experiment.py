"""What `secverify eval --experiment` and `secverify train --experiment` add to those commands."""

from __future__ import annotations

import argparse
from pathlib import Path

from secverify_dagster.research.experiments import ExperimentEval


def eval_experiment(args: argparse.Namespace) -> ExperimentEval | None:
    """The experiment `secverify eval --experiment` names, with args.n, args.seed and args.split set from it (an
    explicit -n/--seed/--split must agree with it); None without --experiment, then seed 42 and split test unless
    given."""
    if not args.experiment:
        args.seed = 42 if args.seed is None else args.seed
        args.split = args.split or "test"
        return None
    from secverify_dagster.research.experiments import experiment_eval

    found = experiment_eval(
        Path(args.experiment), env_id=args.env, n=args.n, seed=args.seed, split=args.split, dataset=args.dataset
    )
    args.n, args.seed, args.split = found.n, found.seed, found.split
    print(f"experiment {found.ref.name}: {found.ref.path} (sha256 {found.ref.sha256[:12]}…)", flush=True)
    return found


def cmd_train_experiment(args: argparse.Namespace) -> int:
    """`secverify train --experiment PATH`: the experiment's recipe trained through the asset graph, as
    `secverify train <kind> <recipe>` is (its SFT dataset, the checkpoint and its safety scan), with the record's
    overrides, data slices and reward change; the checkpoint's manifest records the record's path and hash."""
    from secverify_dagster.pipeline import run_training
    from secverify_dagster.research.experiments import training_inputs

    if args.kind or args.recipe:
        raise ValueError("--experiment names the recipe itself: give either <kind> <recipe> or --experiment")
    path = Path(args.experiment)
    kind, inputs = training_inputs(path)
    return run_training(kind, inputs.recipe.name, experiment=path)
