"""Environment reports: the latest complete run of each model on one dataset, compared honestly.

A report holds a metrics table (reward with a bootstrap CI, detection and calibration metrics), paired bootstrap
deltas between every pair of models over the items both scored, a reliability diagram and a risk–coverage plot, and
the provenance of every run it used. Plain Python: the report asset and `secverify report` both call build_report.

Every file of a report is replaced atomically, so two reports built into the same folder at once (the asset and the
command, two schedules) leave whole files, never a torn one; a reader sees the previous report's file or the new one.
Runs that hold a sample twice (written by two processes at once, before run folders were locked) are read with the
first record of each sample, so the comparison still pairs each item once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path
from typing import Any

from secverify_dagster.tournament import rounds_markdown
from sv_shared.answers.plots import plot_reliability, plot_risk_coverage
from sv_shared.answers.statistics import align_paired, paired_bootstrap
from sv_shared.contracts import Dialogue, Environment
from sv_shared.data.files import replacing, write_bytes_atomic, write_json_atomic, write_text_atomic
from sv_shared.runs.records import FinishedRun, latest_complete_runs
from sv_shared.runs.schema import ResultRecord, RunMetadata, RunSummary


@dataclass(frozen=True)
class RunView:
    """A complete run as a report compares it: its metadata, summary and scored samples, read typed."""

    model_id: str
    run_dir: Path
    metadata: RunMetadata
    summary: RunSummary
    records: list[ResultRecord]

    @classmethod
    def read(cls, run: FinishedRun) -> RunView:
        return cls(run.model_id, run.run_dir, run.metadata, run.summary(), list(run.records()))

    @property
    def metrics(self) -> dict[str, Any]:
        return self.summary.metrics


@dataclass(frozen=True)
class Report:
    markdown_path: Path
    json_path: Path
    plots: list[Path]
    dataset_hash: str | None
    models: list[str]
    excluded: dict[str, str]


def new_report_dir(root: Path, now: datetime | None = None) -> Path:
    """A folder of its own for one report (`<root>/<UTC date>T<time>Z[-N]`): made with an exclusive mkdir, so a
    second report the same day, or one built at the same second by another process, never overwrites the first."""
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H%M%SZ")
    root.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, 1000):
        folder = root / (stamp if attempt == 1 else f"{stamp}-{attempt}")
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder
    raise FileExistsError(f"no free report folder for {stamp} under {root}")


def collect_runs(evals_root: Path, env: Environment) -> tuple[list[RunView], dict[str, str]]:
    """The latest complete run per model, all on the dataset of the most recent run; the rest with reasons.

    A run folder that cannot be read (malformed, or of a schema version this code does not read) is refused with a
    message naming its file: a report that silently left a model out would compare the wrong runs."""
    latest = {run.model_id: RunView.read(run) for run in latest_complete_runs(evals_root, env.name)}
    if not latest:
        return [], {}
    newest = max(latest.values(), key=lambda v: v.metadata.started_at)
    basis = _comparison_basis(newest)
    runs = sorted((v for v in latest.values() if _comparison_basis(v) == basis), key=lambda v: v.model_id)
    excluded = {
        v.model_id: f"latest run {v.run_dir.name} is on another dataset, counterpart or judge "
        f"({_describe_basis(_comparison_basis(v))}; the report compares {_describe_basis(basis)})"
        for v in latest.values()
        if _comparison_basis(v) != basis
    }
    return runs, excluded


def _comparison_basis(view: RunView) -> tuple[str, str, str | None]:
    """What must match for two runs to be compared: the dataset, and for dialogues the counterparts and judge."""
    counterparts = view.metadata.counterparts or {}
    described = ",".join(f"{role}={spec.id}" for role, spec in sorted(counterparts.items()))
    return view.metadata.dataset.hash, described, view.metadata.judge


def _describe_basis(basis: tuple[str, str, str | None]) -> str:
    dataset, counterparts, judge = basis
    parts = [f"dataset {dataset[:12]}"]
    if counterparts:
        parts.append(counterparts)
    if judge:
        parts.append(f"judge {judge}")
    return ", ".join(parts)


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def metric_value(metrics: Mapping[str, Any], key: str) -> Any:
    """A metric by dotted key ("patch.applies_rate"); None where any part is missing."""
    value: Any = metrics
    for part in key.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _metrics_table(env: Environment, runs: Sequence[RunView]) -> list[str]:
    columns = env.verifier.report_columns()
    header = "| model | n | reward [95% CI] | " + " | ".join(name for name, _ in columns) + " | cost USD |"
    lines = [header, "|" + "---|" * (len(columns) + 4)]
    for run in runs:
        m = run.metrics
        reward = m["reward"]
        values = " | ".join(_fmt(metric_value(m, key)) for _, key in columns)
        lines.append(
            f"| {run.model_id} | {m['n']} | {_fmt(reward['mean'])} [{_fmt(reward['ci_low'])}, "
            f"{_fmt(reward['ci_high'])}] | {values} | {run.metadata.cost_usd or 0.0:.4f} |"
        )
    return lines


def paired_comparisons(runs: Sequence[RunView], *, seed: int = 42) -> list[dict[str, Any]]:
    """Paired bootstrap of the reward delta for every pair of models, over the items both scored."""
    rows = []
    for run_a, run_b in combinations(runs, 2):
        ids, rewards_a, rewards_b = align_paired(_rewards(run_a), _rewards(run_b))
        if not ids:
            continue
        result = paired_bootstrap(rewards_a, rewards_b, seed=seed)
        rows.append({"model_a": run_a.model_id, "model_b": run_b.model_id, "n_paired": len(ids), **result.to_dict()})
    return rows


def _rewards(run: RunView) -> list[dict[str, Any]]:
    return [{"id": record.id, "reward": record.reward} for record in run.records]


def lineage_comparisons(runs: Sequence[RunView], parents: Mapping[str, str], *, seed: int = 42) -> list[dict[str, Any]]:
    """Each trained checkpoint against the model it was trained from (paired bootstrap on the items both scored),
    where both have a run in the report."""
    by_model = {run.model_id: run for run in runs}
    rows = []
    for run in runs:
        parent = parents.get(run.model_id)
        if parent is None or parent not in by_model:
            continue
        ids, rewards, parent_rewards = align_paired(_rewards(run), _rewards(by_model[parent]))
        if ids:
            result = paired_bootstrap(rewards, parent_rewards, seed=seed)
            rows.append({"checkpoint": run.model_id, "parent": parent, "n_paired": len(ids), **result.to_dict()})
    return rows


def _lineage_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    if not rows:
        return []
    lines = [
        "",
        "## Checkpoints vs their parents (paired bootstrap over items)",
        "",
        "| checkpoint | parent | n | reward | parent reward | Δ | 95% CI | p |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['checkpoint']} | {r['parent']} | {r['n_paired']} | {r['mean_a']:.3f} | {r['mean_b']:.3f} | "
        f"{r['delta']:+.3f} | [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}] | {r['p_value']:.3f} |"
        for r in rows
    ]
    return lines


def build_report(
    env: Environment,
    evals_root: Path,
    out_dir: Path,
    *,
    seed: int = 42,
    parents: Mapping[str, str] | None = None,
) -> Report:
    """parents: checkpoint model id → the model it was trained from (the registry's lineage), compared in a section
    of their own."""
    runs, excluded = collect_runs(evals_root, env)
    out_dir.mkdir(parents=True, exist_ok=True)
    calibrated = [run for run in runs if "reliability_bins" in run.metrics]
    plots: list[Path] = []
    if calibrated or not runs:
        reliability, risk_coverage = out_dir / "reliability.png", out_dir / "risk_coverage.png"
        with replacing(reliability) as tmp:
            plot_reliability(
                {run.model_id: run.metrics["reliability_bins"] for run in calibrated},
                tmp,
                title=f"{env.name}: reliability",
            )
        with replacing(risk_coverage) as tmp:
            plot_risk_coverage(
                {run.model_id: run.metrics["risk_coverage"] for run in calibrated},
                tmp,
                title=f"{env.name}: risk–coverage",
                aurc_by_model={run.model_id: run.metrics["aurc"] for run in calibrated},
            )
        plots += [reliability, risk_coverage]
    comparisons = paired_comparisons(runs, seed=seed)
    lineage = lineage_comparisons(runs, parents or {}, seed=seed)
    dataset = runs[0].metadata.dataset if runs else None
    dialogue_plots: list[Path] = []
    lines = [
        f"# {env.name} ({env.env_id}) report",
        "",
        f"Generated {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}. Verifier {env.verifier.version}. Seed {seed}.",
        "",
    ]
    if not runs:
        lines += ["No complete eval runs yet: materialize this environment's eval_results first.", ""]
    else:
        lines += [
            f"Dataset `{dataset.source}` (hash `{dataset.hash[:16]}`, {dataset.rows} rows); "
            f"every model answered the same {runs[0].summary.n_items} items.{_not_scored(runs)}",
            "",
            "## Results",
            "",
            *_metrics_table(env, runs),
            "",
            "Reward: mean with a 95% bootstrap CI."
            + (
                " ECE: 10 equal-width bins over answered items. AURC: area under the risk–coverage curve "
                "(lower is better)."
                if calibrated
                else ""
            ),
            "",
            "## Paired comparisons (bootstrap over items, 10,000 resamples)",
            "",
        ]
        if comparisons:
            lines += ["| A | B | n | Δ reward (A − B) | 95% CI | p |", "|---|---|---|---|---|---|"]
            lines += [
                f"| {c['model_a']} | {c['model_b']} | {c['n_paired']} | {c['delta']:+.3f} | "
                f"[{c['ci_low']:+.3f}, {c['ci_high']:+.3f}] | {c['p_value']:.3f} |"
                for c in comparisons
            ]
        else:
            lines.append("Only one model has a complete run; nothing to compare.")
        lines += _lineage_lines(lineage)
        if isinstance(env.episodes, Dialogue):
            lines += _dialogue_section(runs, evals_root.parent / "tournaments", out_dir, dialogue_plots)
        lines += ["", "## Format failures", ""]
        lines += [f"- {run.model_id}: {json.dumps(run.metrics.get('format_errors', {}))}" for run in runs]
        if plots:
            lines += ["", "## Calibration", ""]
            lines += [line for plot in plots for line in (f"![{plot.stem}]({plot.name})", "")]
        lines += ["", "## Provenance", ""]
        lines += [
            f"- {run.model_id}: run `{run.run_dir}` · code `{run.metadata.code_version}` · "
            f"model `{run.metadata.model.model}` · generation `{json.dumps(run.metadata.generation)}`"
            for run in runs
        ]
    if excluded:
        lines += ["", "## Not in this report", ""] + [f"- {model}: {why}" for model, why in sorted(excluded.items())]
    plots += dialogue_plots
    markdown = out_dir / "report.md"
    write_text_atomic(markdown, "\n".join(lines) + "\n")
    json_path = out_dir / "report.json"
    write_json_atomic(
        json_path,
        {
            "env": env.env_id,
            "dataset": dataset.as_dict() if dataset else None,
            "models": [run.model_id for run in runs],
            "metrics": {run.model_id: run.metrics for run in runs},
            "comparisons": comparisons,
            "lineage": lineage,
            "runs": {run.model_id: str(run.run_dir) for run in runs},
            "excluded": excluded,
        },
        default=str,
    )
    return Report(
        markdown,
        json_path,
        plots,
        dataset.hash if dataset else None,
        [run.model_id for run in runs],
        excluded,
    )


def _not_scored(runs: Sequence[RunView]) -> str:
    """Samples a complete run gave up on (they failed every attempt; see the run's errors.jsonl)."""
    gaps = [
        f"{run.model_id} {run.summary.n_items - run.summary.n_scored}"
        for run in runs
        if run.summary.n_scored < run.summary.n_items
    ]
    if not gaps:
        return ""
    return (
        " Samples given up after repeated failures, not scored and left out of the metrics (see each run's "
        f"errors.jsonl): {', '.join(gaps)}; comparisons pair only the items both models scored."
    )


def _dialogue_section(runs: Sequence[RunView], tournaments: Path, out_dir: Path, plots: list[Path]) -> list[str]:
    """Who the dialogues were with, the judge's measured accuracy, and (E5) the latest tournament's success curves."""
    newest = runs[-1].metadata
    counterparts = ", ".join(f"{role} `{spec.id}`" for role, spec in (newest.counterparts or {}).items())
    validation = newest.judge_validation or {}
    test = validation.get("splits", {}).get("test", {}).get("unsafe", {})
    lines = [
        "",
        "## Dialogues and judge",
        "",
        f"Counterparts: {counterparts or 'none'}. Judge `{newest.judge}`: on the held-out validation split "
        f"sensitivity {_fmt(test.get('sensitivity'))}, specificity {_fmt(test.get('specificity'))}, "
        f"Cohen's κ {_fmt(test.get('cohen_kappa'))} (n={test.get('n_positive', 0) + test.get('n_negative', 0)}). "
        "Corrected rates invert the judge's error (Rogan–Gladen); their CIs resample dialogues and validation counts. "
        "Transcripts in the run folders are redacted: judged-unsafe text is kept only as its hash and categories.",
    ]
    records = sorted(tournaments.glob("*/tournament.json"), key=lambda path: path.stat().st_mtime)
    if records:
        record = json.loads(records[-1].read_text(encoding="utf-8"))
        curves = Path(record["curves_png"])
        if curves.exists():
            copied = out_dir / "tournament_curves.png"
            write_bytes_atomic(copied, curves.read_bytes())
            plots.append(copied)
        lines += [
            "",
            f"## Latest tournament (`{record['tournament_id']}`)",
            "",
            rounds_markdown(record),
            "",
            "![tournament_curves](tournament_curves.png)",
        ]
    return lines


def summary_lines(env: Environment, metrics: Mapping[str, Any]) -> list[str]:
    """A short human summary of a run's metrics, for the CLI: reward, the env's headline metrics, format failures."""
    reward = metrics["reward"]
    headline = "  ".join(f"{name} {_fmt(metric_value(metrics, key))}" for name, key in env.verifier.report_columns())
    return [
        f"reward {_fmt(reward['mean'])} [{_fmt(reward['ci_low'])}, {_fmt(reward['ci_high'])}]  {headline}",
        f"format failures: {json.dumps(metrics.get('format_errors', {}))}",
    ]
