"""Reading finished eval runs back from outputs/evals, for environments whose synthetic data feeds on each other.

E5's goal trees are seeded by E6's defender failures and E6's probes include E5's attacks: each reads the other's
latest complete runs here (plain files; no orchestration needed), and records which runs it used.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class FinishedRun:
    run_dir: Path
    model_id: str
    run_id: str

    def records(self) -> Iterator[dict[str, Any]]:
        with (self.run_dir / "results.jsonl").open(encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    yield json.loads(line)


def latest_complete_runs(evals_root: Path, env_name: str) -> list[FinishedRun]:
    """The most recently started complete run of each model on an environment, in model order."""
    latest: dict[str, tuple[str, FinishedRun]] = {}
    for metadata_path in sorted(evals_root.glob(f"{env_name}--*/*/metadata.json")):
        try:
            metadata = json.loads(metadata_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if metadata.get("status") != "complete" or not (metadata_path.parent / "results.jsonl").exists():
            continue
        started = metadata["sessions"][-1]["started_at"]
        model_id = metadata["model"]["id"]
        if model_id not in latest or started > latest[model_id][0]:
            latest[model_id] = (started, FinishedRun(metadata_path.parent, model_id, metadata["run_id"]))
    return [run for _, run in (latest[model] for model in sorted(latest))]
