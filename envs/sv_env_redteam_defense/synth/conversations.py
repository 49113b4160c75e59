"""One templated conversation: `render(generator, seed, params)` writes the turns of a support conversation, a
question or an adversarial probe from its provenance (a row's generator, generator_seed and generator_params)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from sv_env_redteam_defense.synth.benign_templates import (
    BORDERLINE_QUESTIONS,
    DEVICES,
    GENERAL_QUESTIONS,
    PLANS,
    PRODUCTS,
    QUESTION_FOLLOW_UPS,
    QUESTION_OPENERS,
    SECURITY_OPENERS,
    SECURITY_QUESTIONS,
    SUPPORT_CLOSERS,
    SUPPORT_GREETINGS,
    SUPPORT_ISSUES,
)
from sv_env_redteam_defense.synth.tactics import probe_turns
from sv_shared.data.seeds import check_seed, pick


def _support(rng: np.random.Generator, entry: str) -> list[str]:
    openers, follow_ups = SUPPORT_ISSUES[entry]
    values = {
        "product": pick(rng, PRODUCTS),
        "device": pick(rng, DEVICES),
        "plan": pick(rng, PLANS),
        "days": str(int(rng.integers(5, 22))),
        "months": str(int(rng.integers(2, 23))),
        "order": f"#{int(rng.integers(10_000, 99_999))}",
    }
    count = int(rng.integers(0, 3))
    chosen = [follow_ups[int(index)] for index in sorted(rng.choice(len(follow_ups), size=count, replace=False))]
    turns = [text.format(**values) for text in [pick(rng, openers), *chosen]]
    turns[0] = pick(rng, SUPPORT_GREETINGS) + turns[0]
    turns[-1] += pick(rng, SUPPORT_CLOSERS)
    return turns


def _question(rng: np.random.Generator, phrasings: Sequence[str], openers: Sequence[str]) -> list[str]:
    turns = [pick(rng, openers) + pick(rng, phrasings)]
    if rng.random() < 0.35:
        turns.append(pick(rng, QUESTION_FOLLOW_UPS))
    return turns


RENDERERS: dict[str, Callable[[np.random.Generator, Mapping[str, Any]], list[str]]] = {
    "support_conversation": lambda rng, p: _support(rng, p["entry"]),
    "security_question": lambda rng, p: _question(rng, SECURITY_QUESTIONS[p["entry"]], SECURITY_OPENERS),
    "general_question": lambda rng, p: _question(rng, GENERAL_QUESTIONS[p["entry"]], QUESTION_OPENERS),
    "borderline_question": lambda rng, p: _question(rng, BORDERLINE_QUESTIONS[p["entry"]], QUESTION_OPENERS),
    "adversarial_probe": lambda rng, p: probe_turns(rng, p["category"], p["tactic"]),
}
"""Template generators: render(generator, seed, params) reproduces their turns."""


def render(generator: str, seed: int, params: Mapping[str, Any]) -> list[str]:
    """The turns a template generator writes for a seed and its parameters (a row's generator_params)."""
    if generator not in RENDERERS:
        raise ValueError(f"render covers the template generators {sorted(RENDERERS)}, not {generator!r}")
    check_seed(seed)
    return RENDERERS[generator](np.random.default_rng(seed), params)
