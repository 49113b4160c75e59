"""What a report covers: its cadence, the period it reports, and the slice of runs it compares.

Cadences and their slices (what decides the items a run drew, so only runs of one slice are compared):
  weekly    the weekly sweep's slice: N=10, seed 42, single-turn episodes (the nightly regression runs draw the same
            items, so they belong to it too). Period: the ISO week, Monday to Sunday.
  biweekly  the full eval's slice: the environment's eval.default_n, seed 42, the episodes the schedules run
            (single-turn; dialogues for E5/E6). Period: the 14-day period of cadences.biweekly_period_start.
  monthly   the full eval's slice, as biweekly. Period: the calendar month.
  latest    no period: the slice of the newest complete run (its N, seed, episodes), for `secverify report` and
            `secverify run`. Never mixes N: a model whose newest run is of another slice is compared on its newest run
            of this one, or listed as not in the report.
Every period is in UTC. The dataset, counterparts and judge of a slice are those of its newest run in the period.

A report reports the period holding its reference time: the current period for a report built by hand, and for the
schedules the period their runs just filled (schedules.reports: the weekly report on Monday reports that week, which
holds the morning's sweep; the monthly report on the 1st reports the month that just ended). A period can also be
named by its label (2026-W48, 2026-11-23, 2026-11) to rebuild a past period's report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Final, Literal, get_args

from secverify_dagster.cadences import biweekly_period_start
from sv_shared.contracts import Dialogue, Environment

Cadence = Literal["latest", "weekly", "biweekly", "monthly"]
CADENCES: Final[tuple[Cadence, ...]] = get_args(Cadence)

WEEKLY_N: Final = 10
"""The weekly sweep's N (schedules.weekly_sweep asks for it)."""
SLICE_SEED: Final = 42
"""The seed every schedule asks for."""


class ReportScopeError(ValueError):
    """An unknown cadence, or a period label that does not name a period of its cadence."""


@dataclass(frozen=True)
class Period:
    """[start, end) in UTC, named by a label that sorts in time order within its cadence."""

    cadence: Cadence
    label: str
    start: datetime
    end: datetime

    def contains(self, when: datetime) -> bool:
        return self.start <= when < self.end

    def previous(self) -> Period:
        return period_of(self.cadence, self.start - timedelta(days=1))

    def describe(self) -> str:
        last = (self.end - timedelta(days=1)).date()
        return f"{self.label} ({self.start.date().isoformat()} – {last.isoformat()}, UTC)"


def parse_utc(stamp: str) -> datetime:
    """An ISO 8601 time from a record, in UTC; one written without a zone is read as UTC (the runner writes UTC)."""
    moment = datetime.fromisoformat(stamp)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time(), tzinfo=UTC)


def period_of(cadence: Cadence, when: datetime) -> Period:
    """The period of a cadence holding `when` (a naive time is read as UTC)."""
    moment = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    day = moment.date()
    if cadence == "weekly":
        year, week, weekday = day.isocalendar()
        start = day - timedelta(days=weekday - 1)
        return Period(cadence, f"{year}-W{week:02d}", _midnight(start), _midnight(start + timedelta(days=7)))
    if cadence == "biweekly":
        start = biweekly_period_start(day)
        return Period(cadence, start.isoformat(), _midnight(start), _midnight(start + timedelta(days=14)))
    if cadence == "monthly":
        start = day.replace(day=1)
        following = (start + timedelta(days=32)).replace(day=1)
        return Period(cadence, f"{start:%Y-%m}", _midnight(start), _midnight(following))
    raise ReportScopeError(f"cadence {cadence!r} has no periods (periodic cadences: weekly, biweekly, monthly)")


_LABELS = {"weekly": r"(\d{4})-W(\d{2})", "biweekly": r"\d{4}-\d{2}-\d{2}", "monthly": r"(\d{4})-(\d{2})"}
_EXAMPLES = {"weekly": "2026-W48", "biweekly": "2026-11-23", "monthly": "2026-11"}


def parse_period(cadence: Cadence, label: str) -> Period:
    """The period a label names; a label of the wrong form, or a date that does not start a bi-weekly period, is
    refused with what would be right."""
    if cadence not in _LABELS:
        raise ReportScopeError(f"cadence {cadence!r} has no periods; leave the period out")
    match = re.fullmatch(_LABELS[cadence], label)
    try:
        if match is None:
            raise ValueError("wrong form")
        if cadence == "weekly":
            first = date.fromisocalendar(int(match[1]), int(match[2]), 1)
        elif cadence == "monthly":
            first = date(int(match[1]), int(match[2]), 1)
        else:
            first = date.fromisoformat(label)
    except ValueError:
        raise ReportScopeError(
            f"{label!r} is not a {cadence} period (expected a label like {_EXAMPLES[cadence]})"
        ) from None
    period = period_of(cadence, _midnight(first))
    if period.label != label:
        raise ReportScopeError(f"{label!r} does not start a {cadence} period; the period holding it is {period.label}")
    return period


@dataclass(frozen=True)
class ReportScope:
    """A cadence, its period (None for latest) and what its slice requires (None: whatever the newest run has)."""

    cadence: Cadence
    period: Period | None
    n: int | None
    seed: int | None
    mode: str | None
    """single, tools or dialogue: how a run's episodes were played (see reports.runs.run_mode)."""

    @property
    def folder_parts(self) -> tuple[str, ...]:
        """Where its reports are kept under the environment's report folder: <cadence>/<period label>."""
        return (self.cadence, self.period.label) if self.period else (self.cadence,)

    def describe(self) -> str:
        if self.period is None:
            return "latest runs (the slice of the newest complete run)"
        return f"{self.cadence} report for {self.period.describe()}"


def scheduled_mode(env: Environment) -> str:
    """The episodes the schedules play: dialogues where the environment is one, single-turn otherwise."""
    return "dialogue" if isinstance(env.episodes, Dialogue) else "single"


def report_scope(
    env: Environment, cadence: str, *, period: str | None = None, now: datetime | None = None
) -> ReportScope:
    """The scope of `env`'s report for a cadence: the period named by `period`, else the one holding `now`."""
    if cadence not in CADENCES:
        raise ReportScopeError(f"unknown cadence {cadence!r}; known: {', '.join(CADENCES)}")
    if cadence == "latest":
        if period is not None:
            raise ReportScopeError("a latest report has no period; choose weekly, biweekly or monthly to name one")
        return ReportScope("latest", None, None, None, None)
    chosen = parse_period(cadence, period) if period else period_of(cadence, now or datetime.now(UTC))
    n = WEEKLY_N if cadence == "weekly" else env.config.eval.default_n
    return ReportScope(cadence, chosen, n, SLICE_SEED, scheduled_mode(env))
