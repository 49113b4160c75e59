"""`secverify ablate`: re-score an environment's stored completions under its named ablations and print the table."""

from __future__ import annotations

import argparse

from sv_shared.config import outputs_dir
from sv_shared.registry import ENV_IDS, get_environment


def cmd_ablate(args: argparse.Namespace) -> int:
    from secverify_dagster.research.ablations import make_ablation_table

    env = get_environment(args.env)
    models = [model for group in args.models for model in group.replace(",", " ").split()]
    written = make_ablation_table(
        env,
        evals_root=outputs_dir() / "evals",
        checkpoints_root=outputs_dir() / "checkpoints",
        env_reports=outputs_dir() / "reports" / env.env_id,
        names=args.ablation,
        models=models,
        run_id=args.run,
    )
    print(written.markdown_path.read_text(encoding="utf-8"), flush=True)
    print(f"table: {written.markdown_path} · {written.json_path}", flush=True)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `ablate` sub-command to the secverify parser."""
    ablate = sub.add_parser(
        "ablate", help="re-score stored completions under named reward ablations (no model called); print the table"
    )
    ablate.add_argument("--env", required=True, choices=ENV_IDS)
    ablate.add_argument(
        "--ablation",
        action="append",
        default=[],
        metavar="NAME",
        help="an ablation of configs/ablations/<env>.yaml, or default (repeatable; default: every one declared)",
    )
    ablate.add_argument(
        "--models", action="append", default=[], help="space/comma-separated model ids (default: every model)"
    )
    ablate.add_argument(
        "--run", metavar="RUN_ID", help="re-score this complete run only (default: each model's latest)"
    )
    ablate.set_defaults(func=cmd_ablate)
