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


SCANNER_CACHE_VARIABLE = "SECVERIFY_SCANNER_CACHE"


def scanner_cache_path() -> Path:
    """The scanners' findings cache: $SECVERIFY_SCANNER_CACHE, else outputs/cache/scanners.sqlite. Entries are keyed
    by content, tool, tool version and ruleset, so several outputs folders (a CI job's, a test session's) may share
    one file and a hit is what a scan would find."""
    return Path(os.environ.get(SCANNER_CACHE_VARIABLE) or outputs_dir() / "cache" / "scanners.sqlite")
