"""The `secverify` command: eval, score, models, report, and run (the main job on the embedded default)."""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from secverify_dagster.cli import (
    ablate,
    audit,
    check,
    experiment,
    iterate,
    judges,
    memo,
    publish,
    report,
    review,
    scan,
    synth,
    triage,
)
from sv_shared.config import outputs_dir
from sv_shared.contracts import Dialogue
from sv_shared.data.files import FolderBusyError
from sv_shared.registry import ENV_IDS, EnvironmentNotAvailable, get_environment
from sv_shared.runs.folder import LOCK_WAIT_S
from sv_shared.runs.schema import CompletionError

DEFAULT_RUN_MODELS = ("smollm2-135m-instruct", "heuristic")

MAX_COMPLETION_LINE_BYTES = 16 * 2**20
"""A completions line longer than this is recorded as line_too_long, never read into memory whole."""


def _split_models(values: Sequence[str]) -> list[str]:
    return [model for value in values for model in value.replace(",", " ").split() if model]


def _print(text: str = "") -> None:
    print(text, flush=True)


def cmd_models(args: argparse.Namespace) -> int:
    from secverify_dagster.resources.models import load_registry, reachability

    env = get_environment(args.env) if args.env else None
    baselines = list(env.baselines) if env else []
    _print(f"{'model':<24} {'provider':<20} {'reachable':<10} why / model")
    for spec in load_registry().values():
        if env is None and spec.provider == "baseline":
            status_ok, reason = True, f"rule baseline for {', '.join(spec.envs) or 'all envs'}"
        else:
            status = reachability(spec, args.env, available_baselines=baselines)
            status_ok, reason = status.ok, (status.reason if not status.ok else spec.model)
        _print(f"{spec.id:<24} {spec.provider:<20} {'yes' if status_ok else 'no':<10} {reason}")
    return 0


def _progress_printer(label: str):
    last = {"t": 0.0}

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - last["t"] > 1.0:
            last["t"] = now
            print(f"\r  {label}: {done}/{total} samples", end="\n" if done == total else "", flush=True)

    return progress


def cmd_eval(args: argparse.Namespace) -> int:
    from secverify_dagster.reports.environment_report import summary_lines
    from secverify_dagster.reports.trajectories import write_run_page
    from secverify_dagster.reports.views import UnknownViewError, view_dataset, view_evals_root
    from secverify_dagster.resources.models import load_registry
    from secverify_dagster.runner.datasets import embedded_dataset, file_dataset
    from secverify_dagster.runner.eval_runner import EvalRunner
    from secverify_dagster.runner.failures import MAX_ITEM_ATTEMPTS
    from sv_shared.execution.cache import JsonCache

    chosen = experiment.eval_experiment(args)
    if chosen is None and args.env is None:
        raise ValueError("give --env (or --experiment, which names its environment)")
    env = chosen.env if chosen else get_environment(args.env)
    registry = load_registry()
    models = _split_models(args.model + args.models) or _default_models(env, registry)
    unknown = [m for m in models if m not in registry]
    if unknown:
        _print(f"unknown model ids: {', '.join(unknown)} (see `secverify models`)")
        return 2
    dataset = (
        embedded_dataset(env, split=args.split, seed=args.seed)
        if args.dataset == "embedded"
        else file_dataset(env, Path(args.dataset))
    )
    evals_root = outputs_dir() / "evals"
    if args.view:
        try:
            dataset = view_dataset(env, dataset, args.view)
        except UnknownViewError as error:
            _print(str(error))
            return 2
        evals_root = view_evals_root(evals_root, args.view)
    n = args.n or env.config.eval.default_n
    counterparts = _counterparts(args, env, registry)
    _check_judge(env, args.judge)
    cache = None if args.no_cache else JsonCache(outputs_dir() / "cache" / "responses.sqlite")
    failures = 0
    try:
        for model_id in models:
            against = "".join(f", {role} {spec.id}" for role, spec in counterparts.items())
            judge = f", judge {args.judge or env.episodes.judge_spec()}" if isinstance(env.episodes, Dialogue) else ""
            _print(f"{env.name} × {model_id} (n={n}, seed={args.seed}, dataset {dataset.source}{against}{judge})")
            runner = EvalRunner(
                env,
                registry[model_id],
                evals_root=evals_root,
                cache=cache,
                counterparts=counterparts,
                judge=args.judge,
                registry=registry,
            )
            outcome = runner.run(
                dataset,
                n=n,
                seed=args.seed,
                run_id=args.run_id,
                progress=_progress_printer(model_id),
                include_tools=args.include_tools,
                lock_wait_s=args.wait,
                on_lock_wait=lambda holder: _print(f"  waiting (up to {args.wait:g} s) for {holder}, running this run"),
                experiment=chosen.ref if chosen else None,
            )
            if outcome.status == "skipped":
                _print(f"  skipped: {outcome.reason}")
                continue
            for line in summary_lines(env, outcome.summary.metrics):
                _print(f"  {line}")
            if unscored := outcome.summary.unscored or []:
                shown = ", ".join(f"{why.id} ({why.kind})" for why in unscored[:5])
                shown += ", …" if len(unscored) > 5 else ""
                _print(
                    f"  {len(unscored)} items not scored, counted as failures ({len(outcome.given_up)} given up after "
                    f"{MAX_ITEM_ATTEMPTS} failed attempts): {shown} (why: summary.json, errors.jsonl)"
                )
            _print(f"  status {outcome.status} · run folder {outcome.run_dir}")
            _print(f"  trajectories {write_run_page(env, outcome.run_dir).path}")
            failures += outcome.status != "complete"
    finally:
        if cache is not None:
            cache.close()
    return 1 if failures else 0


def _default_models(env, registry) -> list[str]:
    from secverify_dagster.resources.models import require_promoted

    models = list(env.config.eval.default_models or DEFAULT_RUN_MODELS)
    return require_promoted(registry, models, where=f"configs/envs/{env.env_id}.yaml eval.default_models")


def _check_judge(env, spec: str | None) -> None:
    """--judge must be a judge the environment's own config accepts (E6 refuses one that cannot tell helpful from
    harmful), checked before any run starts."""
    if spec and isinstance(env.episodes, Dialogue):
        from pydantic import ValidationError

        settings = env.config.dialogue
        try:
            type(settings).model_validate(settings.model_dump() | {"judge": spec})
        except ValidationError as error:
            raise ValueError("; ".join(e["msg"].removeprefix("Value error, ") for e in error.errors())) from None


def _counterparts(args: argparse.Namespace, env, registry) -> dict:
    """--target / --counterpart ROLE=MODEL for dialogue environments; roles the environment does not have fail."""
    pairs = [f"target={args.target}"] if args.target else []
    pairs += args.counterpart
    if pairs and not isinstance(env.episodes, Dialogue):
        raise ValueError(f"{env.name} has no counterparts (--target / --counterpart are for E5/E6)")
    chosen = {}
    for pair in pairs:
        role, _, model_id = pair.partition("=")
        if role not in env.episodes.counterpart_roles():
            roles = list(env.episodes.counterpart_roles())
            raise ValueError(f"{env.name} has no counterpart role {role!r}; roles: {roles}")
        if model_id not in registry:
            raise KeyError(f"{model_id!r} is not in the model registry (see `secverify models`)")
        chosen[role] = registry[model_id]
    return chosen


def cmd_tournament(args: argparse.Namespace) -> int:
    from secverify_dagster.resources.models import load_registry
    from secverify_dagster.runner.datasets import embedded_dataset
    from secverify_dagster.runner.tournament import TournamentConfig, rounds_markdown, run_tournament

    env = get_environment("e5")
    config = TournamentConfig(
        attackers=_split_models(args.attackers),
        defenders=_split_models(args.defenders),
        rounds=args.rounds,
        n=args.n,
        seed=args.seed,
        judge=args.judge,
    )
    record = run_tournament(
        env,
        embedded_dataset(env, split="test", seed=args.seed),
        config,
        registry=load_registry(),
        evals_root=outputs_dir() / "evals",
        out_root=outputs_dir() / "tournaments",
    )
    _print(rounds_markdown(record))
    _print(f"curves → {record['curves_png']}")
    return 0 if all(row["status"] == "complete" for row in record["rows"]) else 1


def _regular_file(path: Path, what: str) -> os.stat_result:
    """The stat of a regular file; a device, FIFO or folder is refused before anything is read from it."""
    status = path.stat()
    if not stat.S_ISREG(status.st_mode):
        raise ValueError(f"{what} {path} is not a regular file")
    return status


def _read_completions(path: Path) -> tuple[list[tuple[int, Any]], list[CompletionError]]:
    """(line number, JSON value) of each non-blank line, and the lines that are not JSON, named; a line is read
    up to MAX_COMPLETION_LINE_BYTES, so no file can exhaust memory."""
    _regular_file(path, "completions file")
    values: list[tuple[int, Any]] = []
    errors: list[CompletionError] = []
    with path.open("rb") as handle:
        for number, line in enumerate(iter(lambda: handle.readline(MAX_COMPLETION_LINE_BYTES + 1), b""), start=1):
            if len(line) > MAX_COMPLETION_LINE_BYTES:
                while line and not line.endswith(b"\n"):  # skip the rest of the line unread
                    line = handle.readline(2**20)
                message = f"longer than {MAX_COMPLETION_LINE_BYTES} bytes"
                errors.append(CompletionError(line=number, id=None, kind="line_too_long", message=message))
                continue
            if not line.strip():
                continue
            try:
                values.append((number, json.loads(line)))
            except (ValueError, RecursionError) as error:
                errors.append(CompletionError(line=number, id=None, kind="not_json", message=str(error)))
    return values, errors


def _errors_path(out: Path) -> Path:
    return out.with_name(f"{out.stem}.errors.jsonl")


def cmd_score(args: argparse.Namespace) -> int:
    from secverify_dagster.reports.environment_report import summary_lines
    from secverify_dagster.runner.datasets import file_dataset
    from secverify_dagster.runner.offline_scoring import score_completions
    from sv_shared.runs.folder import write_json, write_jsonl

    env = get_environment(args.env)
    dataset = file_dataset(env, Path(args.items))
    completions = Path(args.completions)
    lines, unreadable = _read_completions(completions)
    scored = score_completions(env, dataset.frame, lines)
    errors = sorted([*unreadable, *scored.errors], key=lambda error: error.line)
    out = Path(args.out)
    errors_path = Path(args.errors) if args.errors else _errors_path(out)
    write_jsonl(out, scored.records)
    if errors:
        write_jsonl(errors_path, errors)
    else:
        errors_path.unlink(missing_ok=True)  # a previous run's errors would describe another file
    if scored.metrics is not None:
        for line in summary_lines(env, scored.metrics):
            _print(line)
    _print(f"{len(scored.records)} scored samples → {out}")
    if args.summary:
        write_json(Path(args.summary), scored.metrics if scored.metrics is not None else {"n": 0})
    if errors:
        kinds = Counter(error.kind for error in errors)
        counts = ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items()))
        unknown = f"; {kinds['unknown_id']} completion ids are not in the items file" if kinds["unknown_id"] else ""
        first = errors[0]
        print(
            f"secverify score: {len(errors)} lines of {completions} not scored ({counts}{unknown}) → {errors_path}; "
            f"e.g. line {first.line}: {first.kind}: {first.message}",
            file=sys.stderr,
        )
        return 1
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from secverify_dagster.pipeline import run_training

    if args.experiment:
        return experiment.cmd_train_experiment(args)
    if not (args.kind and args.recipe):
        raise ValueError("give <kind> <recipe> (or --experiment PATH)")
    return run_training(args.kind, args.recipe)


def cmd_checkpoints(args: argparse.Namespace) -> int:
    from secverify_dagster.training.paths import TrainingPaths
    from secverify_dagster.training.statuses import checkpoint_rows

    rows = checkpoint_rows(TrainingPaths.default())
    if not rows:
        _print("no checkpoints yet (secverify train sft <recipe>)")
        return 0
    _print(f"{'checkpoint':<56} {'stage':<12} {'parent':<40} promoted")
    for row in rows:
        _print(f"{row['model_id']:<56} {row['stage']:<12} {row['parent_model']:<40} {row['promotion']}")
    return 0


def cmd_safety_scan(args: argparse.Namespace) -> int:
    from secverify_dagster.resources.models import load_registry
    from secverify_dagster.training.paths import TrainingPaths
    from secverify_dagster.training.promotion import safety_scan

    scan = safety_scan(args.model, paths=TrainingPaths.default(), registry=load_registry())
    _print(
        f"safety scan of {scan.model_id} ({scan.env_id}, judge {scan.judge}): {'passed' if scan.passed else 'FAILED'}"
    )
    _print(f"  {scan.reason}; runs {scan.run_dir} (parent {scan.parent_run_dir})")
    return 0 if scan.passed else 1


def cmd_approve(args: argparse.Namespace) -> int:
    from secverify_dagster.training.paths import TrainingPaths
    from secverify_dagster.training.promotion import approve_checkpoint

    status = approve_checkpoint(
        args.model,
        paths=TrainingPaths.default(),
        approver=args.by,
        decision="reject" if args.reject else "approve",
        note=args.note,
    )
    decision = "rejected" if args.reject else "approved"
    _print(f"{args.model}: {decision} by {args.by}; promoted: {status.promoted} ({status.reason})")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from secverify_dagster.pipeline import run_main_job

    return run_main_job(env_id=args.env, models=_split_models([args.models]) or list(DEFAULT_RUN_MODELS), n=args.n)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="secverify", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    models = sub.add_parser("models", help="the model registry and which models are reachable here")
    models.add_argument("--env", choices=ENV_IDS, help="check reachability for this environment")
    models.set_defaults(func=cmd_models)

    evaluate = sub.add_parser("eval", help="evaluate models on an environment; writes outputs/evals/<env>--<model>/")
    evaluate.add_argument("--env", choices=ENV_IDS, help="required unless --experiment names it")
    evaluate.add_argument("--model", action="append", default=[], help="registry model id (repeatable)")
    evaluate.add_argument("--models", action="append", default=[], help='space/comma-separated ids, e.g. "a b"')
    evaluate.add_argument("-n", "--n", type=int, default=None, help="items (default: the env's eval.default_n)")
    evaluate.add_argument("--seed", type=int, default=None, help="default 42")
    evaluate.add_argument(
        "--dataset",
        default="embedded",
        help='"embedded" (default: the shipped corpus, curated), a parquet/CSV/JSONL items file, or for e4 raw '
        "mail: a directory of .eml files, a maildir or an mbox file with its label file (see the E4 page of the docs)",
    )
    evaluate.add_argument("--split", default=None, help="split of the embedded corpus to draw from (default test)")
    evaluate.add_argument(
        "--experiment", help="configs/experiments/<env>/<date>.yaml: N, seed, split and reward config from it"
    )
    evaluate.add_argument(
        "--view", help="a feature-ablated view of the dataset (E1: no-bytes, no-packets, no-state, no-service)"
    )
    evaluate.add_argument("--run-id", default=None, help="resume or name a run (default: derived from the inputs)")
    evaluate.add_argument("--no-cache", action="store_true", help="bypass the persistent response cache")
    evaluate.add_argument(
        "--include-tools", action="store_true", help="multi-turn tool-using mode (environments that have one)"
    )
    evaluate.add_argument("--target", help="E5: the target model the attacker talks to (registry id)")
    evaluate.add_argument(
        "--counterpart", action="append", default=[], metavar="ROLE=MODEL", help="dialogue counterpart (repeatable)"
    )
    evaluate.add_argument("--judge", help="E5/E6 judge: local, refusal-detector, llama-guard-3:<id>, llm:<id>")
    evaluate.add_argument(
        "--wait",
        type=float,
        default=LOCK_WAIT_S,
        metavar="SECONDS",
        help="when another process is running the same run, wait this long for it, then resume what it left "
        f"(default {LOCK_WAIT_S:g}); past it, exit naming that process",
    )
    evaluate.set_defaults(func=cmd_eval)

    tournament = sub.add_parser("tournament", help="E5 attackers × E6 defenders over rounds; success curves")
    tournament.add_argument("--attackers", action="append", default=[], required=True)
    tournament.add_argument("--defenders", action="append", default=[], required=True)
    tournament.add_argument("--rounds", type=int, default=2)
    tournament.add_argument("-n", "--n", type=int, default=8)
    tournament.add_argument("--seed", type=int, default=42)
    tournament.add_argument("--judge", default=None)
    tournament.set_defaults(func=cmd_tournament)

    score = sub.add_parser("score", help="re-score stored completions offline")
    score.add_argument("--env", required=True, choices=ENV_IDS)
    score.add_argument("--items", required=True, help="items in the env's corpus format (parquet/CSV/JSONL)")
    score.add_argument("--completions", required=True, help='JSONL of {"id", "completion"}')
    score.add_argument("--out", required=True, help="scored samples (JSONL)")
    score.add_argument("--summary", help="also write the metrics as JSON here")
    score.add_argument(
        "--errors", help="lines that could not be scored, each with a named error (default: <out stem>.errors.jsonl)"
    )
    score.set_defaults(func=cmd_score)

    scan.register(sub)

    report.register(sub)
    memo.register(sub)
    triage.register(sub)
    publish.register(sub)
    train = sub.add_parser("train", help="train a recipe (configs/sft|rlft/<recipe>.yaml) into a checkpoint")
    train.add_argument("kind", nargs="?", choices=("sft", "rlft"))
    train.add_argument("recipe", nargs="?", help="the recipe's name (its file name without .yaml)")
    train.add_argument("--experiment", help="train configs/experiments/<env>/<date>.yaml's recipe with its changes")
    train.set_defaults(func=cmd_train)

    checkpoints = sub.add_parser("checkpoints", help="trained checkpoints, their parents and promotion status")
    checkpoints.set_defaults(func=cmd_checkpoints)

    scan_checkpoint = sub.add_parser("safety-scan", help="judge a checkpoint's replies before promotion")
    scan_checkpoint.add_argument("model", help="the checkpoint's model id (see `secverify checkpoints`)")
    scan_checkpoint.set_defaults(func=cmd_safety_scan)

    approve = sub.add_parser("approve", help="record a reviewer's approval (or rejection) of a checkpoint")
    approve.add_argument("model", help="the checkpoint's model id")
    approve.add_argument("--by", required=True, help="who approves (recorded with the time)")
    approve.add_argument("--note", default="", help="why")
    approve.add_argument("--reject", action="store_true", help="record a rejection instead")
    approve.set_defaults(func=cmd_approve)

    run = sub.add_parser("run", help="the main job: data lineage, evals and report on the embedded default")
    run.add_argument("--env", default="e1", choices=ENV_IDS)
    run.add_argument("--models", default=" ".join(DEFAULT_RUN_MODELS))
    run.add_argument("-n", "--n", type=int, default=None)
    run.set_defaults(func=cmd_run)
    check.register(sub)
    judges.register(sub)
    audit.register(sub)
    ablate.register(sub)
    review.register(sub)
    synth.register(sub)
    iterate.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (EnvironmentNotAvailable, FileNotFoundError, FolderBusyError, KeyError, ValueError) as error:
        print(f"secverify {args.command}: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
