"""Robustness to missing fields: eval runs on an environment's feature-ablated views, and the report section that
compares each model's view runs with its full run.

An environment offers views through its data part (`env.data.views`, names; `env.data.view(frame, name)`, the
frame with the fields that view hides set to null; E1 defines them in sv_env_network_logs.views). A view run is an
ordinary run of the runner on the viewed dataset, whose source names the view ("embedded:test:no-bytes"). It is kept
under evals/views/<view>/, beside the full runs and not among them, so the headline tables, the regression gate and
"latest run" lookups never mistake a view run for a model's run on the split. Plain Python: the report, the eval
asset and `secverify eval --view` call these functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from secverify_dagster.reports.runs import RunView
from secverify_dagster.runner.datasets import EvalDataset
from sv_shared.answers.statistics import align_paired, paired_bootstrap
from sv_shared.contracts import Environment
from sv_shared.runs.records import complete_runs

VIEWS_FOLDER = "views"
DELTA_METRICS: tuple[tuple[str, str], ...] = (("accuracy", "accuracy"), ("reward", "reward"))
"""(header, per-item record value) of the deltas a view shows against the full split: accuracy is the per-item
accuracy component (intent-to-treat: an abstention or unparseable answer is wrong), reward the item's reward."""


class UnknownViewError(ValueError):
    """A view the environment does not define."""


def dataset_views(env: Environment) -> tuple[str, ...]:
    """The environment's feature-ablated views (none for environments that define no views)."""
    return env.data.views


def view_dataset(env: Environment, dataset: EvalDataset, view: str) -> EvalDataset:
    """The dataset's items with the view's fields set to null; its source names the view."""
    if view not in dataset_views(env):
        known = ", ".join(dataset_views(env)) or "none"
        raise UnknownViewError(f"{env.name} has no view {view!r}; its views: {known}")
    return EvalDataset(
        frame=env.data.view(dataset.frame, view), source=view_source(dataset.source, view), split=dataset.split
    )


def view_source(source: str, view: str) -> str:
    return f"{source}:{view}"


def view_evals_root(evals_root: Path, view: str) -> Path:
    """Where the runs on one view live: evals/views/<view>/<env>--<model>/<run id>/."""
    return evals_root / VIEWS_FOLDER / view


def _record_values(run: RunView, value: str) -> list[dict[str, Any]]:
    if value == "reward":
        return [{"id": record.id, "reward": record.reward} for record in run.records]
    return [{"id": record.id, "reward": record.components.get(value)} for record in run.records]


def _view_run(env: Environment, full: RunView, evals_root: Path, view: str) -> RunView | None:
    """The model's latest complete run on the view of the full run's dataset, same N and seed."""
    wanted = view_source(full.metadata.dataset.source, view)
    matching = [
        run
        for run in complete_runs(view_evals_root(evals_root, view), env.name, full.model_id)
        if run.metadata.dataset.source == wanted
        and run.metadata.n_requested == full.metadata.n_requested
        and run.metadata.seed == full.metadata.seed
    ]
    if not matching:
        return None
    return RunView.read(max(matching, key=lambda run: (run.metadata.started_at, run.run_id)))


def robustness_rows(
    env: Environment, runs: Sequence[RunView], evals_root: Path, *, seed: int = 42
) -> list[dict[str, Any]]:
    """Per model (its full run) and view: the view run's metrics and its paired deltas against the full run over
    the items both scored, or why there is none."""
    rows = []
    for full in runs:
        source = full.metadata.dataset.source
        for view in dataset_views(env):
            found = _view_run(env, full, evals_root, view)
            row: dict[str, Any] = {"model": full.model_id, "view": view, "source": view_source(source, view)}
            if found is None:
                rows.append(row | {"missing": "no complete run of this view (same dataset, N and seed)"})
                continue
            metrics = found.metrics
            row |= {
                "run_dir": str(found.run_dir),
                "accuracy": metrics.get("accuracy"),
                "ece": metrics.get("ece"),
                "abstention_rate": metrics.get("abstention_rate"),
                "reward": metrics["reward"]["mean"],
            }
            for header, value in DELTA_METRICS:
                ids, on_view, on_full = align_paired(_record_values(found, value), _record_values(full, value))
                if ids:
                    result = paired_bootstrap(on_view, on_full, seed=seed)
                    row[f"delta_{header}"] = {"n_paired": len(ids), **result.to_dict()}
            rows.append(row)
    return rows


def _fmt(value: Any) -> str:
    return "–" if value is None else f"{value:.3f}"


def _delta(row: Mapping[str, Any], header: str) -> str:
    delta = row.get(f"delta_{header}")
    if delta is None:
        return "–"
    return f"{delta['delta']:+.3f} [{delta['ci_low']:+.3f}, {delta['ci_high']:+.3f}]"


def robustness_lines(env: Environment, runs: Sequence[RunView], rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The report section: each model's full run, then its runs on each view with deltas against it."""
    if not dataset_views(env) or not runs:
        return []
    lines = [
        "",
        "## Robustness to missing fields",
        "",
        "Each view is the same items with some recorded fields set to null (`secverify eval --view VIEW`). Δ: view "
        "minus full, paired bootstrap over the items both runs scored (95% CI). Accuracy is intent-to-treat "
        "(an abstention counts as wrong); ECE is over the answered items.",
        "",
        "| model | view | accuracy | Δ accuracy [95% CI] | ECE | abstain | reward | Δ reward [95% CI] |",
        "|---|---|---|---|---|---|---|---|",
    ]
    by_model = {run.model_id: run for run in runs}
    for model, full in by_model.items():
        m = full.metrics
        lines.append(
            f"| {model} | full | {_fmt(m.get('accuracy'))} | – | {_fmt(m.get('ece'))} | "
            f"{_fmt(m.get('abstention_rate'))} | {_fmt(m['reward']['mean'])} | – |"
        )
        for row in rows:
            if row["model"] != model:
                continue
            if "missing" in row:
                lines.append(f"| {model} | {row['view']} | {row['missing']} ||||||")
                continue
            lines.append(
                f"| {model} | {row['view']} | {_fmt(row['accuracy'])} | {_delta(row, 'accuracy')} | "
                f"{_fmt(row['ece'])} | {_fmt(row['abstention_rate'])} | {_fmt(row['reward'])} | "
                f"{_delta(row, 'reward')} |"
            )
    return lines
