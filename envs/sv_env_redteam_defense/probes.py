"""E5's attack messages as E6 probes: only messages the judge cleared for storage exist in clear to reuse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sv_shared.runs.records import latest_complete_runs

ATTACK_ENV_NAME = "sv-env-redteam-attack"


def attack_probes(evals_root: Path) -> list[dict[str, Any]]:
    """{"message", "category", "tactic", "behavior_id", "run", "succeeded"} per stored attacker message."""
    probes = []
    for run in latest_complete_runs(evals_root, ATTACK_ENV_NAME):
        for record in run.records():
            details = record.get("details", {})
            for entry in details.get("transcript", []):
                if entry.get("role") != "attacker" or entry.get("redacted"):
                    continue
                probes.append(
                    {
                        "message": entry["text"],
                        "category": details["category"],
                        "tactic": entry.get("tactic"),
                        "behavior_id": record["id"],
                        "run": f"{run.model_id}/{run.run_id}",
                        "succeeded": bool(record["components"]["success"]),
                    }
                )
    return probes
