"""Answer-independent strategies of the label environments (E1, E4): one label, or Abstain, at one confidence, given
to every item, on a 0.05 confidence grid. A reward that rewards skill keeps all of them below what answering each
item earns, and a trained policy's gain counts only against the best of them on the same items."""

from __future__ import annotations

import json
from collections.abc import Sequence

CONFIDENCE_GRID = tuple(step / 20 for step in range(21))


def constant_answers(labels: Sequence[str], *, with_evidence: bool) -> dict[str, str]:
    """Name → completion for each label (and Abstain) at each confidence of the grid; `with_evidence` adds an empty
    evidence list (E4's answers carry one)."""
    answers = {}
    for label in dict.fromkeys([*labels, "Abstain"]):
        for confidence in CONFIDENCE_GRID:
            answer: dict[str, object] = {"label": label, "confidence": confidence, "rationale": "same for every item"}
            if with_evidence:
                answer["evidence"] = []
            answers[f"always {label} at {confidence:g}"] = json.dumps(answer)
    return answers
