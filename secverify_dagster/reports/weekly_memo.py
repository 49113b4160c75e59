"""The weekly memo the seed asks for: reward deltas, notable regressions, new synthetic volumes and outstanding risks,
committed under docs-internal/reports/<ISO week>.md.

Nothing in it is computed a second way. Rewards are the weekly reports' own: per weekly environment, each model's
latest run of the weekly slice in the ISO week (reports.runs.select_runs) against its run of the slice in the week
before, judged by the regression gate's compare_runs (reports.environment_report.period_deltas, the same seed), so
the memo flags exactly what the weekly report and `secverify check` flag. Collapse is the flag each run's summary
carries (sv_shared.answers.collapse). Synthetic volumes, runs that did not finish, failed Dagster runs, checkpoints
awaiting a decision, unreachable models and low-agreement judges are read from the files that record them
(reports.memo_findings). Every line names the run folder, report or record it comes from.

Two times: rewards cover the ISO week (as its weekly report does: the Monday sweep, and any later run of the slice
that week); what is new (synthetic volumes, runs, failures) covers the seven days up to MEMO_CUTOFF on the week's
Monday, when the weekly report runs, so the scheduled memos follow each other without gap or overlap and a memo
rebuilt later reports the same window. Risks that are states (checkpoints, models, judges) are as of writing.

The memo is one file per week, replaced atomically (a temporary file in the same folder, then a rename): two writers
at once leave one of their memos whole. Its folder is $SECVERIFY_MEMOS, else <checkout>/docs-internal/reports.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

from secverify_dagster.cadences import WEEKLY_ENVS
from secverify_dagster.reports.environment_report import period_deltas
from secverify_dagster.reports.memo_findings import (
    Finding,
    SyntheticVolume,
    Window,
    failed_runs,
    low_agreement_judges,
    pending_checkpoints,
    run_health,
    shown,
    synthetic_volumes,
    unreachable_models,
)
from secverify_dagster.reports.regression_gate import MAX_RELATIVE_DROP, MIN_PAIRED_ITEMS, GateVerdict
from secverify_dagster.reports.runs import Selection, select_runs
from secverify_dagster.reports.scope import SLICE_SEED, WEEKLY_N, Period, parse_period, period_of, report_scope
from secverify_dagster.resources.models import ModelSpec
from sv_shared.config import project_root
from sv_shared.data.files import write_text_atomic
from sv_shared.registry import get_environment, implemented_env_ids
from sv_shared.runs.folder import RunRecordError

MEMO_DIR_VARIABLE: Final = "SECVERIFY_MEMOS"
MEMO_CUTOFF: Final = timedelta(hours=12)
"""Monday 12:00 UTC, when the weekly report runs (schedules.reports.weekly_report): the end of a week's window of
what is new."""


def memo_dir() -> Path:
    """Where the memos are kept: $SECVERIFY_MEMOS, else docs-internal/reports in the checkout (the seed's place)."""
    return Path(os.environ.get(MEMO_DIR_VARIABLE) or project_root() / "docs-internal" / "reports")


def memo_week(label: str | None, now: datetime | None = None) -> Period:
    """The ISO week a label names (2026-W48), else the one holding `now`."""
    return parse_period("weekly", label) if label else period_of("weekly", now or datetime.now(UTC))


def memo_window(week: Period) -> Window:
    """The seven days up to the week's Monday at MEMO_CUTOFF."""
    end = week.start + MEMO_CUTOFF
    return Window(end - timedelta(days=7), end)


@dataclass(frozen=True)
class RewardRow:
    """One model's weekly run against last week's, as the weekly report shows it."""

    model_id: str
    reward: float
    """This week's mean reward over all its items (the report's metrics table)."""
    verdict: GateVerdict | None
    note: str
    """Why there is no verdict (no comparable run last week), or the verdict's reason."""
    run_dir: Path
    previous_dir: Path | None

    @property
    def gate(self) -> str:
        """The gate's word on the change: REGRESSED, ok, not judged (a run it cannot read, too few shared items),
        or no previous run (of the slice, last week)."""
        verdict = self.verdict
        if verdict is None:
            return "not judged" if self.note.startswith("not judged") else "no previous run"
        if verdict.regressed:
            return "REGRESSED"
        return "not judged" if verdict.delta is None or verdict.n_paired < MIN_PAIRED_ITEMS else "ok"


@dataclass(frozen=True)
class EnvironmentWeek:
    env_id: str
    env_name: str
    rows: list[RewardRow] = field(default_factory=list)
    collapsed: list[Finding] = field(default_factory=list)
    absent: list[Finding] = field(default_factory=list)
    """Models with a run of the slice last week and none this week."""
    report: Path | None = None
    """The newest weekly report of the week, when one was built."""
    problem: str | None = None
    """Why the rewards could not be read (a run folder that cannot be read)."""


def latest_report(period_reports: Path) -> Path | None:
    """The newest report.md of a period's published report folders (<UTC time>[-N]; a hidden folder is one still
    being built, see reports.report_folders)."""

    def order(folder: Path) -> tuple[str, int]:
        stamp, _, attempt = folder.name.partition("Z-")
        return stamp, int(attempt) if attempt.isdigit() else 1

    folders = [
        folder
        for folder in period_reports.glob("*")
        if not folder.name.startswith(".") and (folder / "report.md").is_file()
    ]
    return max(folders, key=order) / "report.md" if folders else None


def _rows(selection: Selection, deltas: Mapping[str, GateVerdict | str]) -> list[RewardRow]:
    rows = []
    for run in selection.runs:
        verdict = deltas.get(run.model_id)
        previous = selection.previous.get(run.model_id)
        rows.append(
            RewardRow(
                model_id=run.model_id,
                reward=float(run.metrics["reward"]["mean"]),
                verdict=verdict if isinstance(verdict, GateVerdict) else None,
                note=verdict.reason if isinstance(verdict, GateVerdict) else str(verdict or ""),
                run_dir=run.run_dir,
                previous_dir=previous.run_dir if previous is not None else None,
            )
        )
    return rows


def environment_week(env_id: str, outputs: Path, week: Period, *, seed: int = SLICE_SEED) -> EnvironmentWeek:
    """An environment's weekly rewards against last week's, its collapsed policies and the models that ran last
    week only, read as its weekly report reads them."""
    env = get_environment(env_id)
    evals = outputs / "evals"
    report = latest_report(outputs / "reports" / env_id / "weekly" / week.label)
    try:
        selection = select_runs(evals, env, report_scope(env, "weekly", period=week.label))
        deltas = period_deltas(selection, seed=seed)
    except RunRecordError as error:
        return EnvironmentWeek(env_id, env.name, report=report, problem=str(error))
    collapsed = [
        Finding(
            f"{env_id} {run.model_id}: run {run.metadata.run_id}: {run.metrics['answers']['collapse']}",
            shown(run.run_dir),
        )
        for run in selection.runs
        if (run.metrics.get("answers") or {}).get("collapsed")
    ]
    absent = []
    for key, why in selection.excluded.items():
        model_id, _, run_id = key.partition(" ")
        if why.startswith(f"no run in {week.label}"):
            folder = evals / f"{env.name}--{model_id}" / run_id
            absent.append(Finding(f"{env_id} {model_id}: {why}", shown(folder if folder.is_dir() else evals)))
    return EnvironmentWeek(env_id, env.name, _rows(selection, deltas), collapsed, absent, report)


@dataclass(frozen=True)
class WeeklyMemo:
    week: Period
    window: Window
    written_at: datetime
    envs: list[EnvironmentWeek]
    collapsed: list[Finding]
    volumes: list[SyntheticVolume]
    risks: list[Finding]

    @property
    def regressions(self) -> list[Finding]:
        """The regression gate's failures among the week's changes."""
        return [
            Finding(
                f"{env.env_id} {row.model_id}: {verdict.reason}"
                + (f"; last week's run `{shown(row.previous_dir)}`" if row.previous_dir else ""),
                shown(row.run_dir),
            )
            for env, row, verdict in _regressed(self.envs)
        ]

    @property
    def regressed(self) -> list[str]:
        """ "<env> <model>" of each regression."""
        return [f"{env.env_id} {row.model_id}" for env, row, _ in _regressed(self.envs)]

    def markdown(self) -> str:
        return "\n".join(memo_lines(self)) + "\n"


def _regressed(envs: Sequence[EnvironmentWeek]) -> list[tuple[EnvironmentWeek, RewardRow, GateVerdict]]:
    return [
        (env, row, row.verdict) for env in envs for row in env.rows if row.verdict is not None and row.verdict.regressed
    ]


def build_weekly_memo(
    week: Period,
    outputs: Path,
    registry: Mapping[str, ModelSpec],
    *,
    env_ids: Sequence[str] = WEEKLY_ENVS,
    now: datetime | None = None,
    seed: int = SLICE_SEED,
) -> WeeklyMemo:
    """The memo of an ISO week from the outputs folder (evals/, reports/, datasets/, checkpoints/, judges/,
    run_failures/) and the model registry. env_ids: the environments whose rewards it compares (the weekly sweep's);
    synthetic volumes and risks cover every implemented environment."""
    if week.cadence != "weekly":
        raise ValueError(f"a weekly memo covers an ISO week, not a {week.cadence} period ({week.label})")
    window = memo_window(week)
    every_env = implemented_env_ids()
    envs = [environment_week(env_id, outputs, week, seed=seed) for env_id in env_ids if env_id in every_env]
    volumes, volume_risks = synthetic_volumes(outputs / "datasets", every_env, window)
    health = run_health(outputs / "evals", every_env, window)
    reported = {finding.source for env in envs for finding in env.collapsed}
    collapsed = [finding for env in envs for finding in env.collapsed]
    collapsed += [finding for finding in health.collapsed if finding.source not in reported]
    risks = [
        *(
            Finding(
                f"{env.env_id} {row.model_id}: {_num(verdict.relative_change, '+.1%')} against last week, beyond the "
                f"gate's {MAX_RELATIVE_DROP:.0%}, the regression gate fails it (see Notable regressions)",
                shown(row.run_dir),
            )
            for env, row, verdict in _regressed(envs)
        ),
        *(
            Finding(f"{env.env_id} {row.model_id}: the gate could not judge the change: {row.note}", shown(row.run_dir))
            for env in envs
            for row in env.rows
            if row.gate == "not judged"
        ),
        *(
            Finding(f"{env.env_id}: rewards not read: {env.problem}", shown(outputs / "evals"))
            for env in envs
            if env.problem
        ),
        *(finding for env in envs for finding in env.absent),
        *pending_checkpoints(outputs / "checkpoints"),
        *unreachable_models(registry, list(env_ids)),
        *low_agreement_judges(outputs / "judges"),
        *failed_runs(outputs / "run_failures", window),
        *health.risks,
        *volume_risks,
    ]
    return WeeklyMemo(week, window, now or datetime.now(UTC), envs, collapsed, volumes, risks)


def write_weekly_memo(memo: WeeklyMemo, folder: Path | None = None) -> Path:
    """<folder>/<ISO week>.md (default: memo_dir()), replaced whole."""
    path = (folder or memo_dir()) / f"{memo.week.label}.md"
    write_text_atomic(path, memo.markdown())
    return path


# -- markdown -------------------------------------------------------------------------------------------------------


def _num(value: float | None, form: str = ".3f") -> str:
    return "–" if value is None else format(value, form)


def _reward_table(env: EnvironmentWeek) -> list[str]:
    lines = [
        "| model | last week | this week | Δ | relative | 95% CI of Δ | p | items | gate | run |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for row in env.rows:
        v = row.verdict
        gate = "**REGRESSED**" if row.gate == "REGRESSED" else row.gate
        if row.gate != "ok":
            notes.append(f"- {row.model_id}: {row.note}")
        if v is None or v.delta is None:
            lines.append(
                f"| {row.model_id} | – | {row.reward:.3f} | – | – | – | – | – | {gate} | `{shown(row.run_dir)}` |"
            )
            continue
        ci = f"[{_num(v.ci_low, '+.3f')}, {_num(v.ci_high, '+.3f')}]"
        lines.append(
            f"| {row.model_id} | {_num(v.mean_previous)} | {_num(v.mean_current)} | {_num(v.delta, '+.3f')} | "
            f"{_num(v.relative_change, '+.1%')} | {ci} | {_num(v.p_value)} | {v.n_paired} | {gate} | "
            f"`{shown(row.run_dir)}` |"
        )
    return lines + (["", *notes] if notes else [])


def _reward_lines(memo: WeeklyMemo) -> list[str]:
    week = memo.week
    lines = [
        "",
        "## Reward: this week against last week",
        "",
        f"The weekly sweep's slice (N={WEEKLY_N}, seed {SLICE_SEED}, single-turn) in {week.describe()} against "
        f"{week.previous().label}, as the weekly reports compute it: each model's latest run of the slice in the "
        "week against its latest in the week before, mean reward over the items both drew (a sample given up counts "
        "the least reward any answer earns), Δ with its 95% paired bootstrap CI and p. The gate (the seed's rule) "
        f"fails a drop of more than {MAX_RELATIVE_DROP:.0%}. This week's reward of a model with nothing to compare is "
        "its mean over all its items.",
    ]
    for env in memo.envs:
        lines += ["", f"### {env.env_id} · {env.env_name}", ""]
        lines.append(f"Weekly report: `{shown(env.report)}`" if env.report else "No weekly report of this week yet.")
        lines.append("")
        if env.problem:
            lines.append(f"Rewards not read: {env.problem}")
        elif not env.rows:
            lines.append("No complete run of the weekly slice this week.")
        else:
            lines += _reward_table(env)
    return lines


def _volume_lines(memo: WeeklyMemo) -> list[str]:
    lines = ["", "## New synthetic volumes", "", f"Created {memo.window.describe()}.", ""]
    if not memo.volumes:
        return [*lines, "None."]
    sets = [volume for volume in memo.volumes if volume.kind == "synthetic set"]
    batches = [volume for volume in memo.volumes if volume.kind == "synthetic batch"]
    lines += [
        f"{len(sets)} synthetic sets: {sum(v.kept for v in sets):,} rows kept of {sum(v.requested for v in sets):,} "
        f"requested, {sum(v.dropped for v in sets):,} dropped. {len(batches)} synthetic batches: "
        f"{sum(v.kept for v in batches):,} completions kept of {sum(v.requested for v in batches):,} sampled, "
        f"{sum(v.dropped for v in batches):,} dropped.",
        "",
        "| environment | kind | name | created | requested / sampled | kept | dropped | where |",
        "|---|---|---|---|---|---|---|---|",
    ]
    return lines + [
        f"| {v.env_id} | {v.kind} | {v.name} | {v.created_at[:16]} | {v.requested:,} | {v.kept:,} | "
        f"{v.dropped:,}{f' ({v.dropped_why})' if v.dropped_why else ''} | `{shown(v.path)}` |"
        for v in memo.volumes
    ]


def _finding_lines(title: str, findings: Sequence[Finding], intro: str) -> list[str]:
    return ["", f"## {title}", "", intro, "", *([finding.line() for finding in findings] or ["None."])]


def _summary_lines(memo: WeeklyMemo) -> list[str]:
    models = sum(len(env.rows) for env in memo.envs)
    judged = sum(1 for env in memo.envs for row in env.rows if row.gate in ("ok", "REGRESSED"))
    sets = [volume for volume in memo.volumes if volume.kind == "synthetic set"]
    batches = [volume for volume in memo.volumes if volume.kind == "synthetic batch"]
    return [
        "## Summary",
        "",
        f"- {models} model runs of the weekly slice on {', '.join(env.env_id for env in memo.envs) or 'no environment'}"
        f", {judged} compared with last week; {len(memo.regressions)} regressions beyond the gate's "
        f"{MAX_RELATIVE_DROP:.0%}, {len(memo.collapsed)} collapsed policies.",
        f"- New: {len(sets)} synthetic sets ({sum(v.kept for v in sets):,} rows kept), {len(batches)} synthetic "
        f"batches ({sum(v.kept for v in batches):,} completions kept).",
        f"- {len(memo.risks)} outstanding risks.",
    ]


def memo_lines(memo: WeeklyMemo) -> list[str]:
    return [
        f"# Weekly memo {memo.week.label}",
        "",
        f"Written {memo.written_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC from the project's records. Rewards: "
        f"{memo.week.describe()}. New volumes, runs and failures: {memo.window.describe()} (the seven days up to "
        "this week's report). Checkpoints, models and judges: as of writing. Each line names the run folder, report "
        "or record it comes from.",
        "",
        *_summary_lines(memo),
        *_reward_lines(memo),
        *_finding_lines(
            "Notable regressions",
            [*memo.regressions, *memo.collapsed],
            "The gate's failures this week, then every run of the window whose answers collapsed onto one label.",
        ),
        *_volume_lines(memo),
        *_finding_lines(
            "Outstanding risks",
            memo.risks,
            "Regressions, unjudged changes and models missing this week; checkpoints awaiting a decision; models "
            "skipped as unreachable; judges with low agreement; failed Dagster runs, runs not finished or with "
            "samples given up, and records that cannot be read.",
        ),
    ]
