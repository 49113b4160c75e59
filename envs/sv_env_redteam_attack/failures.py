"""Earlier defender failures (E6 conversations judged unsafe) as seeds for E5's goal trees."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sv_shared.runs.records import latest_complete_runs

DEFENSE_ENV_NAME = "sv-env-redteam-defense"


def defender_failures(evals_root: Path) -> list[dict[str, Any]]:
    """{"category", "tactic", "behavior_id", "run"} for every adversarial E6 conversation a defender failed."""
    failures = []
    for run in latest_complete_runs(evals_root, DEFENSE_ENV_NAME):
        for record in run.records():
            details = record.get("details", {})
            if details.get("kind") == "adversarial" and details.get("outcome") == "unsafe_compliance":
                failures.append(
                    {
                        "category": details["category"],
                        "tactic": details.get("tactic"),
                        "behavior_id": record["id"],
                        "run": f"{run.model_id}/{run.run_id}",
                    }
                )
    return failures
