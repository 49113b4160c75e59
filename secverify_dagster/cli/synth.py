"""`secverify synth-batch`: sample candidates from a registry model over a temperature sweep, keep those the
environment's verifier agrees with, queue a 5% spot-check, and print the counts and the batch's folder."""

from __future__ import annotations

import argparse
import time

from sv_shared.config import outputs_dir
from sv_shared.registry import ENV_IDS, get_environment
from sv_shared.runs.triage import CATEGORIES
from sv_shared.training.batch_folder import BATCH_LOCK_WAIT_S
from sv_shared.training.batch_items import ITEM_SOURCES

DEFAULT_TEMPERATURES = (0.3, 0.7, 1.0)


def _print(text: str = "") -> None:
    print(text, flush=True)


def cmd_synth_batch(args: argparse.Namespace) -> int:
    from secverify_dagster.research.synthetic_batches import (
        BatchRequest,
        ItemSlice,
        build_synthetic_batch,
        embedded_source,
        failed_in_run,
    )
    from secverify_dagster.resources.models import load_registry
    from secverify_dagster.training.settings import load_sft_dataset_settings
    from sv_shared.execution.cache import JsonCache
    from sv_shared.training.batch_items import parse_filters
    from sv_shared.training.candidates import completion_verifier

    env = get_environment(args.env)
    completion_verifier(env)  # a dialogue environment is refused before anything is loaded
    registry = load_registry()
    if args.model not in registry:
        _print(f"unknown model id {args.model!r} (see `secverify models`)")
        return 2
    if args.categories and not args.items_from_run:
        _print("--categories selects the failed items of --items-from-run RUN_ID: give the run")
        return 2
    # A kept example must earn what the environment's SFT targets must, and is spot-checked as configured there.
    sft_settings = load_sft_dataset_settings()
    request = BatchRequest(
        temperatures=tuple(args.temperatures),
        samples_per_temperature=args.samples,
        n_items=args.n,
        min_reward=args.min_reward if args.min_reward is not None else sft_settings.for_env(env.env_id).min_reward,
        seed=args.seed,
        review_share=sft_settings.review.sample_share,
        review_seed=sft_settings.review.seed,
    )
    failed = (
        failed_in_run(env, outputs_dir() / "evals", args.items_from_run, args.categories or ["format", "reasoning"])
        if args.items_from_run
        else None
    )
    item_slice = ItemSlice(item_ids=tuple(args.item_id), filters=parse_filters(args.where), failed=failed)
    source = embedded_source(env, args.source, seed=args.seed)

    def progress(temperature: float, sample: int, done: int, total: int) -> None:
        if done == total:
            _print(f"  temperature {float(temperature)}, sample {sample}: {done}/{total} items")

    cache = None if args.no_cache else JsonCache(outputs_dir() / "cache" / "responses.sqlite")
    started = time.perf_counter()
    try:
        outcome = build_synthetic_batch(
            env,
            registry[args.model],
            source,
            request,
            datasets_root=outputs_dir() / "datasets",
            item_slice=item_slice,
            cache=cache,
            wait_s=args.wait,
            on_lock_wait=lambda holder: _print(f"  waiting (up to {args.wait:g} s) for {holder}, building this batch"),
            progress=progress,
        )
    finally:
        if cache is not None:
            cache.close()
    if outcome.status != "complete":
        _print(
            f"batch {outcome.batch_dir.name} is incomplete: some samples failed (their errors are in the runs under "
            f"{outcome.batch_dir / 'samples'}); run the same command again to resume it"
        )
        return 1
    info = outcome.info
    counts = info["counts"]
    _print(f"{env.name} × {args.model}: batch {outcome.batch_dir.name} ({info['items']['count']} items)")
    _print(f"  candidates {counts['candidates']}, kept {counts['kept']}, dropped {_dropped(counts['dropped'])}")
    for temperature, group in counts["by_temperature"].items():
        _print(
            f"  temperature {temperature}: {group['candidates']} candidates, kept {group['kept']}, "
            f"dropped {_dropped(group['dropped'])}"
        )
    _print(f"  review queue: {info['review_queue']['size']} of {counts['kept']} kept examples")
    _print(f"  wall time {time.perf_counter() - started:.1f} s")
    _print(f"batch: {outcome.batch_dir}")
    return 0


def _dropped(dropped: dict[str, int]) -> str:
    return ", ".join(f"{reason} {count}" for reason, count in dropped.items()) or "none"


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `synth-batch` sub-command to the secverify parser."""
    synth = sub.add_parser(
        "synth-batch",
        help="sample candidate completions over temperatures, keep those the verifier agrees with, queue a review; "
        "writes outputs/datasets/<env>/batches/<batch id>/",
    )
    synth.add_argument("--env", required=True, choices=ENV_IDS)
    synth.add_argument("--model", required=True, help="registry model id that samples the candidates")
    synth.add_argument(
        "--temperatures", type=float, nargs="+", default=list(DEFAULT_TEMPERATURES), metavar="T", help="(0.3 0.7 1.0)"
    )
    synth.add_argument("-k", "--samples", type=int, default=2, help="samples per item and temperature (2)")
    synth.add_argument("-n", "--n", type=int, default=20, help="items, a seeded choice of the slice (20)")
    synth.add_argument(
        "--min-reward", type=float, help="kept from this reward (default: the env's min_reward, sft_datasets.yaml)"
    )
    synth.add_argument("--seed", type=int, default=42)
    synth.add_argument(
        "--source",
        choices=ITEM_SOURCES,
        default="synthetic",
        help="the embedded corpus's curated train split, or the synthetic set the recipe makes from it (default)",
    )
    synth.add_argument("--items-from-run", metavar="RUN_ID", help="target the items this eval run failed on")
    synth.add_argument(
        "--categories",
        nargs="+",
        choices=CATEGORIES,
        metavar="CATEGORY",
        help=f"triage categories of the failures to target (default: format reasoning; of {', '.join(CATEGORIES)})",
    )
    synth.add_argument("--item-id", action="append", default=[], help="only this item (repeatable)")
    synth.add_argument(
        "--where", action="append", default=[], metavar="COLUMN=VALUE", help="only items with this value (repeatable)"
    )
    synth.add_argument("--no-cache", action="store_true", help="bypass the persistent response cache")
    synth.add_argument(
        "--wait",
        type=float,
        default=BATCH_LOCK_WAIT_S,
        metavar="SECONDS",
        help=f"when another process builds the same batch, wait this long for it (default {BATCH_LOCK_WAIT_S:g})",
    )
    synth.set_defaults(func=cmd_synth_batch)
