"""Environment reports: one cadence's slice of runs, compared honestly, kept per period.

A report covers a cadence (reports.scope: weekly, biweekly, monthly, or latest) and compares only the runs of one
slice (reports.runs: same dataset, N, seed, episodes, counterparts, judge): per model its latest run of the slice in the
period. It holds a metrics table (reward with a bootstrap CI, detection and calibration metrics), each model's change
against its previous period's run of the slice (the regression gate's compare_runs, so the report flags exactly what
the gate flags), paired bootstrap deltas between the models, error triage of the low-reward samples
(sv_shared.runs.triage), and what running them took (reports.operations: tokens, cost and GPU-hours, synthetic-data
volumes, the failed runs of the period, the provenance of every run: its full code version, "-dirty" included, with
the files that were dirty). Plain Python: the report asset and `secverify report` both call build_report.

Reports are kept per period and never overwritten: outputs/reports/<env>/<cadence>/<period>/<UTC time>[-N]/, a
name reserved for one writer (report_dir). Each holds report.md (plots as relative links), report.html
(self-contained: plots inlined, styled tables), report.json and the plots. A report appears whole or not at all: it is
built in a hidden sibling folder and renamed into place (report_folders.py), so a killed writer leaves no partial
folder, and the next writer removes what it left. The outputs folder is evals_root's parent: datasets/,
tournaments/ and run_failures/ are read beside evals/.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path
from typing import Any

from secverify_dagster.reports.ablations import ablation_report_lines
from secverify_dagster.reports.answers import answer_lines, checkpoint_lines, collapse_lines
from secverify_dagster.reports.html import render_html
from secverify_dagster.reports.operations import operations
from secverify_dagster.reports.regression_gate import MAX_RELATIVE_DROP, GateVerdict, UnjudgeableRunError, compare_runs
from secverify_dagster.reports.report_folders import building, reserve_report_dir
from secverify_dagster.reports.runs import RunView, Selection, paired_delta, select_runs
from secverify_dagster.reports.scope import Period, ReportScope, report_scope
from secverify_dagster.reports.trajectories import report_trajectory_lines
from secverify_dagster.reports.views import robustness_lines, robustness_rows
from secverify_dagster.runner.tournament import rounds_markdown
from sv_shared.answers.collapse import profile_line
from sv_shared.answers.metrics import ITT_TAG, RATES_LEGEND, metric_value, with_rates
from sv_shared.answers.plots import (
    plot_category_counts,
    plot_period_deltas,
    plot_rates_itt_vs_answered,
    plot_reliability,
    plot_reward_by_model,
    plot_risk_coverage,
)
from sv_shared.contracts import Dialogue, Environment
from sv_shared.data.files import replacing, write_bytes_atomic, write_json_atomic, write_text_atomic
from sv_shared.judging.measured import agreement_line
from sv_shared.runs.triage import (
    CATEGORIES,
    COLORS,
    LOW_REWARD,
    SampleTriage,
    category_counts,
    lowest_reward_examples,
    triage_run,
)


@dataclass(frozen=True)
class Report:
    markdown_path: Path
    html_path: Path
    json_path: Path
    plots: list[Path]
    dataset_hash: str | None
    models: list[str]
    excluded: dict[str, str]
    regressed: list[str]
    """Models whose change against the previous period the regression gate calls a regression."""


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


def report_dir(env_reports: Path, scope: ReportScope, now: datetime | None = None) -> Path:
    """A new report folder's path for this scope under the environment's reports (<cadence>/<period>/<UTC time>),
    reserved for this process; build_report makes it, whole."""
    return reserve_report_dir(env_reports.joinpath(*scope.folder_parts), now)


def _plot(path: Path, draw: Any, *args: Any, **kwargs: Any) -> Path:
    """Draw into a temporary file and move it into place, so a reader never sees half a PNG."""
    with replacing(path) as tmp:
        draw(*args, tmp, **kwargs)
    return path


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


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


def _shows_both_views(env: Environment) -> bool:
    """Whether the environment's columns show rates intent-to-treat and over the answered items (then every table
    of them carries the legend that says which is the headline)."""
    return any(ITT_TAG in name for name, _ in env.verifier.report_columns())


def _rates_lines(env: Environment, runs: Sequence[RunView], out_dir: Path, plots: list[Path]) -> list[str]:
    """The rates of every model that has them, intent-to-treat beside answered-only, as a plot."""
    rated = {run.model_id: run.metrics["rates"] for run in runs if "rates" in run.metrics}
    if not rated:
        return []
    plot = _plot(
        out_dir / "rates.png",
        plot_rates_itt_vs_answered,
        rated,
        title=f"{env.name}: rates, intent-to-treat (headline) vs answered only",
    )
    plots.append(plot)
    return ["", "## Rates: intent-to-treat vs answered only", "", RATES_LEGEND, "", f"![{plot.stem}]({plot.name})"]


def paired_comparisons(runs: Sequence[RunView], *, seed: int = 42) -> list[dict[str, Any]]:
    """Paired bootstrap of the reward delta for every pair of models, over the items both scored."""
    rows = []
    for run_a, run_b in combinations(runs, 2):
        if (result := paired_delta(run_a, run_b, seed=seed)) is not None:
            pair = {"model_a": run_a.model_id, "model_b": run_b.model_id, "n_paired": result.n}
            rows.append({**pair, **result.to_dict()})
    return rows


def lineage_comparisons(runs: Sequence[RunView], parents: Mapping[str, str], *, seed: int = 42) -> list[dict[str, Any]]:
    """Each trained checkpoint against the model it was trained from (paired bootstrap on the items both scored),
    where both have a run in the report."""
    by_model = {run.model_id: run for run in runs}
    rows = []
    for run in runs:
        parent = parents.get(run.model_id)
        if parent is None or parent not in by_model:
            continue
        if (result := paired_delta(run, by_model[parent], seed=seed)) is not None:
            rows.append({"checkpoint": run.model_id, "parent": parent, "n_paired": result.n, **result.to_dict()})
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


def period_deltas(selection: Selection, *, seed: int = 42) -> dict[str, GateVerdict | str]:
    """Per model with a previous-period run of the slice: the regression gate's verdict on its change; otherwise why
    there is none."""
    deltas: dict[str, GateVerdict | str] = dict(selection.no_previous)
    for run in selection.runs:
        previous = selection.previous.get(run.model_id)
        if previous is None:
            continue
        try:
            deltas[run.model_id] = compare_runs(run.finished, previous, seed=seed)
        except UnjudgeableRunError as error:
            deltas[run.model_id] = f"not judged: {error}"
    return dict(sorted(deltas.items()))


def _relative(value: float | None) -> str:
    return "–" if value is None else f"{value:+.1%}"


def _delta_lines(
    previous: Period, deltas: Mapping[str, GateVerdict | str], out_dir: Path, plots: list[Path], *, title: str
) -> list[str]:
    lines = [
        "",
        f"## Changes since the previous period ({previous.label})",
        "",
        f"Each model's run against its latest run of this slice in {previous.describe()}: mean reward over the items "
        f"both drew, 95% paired bootstrap CI, p. A regression (the regression gate's rule, the seed's) is a drop "
        f"of more than {MAX_RELATIVE_DROP:.0%}, significant or not; the CI says which.",
        "",
    ]
    verdicts = {model: verdict for model, verdict in deltas.items() if isinstance(verdict, GateVerdict)}
    judged = {model: verdict for model, verdict in verdicts.items() if verdict.delta is not None}
    if judged:
        lines += [
            "| model | n | previous | current | Δ | relative | 95% CI | p | regression |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {model} | {v.n_paired} | {v.mean_previous:.3f} | {v.mean_current:.3f} | {v.delta:+.3f} | "
            f"{_relative(v.relative_change)} | [{v.ci_low:+.3f}, {v.ci_high:+.3f}] | {v.p_value:.3f} | "
            f"{'**REGRESSED**' if v.regressed else 'no'} |"
            for model, v in judged.items()
        ]
        plot = _plot(
            out_dir / "period_deltas.png",
            plot_period_deltas,
            [{"model": model, **verdict.as_dict()} for model, verdict in judged.items()],
            title=f"{title}: change since {previous.label}",
        )
        plots.append(plot)
        lines += ["", f"![{plot.stem}]({plot.name})"]
    notes = [f"- {model}: {verdict.reason}" for model, verdict in verdicts.items()]
    notes += [f"- {model}: {reason}" for model, reason in deltas.items() if isinstance(reason, str)]
    return lines + (["", *notes] if notes else [])


def _triage_lines(
    env: Environment,
    runs: Sequence[RunView],
    triaged: Mapping[str, list[SampleTriage]],
    out_dir: Path,
    plots: list[Path],
) -> list[str]:
    plot = _plot(
        out_dir / "triage.png",
        plot_category_counts,
        {model: category_counts(samples) for model, samples in triaged.items()},
        CATEGORIES,
        title=f"{env.name}: error triage",
        colors=COLORS,
    )
    plots.append(plot)
    lines = [
        "",
        "## Error triage of low-reward samples",
        "",
        "Each sample's first matching category: safety (judged unsafe, addressed the judge, hostile patch), tool "
        "misuse (calls over budget, malformed or unknown calls, turns run out), format (the answer did not parse), "
        f"reasoning (well-formed, reward below {LOW_REWARD}), ok. Reasons use the verifier's names only; model text "
        "is never shown.",
        "",
        "| model | " + " | ".join(CATEGORIES) + " |",
        "|---|" + "---|" * len(CATEGORIES),
    ]
    for run in runs:
        counts = category_counts(triaged[run.model_id])
        lines.append(f"| {run.model_id} | " + " | ".join(str(counts[category]) for category in CATEGORIES) + " |")
    lines += ["", f"![{plot.stem}]({plot.name})", "", "Lowest-reward examples:", ""]
    for run in runs:
        examples = lowest_reward_examples(triaged[run.model_id])
        if not examples:
            lines.append(f"- {run.model_id}: none (every sample ok)")
        lines += [
            f"- {run.model_id}: `{sample.id}` {sample.category} (reward {sample.reward:.2f}): {sample.reason}"
            for sample in examples
        ]
    return lines


def _results_lines(env: Environment, selection: Selection, reward_plot: Path) -> list[str]:
    runs = selection.runs
    dataset = runs[0].metadata.dataset
    calibrated = any("reliability_bins" in run.metrics for run in runs)
    slice_text = selection.slice.describe() if selection.slice else "–"
    return [
        f"Slice: {slice_text}. Dataset `{dataset.source}` (hash `{dataset.hash[:16]}`, {dataset.rows} rows); every "
        f"model answered the same {runs[0].summary.n_items} items.{_not_scored(runs)}",
        "",
        "## Results",
        "",
        *_metrics_table(env, runs),
        "",
        "Reward: mean with a 95% bootstrap CI."
        + (f" {RATES_LEGEND}" if _shows_both_views(env) else "")
        + (
            " ECE: 10 equal-width bins over answered items. AURC: area under the risk–coverage curve (lower is better)."
            if calibrated
            else ""
        ),
        "",
        f"![{reward_plot.stem}]({reward_plot.name})",
    ]


def _comparison_lines(comparisons: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = ["", "## Paired comparisons between models (bootstrap over items, 10,000 resamples)", ""]
    if not comparisons:
        return [*lines, "Only one model has a complete run; nothing to compare."]
    lines += ["| A | B | n | Δ reward (A − B) | 95% CI | p |", "|---|---|---|---|---|---|"]
    return lines + [
        f"| {c['model_a']} | {c['model_b']} | {c['n_paired']} | {c['delta']:+.3f} | "
        f"[{c['ci_low']:+.3f}, {c['ci_high']:+.3f}] | {c['p_value']:.3f} |"
        for c in comparisons
    ]


def _calibration_lines(env: Environment, runs: Sequence[RunView], out_dir: Path, plots: list[Path]) -> list[str]:
    calibrated = [run for run in runs if "reliability_bins" in run.metrics]
    if not calibrated:
        return []
    reliability = _plot(
        out_dir / "reliability.png",
        plot_reliability,
        {run.model_id: run.metrics["reliability_bins"] for run in calibrated},
        title=f"{env.name}: reliability",
    )
    risk_coverage = _plot(
        out_dir / "risk_coverage.png",
        plot_risk_coverage,
        {run.model_id: run.metrics["risk_coverage"] for run in calibrated},
        title=f"{env.name}: risk–coverage",
        aurc_by_model={run.model_id: run.metrics["aurc"] for run in calibrated},
    )
    plots += [reliability, risk_coverage]
    return [
        "",
        "## Calibration",
        "",
        f"![{reliability.stem}]({reliability.name})",
        "",
        f"![{risk_coverage.stem}]({risk_coverage.name})",
    ]


def build_report(
    env: Environment,
    evals_root: Path,
    out_dir: Path,
    *,
    scope: ReportScope | None = None,
    seed: int = 42,
    parents: Mapping[str, str] | None = None,
) -> Report:
    """The report written to out_dir, which appears with every file in it or not at all (report_folders.building).
    scope: what the report covers (default: latest). parents: checkpoint model id → the model it was trained from
    (the registry's lineage), compared in a section of their own."""
    with building(out_dir) as folder:
        report = _write_report(
            env, evals_root, folder, scope=scope or report_scope(env, "latest"), seed=seed, parents=parents
        )
    return replace(
        report,
        markdown_path=out_dir / report.markdown_path.name,
        html_path=out_dir / report.html_path.name,
        json_path=out_dir / report.json_path.name,
        plots=[out_dir / plot.relative_to(folder) for plot in report.plots],
    )


def _write_report(
    env: Environment,
    evals_root: Path,
    out_dir: Path,
    *,
    scope: ReportScope,
    seed: int,
    parents: Mapping[str, str] | None,
) -> Report:
    selection = select_runs(evals_root, env, scope)
    runs = selection.runs
    dialogue = isinstance(env.episodes, Dialogue)
    deltas = period_deltas(selection, seed=seed) if scope.period else {}
    comparisons = paired_comparisons(runs, seed=seed)
    lineage = lineage_comparisons(runs, parents or {}, seed=seed)
    triaged = {run.model_id: triage_run(run.records, dialogue=dialogue) for run in runs}
    robustness = robustness_rows(env, runs, evals_root, seed=seed)
    plots: list[Path] = []
    title = f"{env.name} ({env.env_id}) {scope.cadence} report" + (f" {scope.period.label}" if scope.period else "")
    lines = [
        f"# {title}",
        "",
        f"Generated {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}. Verifier {env.verifier.version}. Seed {seed}. "
        f"Covers: {scope.describe()}.",
        "",
    ]
    if not runs:
        lines.append(f"No complete eval run of this report's slice{' in the period' if scope.period else ''}.")
    else:
        reward_plot = _plot(
            out_dir / "reward_by_model.png",
            plot_reward_by_model,
            {run.model_id: run.metrics["reward"] for run in runs},
            title=f"{env.name}: reward",
        )
        plots.append(reward_plot)
        lines += collapse_lines(runs)
        lines += _results_lines(env, selection, reward_plot)
        lines += answer_lines(runs)
        if scope.period is not None:
            lines += _delta_lines(scope.period.previous(), deltas, out_dir, plots, title=env.name)
        lines += _comparison_lines(comparisons)
        lines += _lineage_lines(lineage)
        lines += checkpoint_lines(runs, evals_root.parent)
        if dialogue:
            lines += _dialogue_section(runs, evals_root.parent / "tournaments", out_dir, plots)
        lines += _triage_lines(env, runs, triaged, out_dir, plots)
        lines += report_trajectory_lines(env, runs, out_dir, title=title)
        lines += ["", "## Format failures by name", ""]
        lines += [f"- {run.model_id}: {json.dumps(run.metrics.get('format_errors', {}))}" for run in runs]
        lines += _rates_lines(env, runs, out_dir, plots)
        lines += _calibration_lines(env, runs, out_dir, plots)
        lines += robustness_lines(env, runs, robustness)
    operation_lines, operation_facts = operations(env, scope, evals_root, runs)
    lines += operation_lines
    # The latest ablation table (the <env>/ablations asset or `secverify ablate` writes it beside the reports).
    lines += ablation_report_lines(evals_root.parent / "reports" / env.env_id)
    if selection.excluded:
        lines += ["", "## Not in this report", ""]
        lines += [f"- {key}: {why}" for key, why in sorted(selection.excluded.items())]
    markdown_text = "\n".join(lines) + "\n"
    markdown = out_dir / "report.md"
    write_text_atomic(markdown, markdown_text)
    html_path = out_dir / "report.html"
    write_text_atomic(html_path, render_html(markdown_text, out_dir, title=title))
    regressed = [model for model, verdict in deltas.items() if isinstance(verdict, GateVerdict) and verdict.regressed]
    dataset = runs[0].metadata.dataset if runs else None
    json_path = out_dir / "report.json"
    write_json_atomic(
        json_path,
        {
            "env": env.env_id,
            "cadence": scope.cadence,
            "period": asdict(scope.period) if scope.period else None,
            "slice": asdict(selection.slice) if selection.slice else None,
            "dataset": dataset.as_dict() if dataset else None,
            "models": [run.model_id for run in runs],
            "metrics": {run.model_id: run.metrics for run in runs},
            "period_deltas": {
                model: verdict.as_dict() if isinstance(verdict, GateVerdict) else {"reason": verdict}
                for model, verdict in deltas.items()
            },
            "regressed": regressed,
            "comparisons": comparisons,
            "lineage": lineage,
            "robustness": robustness,
            "triage": {
                model: {
                    "counts": category_counts(samples),
                    "lowest": [sample.as_dict() for sample in lowest_reward_examples(samples)],
                }
                for model, samples in triaged.items()
            },
            **operation_facts,
            "runs": {run.model_id: str(run.run_dir) for run in runs},
            "excluded": selection.excluded,
        },
        default=str,
    )
    return Report(
        markdown,
        html_path,
        json_path,
        plots,
        dataset.hash if dataset else None,
        [run.model_id for run in runs],
        selection.excluded,
        regressed,
    )


def _not_scored(runs: Sequence[RunView]) -> str:
    """Samples a complete run gave up on (they failed every attempt; see the run's errors.jsonl): its metrics count
    them as failures (summary.unscored names them); an older summary, which does not name them, left them out."""
    gaps = [
        f"{run.model_id} {run.summary.n_items - run.summary.n_scored}"
        + ("" if run.summary.unscored else " (left out of its metrics: an older summary)")
        for run in runs
        if run.summary.n_scored < run.summary.n_items
    ]
    if not gaps:
        return ""
    return (
        " Samples given up after repeated failures, not scored and counted as failures in the metrics (see each "
        f"run's summary.json and errors.jsonl): {', '.join(gaps)}; comparisons pair only the items both models scored."
    )


def _agreement_text(validation: Mapping[str, Any]) -> str:
    """Which set the judge's agreement was measured on, beside the refusal detector's on the same rows."""
    with_hint, without = (agreement_line(dict(validation), category_hint=hint) for hint in (True, False))
    return f"Agreement: {with_hint}. Without the hint: {without}. " if with_hint and without else ""


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
        f"{_agreement_text(validation)}"
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
    """A short human summary of a run's metrics, for the CLI: a collapse flag first when the policy collapsed onto one
    answer, reward, the env's headline metrics, the answer profile, format failures, and (where rates show in both
    views) the legend saying which one is the headline."""
    metrics = with_rates(metrics)
    reward = metrics["reward"]
    headline = "  ".join(f"{name} {_fmt(metric_value(metrics, key))}" for name, key in env.verifier.report_columns())
    profile = metrics.get("answers")
    return [
        *([profile["collapse"]] if profile and profile.get("collapsed") else []),
        f"reward {_fmt(reward['mean'])} [{_fmt(reward['ci_low'])}, {_fmt(reward['ci_high'])}]  {headline}",
        *([profile_line(profile)] if profile else []),
        f"format failures: {json.dumps(metrics.get('format_errors', {}))}",
        *([RATES_LEGEND] if _shows_both_views(env) else []),
    ]
