"""The hook Prime `verifiers` discovery needs in each environment package.

verifiers finds an environment by importing the module named after its id (`sv-env-network-logs` imports
`sv_env_network_logs`) and taking the Taskset, Env and Harness classes its `__all__` names. The classes live in
`secverify.interop.verifiers`, which imports the library; an environment package only names them, and only when the
library is installed, so envs/ stays plain Python and `import sv_env_…` costs nothing extra without the extra.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.util import find_spec
from typing import Any

ADAPTERS = "secverify.interop.verifiers.environments"
"""Package of one adapter module per environment package, named like it (…environments.sv_env_network_logs)."""

VERIFIERS_EXPORTS: tuple[str, ...] = ("Taskset", "Env", "Harness", "load_environment")
"""What each adapter module provides under these names: the Taskset, the Env that plays its episodes, the chat
harness (so the library's default, a code-executing bash agent, is never used) and the v0-style loader."""


def verifiers_exports(package: str) -> tuple[list[str], Callable[[str], Any]]:
    """(`__all__`, module `__getattr__`) for an environment package: the adapter's names load on first access."""
    exported = list(VERIFIERS_EXPORTS) if find_spec("verifiers") is not None else []

    def __getattr__(name: str) -> Any:  # a module __getattr__ (PEP 562)
        if name not in exported:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{ADAPTERS}.{package}"), name)

    return exported, __getattr__
