"""The items an environment poses through another library: the same corpus, split, seeded order and item dicts as
`secverify eval`, so the first N samples a library runs are exactly the N a secverify run of that seed scores."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from secverify_dagster.runner.datasets import embedded_dataset, file_dataset, select_items
from sv_shared.contracts import Environment, Item
from sv_shared.registry import ENV_NAMES, get_environment

EMBEDDED = "embedded"


class UnknownEnvironmentError(LookupError):
    """An environment named by neither its short id (e1) nor its seed name (sv-env-network-logs)."""


@dataclass(frozen=True)
class EvalSlice:
    """An environment's items for one split and seed, in the runner's order."""

    env: Environment
    items: list[Item]
    source: str
    """Where the frame came from, as a run records it: "embedded:test" or an items file's path."""
    split: str
    seed: int


def env_id_for(name: str) -> str:
    """e1 … e6 for a short id or a seed name (sv-env-network-logs, or sv_env_network_logs as a module names it)."""
    wanted = name.strip().lower().replace("_", "-")
    for env_id, seed_name in ENV_NAMES.items():
        if wanted in (env_id, seed_name):
            return env_id
    known = ", ".join(f"{env_id} ({seed_name})" for env_id, seed_name in ENV_NAMES.items())
    raise UnknownEnvironmentError(f"unknown environment {name!r}; known: {known}")


def eval_slice(
    env: str | Environment, *, split: str = "test", n: int | None = None, seed: int = 42, dataset: str = EMBEDDED
) -> EvalSlice:
    """The items of `split` (the shipped corpus curated as the Dagster assets curate it) or of an items file, in the
    seeded order every model sees; n=None keeps them all, so a library's own limit takes the same prefix."""
    environment = env if isinstance(env, Environment) else get_environment(env_id_for(env))
    if n is not None and n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    frame_source = (
        embedded_dataset(environment, split=split, seed=seed)
        if dataset == EMBEDDED
        else file_dataset(environment, Path(dataset))
    )
    count = frame_source.frame.height if n is None else n
    items = select_items(environment, frame_source.frame, count, seed)
    return EvalSlice(environment, items, frame_source.source, frame_source.split, seed)
