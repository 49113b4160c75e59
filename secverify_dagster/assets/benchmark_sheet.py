"""The benchmark sheet asset (every model × environment, from the full eval), its job, and its bi-weekly schedule."""

from collections.abc import Sequence
from datetime import UTC, datetime

import dagster as dg
from pydantic import Field

from secverify_dagster.assets.keys import BENCHMARK_SHEET, report_key
from secverify_dagster.cadences import is_biweekly_week
from secverify_dagster.publishing.benchmark_sheet import SheetCadence, build_sheet
from secverify_dagster.reports.scope import period_of
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource, ModelRegistryResource
from secverify_dagster.schedules import documented_schedule
from sv_shared.contracts import Environment

BENCHMARK_SHEET_JOB = "benchmark_sheet_job"


class SheetConfig(dg.Config):
    """biweekly: the full eval's runs of a 14-day period; latest: each environment's newest runs (not the full eval)."""

    cadence: SheetCadence = "biweekly"
    period: str | None = Field(
        default=None, description="The bi-weekly period (its first day, e.g. 2026-11-23); default: the current one."
    )


def build_benchmark_sheet_asset(envs: Sequence[Environment]) -> dg.AssetsDefinition:
    @dg.asset(
        key=BENCHMARK_SHEET,
        group_name="reports",
        deps=[report_key(env.env_id) for env in envs],
        kinds={"markdown", "html"},
        description="Every model × environment's headline metrics with 95% bootstrap CIs (seed 42), from the full "
        "(bi-weekly) eval's runs, each cell naming its run, N and date; judged rates beside the judge's measured "
        "accuracy. Markdown, HTML and JSON under `outputs/reports/benchmark/<period>/`.",
    )
    def benchmark_sheet(
        context: dg.AssetExecutionContext,
        config: SheetConfig,
        artifacts: ArtifactStoreResource,
        models: ModelRegistryResource,
    ) -> dg.MaterializeResult:
        sheet = build_sheet(
            envs,
            artifacts.evals(),
            artifacts.base() / "reports" / "benchmark",
            cadence=config.cadence,
            period=config.period,
            model_envs={model_id: spec.envs for model_id, spec in models.specs().items()},
        )
        context.log.info(f"benchmark sheet {sheet.label}: {sheet.models} → {sheet.markdown_path}")
        return dg.MaterializeResult(
            metadata={
                "sheet": dg.MetadataValue.path(str(sheet.markdown_path)),
                "sheet_html": dg.MetadataValue.path(str(sheet.html_path)),
                "cadence": sheet.cadence,
                "period": sheet.label,
                "full_eval": sheet.cadence == "biweekly",
                "models": dg.MetadataValue.json(sheet.models),
                "runs": sum(len(env.cells) for env in sheet.envs),
                "markdown": dg.MetadataValue.md(sheet.markdown_path.read_text(encoding="utf-8")),
            }
        )

    return benchmark_sheet


benchmark_sheet_job = dg.define_asset_job(BENCHMARK_SHEET_JOB, selection=dg.AssetSelection.assets(BENCHMARK_SHEET))


@documented_schedule(job_name=BENCHMARK_SHEET_JOB, cron_schedule="0 14 * * 3", execution_timezone="UTC")
def biweekly_benchmark_sheet(context: dg.ScheduleEvaluationContext) -> dg.RunRequest | dg.SkipReason:
    """Wednesday 14:00 UTC of every bi-weekly week, every 14 days (the other Wednesdays' ticks are skipped), after the
    bi-weekly reports (12:00) of Monday's full eval: the sheet of this 14-day period."""
    when = context.scheduled_execution_time or datetime.now(UTC)
    if not is_biweekly_week(when.date()):
        return dg.SkipReason("not a bi-weekly week: the sheet follows the full eval every 14 days")
    period = period_of("biweekly", when)
    return dg.RunRequest(
        run_key=f"benchmark-sheet:{period.label}",
        run_config={
            "ops": {BENCHMARK_SHEET.to_python_identifier(): {"config": {"cadence": "biweekly", "period": period.label}}}
        },
        tags={"secverify/cadence": "biweekly-sheet", "secverify/period": period.label},
    )
