"""A run's metadata.json, written once for every episode kind: provenance when a session starts, totals when it ends."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from secverify_dagster.resources.models import ModelSpec
from secverify_dagster.runner.datasets import EvalDataset
from sv_shared.config import project_root
from sv_shared.contracts import Environment
from sv_shared.runs.folder import RunFolder
from sv_shared.runs.schema import (
    DatasetRef,
    ErrorRecord,
    ExperimentRef,
    ModelIdentity,
    ResultRecord,
    RunMetadata,
    Session,
    Usage,
)


def _git_status(cwd: Path) -> str:
    """`git status --porcelain` with untracked files (ignored ones, outputs/ among them, stay out): a new module or
    config nobody committed changes what a run does as much as an edited one."""
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    ).stdout


def code_version(root: Path | None = None) -> str:
    """The git commit of the checkout (with "-dirty" if it has uncommitted changes or untracked files), or
    "unknown"."""
    cwd = root or project_root()
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = _git_status(cwd).strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{commit}-dirty" if dirty else commit


def dirty_paths(root: Path | None = None) -> list[str]:
    """Files with uncommitted changes, and untracked files git does not ignore: what "-dirty" in a code version
    stands for."""
    try:
        status = _git_status(root or project_root())
    except (OSError, subprocess.SubprocessError):
        return []
    return sorted(line[3:] for line in status.splitlines() if len(line) > 3)


def public_spec(spec: ModelSpec) -> ModelIdentity:
    """The model's identity for provenance: provider, model name, parameters, prices; never keys or endpoints."""
    return ModelIdentity(id=spec.id, provider=spec.provider, model=spec.model, params=spec.params, price=spec.price)


def start_metadata(
    folder: RunFolder,
    env: Environment,
    spec: ModelSpec,
    *,
    run_id: str,
    dataset: EvalDataset,
    fingerprint: Mapping[str, Any],
    fingerprint_hash: str,
    n: int,
    seed: int,
    experiment: ExperimentRef | None,
    counterparts: Mapping[str, ModelSpec] | None,
    judge_spec: str | None,
) -> RunMetadata:
    """A new session of the run: the folder's metadata resumed (same fingerprint), or a new run's, written now.

    counterparts and judge_spec: a dialogue run's (None otherwise)."""
    now = datetime.now(UTC).isoformat()
    version = code_version()
    session = Session(
        started_at=now, code_version=version, dirty_paths=dirty_paths() if version.endswith("-dirty") else None
    )
    if resumed := folder.resume(fingerprint_hash, session):
        return resumed
    metadata = RunMetadata(
        run_id=run_id,
        env=env.env_id,
        env_name=env.name,
        verifier_version=env.verifier.version,
        verifier_provenance=env.verifier.provenance(),
        counterparts=(
            {role: public_spec(other) for role, other in counterparts.items()} if counterparts is not None else None
        ),
        judge=judge_spec,
        model=public_spec(spec),
        generation=fingerprint["generation"],
        config=env.config.as_dict(),
        dataset=DatasetRef(source=dataset.source, split=dataset.split, hash=dataset.hash, rows=dataset.frame.height),
        n_requested=n,
        n_items=len(fingerprint["item_ids"]),
        seed=seed,
        fingerprint_hash=fingerprint_hash,
        code_version=version,
        created_at=now,
        sessions=[session],
        status="running",
        experiment=experiment,
    )
    folder.write_metadata(metadata)
    return metadata


def finish_metadata(
    metadata: RunMetadata,
    records: Sequence[ResultRecord],
    client_stats: Mapping[str, Any],
    timings: Mapping[str, float],
    elapsed: float,
    complete: bool,
    provider_errors: Sequence[ErrorRecord],
) -> RunMetadata:
    """The session closed: its client's counters and wall time, and the run's status, usage and cost so far."""
    finished = metadata.sessions[-1].replace(
        finished_at=datetime.now(UTC).isoformat(),
        wall_s=round(elapsed, 4),
        client=client_stats,
        new_samples=client_stats.get("requests", 0),
    )
    return metadata.replace(
        status="complete" if complete else "incomplete",
        sessions=[*metadata.sessions[:-1], finished],
        timings={name: round(value, 4) for name, value in timings.items()} | {"wall_s": round(elapsed, 4)},
        usage=Usage(
            prompt_tokens=sum(record.usage.prompt_tokens for record in records),
            completion_tokens=sum(record.usage.completion_tokens for record in records),
        ),
        cost_usd=round(sum(float(record.cost_usd) for record in records), 6),
        n_scored=len(records),
        n_provider_errors_this_session=len(provider_errors),
    )
