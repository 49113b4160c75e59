"""An environment's ablation table: each ablation against the default config on the same items, per model.

Reward ablations: every model's latest complete run is re-scored under each ablation (sv_shared.runs.rescore) and
paired with itself, sample by sample: the paired bootstrap (seed 42) of the reward delta and of each reward
component's delta, and the delta of each headline metric the environment reports (point deltas of the two runs'
metrics: a reward ablation leaves what was measured unchanged, so a headline that moves is one the reward feeds).

Training ablations: a checkpoint whose recipe names an ablation (`recipe["ablation"]`) against the checkpoint of the
same recipe without one (same parent and stage, the recipes equal but for name, ablation and reward weights), each
on its latest complete eval run, paired on the items both answered, with the same statistics.

Written as markdown and JSON under outputs/reports/<env>/ablations/ (atomically: a reader sees a whole table).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sv_shared.answers.metrics import metric_value
from sv_shared.answers.statistics import align_paired, paired_bootstrap
from sv_shared.config.reading import ConfigError
from sv_shared.contracts import Environment
from sv_shared.contracts.verifier import StoredRecordError
from sv_shared.data.files import write_json_atomic, write_text_atomic
from sv_shared.data.hashing import stable_json
from sv_shared.runs.ablations import Ablation, AblationError, ablated_environment
from sv_shared.runs.records import FinishedRun, complete_runs, latest_complete_runs
from sv_shared.runs.rescore import RescoreError, rescore_run
from sv_shared.runs.schema import ResultRecord, RunSummary
from sv_shared.training.checkpoints import CheckpointManifest, list_checkpoints

TABLE_MARKDOWN = "ablations.md"
TABLE_JSON = "ablations.json"
SEED = 42

RECIPE_FIELDS_AN_ABLATION_CHANGES = frozenset({"name", "ablation", "reward_weights"})
"""What may differ between a recipe that names an ablation and the same recipe without it."""


@dataclass(frozen=True)
class Comparison:
    """One variant against its default on the same items: reward, components and headline metrics."""

    model: str
    variant: str
    """The ablation's name (reward ablations), or the ablated checkpoint's model id (training ablations)."""
    baseline_run: str
    variant_run: str
    n: int
    reward: dict[str, Any] | None
    """Paired bootstrap of variant − default (PairedBootstrap.to_dict), None when nothing was paired."""
    components: dict[str, dict[str, Any]] = field(default_factory=dict)
    headline: dict[str, dict[str, float]] = field(default_factory=dict)
    """Headline metric key → {"default", "variant", "delta"} (point values of the two runs' metrics)."""
    problem: str | None = None
    """Why the comparison could not be made (the run cannot be re-scored, no counterpart checkpoint, …)."""
    ablation_sha256: str | None = None
    baseline_model: str | None = None
    """Training ablations: the checkpoint without the ablation."""


@dataclass(frozen=True)
class AblationTable:
    env_id: str
    env_name: str
    generated_at: str
    ablations: list[dict[str, Any]]
    reward_rows: list[Comparison]
    training_rows: list[Comparison]
    training_note: str | None
    """Said instead of rows when no checkpoint's recipe names an ablation."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def compare(
    model: str,
    variant: str,
    baseline: Sequence[ResultRecord],
    ablated: Sequence[ResultRecord],
    baseline_summary: RunSummary,
    variant_summary: RunSummary,
    headline_keys: Sequence[tuple[str, str]],
    *,
    baseline_run: str,
    variant_run: str,
    seed: int = SEED,
    **extra: Any,
) -> Comparison:
    """The paired statistics of variant − baseline over the items both scored."""
    ids, default_rewards, variant_rewards = align_paired(
        [record.as_dict() for record in baseline], [record.as_dict() for record in ablated]
    )
    if not ids:
        return Comparison(model, variant, baseline_run, variant_run, 0, None, problem="no item scored by both", **extra)
    reward = paired_bootstrap(variant_rewards, default_rewards, seed=seed).to_dict()
    by_id_default = {record.id: record.components for record in baseline}
    by_id_variant = {record.id: record.components for record in ablated}
    names = sorted({name for item_id in ids for name in (*by_id_default[item_id], *by_id_variant[item_id])})
    components = {}
    for name in names:
        paired = [item_id for item_id in ids if name in by_id_default[item_id] and name in by_id_variant[item_id]]
        if paired:
            components[name] = paired_bootstrap(
                [float(by_id_variant[item_id][name]) for item_id in paired],
                [float(by_id_default[item_id][name]) for item_id in paired],
                seed=seed,
            ).to_dict()
    headline = {}
    for _, key in headline_keys:
        before, after = metric_value(baseline_summary.metrics, key), metric_value(variant_summary.metrics, key)
        if _number(before) and _number(after):
            headline[key] = {"default": float(before), "variant": float(after), "delta": float(after) - float(before)}
    return Comparison(model, variant, baseline_run, variant_run, len(ids), reward, components, headline, **extra)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def reward_ablation_rows(
    env: Environment,
    runs: Sequence[FinishedRun],
    ablations: Sequence[Ablation],
    *,
    evals_root: Path,
    code_version: str,
    dirty_paths: Sequence[str] | None = None,
    tools: Mapping[str, Any] | None = None,
    seed: int = SEED,
) -> list[Comparison]:
    """Each run re-scored under each ablation (resuming earlier re-scores) and compared with itself."""
    rows = []
    built: dict[tuple[str, str], Environment] = {}
    for run in runs:
        for ablation in ablations:
            extra = {"ablation_sha256": ablation.sha256}
            try:
                key = (ablation.name, stable_json(run.metadata.config))
                if key not in built:
                    built[key] = ablated_environment(ablation, run.metadata.config, **dict(tools or {}))
                rescored = rescore_run(
                    run,
                    ablation,
                    evals_root=evals_root,
                    code_version=code_version,
                    dirty_paths=dirty_paths,
                    env=built[key],
                )
            except (AblationError, ConfigError, RescoreError, StoredRecordError) as error:
                rows.append(
                    Comparison(run.model_id, ablation.name, run.run_id, "", 0, None, problem=str(error), **extra)
                )
                continue
            rescored_run = FinishedRun(rescored.run_dir, rescored.metadata)
            rows.append(
                compare(
                    run.model_id,
                    ablation.name,
                    list(run.records()),
                    list(rescored_run.records()),
                    run.summary(),
                    rescored.summary,
                    env.verifier.report_columns(),
                    baseline_run=str(run.run_dir),
                    variant_run=str(rescored.run_dir),
                    seed=seed,
                    **extra,
                )
            )
    return rows


def _comparable_recipe(manifest: CheckpointManifest) -> dict[str, Any]:
    return {key: value for key, value in manifest.recipe.items() if key not in RECIPE_FIELDS_AN_ABLATION_CHANGES}


def _latest_default_run(evals_root: Path, env: Environment, model_id: str) -> FinishedRun | None:
    """The checkpoint's latest complete run scored under the environment's own config: a training ablation is judged
    by the reward every model is measured with, never by the ablated reward it was trained (or fast-evaluated) on."""
    default = json.loads(json.dumps(env.config.as_dict()))
    runs = [run for run in complete_runs(evals_root, env.name, model_id) if run.metadata.config == default]
    return max(runs, key=lambda run: run.metadata.started_at) if runs else None


def training_ablation_rows(
    env: Environment, evals_root: Path, checkpoints_root: Path, *, seed: int = SEED
) -> list[Comparison]:
    """Every checkpoint trained on this environment under a named ablation against the same recipe without one."""
    manifests = [manifest for manifest in list_checkpoints(checkpoints_root) if env.env_id in manifest.envs]
    rows = []
    for manifest in manifests:
        ablation = manifest.recipe.get("ablation")
        if not ablation:
            continue
        extra = {"baseline_model": None}
        twins = [
            other
            for other in manifests
            if not other.recipe.get("ablation")
            and (other.parent_model, other.stage) == (manifest.parent_model, manifest.stage)
            and _comparable_recipe(other) == _comparable_recipe(manifest)
        ]
        name = ablation
        if not twins:
            why = (
                f"no checkpoint of the same recipe without an ablation (parent {manifest.parent_model}, "
                f"stage {manifest.stage})"
            )
            rows.append(Comparison(manifest.model_id, name, "", "", 0, None, problem=why, **extra))
            continue
        twin = twins[-1]
        extra["baseline_model"] = twin.model_id
        name = f"{ablation} (vs {twin.model_id})"
        variant_run = _latest_default_run(evals_root, env, manifest.model_id)
        baseline_run = _latest_default_run(evals_root, env, twin.model_id)
        missing = [model for model, run in ((manifest.model_id, variant_run), (twin.model_id, baseline_run)) if not run]
        if missing:
            why = f"no complete eval run on {env.env_id} under its default config of {', '.join(missing)}"
            rows.append(Comparison(manifest.model_id, name, "", "", 0, None, problem=why, **extra))
            continue
        if variant_run.metadata.dataset.hash != baseline_run.metadata.dataset.hash:
            why = (
                f"their latest runs drew from different datasets ({variant_run.run_id}: "
                f"{variant_run.metadata.dataset.source}, {baseline_run.run_id}: {baseline_run.metadata.dataset.source})"
            )
            rows.append(Comparison(manifest.model_id, name, "", "", 0, None, problem=why, **extra))
            continue
        rows.append(
            compare(
                manifest.model_id,
                name,
                list(baseline_run.records()),
                list(variant_run.records()),
                baseline_run.summary(),
                variant_run.summary(),
                env.verifier.report_columns(),
                baseline_run=str(baseline_run.run_dir),
                variant_run=str(variant_run.run_dir),
                seed=seed,
                **extra,
            )
        )
    return rows


def build_table(
    env: Environment,
    ablations: Sequence[Ablation],
    *,
    evals_root: Path,
    checkpoints_root: Path,
    code_version: str,
    dirty_paths: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    run_id: str | None = None,
    tools: Mapping[str, Any] | None = None,
    seed: int = SEED,
) -> AblationTable:
    """The table over every model's latest complete run (or the named models', or the one run `run_id`)."""
    if run_id is not None:
        runs = [run for run in complete_runs(evals_root, env.name) if run.run_id == run_id]
        if not runs:
            raise RescoreError(f"no complete {env.name} run {run_id!r} under {evals_root}")
    else:
        runs = latest_complete_runs(evals_root, env.name)
    if models:
        runs = [run for run in runs if run.model_id in models]
    reward_rows = reward_ablation_rows(
        env,
        runs,
        ablations,
        evals_root=evals_root,
        code_version=code_version,
        dirty_paths=dirty_paths,
        tools=tools,
        seed=seed,
    )
    training_rows = training_ablation_rows(env, evals_root, checkpoints_root, seed=seed)
    note = None if training_rows else f"No checkpoint trained on {env.env_id} names an ablation in its recipe."
    return AblationTable(
        env_id=env.env_id,
        env_name=env.name,
        generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
        ablations=[
            {"name": a.name, "description": a.description, "overrides": dict(a.overrides), "sha256": a.sha256}
            for a in ablations
        ],
        reward_rows=reward_rows,
        training_rows=training_rows,
        training_note=note,
    )


def _signed(value: float) -> str:
    return f"{value:+.3f}"


def _row_lines(rows: Sequence[Comparison], label: str) -> list[str]:
    lines = [
        f"| Model | {label} | n | Reward (default) | Reward (variant) | Δ reward [95% CI] | p | Components that moved "
        "(Δ [CI]) | Headline metrics that moved (Δ) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        if row.reward is None:
            lines.append(f"| {row.model} | {row.variant} | {row.n} | – | – | – | – | {_escape(row.problem)} | |")
            continue
        reward = row.reward
        moved = [
            f"{name} {_signed(stats['delta'])} [{_signed(stats['ci_low'])}, {_signed(stats['ci_high'])}]"
            for name, stats in row.components.items()
            if stats["delta"] != 0 or stats["ci_low"] != 0 or stats["ci_high"] != 0
        ]
        headline = [f"{key} {_signed(values['delta'])}" for key, values in row.headline.items() if values["delta"] != 0]
        lines.append(
            f"| {row.model} | {row.variant} | {row.n} | {reward['mean_b']:.3f} | {reward['mean_a']:.3f} | "
            f"{_signed(reward['delta'])} [{_signed(reward['ci_low'])}, {_signed(reward['ci_high'])}] | "
            f"{reward['p_value']:.3g} | {'; '.join(moved) or 'none'} | {'; '.join(headline) or 'none'} |"
        )
    return lines


def _escape(text: str | None) -> str:
    return (text or "").replace("|", "\\|").replace("\n", " ")


def markdown(table: AblationTable) -> str:
    lines = [
        f"# {table.env_name} ({table.env_id}): ablations",
        "",
        f"Generated {table.generated_at}. Each variant against the default config on the same items: paired bootstrap "
        f"(seed {SEED}, 10,000 resamples) of variant − default; headline metrics as point deltas of the two runs' "
        "metrics.",
        "",
        "## Ablations",
        "",
    ]
    lines += [
        f"- `{a['name']}` ({', '.join(f'{k}={v}' for k, v in a['overrides'].items()) or 'no overrides'}): "
        f"{a['description']}"
        for a in table.ablations
    ] or ["- none declared (configs/ablations/)"]
    lines += ["", "## Reward ablations: stored completions re-scored (no model called)", ""]
    lines += _row_lines(table.reward_rows, "Ablation") if table.reward_rows else ["No complete eval run to re-score."]
    lines += ["", "## Training ablations: checkpoints trained under an ablation vs the same recipe without", ""]
    lines += _row_lines(table.training_rows, "Ablation (vs)") if table.training_rows else [table.training_note]
    return "\n".join(lines) + "\n"


def write_table(table: AblationTable, out_dir: Path) -> tuple[Path, Path]:
    """The table as markdown and JSON in out_dir (outputs/reports/<env>/ablations/), each replaced atomically."""
    out_dir.mkdir(parents=True, exist_ok=True)
    markdown_path, json_path = out_dir / TABLE_MARKDOWN, out_dir / TABLE_JSON
    write_json_atomic(json_path, table.as_dict())
    write_text_atomic(markdown_path, markdown(table))
    return markdown_path, json_path
