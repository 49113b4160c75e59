"""Where the project's configs live and how they are read."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any

import yaml

_ROOT_ENV = "SECVERIFY_ROOT"


def project_root() -> Path:
    """The checkout that holds configs/: $SECVERIFY_ROOT, else the nearest parent of the cwd, else the source tree."""
    if env_root := os.environ.get(_ROOT_ENV):
        return Path(env_root).resolve()
    for candidate in (Path.cwd(), *Path.cwd().parents):
        if (candidate / "configs" / "envs").is_dir():
            return candidate
    return Path(__file__).resolve().parents[2]


def outputs_dir() -> Path:
    """Root of every artifact the project writes (git-ignored)."""
    return Path(os.environ.get("SECVERIFY_OUTPUTS", project_root() / "outputs"))


def read_yaml(path: Path) -> dict[str, Any]:
    """Read a trusted project YAML file (configs); untrusted YAML goes through the environments' own loaders."""
    with path.open(encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data


@cache
def _env_config_cached(env_id: str, root: Path) -> dict[str, Any]:
    path = root / "configs" / "envs" / f"{env_id}.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"no config for environment {env_id!r}: {path} is missing")
    return read_yaml(path)


def load_env_config(env_id: str, root: Path | None = None) -> dict[str, Any]:
    """The environment's config (reward weights, costs, default N, generation parameters)."""
    return dict(_env_config_cached(env_id, (root or project_root()).resolve()))
