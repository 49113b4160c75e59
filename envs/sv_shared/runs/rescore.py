"""Re-scoring a finished eval run's stored samples under an ablation, without calling any model.

outputs/evals/ablations/<ablation>/<env name>--<model id>/<source run id>-<hash8>/ is a run folder like any other
(sv_shared.runs.folder): its records are the source run's samples with the ablated verifier's verdicts, its metadata
the source's provenance with the ablated config, the verifier's provenance now, and `rescored_from` naming the source
run and the ablation's hash. hash8 covers the source run, the ablation's overrides and the verifier version, so a
changed ablation gets a folder of its own.

Single-turn answers are scored again by the ablated verifier exactly as an eval under that config scores them (one
batch through `score_many`); tool episodes and dialogues are re-scored from what their records store (the verifier's
`rescore`). Re-scoring resumes: a second call re-scores only the samples still missing, and one process writes a
folder at a time (RunFolder.lock), so two at once leave it correct.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from sv_shared.contracts import Environment, Item
from sv_shared.data.datasets import read_dataset
from sv_shared.data.hashing import frame_hash, sha256_hex, stable_json
from sv_shared.runs.ablations import Ablation, ablated_environment
from sv_shared.runs.folder import LOCK_WAIT_S, RunFolder
from sv_shared.runs.records import FinishedRun
from sv_shared.runs.schema import (
    DatasetRef,
    RescoredFrom,
    RunMetadata,
    RunSummary,
    Session,
    Usage,
)

ABLATIONS_FOLDER = "ablations"
EMBEDDED_PREFIX = "embedded:"
"""The dataset source `secverify eval` records when it curated the embedded corpus in memory."""

BATCH = 64
"""Samples re-scored and appended at a time (a crash loses at most one batch of work, never a written line)."""


class RescoreError(ValueError):
    """A run that cannot be re-scored here (its items cannot be rebuilt, its verifier changed); names the run."""


@dataclass(frozen=True)
class RescoredRun:
    """A re-scored run folder and what this call added to it."""

    run_dir: Path
    metadata: RunMetadata
    summary: RunSummary
    n_new: int
    """Samples re-scored by this call (0 when the folder was already complete)."""


def ablation_evals_root(evals_root: Path, ablation: str) -> Path:
    """Where the re-scored runs of one ablation live: evals/ablations/<ablation>/<env name>--<model>/<run id>/."""
    return evals_root / ABLATIONS_FOLDER / ablation


def _source_frame(env: Environment, source: str, split: str, seed: int) -> list[pl.DataFrame]:
    """The frames a dataset source may have been hashed as (an items file: as read, or validated)."""
    if source.startswith(EMBEDDED_PREFIX):
        return [env.data.curate([env.data.load_source("embedded")], seed=seed)[split]]
    path = Path(source)
    if not path.is_file():
        raise RescoreError(f"the dataset {source!r} cannot be read here (not the embedded corpus, and no such file)")
    raw = env.data.load_path(path)
    frame = raw if raw is not None else read_dataset(path)
    return [frame, env.data.validate(frame)]


def run_items(env: Environment, metadata: RunMetadata) -> dict[str, Item]:
    """The items a run drew from, by id: its dataset rebuilt from its DatasetRef and checked against its hash."""
    ref: DatasetRef = metadata.dataset
    base, _, view = ref.source.rpartition(":")
    where = f"run {metadata.run_id} ({metadata.env_name}, {metadata.model.id})"
    try:
        if base and view in env.data.views:
            frames = [env.data.view(frame, view) for frame in _source_frame(env, base, ref.split, metadata.seed)]
        else:
            frames = _source_frame(env, ref.source, ref.split, metadata.seed)
    except (KeyError, OSError, pl.exceptions.PolarsError) as error:
        raise RescoreError(f"{where}: its dataset {ref.source!r} cannot be rebuilt: {error}") from None
    except RescoreError as error:
        raise RescoreError(f"{where}: {error}") from None
    for frame in frames:
        if frame_hash(frame) == ref.hash:
            return {item[env.data.id_column]: item for item in frame.to_dicts()}
    raise RescoreError(
        f"{where}: its dataset {ref.source!r} no longer hashes to the recorded {ref.hash[:12]}…; the items it answered "
        "cannot be rebuilt, so its samples cannot be re-scored"
    )


def rescore_fingerprint(run: FinishedRun, ablation: Ablation, env: Environment) -> dict[str, Any]:
    """Everything that determines a re-scored run: the source run, the ablation and the verifier."""
    return {
        "source_run": run.metadata.run_id,
        "source_fingerprint": run.metadata.fingerprint_hash,
        "ablation": ablation.name,
        "ablation_sha256": ablation.sha256,
        "verifier_version": env.verifier.version,
        "config": env.config.as_dict(),
    }


def rescored_dir(evals_root: Path, run: FinishedRun, ablation: Ablation, env: Environment) -> Path:
    digest = sha256_hex(stable_json(rescore_fingerprint(run, ablation, env)))
    return ablation_evals_root(evals_root, ablation.name) / f"{env.name}--{run.model_id}" / f"{run.run_id}-{digest[:8]}"


def rescore_run(
    run: FinishedRun,
    ablation: Ablation,
    *,
    evals_root: Path,
    code_version: str,
    dirty_paths: Sequence[str] | None = None,
    tools: Mapping[str, Any] | None = None,
    env: Environment | None = None,
    lock_wait_s: float = LOCK_WAIT_S,
    max_samples: int | None = None,
) -> RescoredRun:
    """Re-score a complete run's samples under an ablation into its twin folder (resuming one begun before).

    env is the ablated environment when the caller built it already (else built here, with `tools` injected);
    max_samples stops after that many new samples (an interrupted re-score, for resume tests)."""
    source = run.metadata
    if source.rescored_from is not None:
        raise RescoreError(
            f"run {source.run_id} is itself a re-score; re-score its source run {source.rescored_from.run_id}"
        )
    env = env or ablated_environment(ablation, source.config, **dict(tools or {}))
    ablation.check_rescorable(env.verifier)
    if source.verifier_version != env.verifier.version:
        raise RescoreError(
            f"run {source.run_id} ({source.env_name}, {source.model.id}) was scored by {source.verifier_version}, "
            f"this verifier is {env.verifier.version}: a re-score would mix the verifier's change into the "
            "ablation's; re-run the eval first"
        )
    folder = RunFolder(rescored_dir(evals_root, run, ablation, env))
    fingerprint_hash = sha256_hex(stable_json(rescore_fingerprint(run, ablation, env)))
    items = run_items(env, source)
    stored = list(run.records())
    missing = sorted({record.id for record in stored} - items.keys())
    if missing:
        raise RescoreError(f"run {source.run_id}: {len(missing)} samples answer items its dataset lacks: {missing[:5]}")
    folder.path.mkdir(parents=True, exist_ok=True)
    with folder.lock(wait_s=lock_wait_s):
        now = datetime.now(UTC).isoformat()
        session = Session(
            started_at=now, code_version=code_version, dirty_paths=list(dirty_paths) if dirty_paths else None
        )
        metadata = _start_metadata(folder, run, ablation, env, fingerprint_hash, session)
        done = {record.id: record for record in folder.resume_results()}
        pending = [record for record in stored if record.id not in done]
        if max_samples is not None:
            pending = pending[:max_samples]
        for start in range(0, len(pending), BATCH):
            batch = pending[start : start + BATCH]
            verdicts = env.verifier.rescore_many([items[record.id] for record in batch], [r.as_dict() for r in batch])
            records = [record.replace(**verdict.to_record()) for record, verdict in zip(batch, verdicts, strict=True)]
            unwritable = folder.append_results(records)
            if unwritable:
                record, why = unwritable[0]
                raise RescoreError(f"{folder.path}: the re-scored sample {record.id!r} cannot be written: {why}")
            done.update((record.id, record) for record in records)
        ordered = [done[record.id] for record in stored if record.id in done]
        summary = RunSummary(
            env=source.env,
            env_name=source.env_name,
            model=source.model.id,
            run_id=folder.path.name,
            n_items=source.n_items,
            n_scored=len(ordered),
            metrics=env.verifier.aggregate(
                [record.as_dict() for record in ordered], {r.id: items[r.id] for r in ordered}
            ),
        )
        folder.write_summary(summary)
        finished = metadata.sessions[-1].replace(
            finished_at=datetime.now(UTC).isoformat(), client={"requests": 0}, new_samples=0
        )
        metadata = metadata.replace(
            status="complete" if len(ordered) == len(stored) else "incomplete",
            sessions=[*metadata.sessions[:-1], finished],
            usage=Usage(prompt_tokens=0, completion_tokens=0),
            cost_usd=0,
            n_scored=len(ordered),
            n_provider_errors_this_session=0,
        )
        folder.write_metadata(metadata)
    return RescoredRun(folder.path, metadata, summary, n_new=len(pending))


def _start_metadata(
    folder: RunFolder,
    run: FinishedRun,
    ablation: Ablation,
    env: Environment,
    fingerprint_hash: str,
    session: Session,
) -> RunMetadata:
    if resumed := folder.resume(fingerprint_hash, session):
        return resumed
    source = run.metadata
    # The source's provenance of what produced the answers (model, generation, dataset, counterparts, judge) is
    # kept; what scores them now (config, verifier) is this re-score's. No model was called: no usage, no cost.
    kept = {
        key: value
        for key, value in source.as_dict().items()
        if key
        in (
            "env",
            "env_name",
            "counterparts",
            "judge",
            "model",
            "generation",
            "dataset",
            "n_requested",
            "n_items",
            "seed",
            "judge_validation",
            "experiment",
        )
    }
    metadata = RunMetadata.model_validate(
        kept
        | {
            "run_id": folder.path.name,
            "verifier_version": env.verifier.version,
            "verifier_provenance": env.verifier.provenance(),
            "config": env.config.as_dict(),
            "fingerprint_hash": fingerprint_hash,
            "code_version": session.code_version,
            "created_at": session.started_at,
            "sessions": [session.as_dict()],
            "status": "running",
            "rescored_from": RescoredFrom(
                run_id=source.run_id, ablation=ablation.name, ablation_sha256=ablation.sha256
            ).as_dict(),
        }
    )
    folder.write_metadata(metadata)
    return metadata
