"""`secverify sheet` and `secverify export`: the benchmark sheet, and a sanitized bundle for sharing outside the team.

The work is imported when a command runs, so building the parser stays as quick as the other commands'.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Final

from sv_shared.registry import ENV_IDS

CADENCE_CHOICES: Final = ("biweekly", "latest")
"""benchmark_sheet.SHEET_CADENCES, spelled out so the parser does not import the report machinery."""
CADENCE_HELP: Final = (
    "biweekly (default): the full eval's runs in a 14-day period; latest: each environment's newest runs, labelled as "
    "not the full eval (for a machine without bi-weekly runs)"
)


def _registry_facts() -> tuple[dict[str, list[str]], dict[str, str]]:
    """Per registry model: the environments it is configured for, and the model it was trained from."""
    from secverify_dagster.resources.models import load_registry

    registry = load_registry()
    model_envs = {model_id: list(spec.envs) for model_id, spec in registry.items()}
    return model_envs, {model_id: spec.parent for model_id, spec in registry.items() if spec.parent}


def cmd_sheet(args: argparse.Namespace) -> int:
    from secverify_dagster.publishing.benchmark_sheet import NOT_FULL_EVAL, build_sheet
    from sv_shared.config import outputs_dir
    from sv_shared.registry import get_environment, implemented_env_ids

    envs = [get_environment(env_id) for env_id in (args.envs or implemented_env_ids())]
    model_envs, _ = _registry_facts()
    root = outputs_dir()
    sheet = build_sheet(
        envs,
        root / "evals",
        root / "reports" / "benchmark",
        cadence=args.cadence,
        period=args.period,
        model_envs=model_envs,
    )
    runs = sum(len(env.cells) for env in sheet.envs)
    print(f"benchmark sheet {sheet.label}: {runs} runs, {len(sheet.models)} models → {sheet.markdown_path}", flush=True)
    print(f"html: {sheet.html_path}", flush=True)
    if sheet.cadence == "latest":
        print(NOT_FULL_EVAL, flush=True)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from secverify_dagster.publishing.export import ExportError, export_bundle
    from sv_shared.config import outputs_dir, project_root
    from sv_shared.registry import get_environment, implemented_env_ids

    envs = [get_environment(env_id) for env_id in (args.envs or implemented_env_ids())]
    model_envs, parents = _registry_facts()
    try:
        bundle = export_bundle(
            envs,
            outputs_dir(),
            Path(args.out) if args.out else None,
            project_root=project_root(),
            cadence=args.cadence,
            period=args.period,
            model_envs=model_envs,
            parents=parents,
        )
    except ExportError as error:
        print(f"export refused: {error}", flush=True)
        return 2
    manifest = bundle.manifest
    print(
        f"exported {len(manifest['runs'])} runs, {len(manifest['files'])} files ({manifest['cadence']} "
        f"{manifest['period']}) → {bundle.path}",
        flush=True,
    )
    print(f"redactions: {json.dumps(manifest['redactions'])}", flush=True)
    return 0


def _scope_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cadence", default="biweekly", choices=CADENCE_CHOICES, help=CADENCE_HELP)
    parser.add_argument("--period", help="the bi-weekly period (its first day, e.g. 2026-11-23); default: the current")
    parser.add_argument("--envs", nargs="+", choices=ENV_IDS, help="environments (default: all implemented)")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `sheet` and `export` sub-commands to the secverify parser."""
    sheet = sub.add_parser("sheet", help="build the benchmark sheet: every model × environment, with CIs")
    _scope_arguments(sheet)
    sheet.set_defaults(func=cmd_sheet)
    export = sub.add_parser("export", help="write a sanitized bundle (sheet, reports, metrics, run metadata)")
    export.add_argument(
        "--out", help="a new folder, or a file ending in .tar.gz (default: outputs/exports/<period>-<time>)"
    )
    _scope_arguments(export)
    export.set_defaults(func=cmd_export)
