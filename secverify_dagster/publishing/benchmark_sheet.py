"""The benchmark sheet: every model × environment's headline metrics with 95% bootstrap CIs, from the full eval.

Each environment's runs are chosen exactly as its report chooses them (reports.runs.select_runs over the cadence's
slice), so a sheet never mixes N or items within an environment: `biweekly` (the default) is the full eval's slice
(default N, seed 42, the scheduled episodes) in a 14-day period; `latest` is each environment's newest slice, for a
machine without bi-weekly runs yet, and the sheet says in its title and footer that it is not the full eval.

Headline metrics are the environment's report columns, intent-to-treat where a rate has both views. CIs (seed 42):
the reward's bootstrap over the run's sample rewards, and each ITT classification rate's bootstrap over the items
(sv_shared.answers.rate_intervals); other columns are point values. Judged rates (attack success, unsafe compliance)
carry their own CIs and the judge's measured sensitivity and specificity, shown beside them.

Kept under outputs/reports/benchmark/<period label>/<UTC time>[-N]/ (sheet.md, sheet.html, sheet.json), a folder made
with an exclusive mkdir, so sheets built at once by two processes never overwrite each other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal, get_args

from secverify_dagster.reports.environment_report import new_report_dir
from secverify_dagster.reports.html import render_html
from secverify_dagster.reports.runs import RunView, Selection, select_runs
from secverify_dagster.reports.scope import ReportScope, report_scope
from sv_shared.answers.metrics import ANSWERED_TAG, metric_value
from sv_shared.answers.rate_intervals import confusion_rate_cis
from sv_shared.answers.statistics import bootstrap_mean_ci
from sv_shared.contracts import Environment
from sv_shared.data.files import write_json_atomic, write_text_atomic

SheetCadence = Literal["biweekly", "latest"]
SHEET_CADENCES: Final[tuple[SheetCadence, ...]] = get_args(SheetCadence)
SEED: Final = 42
ITT_RATE_PREFIX: Final = "rates.itt."
LATEST_LABEL: Final = "latest"
NOT_FULL_EVAL: Final = "NOT the full eval: each environment's newest slice of runs (cadence latest)"


@dataclass(frozen=True)
class Estimate:
    value: Any
    ci: tuple[float, float] | None = None

    def text(self) -> str:
        if self.value is None:
            return "–"
        if not isinstance(self.value, float):
            return str(self.value)
        interval = f" [{self.ci[0]:.3f}, {self.ci[1]:.3f}]" if self.ci else ""
        return f"{self.value:.3f}{interval}"


@dataclass(frozen=True)
class JudgedRate:
    """A rate a judge decided (sv_shared.judging.measured.judged_rate), with the judge's measured accuracy."""

    metric: str
    judge: str
    rate: Estimate
    corrected: Estimate
    sensitivity: float | None
    specificity: float | None
    agreement: str | None = None
    """The judge's κ on its named validation set beside the refusal detector's on the same rows (one line)."""


@dataclass(frozen=True)
class Cell:
    """One model's run on one environment: where its numbers come from, and the numbers."""

    model_id: str
    run_id: str
    run_path: str
    """The run's folder relative to the evals root: <env name>--<model>/<run id>."""
    n: int
    date: str
    code_versions: list[str]
    reward: Estimate
    columns: dict[str, Estimate]
    judged: list[JudgedRate]


@dataclass
class EnvSheet:
    env_id: str
    env_name: str
    verifier_version: str
    scope: str
    slice: str | None
    columns: list[str]
    cells: dict[str, Cell] = field(default_factory=dict)
    not_run: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Sheet:
    cadence: SheetCadence
    label: str
    markdown_path: Path
    html_path: Path
    json_path: Path
    envs: list[EnvSheet]

    @property
    def models(self) -> list[str]:
        return models_of(self.envs)


def models_of(sheets: Sequence[EnvSheet]) -> list[str]:
    """Every model with a row on the sheet: run or not run somewhere."""
    return sorted({model for sheet in sheets for model in (*sheet.cells, *sheet.not_run)})


def headline_columns(env: Environment) -> list[tuple[str, str]]:
    """The report's columns with each two-view rate shown once, intent-to-treat (the headline view)."""
    return [(name, key) for name, key in env.verifier.report_columns() if ANSWERED_TAG not in name]


def _ci(low: Any, high: Any) -> tuple[float, float] | None:
    return (float(low), float(high)) if low is not None and high is not None else None


def _judged_rates(metrics: Mapping[str, Any]) -> list[JudgedRate]:
    """Every judged rate the summary holds: a metric carrying a judge, a rate and its CI."""
    judged = []
    for name, value in sorted(metrics.items()):
        if isinstance(value, Mapping) and {"judge", "rate", "ci"} <= value.keys():
            judged.append(
                JudgedRate(
                    metric=name,
                    judge=str(value["judge"]),
                    rate=Estimate(value["rate"], _ci(*(value["ci"] or (None, None)))),
                    corrected=Estimate(value.get("corrected"), _ci(*(value.get("corrected_ci") or (None, None)))),
                    sensitivity=value.get("judge_sensitivity"),
                    specificity=value.get("judge_specificity"),
                    agreement=(value.get("judge_agreement") or {}).get("line"),
                )
            )
    return judged


def cell_of(env: Environment, run: RunView, evals_root: Path) -> Cell:
    metrics = run.metrics
    rewards = [float(record.reward) for record in run.records]
    reward = Estimate(None)
    if rewards:
        mean, low, high = bootstrap_mean_ci(rewards, seed=SEED)
        reward = Estimate(mean, (low, high))
    confusion = metric_value(metrics, "rates.itt.confusion")
    rate_cis = confusion_rate_cis(confusion, seed=SEED) if isinstance(confusion, Mapping) else {}
    columns = {}
    for name, key in headline_columns(env):
        value = metric_value(metrics, key)
        ci = rate_cis.get(key.removeprefix(ITT_RATE_PREFIX)) if key.startswith(ITT_RATE_PREFIX) else None
        columns[name] = Estimate(value, ci if value is not None else None)
    sessions = run.metadata.sessions
    return Cell(
        model_id=run.model_id,
        run_id=run.metadata.run_id,
        run_path=run.run_dir.relative_to(evals_root).as_posix(),
        n=len(rewards),
        date=sessions[-1].started_at[:10],
        code_versions=sorted({session.code_version for session in sessions}),
        reward=reward,
        columns=columns,
        judged=_judged_rates(metrics),
    )


def _not_run_reasons(selection: Selection) -> dict[str, str]:
    """Per model left out of the environment's slice: why, from the selection's "<model> <run id>" entries."""
    reasons: dict[str, list[str]] = {}
    for key, why in sorted(selection.excluded.items()):
        model_id, _, run_id = key.partition(" ")
        reasons.setdefault(model_id, []).append(f"{run_id}: {why}")
    return {model_id: "; ".join(whys) for model_id, whys in reasons.items()}


def env_sheet(env: Environment, evals_root: Path, scope: ReportScope) -> EnvSheet:
    selection = select_runs(evals_root, env, scope)
    sheet = EnvSheet(
        env_id=env.env_id,
        env_name=env.name,
        verifier_version=env.verifier.version,
        scope=scope.describe(),
        slice=selection.slice.describe() if selection.slice else None,
        columns=[name for name, _ in headline_columns(env)],
    )
    sheet.cells = {run.model_id: cell_of(env, run, evals_root) for run in selection.runs}
    sheet.not_run = {model: why for model, why in _not_run_reasons(selection).items() if model not in sheet.cells}
    return sheet


def _fill_not_run(sheets: Sequence[EnvSheet], model_envs: Mapping[str, Sequence[str]], period: str) -> None:
    """Every model with a run anywhere is a row everywhere: where it has none in an environment's slice, say why."""
    models = set(models_of(sheets))
    for sheet in sheets:
        for model in sorted(models - sheet.cells.keys() - sheet.not_run.keys()):
            configured = list(model_envs.get(model, ()))
            if configured and sheet.env_id not in configured:
                sheet.not_run[model] = f"not applicable: the model is configured for {', '.join(configured)} only"
            else:
                where = "" if period == LATEST_LABEL else f" in {period}"
                sheet.not_run[model] = f"no complete run on {sheet.env_id}{where}"


def _overview(sheets: Sequence[EnvSheet], models: Sequence[str]) -> list[str]:
    lines = [
        "| model | " + " | ".join(f"{sheet.env_id} reward [95% CI]" for sheet in sheets) + " |",
        "|---|" + "---|" * len(sheets),
    ]
    for model in models:
        row = []
        for sheet in sheets:
            cell = sheet.cells.get(model)
            row.append(f"{cell.reward.text()} · N={cell.n} · `{cell.run_id}` · {cell.date}" if cell else "not run")
        lines.append(f"| {model} | " + " | ".join(row) + " |")
    return lines


def _env_lines(sheet: EnvSheet) -> list[str]:
    lines = [
        "",
        f"## {sheet.env_id}: {sheet.env_name}",
        "",
        f"Slice: {sheet.slice or 'no complete run of this slice'}. Verifier {sheet.verifier_version}.",
        "",
    ]
    if sheet.cells:
        lines += [
            "| model | run | N | date | reward [95% CI] | " + " | ".join(sheet.columns) + " |",
            "|---|---|---|---|---|" + "---|" * len(sheet.columns),
        ]
        lines += [
            f"| {cell.model_id} | `{cell.run_id}` | {cell.n} | {cell.date} | {cell.reward.text()} | "
            + " | ".join(cell.columns[name].text() for name in sheet.columns)
            + " |"
            for cell in sheet.cells.values()
        ]
    judged = [(cell.model_id, rate) for cell in sheet.cells.values() for rate in cell.judged]
    if judged:
        lines += [
            "",
            "Judged rates, with the judge's accuracy measured on its held-out validation split beside them:",
            "",
            "| model | rate | judged [95% CI] | corrected for the judge [95% CI] | judge | sensitivity | specificity "
            "| agreement (set; refusal detector on the same rows) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {model} | {rate.metric} | {rate.rate.text()} | {rate.corrected.text()} | `{rate.judge}` | "
            f"{Estimate(rate.sensitivity).text()} | {Estimate(rate.specificity).text()} | {rate.agreement or '–'} |"
            for model, rate in judged
        ]
    if sheet.not_run:
        lines += ["", *(f"- {model}: not run — {why}" for model, why in sorted(sheet.not_run.items()))]
    return lines


def _footer(cadence: SheetCadence, period: str, sheets: Sequence[EnvSheet]) -> list[str]:
    versions = sorted({version for sheet in sheets for cell in sheet.cells.values() for version in cell.code_versions})
    lines = [
        "",
        "---",
        "",
        f"Period: {period}." + (f" {NOT_FULL_EVAL}." if cadence == "latest" else " The full (bi-weekly) eval's slice."),
        "",
        f"CIs: 95% percentile bootstrap, 10,000 resamples, seed {SEED}: the reward over the run's sample rewards; "
        "each intent-to-treat classification rate over the items (from the run's confusion counts); judged rates as "
        "their run computed them. Other columns are point values; each environment's report has the rest. Rates with "
        "two views are shown intent-to-treat: an abstention or unparseable answer counts as wrong.",
        "",
        f"Code versions of the runs: {', '.join(f'`{version}`' for version in versions) or 'none'}. Verifiers: "
        + ", ".join(f"{sheet.env_id} {sheet.verifier_version}" for sheet in sheets)
        + ".",
    ]
    return lines


def _period_label(cadence: SheetCadence, scopes: Sequence[ReportScope]) -> tuple[str, str]:
    """(folder label, description) of the sheet's period; every environment's scope holds the same period."""
    period = scopes[0].period if scopes else None
    if cadence == "latest" or period is None:
        return LATEST_LABEL, "latest runs of each environment"
    return period.label, period.describe()


@dataclass(frozen=True)
class SheetContent:
    cadence: SheetCadence
    label: str
    title: str
    markdown: str
    generated_at: datetime
    envs: list[EnvSheet]

    @property
    def models(self) -> list[str]:
        return models_of(self.envs)


def compose_sheet(
    envs: Sequence[Environment],
    evals_root: Path,
    *,
    cadence: SheetCadence = "biweekly",
    period: str | None = None,
    now: datetime | None = None,
    model_envs: Mapping[str, Sequence[str]] | None = None,
) -> SheetContent:
    """The sheet over `envs` for a cadence's period (the one named, else the one holding `now`). model_envs: the
    environments each registry model is configured for (empty: all), to say "not applicable" rather than "not run"
    where a model is not meant to run."""
    if cadence not in SHEET_CADENCES:
        raise ValueError(f"a benchmark sheet's cadence is one of {', '.join(SHEET_CADENCES)} (got {cadence!r})")
    moment = now or datetime.now(UTC)
    scopes = [report_scope(env, cadence, period=period, now=moment) for env in envs]
    label, described = _period_label(cadence, scopes)
    sheets = [env_sheet(env, evals_root, scope) for env, scope in zip(envs, scopes, strict=True)]
    _fill_not_run(sheets, model_envs or {}, label)
    models = models_of(sheets)
    title = f"secverify benchmark sheet {label}" + (" (latest runs, not the full eval)" if cadence == "latest" else "")
    lines = [
        f"# {title}",
        "",
        f"Generated {moment.strftime('%Y-%m-%d %H:%M UTC')}. Covers {described}. Every cell names its run, N and date.",
        "",
        *_overview(sheets, models),
    ]
    for sheet in sheets:
        lines += _env_lines(sheet)
    lines += _footer(cadence, described, sheets)
    return SheetContent(cadence, label, title, "\n".join(lines) + "\n", moment, sheets)


def write_sheet(content: SheetContent, out_dir: Path) -> Sheet:
    """sheet.md, sheet.html (self-contained) and sheet.json in out_dir, each replaced atomically."""
    out_dir.mkdir(parents=True, exist_ok=True)
    markdown_path, html_path, json_path = out_dir / "sheet.md", out_dir / "sheet.html", out_dir / "sheet.json"
    write_text_atomic(markdown_path, content.markdown)
    write_text_atomic(html_path, render_html(content.markdown, out_dir, title=content.title))
    write_json_atomic(
        json_path,
        {
            "cadence": content.cadence,
            "period": content.label,
            "full_eval": content.cadence == "biweekly",
            "generated_at": content.generated_at.isoformat(),
            "models": content.models,
            "envs": [asdict(sheet) for sheet in content.envs],
        },
    )
    return Sheet(content.cadence, content.label, markdown_path, html_path, json_path, content.envs)


def build_sheet(
    envs: Sequence[Environment],
    evals_root: Path,
    sheets_root: Path,
    *,
    cadence: SheetCadence = "biweekly",
    period: str | None = None,
    now: datetime | None = None,
    model_envs: Mapping[str, Sequence[str]] | None = None,
) -> Sheet:
    """compose_sheet, written to a new folder of its own under sheets_root/<period label>/."""
    content = compose_sheet(envs, evals_root, cadence=cadence, period=period, now=now, model_envs=model_envs)
    return write_sheet(content, new_report_dir(sheets_root / content.label, content.generated_at))
