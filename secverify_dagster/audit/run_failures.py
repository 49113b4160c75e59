"""Failed Dagster runs, kept as files: outputs/run_failures/<run id>.json, one per failed run.

The run-failure sensor writes them (sensors/run_failures.py) and the reports list those of their environment and
period. A record is written once: a second sensor evaluation of the same run (a retried tick, two daemons) finds it
there and leaves it; two writers at once both write the same content (every field comes from the run and its events,
none from the moment of writing) by atomic replacement, so a reader sees one whole record.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sv_shared.data.files import write_json_atomic
from sv_shared.runs.folder import read_json
from sv_shared.runs.schema import RunRecordError

MAX_ERROR_CHARS = 4000
"""A step's error text (message and stack) is kept up to this many characters."""

_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


class RunFailureRecordError(ValueError):
    """A run-failure file that is not a record this code wrote."""


@dataclass(frozen=True)
class StepFailure:
    step_key: str
    cause: str
    """The innermost error ("RuntimeError: …"): what went wrong, under Dagster's own wrapping errors."""
    error: str
    """The whole error chain with its stacks, up to MAX_ERROR_CHARS."""


@dataclass(frozen=True)
class RunFailure:
    run_id: str
    job_name: str
    failed_at: str
    """When the run failed (ISO 8601, UTC), from its failure event."""
    message: str
    tags: dict[str, str]
    partition: str | None
    envs: list[str]
    """The environments whose steps the run planned (empty: none, e.g. the tournament)."""
    steps: list[StepFailure] = field(default_factory=list)

    @property
    def cadence(self) -> str | None:
        return self.tags.get("secverify/cadence")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any, where: str) -> RunFailure:
        try:
            fields = dict(data)
            steps = [StepFailure(**step) for step in fields.pop("steps")]
            failure = cls(**fields, steps=steps)
            if datetime.fromisoformat(failure.failed_at).tzinfo is None:
                raise ValueError(f"failed_at {failure.failed_at!r} has no time zone")
        except (KeyError, TypeError, ValueError) as error:
            raise RunFailureRecordError(f"{where}: not a run-failure record ({error})") from None
        return failure


def failure_path(root: Path, run_id: str) -> Path:
    if not _RUN_ID.fullmatch(run_id):
        raise RunFailureRecordError(f"run id {run_id!r} cannot name a file")
    return root / f"{run_id}.json"


def record_failure(root: Path, failure: RunFailure) -> bool:
    """Write the failure's record unless it is there already; True when this call wrote it."""
    path = failure_path(root, failure.run_id)
    if path.exists():
        return False
    root.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, failure.as_dict())
    return True


def read_failures(root: Path) -> tuple[list[RunFailure], list[str]]:
    """Every recorded failure, oldest first, and a message naming each file that is not a record (a report lists
    those rather than refusing to be built)."""
    failures: list[RunFailure] = []
    problems: list[str] = []
    for path in sorted(root.glob("*.json")):
        try:
            failures.append(RunFailure.from_dict(read_json(path), str(path)))
        except (RunFailureRecordError, RunRecordError) as error:
            problems.append(str(error))
    failures.sort(key=lambda failure: (datetime.fromisoformat(failure.failed_at), failure.run_id))
    return failures, problems
