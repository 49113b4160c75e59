"""What every registered environment gets for free: the contract's parts, a typed config that refuses bad values
with the file and field, embedded data that validates and splits cleanly, and a verifier that no answer crashes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from sv_shared.config import ConfigError, EnvConfig
from sv_shared.contracts import (
    CompletionVerifier,
    Dialogue,
    DialogueVerifier,
    Environment,
    EnvironmentData,
    ScoredSample,
    SingleTurn,
)
from sv_shared.registry import ENV_NAMES, config_model, get_environment, implemented_env_ids, load_env_config

ROOT = Path(__file__).resolve().parents[1]
ENV_IDS = implemented_env_ids()

HOSTILE_COMPLETIONS = [
    "",
    "{",
    "null",
    '{"label": 1e999, "confidence": "NaN"}',
    "[" * 5000,
    "\x00\ud800 " * 100,
    '{"a": ' * 2000 + "1" + "}" * 2000,
    "x" * 200_000,
]


@pytest.fixture(scope="module", params=ENV_IDS)
def env(request: pytest.FixtureRequest) -> Environment:
    return get_environment(request.param)


def test_parts_match_the_episode_kind(env: Environment) -> None:
    assert env.name == ENV_NAMES[env.env_id]
    assert isinstance(env.config, config_model(env.env_id)) and isinstance(env.config, EnvConfig)
    assert isinstance(env.data, EnvironmentData)
    if isinstance(env.episodes, Dialogue):
        assert isinstance(env.verifier, DialogueVerifier)
        assert env.episodes.policy_role
    else:
        assert isinstance(env.episodes, SingleTurn) and isinstance(env.verifier, CompletionVerifier)
    assert env.verifier.version.startswith(env.env_id)
    assert env.baselines, "every environment ships at least one rule baseline"


def test_embedded_data_validates_and_splits_without_overlap(env: Environment) -> None:
    frame = env.data.load_source("embedded")
    env.data.validate(frame)
    splits = env.data.curate([frame], seed=42)
    ids = {name: set(split[env.data.id_column].to_list()) for name, split in splits.items()}
    assert {"train", "dev", "test"} <= set(ids)
    assert sum(len(group) for group in ids.values()) == frame.height
    assert not (ids["train"] & ids["test"]) and not (ids["dev"] & ids["test"]) and not (ids["train"] & ids["dev"])
    assert env.data.label_column in frame.columns


def test_config_round_trips_and_is_immutable(env: Environment) -> None:
    assert config_model(env.env_id).model_validate(env.config.as_dict()) == env.config
    with pytest.raises(ValueError):
        env.config.eval.default_n = 1  # type: ignore[misc]


def _root_with(tmp_path: Path, env_id: str, edit) -> Path:
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    path = tmp_path / "configs" / "envs" / f"{env_id}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_bad_configs_fail_naming_the_file_and_field(tmp_path: Path, env_id: str) -> None:
    def break_it(data: dict) -> None:
        data["eval"]["default_n"] = "ten"
        data["eval"]["defualt_models"] = ["typo"]

    root = _root_with(tmp_path, env_id, break_it)
    with pytest.raises(ConfigError) as raised:
        load_env_config(env_id, root)
    message = str(raised.value)
    assert f"{env_id}.yaml" in message
    assert "eval.default_n: input should be a valid integer, got 'ten'" in message
    assert "eval.defualt_models: unknown key" in message


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_reward_weights_must_be_numbers(tmp_path: Path, env_id: str) -> None:
    data = load_env_config(env_id).as_dict()
    weights = next((key for key in ("reward_weights", "reward", "costs") if key in data), None)
    assert weights, f"{env_id} has no reward weights or costs section"
    first = next(iter(data[weights]))
    root = _root_with(tmp_path, env_id, lambda raw: raw[weights].__setitem__(first, "0.5"))
    with pytest.raises(ConfigError, match=rf"{weights}\.{first}: input should be a valid number"):
        load_env_config(env_id, root)


def _single_turn_items(env: Environment, n: int) -> list[dict]:
    splits = env.data.curate([env.data.load_source("embedded")], seed=42)
    return splits["test"].head(n).to_dicts()


def test_baselines_answer_what_a_model_sees_and_score_in_range(env: Environment) -> None:
    if not isinstance(env.verifier, CompletionVerifier):
        pytest.skip("dialogue baselines are played through the runner (tests/test_redteam_runner.py)")
    items = _single_turn_items(env, 2)
    for baseline in env.baselines.values():
        completions = [baseline(env.episodes.observation(item)) for item in items]
        for sample in env.verifier.score_many(items, completions):
            assert isinstance(sample, ScoredSample) and env.verifier.reward_floor <= sample.reward <= 1.0


def test_no_completion_crashes_the_verifier(env: Environment) -> None:
    if not isinstance(env.verifier, CompletionVerifier):
        pytest.skip("dialogue turns are parsed by parse_turn, tested below")
    item = _single_turn_items(env, 1)[0]
    samples = env.verifier.score_many([item] * len(HOSTILE_COMPLETIONS), HOSTILE_COMPLETIONS)
    assert all(sample.reward == env.verifier.reward_floor and sample.error for sample in samples)


def test_no_turn_crashes_a_dialogue_parser(env: Environment) -> None:
    if not isinstance(env.verifier, DialogueVerifier):
        pytest.skip("single-turn verifiers are tested above")
    for text in HOSTILE_COMPLETIONS:
        env.verifier.parse_turn(text)


def test_reward_function_matches_the_verifier(env: Environment) -> None:
    """The verifier as TRL hands it columns: rewards equal `score` for text and conversational completions, and a
    single component can be asked for on its own (a trainer logs or weights components apart)."""
    if not isinstance(env.verifier, CompletionVerifier):
        pytest.skip("dialogue rewards come from whole episodes")
    items = _single_turn_items(env, 2)
    answers = [next(iter(env.baselines.values()))(env.episodes.observation(item)) for item in items]
    items, completions = [*items, items[0]], [*answers, "no JSON here"]
    columns = {key: [item[key] for item in items] for key in items[0]}
    prompts = [env.episodes.messages(item) for item in items]
    scored = env.verifier.score_many(items, completions)
    reward = env.verifier.reward_function()
    assert reward(prompts, completions, **columns) == [sample.reward for sample in scored]
    conversations = [[{"role": "assistant", "content": completion}] for completion in completions]
    assert reward(prompts, conversations, **columns) == [sample.reward for sample in scored]
    for component in scored[0].components:
        values = env.verifier.reward_function(component)(prompts, completions, **columns)
        assert values == [sample.components[component] for sample in scored]


def test_secverify_eval_refuses_a_bad_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from secverify_dagster.cli.main import main

    def break_it(data: dict) -> None:
        data["reward_weights"]["accuracy"] = "high"
        data["reward_weights"]["acuracy"] = 0.45

    root = _root_with(tmp_path / "root", "e1", break_it)
    monkeypatch.setenv("SECVERIFY_ROOT", str(root))
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path / "outputs"))
    assert main(["eval", "--env", "e1", "--model", "heuristic", "-n", "2"]) != 0
    error = capsys.readouterr().err
    assert str(root / "configs" / "envs" / "e1.yaml") in error
    assert "reward_weights.accuracy: input should be a valid number, got 'high'" in error
    assert "reward_weights.acuracy: unknown key" in error
    assert not (tmp_path / "outputs" / "evals").exists()
