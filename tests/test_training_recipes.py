"""Training recipes: the shipped files load, bad recipes fail with the file and field named, weights are shaped."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sv_shared.config import ConfigError, RewardWeightSettings
from sv_shared.contracts import CompletionVerifier, Dialogue, ToolUse
from sv_shared.registry import get_environment, load_env_config
from sv_shared.training.checkpoints import CheckpointManifest, finish_training_run, open_training_run
from sv_shared.training.recipes import (
    DIALOGUE_ENVS,
    ENV_IDS,
    TOOL_ENVS,
    RlftRecipe,
    SftRecipe,
    effective_reward_weights,
    init_kind,
    load_rlft_recipe,
    load_sft_recipe,
    recipe_hash,
    rlft_recipe_names,
    sft_recipe_names,
    shaped_env_config,
)

SFT = {
    "name": "t",
    "stage": "sft",
    "base_model": "smollm2-135m-instruct",
    "envs": ["e1"],
    "learning_rate": 5.0e-5,
    "max_steps": 2,
    "per_device_train_batch_size": 2,
    "save_steps": 1,
    "max_length": 256,
    "min_reward": 0.9,
}
RLFT = {
    "name": "t",
    "stage": "rlft-single",
    "envs": ["e1"],
    "init_from": "smollm2-135m-instruct",
    "num_generations": 4,
    "max_completion_length": 32,
    "temperature": 1.0,
    "beta": 0.0,
    "learning_rate": 1.0e-6,
    "max_steps": 2,
    "per_device_train_batch_size": 4,
    "save_steps": 1,
    "items_per_env": 8,
}


def _rlft(**changes: object) -> RlftRecipe:
    return RlftRecipe.model_validate({**RLFT, **changes})


def _sft(**changes: object) -> SftRecipe:
    return SftRecipe.model_validate({**SFT, **changes})


def _write(root: Path, kind: str, name: str, data: dict) -> None:
    folder = root / "configs" / kind
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "configs").mkdir()
    models = {"models": {"smollm2-135m-instruct": {}, "template-attacker": {}, "policy-defender": {}}}
    (tmp_path / "configs" / "models.yaml").write_text(yaml.safe_dump(models), encoding="utf-8")
    return tmp_path


# -- the shipped recipes ---------------------------------------------------------------------------------------------


def test_shipped_recipes_load_with_their_references_checked() -> None:
    sft, rlft = sft_recipe_names(), rlft_recipe_names()
    assert {"e1", "e2", "e3", "e4"} <= set(sft)
    assert {"e1", "e2", "e3", "e4", "e5", "e6", "mixed", "redteam-joint", "e1-gpu"} <= set(rlft)
    for name in sft:
        recipe = load_sft_recipe(name)
        assert (recipe.name, recipe.stage, recipe.seed) == (name, "sft", 42)
        assert recipe.wandb_project == "security-verifiers-sft"
    for name in rlft:
        recipe = load_rlft_recipe(name)
        assert recipe.name == name and recipe.seed == 42
        assert recipe.wandb_project == "security-verifiers-rl"
        effective_reward_weights(recipe)  # every override names real components and leaves usable weights


def test_shipped_recipes_cover_the_curriculum() -> None:
    assert load_sft_recipe("e1").profile == "cpu" and load_sft_recipe("e4").profile == "cpu"
    for name in ("e1", "e4"):  # CPU runs inside `make bench-learning`'s budget: well under an hour on 2 cores
        recipe = load_sft_recipe(name)
        assert recipe.method == "full" and recipe.max_steps is not None and recipe.max_steps <= 150
        assert recipe.early_stopping is not None and load_rlft_recipe(name).early_stopping is not None
    assert load_sft_recipe("e2").method == "lora" and load_sft_recipe("e3").method == "lora"
    assert {load_rlft_recipe(f"e{n}").stage for n in range(1, 7)} == {"rlft-single"}
    assert load_rlft_recipe("mixed").stage == "rlft-mixed" and set(load_rlft_recipe("mixed").envs) == {
        "e1",
        "e2",
        "e3",
        "e4",
    }
    joint = load_rlft_recipe("redteam-joint")
    assert joint.stage == "rlft-joint" and joint.joint is not None
    assert joint.joint.sides() == ["attacker", "defender", "attacker", "defender"]
    gpu = load_rlft_recipe("e1-gpu")
    assert gpu.profile == "gpu" and gpu.vllm.enabled and gpu.gpu_settings.bf16
    assert init_kind(load_rlft_recipe("e1")) == "sft" and init_kind(load_rlft_recipe("e5")) == "model"


def test_env_kind_tables_match_the_environments() -> None:
    """The recipe rules' static tables (dialogues, tool episodes) agree with the built environments."""
    for env_id in ENV_IDS:
        env = get_environment(env_id)
        assert isinstance(env.episodes, Dialogue) == (env_id in DIALOGUE_ENVS)
        assert isinstance(env.episodes, ToolUse) == (env_id in TOOL_ENVS)
        if env_id not in DIALOGUE_ENVS:
            assert isinstance(env.verifier, CompletionVerifier)


# -- strictness and files --------------------------------------------------------------------------------------------


def test_a_string_for_a_number_names_the_file_and_field(root: Path) -> None:
    _write(root, "sft", "t", {**SFT, "learning_rate": 1.0})
    path = root / "configs" / "sft" / "t.yaml"
    path.write_text(path.read_text().replace("learning_rate: 1.0", "learning_rate: 5e-5"))  # YAML: a string
    with pytest.raises(ConfigError, match=r"(?s)t\.yaml.*learning_rate.*'5e-5' \(str\)"):
        load_sft_recipe("t", root)


def test_unknown_keys_fail(root: Path) -> None:
    _write(root, "rlft", "t", {**RLFT, "lerning_rate": 1.0e-6})
    with pytest.raises(ConfigError, match="lerning_rate: unknown key"):
        load_rlft_recipe("t", root)


def test_name_must_be_the_file_stem_and_a_safe_name(root: Path) -> None:
    _write(root, "sft", "other", SFT)
    with pytest.raises(ConfigError, match="stem"):
        load_sft_recipe("other", root)
    for bad in ("../etc/passwd", "E1", "a/b", ""):
        with pytest.raises(ConfigError, match="recipe name"):
            load_sft_recipe(bad, root)
    with pytest.raises(ConfigError, match="no sft recipe 'missing'"):
        load_sft_recipe("missing", root)


def test_references_must_exist(root: Path) -> None:
    _write(root, "sft", "t", {**SFT, "teacher": "gpt-9"})
    with pytest.raises(ConfigError, match="teacher 'gpt-9'"):
        load_sft_recipe("t", root)
    assert load_sft_recipe("t", root, check_references=False).teacher == "gpt-9"
    _write(root, "rlft", "r", {**RLFT, "name": "r", "init_from": "nowhere"})
    with pytest.raises(ConfigError, match="neither an SFT recipe"):
        load_rlft_recipe("r", root)
    _write(root, "sft", "s1", {**SFT, "name": "s1"})
    _write(root, "rlft", "r", {**RLFT, "name": "r", "init_from": "s1"})
    assert init_kind(load_rlft_recipe("r", root), root) == "sft"
    _write(root, "rlft", "r", {**RLFT, "name": "r", "init_from": "smollm2-135m-instruct"})
    assert init_kind(load_rlft_recipe("r", root), root) == "model"


def test_a_trained_checkpoint_is_a_registry_model_to_start_from(root: Path, isolated_outputs: Path) -> None:
    """RLFT continued from an RLFT checkpoint (or SFT from one): the registry lists checkpoints, so the check does."""
    _write(root, "rlft", "r", {**RLFT, "name": "r", "init_from": "smollm2-135m-instruct.rlft-single.20261129t181915-a"})
    with pytest.raises(ConfigError, match=r"nor a registry model \(configs/models.yaml or a trained checkpoint\)"):
        load_rlft_recipe("r", root)
    with open_training_run(isolated_outputs / "checkpoints", "smollm2-135m-instruct", "rlft-single", "key") as run:
        run.model_dir.mkdir(parents=True)
        (run.model_dir / "config.json").write_text("{}", encoding="utf-8")
        manifest = finish_training_run(
            run,
            CheckpointManifest(
                model_id=run.model_id,
                parent_model=run.parent_model,
                base_model=run.base_model,
                stage=run.stage,
                run_id=run.run_id,
                recipe_name="e4",
                recipe_hash="0" * 64,
                recipe={"name": "e4"},
                envs=["e4"],
                reward_weights={},
                data={},
                code_version="0123abcd",
                metrics={},
            ),
        )
    _write(root, "rlft", "r", {**RLFT, "name": "r", "init_from": manifest.model_id})
    assert init_kind(load_rlft_recipe("r", root), root) == "model"
    _write(root, "sft", "s", {**SFT, "name": "s", "base_model": manifest.model_id})
    assert load_sft_recipe("s", root).base_model == manifest.model_id


def test_init_from_naming_both_a_recipe_and_a_model_is_ambiguous(root: Path) -> None:
    _write(root, "sft", "smollm2-135m-instruct", {**SFT, "name": "smollm2-135m-instruct"})
    _write(root, "rlft", "r", {**RLFT, "name": "r"})
    with pytest.raises(ConfigError, match="both an SFT recipe and a registry model"):
        load_rlft_recipe("r", root)


# -- rules -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"method": "lora"}, "needs a lora section"),
        ({"lora": {"r": 8}}, "method is 'full'"),
        ({"max_steps": None}, "max_steps or num_train_epochs"),
        ({"gpu": {"bf16": True}}, "'cpu' profile"),
        ({"envs": ["e1", "e1"]}, "twice"),
        ({"envs": ["e9"]}, "unknown environment"),
        ({"min_reward": 1.5}, "min_reward"),
        ({"learning_rate": float("inf")}, "learning_rate"),
        ({"lora": {"r": 8, "dropout": 1.0}, "method": "lora"}, "dropout"),
        ({"base_model": "Bad/Id"}, "not a valid name"),
    ],
)
def test_sft_rules(changes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _sft(**changes)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"envs": ["e1", "e4"]}, "rlft-single trains one environment"),
        ({"stage": "rlft-mixed"}, "two or more"),
        ({"stage": "rlft-mixed", "envs": ["e1", "e5"], "per_device_train_batch_size": 4}, "dialogues"),
        ({"stage": "rlft-joint", "envs": ["e5", "e6"]}, "needs a joint section"),
        ({"stage": "rlft-joint", "envs": ["e1", "e6"]}, "attacker and defender"),
        ({"joint": {"rounds": 2, "frozen_attacker": "a", "frozen_defender": "b"}}, "only rlft-joint"),
        ({"tools": True}, "tools: true"),
        ({"reward_weights": {"e1": {"acuracy": 1.0}}}, r"unknown component.*acuracy.*accuracy"),
        ({"reward_weights": {"e4": {"accuracy": 1.0}}}, "not one of this recipe's envs"),
        ({"reward_weights": {"e1": {"accuracy": -1.0}}}, "greater than or equal"),
        ({"reward_weights": {"e1": {"accuracy": float("nan")}}}, "finite"),
        ({"envs": ["e5"], "reward_weights": {"e5": {"success_weight": 1.0}}}, "no reward_weights"),
        ({"vllm": {"enabled": True}}, "profile: gpu"),
        ({"num_generations": 3}, "multiple of num_generations"),
        ({"num_generations": 1}, "num_generations"),
        ({"temperature": 0.0}, "temperature"),
        ({"vllm": {"mode": "remote"}}, "mode"),
    ],
)
def test_rlft_rules(changes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _rlft(**changes)


def test_generation_batch_counts_gpu_devices() -> None:
    _rlft(per_device_train_batch_size=2, num_generations=4, profile="gpu", gpu={"devices": 2})
    with pytest.raises(ValueError, match="multiple of num_generations"):
        _rlft(per_device_train_batch_size=2, num_generations=4)


def test_tools_mode_and_joint_are_accepted_where_they_belong() -> None:
    assert _rlft(envs=["e4"], tools=True).tools
    joint = _rlft(
        stage="rlft-joint",
        envs=["e6", "e5"],
        joint={"rounds": 3, "first_side": "defender", "frozen_attacker": "a", "frozen_defender": "b"},
    )
    assert joint.joint is not None and joint.joint.sides() == ["defender", "attacker", "defender"]


# -- hashes and weights ----------------------------------------------------------------------------------------------


def test_recipe_hash_is_stable_and_sees_every_field() -> None:
    assert recipe_hash(_rlft()) == recipe_hash(_rlft())
    assert len(recipe_hash(_rlft())) == 64
    assert recipe_hash(_rlft()) != recipe_hash(_rlft(learning_rate=2.0e-6))
    assert recipe_hash(_rlft()) != recipe_hash(_rlft(reward_weights={"e1": {"format": 0.2}}))
    assert recipe_hash(_sft()) != recipe_hash(_sft(seed=7))


def test_overrides_are_partial_and_validated() -> None:
    base = load_env_config("e1").reward_weights.as_mapping()
    shaped = shaped_env_config("e1", {"calibration": 0.5})
    assert shaped.reward_weights.as_mapping() == {**base, "calibration": 0.5}
    assert isinstance(shaped.reward_weights, RewardWeightSettings)
    assert shaped_env_config("e1", {}) is load_env_config("e1")
    assert shaped.costs == load_env_config("e1").costs  # the rest of the config is untouched
    with pytest.raises(ValueError, match="not all zero"):
        shaped_env_config("e1", dict.fromkeys(base, 0.0))
    with pytest.raises(ValueError, match="unknown component"):
        shaped_env_config("e1", {"bogus": 1.0})
    weights = effective_reward_weights(_rlft(reward_weights={"e1": {"format": 0.3}}))
    assert weights == {"e1": {**base, "format": 0.3}}
