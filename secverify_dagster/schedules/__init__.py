"""The seed's cadences as Dagster schedules: the sweeps (`sweeps.py`) and the reports after them (`reports.py`)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import dagster as dg


def documented_schedule(**kwargs: Any) -> Callable[[Callable[..., Any]], dg.ScheduleDefinition]:
    """`dg.schedule` with the function's docstring as the description the UI shows beside the cron string (a
    bi-weekly schedule's cron reads "every Monday"; its description says every 14 days)."""

    def decorate(fn: Callable[..., Any]) -> dg.ScheduleDefinition:
        return dg.schedule(description=inspect.cleandoc(fn.__doc__ or ""), **kwargs)(fn)

    return decorate
