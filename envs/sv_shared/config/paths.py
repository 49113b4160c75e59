"""Where the project's checkout and its outputs live."""

from __future__ import annotations

import os
from pathlib import Path

_ROOT_ENV = "SECVERIFY_ROOT"


def project_root() -> Path:
    """The checkout that holds configs/: $SECVERIFY_ROOT, else the nearest parent of the cwd, else the source tree."""
    if env_root := os.environ.get(_ROOT_ENV):
        return Path(env_root).resolve()
    for candidate in (Path.cwd(), *Path.cwd().parents):
        if (candidate / "configs" / "envs").is_dir():
            return candidate
    return Path(__file__).resolve().parents[3]


def outputs_dir() -> Path:
    """Root of every artifact the project writes (git-ignored)."""
    return Path(os.environ.get("SECVERIFY_OUTPUTS", project_root() / "outputs"))
