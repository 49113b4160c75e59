"""Ablation tables as the CLI and the assets make them: one call that re-scores and writes the table (the work itself
is sv_shared.runs.ablation_table's; the report shows it through reports.ablations)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from secverify_dagster.reports.ablations import ablations_report_dir
from secverify_dagster.runner.metadata import code_version, dirty_paths
from sv_shared.contracts import Environment
from sv_shared.runs.ablation_table import AblationTable, build_table, write_table
from sv_shared.runs.ablations import ablations, load_ablation


@dataclass(frozen=True)
class WrittenTable:
    table: AblationTable
    markdown_path: Path
    json_path: Path


def make_ablation_table(
    env: Environment,
    *,
    evals_root: Path,
    checkpoints_root: Path,
    env_reports: Path,
    names: Sequence[str] = (),
    models: Sequence[str] = (),
    run_id: str | None = None,
) -> WrittenTable:
    """Re-score the latest complete run of every model (or the named ones, or one run) under the named ablations
    (default: every one declared for the environment) and write the table; no model is called."""
    chosen = [load_ablation(env.env_id, name) for name in names] if names else ablations(env.env_id)
    version = code_version()
    table = build_table(
        env,
        chosen,
        evals_root=evals_root,
        checkpoints_root=checkpoints_root,
        code_version=version,
        dirty_paths=dirty_paths() if version.endswith("-dirty") else None,
        models=list(models) or None,
        run_id=run_id,
    )
    markdown_path, json_path = write_table(table, ablations_report_dir(env_reports))
    return WrittenTable(table, markdown_path, json_path)
