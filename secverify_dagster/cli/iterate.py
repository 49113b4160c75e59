"""`secverify iterate`: scaffold an iteration note from a baseline run's triage, an experiment or batch, and a
candidate's fast eval (see secverify_dagster.research.iteration_notes)."""

from __future__ import annotations

import argparse
from pathlib import Path

from sv_shared.config import outputs_dir
from sv_shared.config.experiments import load_experiment
from sv_shared.registry import ENV_IDS, get_environment


def cmd_iterate(args: argparse.Namespace) -> int:
    from secverify_dagster.research.iteration_notes import build_facts, find_run, write_note

    env = get_environment(args.env)
    evals = outputs_dir() / "evals"
    baseline = find_run(evals, env, args.baseline)
    candidate = find_run(evals, env, args.candidate) if args.candidate else None
    experiment = load_experiment(Path(args.experiment)) if args.experiment else None
    if experiment is not None and experiment[0].env != env.env_id:
        raise ValueError(f"{experiment[1].path} is an experiment on {experiment[0].env}, not {env.env_id}")
    facts = build_facts(
        env,
        baseline,
        candidate=candidate,
        experiment=experiment,
        batch_id=args.batch,
        datasets_root=outputs_dir() / "datasets",
    )
    path = write_note(outputs_dir() / "notes", facts)
    print(f"iteration note: {path} (facts: {path.with_suffix('.json')})")
    if facts.fast_eval is not None:
        reward = facts.fast_eval["paired"][0]
        print(
            f"  reward {reward['baseline']:.3f} → {reward['candidate']:.3f}: delta {reward['delta']:+.3f} "
            f"[{reward['ci_low']:+.3f}, {reward['ci_high']:+.3f}] on {facts.fast_eval['n_paired']} paired items"
        )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    iterate = sub.add_parser(
        "iterate", help="scaffold outputs/notes/<date>-iteration.md from a baseline's triage and a fast eval"
    )
    iterate.add_argument("--env", required=True, choices=ENV_IDS)
    iterate.add_argument("--baseline", required=True, help="the baseline run's id (its triage starts the note)")
    iterate.add_argument("--candidate", help="the candidate run's id, on the baseline's items (the fast eval)")
    iterate.add_argument("--experiment", help="configs/experiments/<env>/<date>.yaml: the hypothesis and the tweak")
    iterate.add_argument("--batch", help="a synthetic batch id (outputs/datasets/<env>/batches/<id>) that was tried")
    iterate.set_defaults(func=cmd_iterate)
