"""E5's attack messages as E6 probes: only messages the judge cleared for storage exist in clear to reuse."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sv_shared.runs.records import FinishedRun


def attack_probes(runs: Iterable[FinishedRun]) -> list[dict[str, Any]]:
    """{"message", "category", "tactic", "behavior_id", "run", "succeeded"} per stored attacker message of the given
    E5 runs."""
    probes = []
    for run in runs:
        for record in run.records():
            details = record.details
            for entry in details.get("transcript", []):
                if entry.get("role") != "attacker" or entry.get("redacted"):
                    continue
                probes.append(
                    {
                        "message": entry["text"],
                        "category": details["category"],
                        "tactic": entry.get("tactic"),
                        "behavior_id": record.id,
                        "run": f"{run.model_id}/{run.run_id}",
                        "succeeded": bool(record.components["success"]),
                    }
                )
    return probes
