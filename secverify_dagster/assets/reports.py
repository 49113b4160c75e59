"""Per-environment reports over the latest eval results of every model."""

from datetime import UTC, datetime

import dagster as dg

from secverify_dagster.assets.evals import EVAL_RESULTS
from secverify_dagster.reports import build_report
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource
from sv_shared.contracts import Environment


def report_key(env_id: str) -> dg.AssetKey:
    return dg.AssetKey([env_id, "report"])


def build_report_asset(env: Environment) -> dg.AssetsDefinition:
    @dg.asset(
        key=report_key(env.env_id),
        group_name=env.env_id,
        deps=[EVAL_RESULTS],
        kinds={"markdown"},
        description=f"{env.name}: metrics table, paired bootstrap deltas, reliability and risk–coverage plots.",
    )
    def report(context: dg.AssetExecutionContext, artifacts: ArtifactStoreResource) -> dg.MaterializeResult:
        out_dir = artifacts.reports(env.env_id) / datetime.now(UTC).strftime("%Y-%m-%d")
        result = build_report(env, artifacts.evals(), out_dir)
        context.log.info(f"report for {result.models} → {result.markdown_path}")
        return dg.MaterializeResult(
            metadata={
                "report": dg.MetadataValue.path(str(result.markdown_path)),
                "models": dg.MetadataValue.json(result.models),
                "excluded": dg.MetadataValue.json(result.excluded),
                "dataset_hash": result.dataset_hash or "",
                "markdown": dg.MetadataValue.md(result.markdown_path.read_text(encoding="utf-8")),
            }
        )

    return report
