"""Which runs a report compares: per model, its latest complete run of the report's slice in the report's period, and
the run it is compared with from the previous period; every other run a reader might expect, with why it is not used.

A slice is what decides the items a run drew and what its rewards mean beside another run's: the dataset (hash), N
(n_requested), the seed, how episodes were played (single-turn, tool-using, dialogue) and, for dialogues, the
counterparts and the judge. A run belongs to every period in which one of its sessions started: an unchanged model
re-evaluated next week resumes the same run folder (same inputs, same run id), and is then that week's run too.

A run folder that cannot be read (malformed, or of a schema version this code does not read) is refused with a message
naming its file: a report that silently left a model out would compare the wrong runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from secverify_dagster.reports.scope import ReportScope, parse_utc
from sv_shared.answers.metrics import with_rates
from sv_shared.answers.statistics import PairedBootstrap, align_paired, paired_bootstrap
from sv_shared.contracts import Environment
from sv_shared.runs.records import FinishedRun, complete_runs
from sv_shared.runs.schema import ResultRecord, RunMetadata, RunSummary


def run_mode(metadata: RunMetadata, records: Iterable[ResultRecord]) -> str:
    """dialogue (a judged conversation), tools (a tool-using episode: its records count turns) or single."""
    if metadata.judge is not None or metadata.counterparts is not None:
        return "dialogue"
    return "tools" if any(record.turns is not None for record in records) else "single"


@dataclass(frozen=True)
class Slice:
    dataset_hash: str
    n_requested: int
    seed: int
    mode: str
    counterparts: str
    judge: str | None

    def describe(self) -> str:
        parts = [f"dataset {self.dataset_hash[:12]}", f"N={self.n_requested}", f"seed {self.seed}", self.mode]
        if self.counterparts:
            parts.append(self.counterparts)
        if self.judge:
            parts.append(f"judge {self.judge}")
        return ", ".join(parts)

    def differences(self, other: Slice) -> str:
        """How `other` differs from this slice, e.g. "N=10 (this report: N=32)"."""
        changed = [
            f"{field.name} {getattr(other, field.name)!r} (this report: {getattr(self, field.name)!r})"
            for field in fields(self)
            if getattr(other, field.name) != getattr(self, field.name)
        ]
        return "; ".join(changed)


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

    @cached_property
    def metrics(self) -> dict[str, Any]:
        """The run's summary metrics, with both rate views derived for summaries written before they existed."""
        return with_rates(self.summary.metrics)

    @property
    def finished(self) -> FinishedRun:
        return FinishedRun(self.run_dir, self.metadata)

    @property
    def slice(self) -> Slice:
        return slice_of(self.metadata, self.records)


def slice_of(metadata: RunMetadata, records: Iterable[ResultRecord]) -> Slice:
    counterparts = metadata.counterparts or {}
    return Slice(
        dataset_hash=metadata.dataset.hash,
        n_requested=metadata.n_requested,
        seed=metadata.seed,
        mode=run_mode(metadata, records),
        counterparts=",".join(f"{role}={spec.id}" for role, spec in sorted(counterparts.items())),
        judge=metadata.judge,
    )


@dataclass
class Candidate:
    """A complete run and when it counts as started for a period (its latest session started in it); its records
    are read only when its slice is needed."""

    run: FinishedRun
    started: datetime

    @cached_property
    def slice(self) -> Slice:
        return slice_of(self.run.metadata, self.run.records())

    @property
    def model_id(self) -> str:
        return self.run.model_id


def _session_starts(metadata: RunMetadata) -> list[datetime]:
    return [parse_utc(session.started_at) for session in metadata.sessions]


def _candidates(runs: Iterable[FinishedRun], scope: ReportScope, *, previous: bool = False) -> list[Candidate]:
    """The runs with a session started in the scope's period (or its previous period), each dated by its latest such
    session; for latest, every run, dated by its latest session."""
    period = scope.period.previous() if previous and scope.period else scope.period
    found = []
    for run in runs:
        starts = _session_starts(run.metadata)
        if period is not None:
            starts = [start for start in starts if period.contains(start)]
        if starts:
            found.append(Candidate(run, max(starts)))
    return found


def _admitted(scope: ReportScope, candidate: Candidate) -> bool:
    """Whether a run can be of the scope's slice at all (N, seed, episodes; the rest comes from the newest run)."""
    metadata = candidate.run.metadata
    if scope.n is not None and metadata.n_requested != scope.n:
        return False
    if scope.seed is not None and metadata.seed != scope.seed:
        return False
    return scope.mode is None or candidate.slice.mode == scope.mode


def _newest(candidates: Iterable[Candidate]) -> Candidate:
    return max(candidates, key=lambda candidate: (candidate.started, candidate.run.run_id))


@dataclass(frozen=True)
class Selection:
    """The runs a report compares (one per model, model order), the slice they share, and the runs left out, each
    keyed "<model> <run id>" with why."""

    runs: list[RunView]
    slice: Slice | None
    excluded: dict[str, str]
    previous: dict[str, FinishedRun]
    """Per model in runs: its latest run of the same slice in the previous period (period cadences only)."""
    no_previous: dict[str, str]
    """Per model in runs without a previous-period run: why."""


def _why_not(scope: ReportScope, wanted: Slice | None, candidate: Candidate) -> str:
    metadata = candidate.run.metadata
    when = candidate.started.strftime("%Y-%m-%d %H:%M UTC")
    if wanted is not None and _admitted(scope, candidate):
        return f"run started {when} is of another slice: {wanted.differences(candidate.slice)}"
    required = [
        f"{name} {value!r} (this report: {needed!r})"
        for name, value, needed in (
            ("N", metadata.n_requested, scope.n),
            ("seed", metadata.seed, scope.seed),
            ("episodes", candidate.slice.mode, scope.mode),
        )
        if needed is not None and value != needed
    ]
    return f"run started {when} is not of this cadence's slice: {'; '.join(required)}"


def select_runs(evals_root: Path, env: Environment, scope: ReportScope) -> Selection:
    """Per model, its latest run of the scope's slice in the scope's period, and its latest run of the same slice in
    the previous period; models whose newer runs are of another slice have those listed, with the difference."""
    runs = complete_runs(evals_root, env.name)
    current = _candidates(runs, scope)
    admitted = [candidate for candidate in current if _admitted(scope, candidate)]
    wanted = _newest(admitted).slice if admitted else None
    chosen: dict[str, Candidate] = {}
    for candidate in admitted:
        if candidate.slice == wanted:
            best = chosen.get(candidate.model_id)
            if best is None or _newest([best, candidate]) is candidate:
                chosen[candidate.model_id] = candidate
    excluded: dict[str, str] = {}
    for model_id in sorted({candidate.model_id for candidate in current}):
        own = [candidate for candidate in current if candidate.model_id == model_id]
        kept = chosen.get(model_id)
        newer = [candidate for candidate in own if kept is None or candidate.started > kept.started]
        shown = newer if kept is not None else [_newest(own)]
        for candidate in shown:
            excluded[f"{model_id} {candidate.run.run_id}"] = _why_not(scope, wanted, candidate)
    views = [RunView.read(chosen[model_id].run) for model_id in sorted(chosen)]
    previous, no_previous = _previous_runs(runs, scope, wanted, views)
    excluded |= _dropped_out(runs, scope, wanted, {candidate.model_id for candidate in current})
    return Selection(views, wanted, excluded, previous, no_previous)


def _dropped_out(
    runs: list[FinishedRun], scope: ReportScope, wanted: Slice | None, present: set[str]
) -> dict[str, str]:
    """Models with a run of the slice in the previous period and none at all in this one (period cadences)."""
    if scope.period is None or wanted is None:
        return {}
    latest: dict[str, Candidate] = {}
    for candidate in _candidates(runs, scope, previous=True):
        if candidate.model_id not in present and _admitted(scope, candidate) and candidate.slice == wanted:
            best = latest.get(candidate.model_id)
            latest[candidate.model_id] = candidate if best is None else _newest([best, candidate])
    return {
        f"{model_id} {candidate.run.run_id}": f"no run in {scope.period.label}; its latest run of this slice is "
        f"from {scope.period.previous().label}"
        for model_id, candidate in sorted(latest.items())
    }


def _previous_runs(
    runs: list[FinishedRun], scope: ReportScope, wanted: Slice | None, views: list[RunView]
) -> tuple[dict[str, FinishedRun], dict[str, str]]:
    if scope.period is None or wanted is None:
        return {}, {}
    earlier = scope.period.previous()
    candidates = _candidates(runs, scope, previous=True)
    previous: dict[str, FinishedRun] = {}
    missing: dict[str, str] = {}
    for view in views:
        own = [candidate for candidate in candidates if candidate.model_id == view.model_id]
        same = [candidate for candidate in own if _admitted(scope, candidate) and candidate.slice == wanted]
        if same:
            previous[view.model_id] = _newest(same).run
        elif own:
            latest = _newest(own)
            missing[view.model_id] = (
                f"no run of this slice in {earlier.label}; its latest there ({latest.run.run_id}) differs: "
                f"{wanted.differences(latest.slice)}"
            )
        else:
            missing[view.model_id] = f"no complete run in {earlier.label}"
    return previous, missing


def paired_delta(run_a: RunView, run_b: RunView, *, seed: int = 42) -> PairedBootstrap | None:
    """Paired bootstrap of run_a's mean reward minus run_b's over the items both scored; None when they share none."""
    ids, rewards_a, rewards_b = align_paired(_item_rewards(run_a), _item_rewards(run_b))
    return paired_bootstrap(rewards_a, rewards_b, seed=seed) if ids else None


def _item_rewards(run: RunView) -> list[dict[str, Any]]:
    return [{"id": record.id, "reward": record.reward} for record in run.records]
