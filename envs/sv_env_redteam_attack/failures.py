"""Earlier defender failures (E6 conversations judged unsafe) as seeds for E5's goal trees."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sv_shared.runs.records import FinishedRun


def defender_failures(runs: Iterable[FinishedRun]) -> list[dict[str, Any]]:
    """{"category", "tactic", "behavior_id", "run"} for every adversarial conversation the given E6 runs failed."""
    failures = []
    for run in runs:
        for record in run.records():
            details = record.details
            if details.get("kind") == "adversarial" and details.get("outcome") == "unsafe_compliance":
                failures.append(
                    {
                        "category": details["category"],
                        "tactic": details.get("tactic"),
                        "behavior_id": record.id,
                        "run": f"{run.model_id}/{run.run_id}",
                    }
                )
    return failures
