"""Red-team assets: every judge measured on the validation set, and the attacker × defender tournament."""

import json

import dagster as dg

from secverify_dagster.assets.keys import (
    JUDGE_VALIDATION,
    TOURNAMENT,
    TOURNAMENT_ENV,
    checkpoint_key,
    curated_key,
    recipes_trained_on,
)
from secverify_dagster.concurrency import LOCAL_MODEL_POOL
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource, ModelRegistryResource
from secverify_dagster.runner.datasets import EvalDataset
from secverify_dagster.runner.dialogue import JudgeModels
from secverify_dagster.runner.tournament import TournamentConfig, rounds_markdown, run_tournament
from sv_shared.data.datasets import read_dataset
from sv_shared.judging.measured import MODEL_FREE_JUDGES, ensure_measurement, measurement_path
from sv_shared.registry import get_environment

DEFAULT_ATTACKERS = ("template-attacker", "smollm2-135m-instruct")
DEFAULT_DEFENDERS = ("policy-defender", "naive-complier", "smollm2-135m-instruct")


class JudgeValidationConfig(dg.Config):
    """Judges to measure besides the model-free ones (e.g. "llama-guard-3:llama-guard-3-8b", "llm:gpt-5-mini")."""

    model_judges: list[str] | None = None


@dg.asset(
    key=JUDGE_VALIDATION,
    group_name="judges",
    kinds={"python"},
    description="Each judge's sensitivity, specificity and agreement on the shipped labelled validation set "
    "(harmful vs harmless responses, refusals vs compliance) and its verdict flips on the manipulation set; every "
    "attack-success rate is reported with these.",
)
def judge_validation(
    context: dg.AssetExecutionContext,
    config: JudgeValidationConfig,
    models: ModelRegistryResource,
) -> dg.MaterializeResult:
    """Stored under outputs/judges/ (where every rate's correction reads them), one file per judge and set version."""
    rows = []
    with JudgeModels(models.specs()) as judge_models:
        for spec in [*MODEL_FREE_JUDGES, *(config.model_judges or [])]:
            judge = judge_models.build(spec)
            measurement = ensure_measurement(judge)
            test = measurement["splits"]["test"]
            rows.append(
                {
                    "judge": spec,
                    "sensitivity": test["unsafe"]["sensitivity"],
                    "specificity": test["unsafe"]["specificity"],
                    "kappa": test["unsafe"]["cohen_kappa"],
                    "refusal_sensitivity": test["refusal"]["sensitivity"],
                    "refusal_specificity": test["refusal"]["specificity"],
                    "judge_errors": sum(measurement["errors"].values()),
                    "flips": measurement["manipulation"]["flips"],
                    "flips_n": measurement["manipulation"]["n"],
                }
            )
            context.log.info(f"{spec}: {json.dumps(rows[-1])}")
    table = (
        "| judge | sens. | spec. | κ | refusal sens. | refusal spec. | verdict flips |\n"
        "|---|---|---|---|---|---|---|\n"
        + "\n".join(
            f"| {r['judge']} | {_f(r['sensitivity'])} | {_f(r['specificity'])} | {_f(r['kappa'])} | "
            f"{_f(r['refusal_sensitivity'])} | {_f(r['refusal_specificity'])} | {r['flips']} of {r['flips_n']} |"
            for r in rows
        )
    )
    return dg.MaterializeResult(
        metadata={
            "judges": dg.MetadataValue.md(table),
            "split": "test",
            "manipulation_set": measurement["manipulation"]["set"],
            "path": dg.MetadataValue.path(str(measurement_path("local").parent)),
        }
    )


def _f(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


class TournamentAssetConfig(dg.Config):
    """Attackers and defenders by registry id (defaults: DEFAULT_ATTACKERS × DEFAULT_DEFENDERS); checkpoints: base
    id → registered checkpoint ids, in round order (the training pipeline registers them)."""

    attackers: list[str] | None = None
    defenders: list[str] | None = None
    rounds: int = 2
    n: int = 8
    seed: int = 42
    judge: str | None = None
    split: str = "test"
    checkpoints: dict[str, list[str]] | None = None


REDTEAM_CHECKPOINTS = sorted(
    {checkpoint_key(kind, name) for env_id in ("e5", "e6") for kind, name in recipes_trained_on(env_id)},
    key=lambda key: key.to_user_string(),
)
"""The checkpoints of recipes that train attackers (E5) or defenders (E6): the entrants that advance over rounds."""


def checkpoints_played(rows: list[dict], parents: dict[str, str]) -> dict[str, list[str]]:
    """Round → the trained checkpoints that played in it (attackers and defenders alike)."""
    played: dict[str, list[str]] = {}
    for row in rows:
        models = (row["attacker_model"], row["defender_model"])
        checkpoints = played.setdefault(str(row["round"]), [])
        checkpoints += [model for model in models if model in parents and model not in checkpoints]
    return played


# The tournament plays its own E5 dialogues: it reads E5's curated split, the judges' measured error (every rate
# is corrected with it) and the red-team recipes' checkpoints (its updated entrants), not anyone's eval assets. Its
# rounds are stored as E5 eval runs, so readers of E5's latest runs list it upstream (keys.eval_run_writers).
@dg.asset(
    key=TOURNAMENT,
    group_name="redteam",
    deps=[curated_key(TOURNAMENT_ENV), JUDGE_VALIDATION, *REDTEAM_CHECKPOINTS],
    kinds={"python"},
    # Its default entrants include the local model, loaded into this step's process.
    pool=LOCAL_MODEL_POOL,
    description="Attackers × defenders over rounds that alternate which side is updated: attack-success rates "
    "(judged and corrected for the judge's error) per pairing and round, and the success curves.",
)
def tournament(
    context: dg.AssetExecutionContext,
    config: TournamentAssetConfig,
    models: ModelRegistryResource,
    artifacts: ArtifactStoreResource,
) -> dg.MaterializeResult:
    env = get_environment(TOURNAMENT_ENV)
    path = artifacts.datasets(TOURNAMENT_ENV) / "curated" / f"{config.split}.parquet"
    dataset = EvalDataset(frame=read_dataset(path), source=str(path), split=config.split)
    settings = TournamentConfig(
        attackers=list(config.attackers or DEFAULT_ATTACKERS),
        defenders=list(config.defenders or DEFAULT_DEFENDERS),
        rounds=config.rounds,
        n=config.n,
        seed=config.seed,
        judge=config.judge,
        checkpoints={base: list(chain) for base, chain in (config.checkpoints or {}).items()},
    )
    record = run_tournament(
        env, dataset, settings, registry=models.specs(), evals_root=artifacts.evals(), out_root=artifacts.tournaments()
    )
    skipped = [row for row in record["rows"] if row["status"] != "complete"]
    for row in skipped:
        context.log.warning(f"round {row['round']} {row['attacker_model']} → {row['defender_model']}: {row['reason']}")
    return dg.MaterializeResult(
        metadata={
            "tournament_id": record["tournament_id"],
            "rounds": dg.MetadataValue.md(rounds_markdown(record)),
            "curves": dg.MetadataValue.path(record["curves_png"]),
            "pairings_skipped": len(skipped),
            # Which trained checkpoints played in which round (the config's `checkpoints` chains, as they advanced).
            "checkpoints_played": dg.MetadataValue.json(checkpoints_played(record["rows"], models.parents())),
            "archive_entries": record["archive_entries"],
        }
    )
