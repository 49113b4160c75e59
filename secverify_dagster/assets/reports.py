"""Per-environment reports over the latest eval results of every model."""

import dagster as dg

from secverify_dagster.assets.keys import TOURNAMENT, eval_run_writers, report_key
from secverify_dagster.reports import build_report, new_report_dir
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource, ModelRegistryResource
from sv_shared.contracts import Dialogue, Environment


def report_deps(env: Environment) -> list[dg.AssetKey]:
    """What build_report reads: the environment's latest finished runs and, for dialogue environments, the latest
    tournament's record (its rounds and success curves are a section of the report)."""
    deps = eval_run_writers(env.env_id)
    if isinstance(env.episodes, Dialogue) and TOURNAMENT not in deps:
        deps.append(TOURNAMENT)
    return deps


def build_report_asset(env: Environment) -> dg.AssetsDefinition:
    @dg.asset(
        key=report_key(env.env_id),
        group_name=env.env_id,
        deps=report_deps(env),
        kinds={"markdown"},
        description=f"{env.name}: metrics table, paired bootstrap deltas, reliability and risk–coverage plots.",
    )
    def report(
        context: dg.AssetExecutionContext, artifacts: ArtifactStoreResource, models: ModelRegistryResource
    ) -> dg.MaterializeResult:
        out_dir = new_report_dir(artifacts.reports(env.env_id))
        result = build_report(env, artifacts.evals(), out_dir, parents=models.parents())
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
