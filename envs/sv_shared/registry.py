"""The six environments by id: the one place an environment is registered.

Each environment package provides `config.Config` (its typed config) and `env.build(config, **tools)`; they are
imported lazily, so using one environment does not load the others.
"""

from __future__ import annotations

import importlib
from functools import cache
from pathlib import Path
from typing import Any

from sv_shared.config import EnvConfig, project_root, read_config
from sv_shared.contracts import Environment

ENV_IDS: tuple[str, ...] = ("e1", "e2", "e3", "e4", "e5", "e6")

ENV_NAMES: dict[str, str] = {
    "e1": "sv-env-network-logs",
    "e2": "sv-env-config-verification",
    "e3": "sv-env-code-vulnerability",
    "e4": "sv-env-phishing-detection",
    "e5": "sv-env-redteam-attack",
    "e6": "sv-env-redteam-defense",
}

PACKAGES: dict[str, str] = {
    "e1": "sv_env_network_logs",
    "e2": "sv_env_config_verification",
    "e3": "sv_env_code_vulnerability",
    "e4": "sv_env_phishing_detection",
    "e5": "sv_env_redteam_attack",
    "e6": "sv_env_redteam_defense",
}

COUNTERPART_BASELINES: dict[str, str] = {"e5": "e6"}
"""Environments whose dialogue counterparts may be another environment's rule baselines: E5's target may be one of
E6's defenders. Declared here, so no environment imports another."""


class EnvironmentNotAvailable(LookupError):
    """Raised for an environment id that is unknown."""


def implemented_env_ids() -> list[str]:
    return [env_id for env_id in ENV_IDS if env_id in PACKAGES]


def _package(env_id: str) -> str:
    if env_id not in PACKAGES:
        raise EnvironmentNotAvailable(f"unknown environment {env_id!r}; known: {', '.join(ENV_IDS)}")
    return PACKAGES[env_id]


def config_model(env_id: str) -> type[EnvConfig]:
    """The typed model of an environment's config."""
    return importlib.import_module(f"{_package(env_id)}.config").Config


def config_path(env_id: str, root: Path | None = None) -> Path:
    return (root or project_root()) / "configs" / "envs" / f"{env_id}.yaml"


@cache
def _load_config(env_id: str, path: Path) -> EnvConfig:
    if not path.is_file():
        raise FileNotFoundError(f"no config for environment {env_id!r}: {path} is missing")
    config = read_config(config_model(env_id), path)
    if (config.env_id, config.name) != (env_id, ENV_NAMES[env_id]):
        raise ValueError(f"{path}: env_id/name must be {env_id}/{ENV_NAMES[env_id]}, got {config.env_id}/{config.name}")
    return config


def load_env_config(env_id: str, root: Path | None = None) -> EnvConfig:
    """The environment's typed config from configs/envs/<env_id>.yaml (validated; immutable, so shared)."""
    _package(env_id)
    return _load_config(env_id, config_path(env_id, root).resolve())


def build_environment(env_id: str, config: EnvConfig, **tools: Any) -> Environment:
    """An environment from a given config; `tools` inject its scanners, oracle or sandbox (tests, benchmarks)."""
    if env_id in COUNTERPART_BASELINES:
        tools.setdefault("counterpart_baselines", get_environment(COUNTERPART_BASELINES[env_id]).baselines)
    return importlib.import_module(f"{_package(env_id)}.env").build(config, **tools)


def get_environment(env_id: str, root: Path | None = None) -> Environment:
    """Construct an environment with its config from configs/envs/<env_id>.yaml."""
    return build_environment(env_id, load_env_config(env_id, root))
