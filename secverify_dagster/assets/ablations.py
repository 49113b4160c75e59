"""Ablation assets: one per environment; re-scores the latest complete run of every model under every named
ablation (no model is called) and writes the environment's ablation table under outputs/reports/<env>/ablations/."""

import dagster as dg

from secverify_dagster.assets.keys import ablations_key, eval_run_writers
from secverify_dagster.research.ablations import make_ablation_table
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource
from sv_shared.contracts import Environment


def build_ablations_asset(env: Environment) -> dg.AssetsDefinition:
    @dg.asset(
        key=ablations_key(env.env_id),
        group_name=env.env_id,
        deps=eval_run_writers(env.env_id),
        kinds={"python", "markdown"},
        description=f"{env.name}: every model's latest complete run re-scored under each ablation of "
        f"configs/ablations/{env.env_id}.yaml (`outputs/evals/ablations/<ablation>/`), and the table of each against "
        "the default with paired bootstrap deltas, plus checkpoints trained under an ablation: "
        f"`outputs/reports/{env.env_id}/ablations/`.",
    )
    def ablations(context: dg.AssetExecutionContext, artifacts: ArtifactStoreResource) -> dg.MaterializeResult:
        written = make_ablation_table(
            env,
            evals_root=artifacts.evals(),
            checkpoints_root=artifacts.base() / "checkpoints",
            env_reports=artifacts.reports(env.env_id),
        )
        table = written.table
        reward_deltas: dict[str, dict[str, float]] = {}
        problems: dict[str, str] = {}
        for row in table.reward_rows:
            if row.reward is None:
                problems[f"{row.model} × {row.variant}"] = row.problem or ""
                context.log.warning(f"{row.model} × {row.variant}: not compared: {row.problem}")
            else:
                reward_deltas.setdefault(row.variant, {})[row.model] = row.reward["delta"]
        return dg.MaterializeResult(
            metadata={
                "table": dg.MetadataValue.path(str(written.markdown_path)),
                "table_json": dg.MetadataValue.path(str(written.json_path)),
                "reward_deltas": dg.MetadataValue.json(reward_deltas),
                "not_compared": dg.MetadataValue.json(problems),
                "training_ablations": len(table.training_rows),
                "markdown": dg.MetadataValue.md(written.markdown_path.read_text(encoding="utf-8")),
            }
        )

    return ablations
