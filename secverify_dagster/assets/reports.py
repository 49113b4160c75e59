"""Per-environment reports for a cadence (reports.scope): the slice's latest runs of every model, compared."""

import dagster as dg
from pydantic import Field

from secverify_dagster.assets.keys import TOURNAMENT, ablations_key, eval_run_writers, report_key
from secverify_dagster.reports.environment_report import build_report, report_dir
from secverify_dagster.reports.html import inline_images
from secverify_dagster.reports.scope import Cadence, report_scope
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource, ModelRegistryResource
from sv_shared.contracts import Dialogue, Environment


class ReportConfig(dg.Config):
    """Which report to build: `latest` compares the newest runs (of the newest run's slice); a period cadence
    compares its slice's runs in a period and each model's change since the previous period."""

    cadence: Cadence = "latest"
    period: str | None = Field(
        default=None,
        description="The period to report (2026-W48, 2026-11-23, 2026-11); default: the one holding the run's time.",
    )


def report_deps(env: Environment) -> list[dg.AssetKey]:
    """What build_report reads: the environment's finished runs, its latest ablation table and, for dialogue
    environments, the latest tournament's record (its rounds and success curves are a section of the report)."""
    deps = [*eval_run_writers(env.env_id), ablations_key(env.env_id)]
    if isinstance(env.episodes, Dialogue) and TOURNAMENT not in deps:
        deps.append(TOURNAMENT)
    return deps


def build_report_asset(env: Environment) -> dg.AssetsDefinition:
    @dg.asset(
        key=report_key(env.env_id),
        group_name=env.env_id,
        deps=report_deps(env),
        kinds={"markdown", "html"},
        description=f"{env.name}: a cadence's report (latest, weekly, biweekly, monthly): metrics, changes since the "
        "previous period, paired deltas, error triage, tokens/cost/GPU-hours, synthetic volumes, failed runs, "
        "provenance; markdown and self-contained HTML under `outputs/reports/<env>/<cadence>/<period>/`.",
    )
    def report(
        context: dg.AssetExecutionContext,
        config: ReportConfig,
        artifacts: ArtifactStoreResource,
        models: ModelRegistryResource,
    ) -> dg.MaterializeResult:
        scope = report_scope(env, config.cadence, period=config.period)
        out_dir = report_dir(artifacts.reports(env.env_id), scope)
        result = build_report(env, artifacts.evals(), out_dir, scope=scope, parents=models.parents())
        context.log.info(f"{scope.describe()}: {result.models} → {result.markdown_path}")
        markdown = result.markdown_path.read_text(encoding="utf-8")
        return dg.MaterializeResult(
            metadata={
                "report": dg.MetadataValue.path(str(result.markdown_path)),
                "report_html": dg.MetadataValue.path(str(result.html_path)),
                "cadence": scope.cadence,
                "period": scope.period.label if scope.period else "",
                "models": dg.MetadataValue.json(result.models),
                "regressed": dg.MetadataValue.json(result.regressed),
                "excluded": dg.MetadataValue.json(result.excluded),
                "dataset_hash": result.dataset_hash or "",
                # The UI resolves a relative image link against its own address: plots go in as data URIs.
                "markdown": dg.MetadataValue.md(inline_images(markdown, out_dir)),
            }
        )

    return report
