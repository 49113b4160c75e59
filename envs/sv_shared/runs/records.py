"""Reading finished eval runs back from outputs/evals: reports compare them, and environments whose synthetic data
feeds on each other read them.

E5's goal trees are seeded by E6's defender failures and E6's probes include E5's attacks: each reads the other's
latest complete runs here (plain files; no orchestration needed), and records which runs it used.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sv_shared.runs.folder import RunFolder
from sv_shared.runs.schema import ResultRecord, RunMetadata, RunSummary


@dataclass(frozen=True)
class FinishedRun:
    """A complete run: its folder and its metadata, read; its summary and samples are read on demand."""

    run_dir: Path
    metadata: RunMetadata

    @property
    def model_id(self) -> str:
        return self.metadata.model.id

    @property
    def run_id(self) -> str:
        return self.metadata.run_id

    def summary(self) -> RunSummary:
        return RunFolder(self.run_dir).read_summary()

    def records(self) -> Iterator[ResultRecord]:
        """The run's scored samples, typed (`record.id`, `record.details`, `record.components`, …)."""
        yield from RunFolder(self.run_dir).read_results()


def complete_runs(evals_root: Path, env_name: str, model_id: str | None = None) -> list[FinishedRun]:
    """Every complete run on an environment (of one model, when model_id is given), in folder order.

    A run folder whose metadata cannot be read (malformed, or of an unsupported schema version) is refused with a
    message naming it, rather than silently left out of what it would have been compared with."""
    runs = []
    for metadata_path in sorted(evals_root.glob(f"{env_name}--{model_id or '*'}/*/metadata.json")):
        folder = RunFolder(metadata_path.parent)
        metadata = folder.read_metadata()
        if metadata.status != "complete" or not folder.results_path.exists():
            continue
        if model_id is None or metadata.model.id == model_id:
            runs.append(FinishedRun(folder.path, metadata))
    return runs


def latest_complete_runs(evals_root: Path, env_name: str) -> list[FinishedRun]:
    """The most recently started complete run of each model on an environment, in model order."""
    latest: dict[str, FinishedRun] = {}
    for run in complete_runs(evals_root, env_name):
        if run.model_id not in latest or run.metadata.started_at > latest[run.model_id].metadata.started_at:
            latest[run.model_id] = run
    return [latest[model] for model in sorted(latest)]
