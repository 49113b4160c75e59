"""Seeds and seeded draws the synthetic recipes share: the range a row's seed is drawn from, the check of a seed a
caller passes, and the one-draw choice the templates are filled with."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

MAX_SEED = 2**62
"""Seeds lie in [0, MAX_SEED); every generated row records the one it was made from."""

Option = TypeVar("Option")


def check_seed(seed: int) -> None:
    """Raise ValueError when a seed is outside [0, MAX_SEED)."""
    if not 0 <= seed < MAX_SEED:
        raise ValueError(f"seed must be in [0, 2**62), got {seed}")


def pick(rng: np.random.Generator, options: Sequence[Option]) -> Option:
    """One of options, with exactly one draw from rng: a recipe's output depends on the order of its draws."""
    return options[int(rng.integers(0, len(options)))]
