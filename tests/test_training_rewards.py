"""GRPO rewards: the verifier's own scores, carried through a datasets.Dataset exactly, one environment's rows each."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import datasets
import pytest
from trl.trainer.utils import get_callable_name

from sv_shared.contracts import CompletionVerifier, Environment, Item, Message, ParseResult, ScoredSample, SingleTurn
from sv_shared.data.hashing import stable_json
from sv_shared.registry import get_environment
from sv_shared.training.recipes import RlftRecipe
from sv_shared.training.rewards import (
    ITEM_COLUMN,
    ItemEncodingError,
    build_shaped_environments,
    decode_item,
    encode_item,
    grpo_prompt_rows,
    grpo_reward_functions,
    reward_components,
)

E1_ANSWERS = [
    '{"label": "Malicious", "confidence": 0.8, "rationale": "scan"}',
    '{"label": "Benign", "confidence": 0.6, "rationale": "normal"}',
    "not json at all",
    '{"label": "Abstain", "confidence": 0.5}',
]


def _round_trip(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows as GRPOTrainer sees them: through Arrow and back."""
    return list(datasets.Dataset.from_list(rows))


def _call(function: Any, rows: Sequence[Mapping[str, Any]], completions: Sequence[Any]) -> list[float | None]:
    """Call a reward function the way GRPOTrainer does: every non-prompt column, plus the trainer's extras."""
    columns = {key: [row[key] for row in rows] for key in rows[0] if key != "prompt"}
    return function(
        prompts=[row["prompt"] for row in rows],
        completions=list(completions),
        completion_ids=[[1, 2]] * len(rows),
        trainer_state=None,
        log_extra=lambda *a, **k: None,
        log_metric=lambda *a, **k: None,
        **columns,
    )


def _completions(env: Environment, items: list[Item]) -> list[str]:
    baseline = next(iter(env.baselines.values()), None)
    answers = E1_ANSWERS if env.env_id == "e1" else ['{"label": "x"}', "garbage", ""]
    return [
        baseline(env.episodes.observation(item)) if baseline and index == 0 else answers[index % len(answers)]
        for index, item in enumerate(items)
    ]


@pytest.mark.parametrize("env_id", ["e1", "e2", "e3", "e4"])
def test_rewards_from_dataset_rows_equal_the_verifier_exactly(env_id: str) -> None:
    env = get_environment(env_id)
    items = env.data.load_source("embedded").to_dicts()[: 4 if env_id in ("e1", "e4") else 2]
    completions = _completions(env, items)
    rows = _round_trip(grpo_prompt_rows(env, items))
    assert [decode_item(row[ITEM_COLUMN]) for row in rows] == items
    functions, weights = grpo_reward_functions({env_id: env})
    expected = [env.verifier.score(item, completion) for item, completion in zip(items, completions, strict=True)]
    names = [get_callable_name(function) for function in functions]
    assert names[0] == f"{env_id}/reward" and weights[0] == 1.0
    assert names[1:] == [f"{env_id}/{component}" for component in reward_components(env)]
    assert weights[1:] == [0.0] * (len(functions) - 1)
    assert _call(functions[0], rows, completions) == [sample.reward for sample in expected]
    for function, component in zip(functions[1:], reward_components(env), strict=True):
        # A component an item does not have (E3 detect items: no patch) is None, which TRL leaves out of its mean.
        assert _call(function, rows, completions) == [sample.components.get(component) for sample in expected]
    if env_id == "e1":
        assert len({sample.reward for sample in expected}) > 2  # graded, not 0/1: GRPO has something to learn


def test_conversational_completions_score_their_last_message() -> None:
    env = get_environment("e1")
    items = env.data.load_source("embedded").to_dicts()[:2]
    rows = _round_trip(grpo_prompt_rows(env, items))
    total = grpo_reward_functions({"e1": env})[0][0]
    as_text = _call(total, rows, E1_ANSWERS[:2])
    as_messages = _call(total, rows, [[{"role": "assistant", "content": text}] for text in E1_ANSWERS[:2]])
    assert as_text == as_messages


class ExactItemVerifier(CompletionVerifier):
    """Rewards 1 only when the item it is handed equals the original exactly (and logs the completion's length)."""

    version = "exact-1"

    def __init__(self, originals: Mapping[str, Item]) -> None:
        self.originals = originals
        self.calls = 0

    def parse(self, completion: str) -> ParseResult:
        return ParseResult({"text": completion})

    def score(self, item: Item, completion: str) -> ScoredSample:
        original = self.originals[item["flow_id"]]
        same = float(item == original and stable_json(item) == stable_json(original))
        return ScoredSample(item["flow_id"], same * 0.5 + len(completion) / 100, {"accuracy": same}, None)

    def score_many(self, items: Sequence[Item], completions: Sequence[str]) -> list[ScoredSample]:
        self.calls += 1
        return super().score_many(items, completions)

    def aggregate(self, records: Sequence[Mapping[str, Any]], items: Mapping[str, Item]) -> dict[str, Any]:
        return {}


HOSTILE_ITEMS: list[Item] = [
    {"flow_id": "a", "nested": {"x": [1, {"y": None}], "z": {}}, "label": "Benign", "n": None, "big": 2**70},
    {"flow_id": "b", "nested": {"q": "\ud800 lone surrogate", "list": []}, "label": None, "n": 1.5, "big": -1},
    {"flow_id": "c", "text": "ünïcödé 🛡️ \u0000 \u202e", "f": float("inf"), "label": "Malicious", "n": [None, [None]]},
    {"flow_id": "d", "src_ip": "\udfff", "deep": [[[[[["x"]]]]]], "label": "Benign", "n": {"1": 2}},
]


class RawEpisodes(SingleTurn):
    """Poses an item's fields as raw text (no JSON escaping), so hostile text reaches the prompt."""

    def observation(self, item: Item) -> dict[str, Any]:
        return dict(item)

    def messages(self, item: Item) -> list[Message]:
        return [{"role": "user", "content": " ".join(str(value) for value in item.values())}]


def _stand_in(originals: Mapping[str, Item]) -> tuple[Environment, ExactItemVerifier]:
    verifier = ExactItemVerifier(originals)
    return dataclasses.replace(get_environment("e1"), verifier=verifier, episodes=RawEpisodes()), verifier


def test_nested_none_and_unicode_items_survive_the_dataset_exactly() -> None:
    originals = {item["flow_id"]: item for item in HOSTILE_ITEMS}
    env, verifier = _stand_in(originals)
    rows = _round_trip(grpo_prompt_rows(env, HOSTILE_ITEMS))
    completions = ["a", "bb", "ccc", "dddd"]
    functions, _ = grpo_reward_functions({"e1": env})
    rewards = _call(functions[0], rows, completions)
    assert rewards == [verifier.score(item, text).reward for item, text in zip(HOSTILE_ITEMS, completions, strict=True)]
    assert rewards == [0.5 + len(text) / 100 for text in completions]  # every item arrived equal to its original
    assert "\ufffd" in rows[3]["prompt"][0]["content"]  # a lone surrogate in a prompt: replaced, Arrow stores it


def test_one_batch_is_scored_once_for_the_total_and_every_component() -> None:
    items = get_environment("e1").data.load_source("embedded").to_dicts()[:4]
    env, verifier = _stand_in({item["flow_id"]: item for item in items})
    rows = _round_trip(grpo_prompt_rows(env, items))
    functions, _ = grpo_reward_functions({"e1": env})
    assert _call(functions[0], rows, ["x", "x", "y", "y"])[0] is not None
    for function in functions[1:]:
        assert len(_call(function, rows, ["x", "x", "y", "y"])) == 4
    assert verifier.calls == 1
    _call(functions[0], rows, ["other"] * 4)  # a new batch is scored afresh
    assert verifier.calls == 2


def test_mixed_rows_are_scored_by_their_own_environment_only() -> None:
    e1, e4 = get_environment("e1"), get_environment("e4")
    e1_items = e1.data.load_source("embedded").to_dicts()[:2]
    e4_items = e4.data.load_source("embedded").to_dicts()[:2]
    rows = _round_trip(grpo_prompt_rows(e1, e1_items) + grpo_prompt_rows(e4, e4_items))
    completions = [E1_ANSWERS[0], E1_ANSWERS[2], '{"label": "Phishing", "confidence": 0.9}', "nothing"]
    functions, weights = grpo_reward_functions({"e1": e1, "e4": e4})
    by_name = {get_callable_name(function): function for function in functions}
    e1_rewards = _call(by_name["e1/reward"], rows, completions)
    e4_rewards = _call(by_name["e4/reward"], rows, completions)
    assert e1_rewards[2:] == [None, None] and e4_rewards[:2] == [None, None]
    assert e1_rewards[:2] == [
        e1.verifier.score(item, c).reward for item, c in zip(e1_items, completions[:2], strict=True)
    ]
    assert e4_rewards[2:] == [
        e4.verifier.score(item, c).reward for item, c in zip(e4_items, completions[2:], strict=True)
    ]
    assert sorted(weight for weight in weights if weight) == [1.0, 1.0]


def test_recipe_weights_shape_the_verifier_total() -> None:
    recipe = RlftRecipe.model_validate(
        {
            "name": "t",
            "stage": "rlft-single",
            "envs": ["e1"],
            "init_from": "smollm2-135m-instruct",
            "reward_weights": {"e1": {"format": 3.0, "accuracy": 0.0}},
            "num_generations": 2,
            "max_completion_length": 8,
            "temperature": 1.0,
            "beta": 0.0,
            "learning_rate": 1.0e-6,
            "max_steps": 1,
            "per_device_train_batch_size": 2,
            "save_steps": 1,
            "items_per_env": 2,
        }
    )
    shaped = build_shaped_environments(recipe)["e1"]
    items = shaped.data.load_source("embedded").to_dicts()[:4]
    weights = shaped.config.reward_weights.as_mapping()
    assert weights["format"] == 3.0 and weights["accuracy"] == 0.0
    rows = _round_trip(grpo_prompt_rows(shaped, items))
    rewards = _call(grpo_reward_functions({"e1": shaped})[0][0], rows, E1_ANSWERS)
    for item, answer, reward in zip(items, E1_ANSWERS, rewards, strict=True):
        components = get_environment("e1").verifier.score(item, answer).components
        gains = {name: weight for name, weight in weights.items() if name != "asymmetric_cost"}  # E1's penalty
        expected = sum(gains[name] * components[name] for name in gains) / sum(gains.values()) - weights[
            "asymmetric_cost"
        ] * (1.0 - components["asymmetric_cost"])
        assert reward is not None and math.isclose(reward, expected, rel_tol=1e-12, abs_tol=1e-12)


def test_dialogue_environments_are_rewarded_by_their_rollouts() -> None:
    with pytest.raises(TypeError, match="episode rollout"):
        grpo_reward_functions({"e6": get_environment("e6")})
    with pytest.raises(ValueError, match="under the key"):
        grpo_reward_functions({"e4": get_environment("e1")})
    rows = grpo_prompt_rows(get_environment("e6"), get_environment("e6").data.load_source("embedded").to_dicts()[:1])
    assert rows[0]["env_id"] == "e6" and rows[0]["prompt"]  # prompt rows still serve the episode rollout


def test_rows_without_the_item_column_fail_by_name() -> None:
    env = get_environment("e1")
    rows = [{k: v for k, v in row.items() if k != ITEM_COLUMN} for row in grpo_prompt_rows(env, [HOSTILE_ITEMS[0]])]
    with pytest.raises(KeyError, match="sv_item"):
        _call(grpo_reward_functions({"e1": env})[0][0], rows, ["x"])


class _Opaque:
    pass


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"flow_id": "x", "when": _Opaque()}, r"item\.when: a _Opaque"),
        ({"flow_id": "x", "pair": (1, 2)}, "tuple"),
        ({"flow_id": "x", "m": {1: "a"}}, "key 1 is a int"),
        ({"flow_id": "x", "prompts": "p"}, "collide"),
        ({"flow_id": "x", "b": b"bytes"}, "bytes"),
    ],
)
def test_items_that_cannot_travel_exactly_are_refused_by_name(item: dict, message: str) -> None:
    with pytest.raises(ItemEncodingError, match=message):
        encode_item(item)


def test_absurd_nesting_is_a_named_error_not_a_crash() -> None:
    deep: Any = "leaf"
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(ItemEncodingError, match="nested too deeply"):
        encode_item({"flow_id": "x", "deep": deep})
    for bad in ("[1, 2]", "{", 7):
        with pytest.raises(ItemEncodingError):
            decode_item(bad)  # type: ignore[arg-type]


def test_encoding_round_trips_floats_and_surrogates() -> None:
    item = {"a": 0.1 + 0.2, "b": -0.0, "c": 1e308, "d": "\ud83d", "e": float("nan")}
    back = decode_item(encode_item(item))
    assert back["a"] == item["a"] and math.copysign(1, back["b"]) == -1 and back["c"] == 1e308
    assert back["d"] == "\ud83d" and math.isnan(back["e"])
    assert encode_item(item).isascii()
    json.loads(encode_item(item))  # plain JSON text (NaN as NaN, which Python reads back)
