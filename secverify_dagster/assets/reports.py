"""Per-environment reports for a cadence (reports.scope): the slice's latest runs of every model, compared; and the
weekly memo over the weekly environments' reports (reports.weekly_memo)."""

from collections.abc import Sequence

import dagster as dg
from pydantic import Field

from secverify_dagster.assets.keys import TOURNAMENT, ablations_key, eval_run_writers, report_key
from secverify_dagster.cadences import WEEKLY_ENVS
from secverify_dagster.reports.environment_report import build_report, report_dir
from secverify_dagster.reports.html import inline_images
from secverify_dagster.reports.scope import Cadence, report_scope
from secverify_dagster.reports.weekly_memo import build_weekly_memo, memo_dir, memo_week, write_weekly_memo
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource, ModelRegistryResource
from sv_shared.contracts import Dialogue, Environment

WEEKLY_MEMO = dg.AssetKey(["reports", "weekly_memo"])
"""The weekly memo: one per ISO week over every weekly environment, written after their weekly reports."""


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


class WeeklyMemoConfig(dg.Config):
    """Which ISO week's memo to write."""

    week: str | None = Field(
        default=None, description="The ISO week (2026-W48); default: the one holding the run's time."
    )


def build_weekly_memo_asset(env_ids: Sequence[str] = WEEKLY_ENVS) -> dg.AssetsDefinition:
    """One asset for the week, downstream of every weekly environment's report: the per-environment reports run in
    parallel and the memo, which covers them all, runs once after them."""

    @dg.asset(
        key=WEEKLY_MEMO,
        group_name="reports",
        deps=[report_key(env_id) for env_id in env_ids],
        kinds={"markdown"},
        description="The seed's weekly update: each weekly environment's reward this ISO week against last week "
        "(the weekly reports' paired deltas and the regression gate's verdicts), notable regressions and collapsed "
        "policies, new synthetic volumes, and outstanding risks (checkpoints awaiting approval, unreachable models, "
        "low-agreement judges, failed or unfinished runs), each line naming its run folder or record. Written to "
        "`docs-internal/reports/<ISO week>.md` ($SECVERIFY_MEMOS moves it), replaced whole.",
    )
    def weekly_memo(
        context: dg.AssetExecutionContext,
        config: WeeklyMemoConfig,
        artifacts: ArtifactStoreResource,
        models: ModelRegistryResource,
    ) -> dg.MaterializeResult:
        memo = build_weekly_memo(memo_week(config.week), artifacts.base(), models.specs(), env_ids=env_ids)
        path = write_weekly_memo(memo, memo_dir())
        context.log.info(f"weekly memo {memo.week.label}: {len(memo.regressed)} regressions → {path}")
        return dg.MaterializeResult(
            metadata={
                "memo": dg.MetadataValue.path(str(path)),
                "week": memo.week.label,
                "new_since": memo.window.describe(),
                "regressed": dg.MetadataValue.json(memo.regressed),
                "collapsed": len(memo.collapsed),
                "new_synthetic_volumes": len(memo.volumes),
                "risks": len(memo.risks),
                "markdown": dg.MetadataValue.md(memo.markdown()),
            }
        )

    return weekly_memo


weekly_memo = build_weekly_memo_asset()
