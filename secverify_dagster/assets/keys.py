"""The asset graph's names, and which assets write the files that others read back.

Kept apart from the asset factories so that an asset can declare what it reads without importing the module that
builds it (E5's synthetic set reads E6's eval runs and the other way round).
"""

from functools import cache

import dagster as dg

from sv_shared.training.recipes import load_rlft_recipe, load_sft_recipe, rlft_recipe_names, sft_recipe_names

JUDGE_VALIDATION = dg.AssetKey(["judges", "validation"])
TOURNAMENT = dg.AssetKey(["redteam", "tournament"])
TOURNAMENT_ENV = "e5"
"""The environment the tournament plays: its rounds are that environment's eval runs, stored with the others."""


def raw_key(env_id: str, source: str) -> dg.AssetKey:
    return dg.AssetKey([env_id, f"raw_{source}"])


def curated_key(env_id: str) -> dg.AssetKey:
    return dg.AssetKey([env_id, "curated_splits"])


def synthetic_key(env_id: str) -> dg.AssetKey:
    return dg.AssetKey([env_id, "synthetic"])


def sft_dataset_key(env_id: str) -> dg.AssetKey:
    return dg.AssetKey([env_id, "sft_dataset"])


def checkpoint_key(kind: str, recipe_name: str) -> dg.AssetKey:
    """A recipe's checkpoints: kind "sft" (configs/sft/<name>.yaml) or "rlft" (configs/rlft/<name>.yaml)."""
    return dg.AssetKey(["training", kind, recipe_name])


def checkpoint_evals_key(kind: str, recipe_name: str) -> dg.AssetKey:
    """A recipe's latest checkpoint, its parent and its base on the test split of every environment it trained on."""
    return dg.AssetKey(["training", kind, recipe_name, "evals"])


def learning_curve_key(kind: str, recipe_name: str) -> dg.AssetKey:
    """A recipe's latest checkpoint's learning curve (dev reward, balanced accuracy, spread, entropy against step)."""
    return dg.AssetKey(["training", kind, recipe_name, "learning_curve"])


def base_model_key(model_id: str) -> dg.AssetKey:
    """A registry model a recipe starts from: an external asset, the root of the checkpoint lineage."""
    return dg.AssetKey(["models", model_id])


@cache
def recipes_trained_on(env_id: str) -> tuple[tuple[str, str], ...]:
    """(kind, recipe name) of every recipe that trains on the environment."""
    recipes = [
        *(("sft", load_sft_recipe(name, check_references=False)) for name in sft_recipe_names()),
        *(("rlft", load_rlft_recipe(name, check_references=False)) for name in rlft_recipe_names()),
    ]
    return tuple((kind, recipe.name) for kind, recipe in recipes if env_id in recipe.envs)


def synthetic_batch_key(env_id: str) -> dg.AssetKey:
    """Candidate completions sampled from a registry model, verified, and queued for a human spot-check."""
    return dg.AssetKey([env_id, "synthetic_batch"])


def ablations_key(env_id: str) -> dg.AssetKey:
    """The environment's ablations: stored completions re-scored under each named reward config, and their table."""
    return dg.AssetKey([env_id, "ablations"])


BENCHMARK_SHEET = dg.AssetKey(["benchmark_sheet"])
"""Every model × environment's headline metrics with CIs, from the latest full (bi-weekly) runs."""


def eval_key(env_id: str) -> dg.AssetKey:
    return dg.AssetKey([env_id, "eval_results"])


def report_key(env_id: str) -> dg.AssetKey:
    return dg.AssetKey([env_id, "report"])


def eval_run_writers(env_id: str, *, checkpoint_evals: bool = True) -> list[dg.AssetKey]:
    """Assets that write an environment's finished eval runs under outputs/evals/<env name>--<model>/: what a
    reader of that environment's latest runs (a report, a feedback-seeded synthetic set) depends on.

    checkpoint_evals=False leaves out the recipes' checkpoint evals, for readers upstream of training (a synthetic
    batch feeds the SFT dataset, so its checkpoint's evals cannot also be its input: the graph has no cycles)."""
    recipes = recipes_trained_on(env_id) if checkpoint_evals else ()
    return [
        eval_key(env_id),
        *([TOURNAMENT] if env_id == TOURNAMENT_ENV else []),
        *(checkpoint_evals_key(kind, name) for kind, name in recipes),
    ]
