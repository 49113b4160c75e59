"""The report schedules: each cadence's reports after the runs they report have had time to finish (UTC).

  weekly_report     Monday 12:00, E1–E4: the ISO week that began that morning, which holds the 06:00 weekly sweep;
                    the same run writes the week's memo (reports/weekly_memo) once all four reports are built.
  biweekly_report   Wednesday 12:00 of every bi-weekly week, all environments: the 14-day period that began on
                    Monday, which holds Monday's 08:00 full eval and Wednesday's 02:00 tournament (E5/E6 reports).
  monthly_report    the 1st, 09:00, all environments: the consolidated report of the month that just ended.

Each asks reports_job for its environments' report assets, with the cadence and period in their config, under a run
key per period (a tick evaluated twice asks for one run).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import dagster as dg

from secverify_dagster.assets.keys import ablations_key, report_key
from secverify_dagster.assets.reports import WEEKLY_MEMO
from secverify_dagster.cadences import WEEKLY_ENVS, is_biweekly_week
from secverify_dagster.reports.scope import Cadence, Period, period_of
from secverify_dagster.schedules import documented_schedule
from sv_shared.registry import implemented_env_ids

REPORTS_JOB = "reports_job"
"""The job selecting every environment's report asset and the weekly memo (definitions.py)."""


def report_request(cadence: Cadence, period: Period, env_ids: Sequence[str]) -> dg.RunRequest:
    """One run of the reports job: the chosen environments' reports of one cadence and period; a weekly run also
    writes the week's memo, which depends on every one of those reports and so runs once, after them."""
    envs = [env_id for env_id in env_ids if env_id in implemented_env_ids()]
    config = {"cadence": cadence, "period": period.label}
    # Each report with its ablation table, re-scored from the stored runs just before it.
    selection = [key for env_id in envs for key in (ablations_key(env_id), report_key(env_id))]
    ops: dict[str, dict[str, dict[str, str]]] = {
        report_key(env_id).to_python_identifier(): {"config": config} for env_id in envs
    }
    if cadence == "weekly":
        selection.append(WEEKLY_MEMO)
        ops[WEEKLY_MEMO.to_python_identifier()] = {"config": {"week": period.label}}
    return dg.RunRequest(
        run_key=f"{cadence}-report:{period.label}",
        asset_selection=selection,
        run_config={"ops": ops},
        tags={"secverify/cadence": f"{cadence}-report", "secverify/period": period.label},
    )


def _when(context: dg.ScheduleEvaluationContext) -> datetime:
    return context.scheduled_execution_time or datetime.now(UTC)


@documented_schedule(job_name=REPORTS_JOB, cron_schedule="0 12 * * 1", execution_timezone="UTC")
def weekly_report(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    """Monday 12:00 UTC: E1–E4's weekly reports of this ISO week (its 06:00 sweep), against last week, then the
    week's memo (docs-internal/reports/<ISO week>.md) over all four."""
    return report_request("weekly", period_of("weekly", _when(context)), WEEKLY_ENVS)


@documented_schedule(job_name=REPORTS_JOB, cron_schedule="0 12 * * 3", execution_timezone="UTC")
def biweekly_report(context: dg.ScheduleEvaluationContext) -> dg.RunRequest | dg.SkipReason:
    """Wednesday 12:00 UTC of every bi-weekly week, every 14 days (the other Wednesdays' ticks are skipped): every
    environment's report of this 14-day period (Monday's full eval, the tournament), against the previous period."""
    when = _when(context)
    if not is_biweekly_week(when.date()):
        return dg.SkipReason("not a bi-weekly week: the bi-weekly report follows the full eval every 14 days")
    return report_request("biweekly", period_of("biweekly", when), implemented_env_ids())


@documented_schedule(job_name=REPORTS_JOB, cron_schedule="0 9 1 * *", execution_timezone="UTC")
def monthly_report(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    """1st of the month, 09:00 UTC: the consolidated report of every environment for the month that just ended."""
    return report_request("monthly", period_of("monthly", _when(context)).previous(), implemented_env_ids())


REPORT_SCHEDULES = [weekly_report, biweekly_report, monthly_report]
