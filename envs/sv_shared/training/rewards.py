"""GRPO reward functions and prompt rows from the environments' own verifiers.

The reward a policy is trained on is the verifier's reward that scores evals: each function here calls
`CompletionVerifier.reward_function` of an environment built with the recipe's reward weights (see
`build_shaped_environments`), so there is no second copy of any scoring rule.

Rows carry the item as one JSON text column (`sv_item`) rather than one column per field: a datasets.Dataset
(Arrow) unifies the columns of all rows, so mixed environments would hand each item the other environments'
fields as None, and nested values would gain missing keys. A JSON string survives the round trip exactly.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sv_shared.config import RewardWeightSettings
from sv_shared.contracts import CompletionVerifier, Environment, Item, ParseResult, ScoredSample
from sv_shared.data.files import replace_lone_surrogates
from sv_shared.data.hashing import stable_json
from sv_shared.training.recipes import RlftRecipe, shaped_env_config

ITEM_COLUMN = "sv_item"
"""The column holding an item as JSON text (ASCII; decoded with `decode_item`)."""
ENV_COLUMN = "env_id"
ID_COLUMN = "item_id"
RESERVED_ITEM_KEYS = frozenset({"prompts", "completions"})
"""Item fields that would collide with the reward function's own parameters."""

TrainerRewardFunction = Callable[..., list[float | None]]


class ItemEncodingError(ValueError):
    """An item cannot be carried through a dataset row exactly (a value JSON cannot hold, a reserved field name)."""


# -- items and rows -------------------------------------------------------------------------------------------------


def _check_value(value: Any, where: str) -> None:
    """Iteratively check that a value is plain JSON data (so decoding gives back an equal value)."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        current, path = stack.pop()
        if current is None or isinstance(current, bool | int | str):
            continue
        if isinstance(current, float):
            continue
        if isinstance(current, list):
            stack.extend((element, f"{path}[{index}]") for index, element in enumerate(current))
            continue
        if isinstance(current, dict):
            for key, element in current.items():
                if not isinstance(key, str):
                    raise ItemEncodingError(f"{path}: key {key!r} is a {type(key).__name__}; item keys must be text")
                stack.append((element, f"{path}.{key}"))
            continue
        raise ItemEncodingError(
            f"{path}: a {type(current).__name__} cannot be carried exactly in a training row "
            "(use None, bool, int, float, str, list or dict with text keys)"
        )


def encode_item(item: Mapping[str, Any]) -> str:
    """An item as JSON text that `decode_item` turns back into an equal dict (ASCII: lone surrogates survive)."""
    if not isinstance(item, Mapping):
        raise ItemEncodingError(f"an item is a mapping, got {type(item).__name__}")
    plain = dict(item)
    _check_value(plain, "item")
    clashes = sorted(RESERVED_ITEM_KEYS & set(plain))
    if clashes:
        raise ItemEncodingError(f"item field(s) {clashes} collide with the reward function's parameters")
    try:
        return json.dumps(plain, ensure_ascii=True, allow_nan=True)
    except RecursionError:
        raise ItemEncodingError("item: nested too deeply to encode") from None


def decode_item(text: str) -> Item:
    """The item a row's `sv_item` column holds."""
    if not isinstance(text, str):
        raise ItemEncodingError(f"{ITEM_COLUMN} holds JSON text, got {type(text).__name__}")
    try:
        item = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise ItemEncodingError(f"{ITEM_COLUMN} is not valid item JSON ({error})") from None
    if not isinstance(item, dict):
        raise ItemEncodingError(f"{ITEM_COLUMN} holds a {type(item).__name__}, not an item")
    return item


def clean_text(text: str) -> str:
    """Text Arrow can store (UTF-8): each lone surrogate becomes U+FFFD. Only prompts are cleaned; items keep theirs."""
    return replace_lone_surrogates(text)


def _prompt_messages(messages: Iterable[Mapping[str, Any]], env_id: str) -> list[dict[str, str]]:
    cleaned = []
    for index, message in enumerate(messages):
        role, content = message.get("role"), message.get("content")
        if not isinstance(role, str) or not isinstance(content, str):
            raise ItemEncodingError(f"{env_id}: prompt message {index} needs text role and content, got {message!r}")
        cleaned.append({"role": role, "content": clean_text(content)})
    if not cleaned:
        raise ItemEncodingError(f"{env_id}: an item posed no prompt messages")
    return cleaned


def grpo_prompt_rows(env: Environment, items: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One GRPO dataset row per item: `prompt` (the episode's opening messages, role and content), `env_id`,
    `item_id`, and `sv_item` (the item as JSON text, from which the reward functions rebuild it exactly)."""
    rows = []
    for item in items:
        encoded = encode_item(item)
        rows.append(
            {
                "prompt": _prompt_messages(env.episodes.messages(dict(item)), env.env_id),
                ENV_COLUMN: env.env_id,
                ID_COLUMN: clean_text(str(item.get(env.data.id_column))),
                ITEM_COLUMN: encoded,
            }
        )
    return rows


# -- environments with the recipe's weights -----------------------------------------------------------------------


def build_shaped_environments(
    recipe: RlftRecipe, *, root: Path | None = None, tools: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, Environment]:
    """The recipe's environments, each built with configs/envs/<env>.yaml's reward_weights overridden by the
    recipe's, so their verifiers' totals are the shaped reward. `tools` injects scanners/sandboxes per env."""
    from sv_shared.registry import build_environment

    return {
        env_id: build_environment(
            env_id,
            shaped_env_config(env_id, recipe.reward_weights.get(env_id), root),
            **dict((tools or {}).get(env_id, {})),
        )
        for env_id in recipe.envs
    }


# -- reward functions -------------------------------------------------------------------------------------------------


class _BatchMemo(CompletionVerifier):
    """A verifier that scores each (item, completion) once per batch: the total and every component function of an
    environment read the same samples, so scanners and sandboxes run once, not once per logged component. The
    reward functions call `retain` with each batch's items, so only the current batch is kept."""

    def __init__(self, inner: CompletionVerifier) -> None:
        self.inner = inner
        self.version = inner.version
        self._samples: dict[tuple[str, str], ScoredSample] = {}

    def retain(self, item_keys: set[str]) -> None:
        self._samples = {key: sample for key, sample in self._samples.items() if key[0] in item_keys}

    def parse(self, completion: str) -> ParseResult:
        return self.inner.parse(completion)

    def score(self, item: Item, completion: str) -> ScoredSample:
        return self.score_many([item], [completion])[0]

    def score_many(self, items: Sequence[Item], completions: Sequence[str]) -> list[ScoredSample]:
        keys = [(stable_json(item), completion) for item, completion in zip(items, completions, strict=True)]
        missing: dict[tuple[str, str], int] = {}
        for index, key in enumerate(keys):
            if key not in self._samples:
                missing.setdefault(key, index)
        if missing:
            order = list(missing.values())
            fresh = self.inner.score_many([items[i] for i in order], [completions[i] for i in order])
            self._samples.update(zip(missing, fresh, strict=True))
        return [self._samples[key] for key in keys]

    def aggregate(self, records: Sequence[Mapping[str, Any]], items: Mapping[str, Item]) -> dict[str, Any]:
        return self.inner.aggregate(records, items)


def reward_components(env: Environment) -> list[str]:
    """The environment's reward components, from the weight sections of its config (E3: repair, then detect)."""
    names: list[str] = []
    for field in type(env.config).model_fields:
        section = getattr(env.config, field)
        if isinstance(section, RewardWeightSettings):
            names.extend(name for name in section.as_mapping() if name not in names)
    return names


def _env_reward_function(env_id: str, memo: _BatchMemo, component: str | None, name: str) -> TrainerRewardFunction:
    """Apply a verifier reward function to this environment's rows only (the others get None)."""

    verifier_function = memo.reward_function(component)

    def reward(prompts: Sequence[Any], completions: Sequence[Any], **columns: Any) -> list[float | None]:
        for column in (ENV_COLUMN, ITEM_COLUMN):
            if column not in columns:
                raise KeyError(f"{name}: the dataset has no {column!r} column (build rows with grpo_prompt_rows)")
        rewards: list[float | None] = [None] * len(completions)
        groups: dict[tuple[str, ...], list[tuple[int, Item]]] = {}
        for index, row_env in enumerate(columns[ENV_COLUMN]):
            if row_env == env_id:
                item = decode_item(columns[ITEM_COLUMN][index])
                groups.setdefault(tuple(item), []).append((index, item))
        memo.retain({stable_json(item) for members in groups.values() for _, item in members})
        for fields, members in groups.items():  # one call per field set, so every rebuilt item has exactly its keys
            item_columns = {field: [item[field] for _, item in members] for field in fields}
            values = verifier_function(
                [prompts[index] for index, _ in members], [completions[index] for index, _ in members], **item_columns
            )
            for (index, _), value in zip(members, values, strict=True):
                if value is None:  # a component this item does not have
                    continue
                value = float(value)
                if not math.isfinite(value):
                    warnings.warn(f"{name}: non-finite reward {value}; the sample is left unscored", stacklevel=2)
                rewards[index] = value if math.isfinite(value) else None
        return rewards

    reward.__name__ = reward.__qualname__ = name
    return reward


def grpo_reward_functions(envs: Mapping[str, Environment]) -> tuple[list[TrainerRewardFunction], list[float]]:
    """Reward functions for GRPOTrainer and their weights: per environment `<env>/reward` (the verifier's total,
    weight 1) and `<env>/<component>` for each reward component (weight 0: logged as rewards/<env>/<component>/mean,
    not optimised). Each function scores only its environment's rows (selected by `env_id`) and gives None for
    the others. Dialogue environments are rewarded by their episode rollouts instead (episode_rollout)."""
    functions: list[TrainerRewardFunction] = []
    weights: list[float] = []
    for env_id, env in envs.items():
        if env.env_id != env_id:
            raise ValueError(f"environment {env.env_id!r} is given under the key {env_id!r}")
        if not isinstance(env.verifier, CompletionVerifier):
            raise TypeError(
                f"{env_id}: a {type(env.verifier).__name__} scores whole dialogues; train it through the episode "
                "rollout (sv_shared.training.episode_rollout), not completion rewards"
            )
        memo = _BatchMemo(env.verifier)
        functions.append(_env_reward_function(env_id, memo, None, f"{env_id}/reward"))
        weights.append(1.0)
        for component in reward_components(env):
            functions.append(_env_reward_function(env_id, memo, component, f"{env_id}/{component}"))
            weights.append(0.0)
    return functions, weights
