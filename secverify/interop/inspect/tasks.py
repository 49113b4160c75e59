"""E1-E4 as inspect Tasks: the runner's items, posed as the runner poses them, scored by the environment's verifier."""

from __future__ import annotations

from collections import Counter

from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import HeadlineMetric
from inspect_ai.solver import Solver, generate

from secverify.interop.inspect.messages import chat_messages, generation_config, log_safe
from secverify.interop.inspect.scorers import ITEM_ID, run_metrics, verifier_scorer
from secverify.interop.inspect.tools import tool_episode
from secverify.interop.items import EMBEDDED, eval_slice
from sv_shared.contracts import Dialogue, Environment, Item, ToolUse


class DuplicateItemError(ValueError):
    """An items file with two items of one id: inspect needs one sample per id, and our runs key results by it."""


class NoToolModeError(ValueError):
    """include_tools for an environment without tool-using episodes (only E2 and E4 have them)."""


def samples(env: Environment, items: list[Item]) -> list[Sample]:
    """One Sample per item, in the given order: input = the messages our runner sends, id = the item id, metadata =
    a log-safe copy of the item (the scorer reads the original)."""
    id_column = env.data.id_column
    ids = [str(item[id_column]) for item in items]
    repeated = sorted(item_id for item_id, count in Counter(ids).items() if count > 1)
    if repeated:
        raise DuplicateItemError(f"{env.name}: items share an id ({', '.join(repeated[:5])}); ids must be unique")
    return [
        Sample(
            id=item_id,
            input=chat_messages(env.episodes.messages(item)),
            metadata={ITEM_ID: item_id, "item": log_safe(item)},
        )
        for item_id, item in zip(ids, items, strict=True)
    ]


def single_turn_task(
    env_id: str,
    *,
    split: str = "test",
    n: int | None = None,
    seed: int = 42,
    dataset: str = EMBEDDED,
    include_tools: bool = False,
) -> Task:
    """An E1-E4 Task over `eval_slice(env_id, split, n, seed, dataset)`: one generate() per item, or with
    include_tools (E2, E4) our tool episode played by inspect's model."""
    chosen = eval_slice(env_id, split=split, n=n, seed=seed, dataset=dataset)
    env = chosen.env
    if isinstance(env.episodes, Dialogue):
        raise TypeError(f"{env.name} plays dialogues: use secverify.interop.inspect.dialogue.dialogue_task")
    if include_tools and not isinstance(env.episodes, ToolUse):
        raise NoToolModeError(f"{env.name} has no tool-using mode (include_tools is for E2 and E4)")
    items = {str(item[env.data.id_column]): item for item in chosen.items}
    solver: Solver = tool_episode(env, items) if include_tools else generate()
    return Task(
        name=env.name,
        dataset=MemoryDataset(samples(env, chosen.items), name=f"{env.name}:{chosen.split}", location=chosen.source),
        solver=solver,
        scorer=verifier_scorer(env, items),
        metrics=run_metrics(env, items),
        config=generation_config(env.generation_params(), seed=seed),
        version=env.verifier.version,
        headline_metric=HeadlineMetric(score="reward", metric="mean"),
        metadata={
            "env_id": env.env_id,
            "split": chosen.split,
            "seed": seed,
            "dataset": chosen.source,
            "mode": "tools" if include_tools else "single",
            "verifier_version": env.verifier.version,
        },
    )
