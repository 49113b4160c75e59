"""Training checkpoints: one folder per training run, its manifest, and the lineage from checkpoint to base model.

outputs/checkpoints/<parent model>/<stage>/<run id>/
  run.json           TrainingRunRecord    written when the run starts: its identity and the key it resumes by
  manifest.json      CheckpointManifest   written when training finished (status "complete"): what made the
                                          checkpoint (recipe, data, reward weights, code) and the hashes of its files
  model/             the final model, a plain HF folder (config.json, safetensors, tokenizer), written by the trainer
  checkpoint-N/      the trainer's own checkpoints while training (it resumes from the newest)
  .lock              held by the one process training in the folder (who it is, for the one waiting)
  safety_scan.json, safety_scans.jsonl, approvals.jsonl, .promotion.lock   the promotion records (promotion.py)

A run is identified by its parent, its stage and a run key (the caller's hash of what makes two runs the same run:
recipe, parent, data). `open_training_run` resumes the newest unfinished run of the same key, else starts a run
`<UTC yyyymmddThhmmss, lower case>-<hash8>`; its checkpoint becomes the registry model
`<base model>.<stage>.<run id>` (the base, not the parent, so an id does not grow along a chain; hash8 covers the
parent and the key, so checkpoints of two parents never share an id).

Plain Python: no dagster, no secverify_dagster, no torch.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar, Final, Literal, Self, get_args

from pydantic import Field, field_validator

from sv_shared.data.files import exclusive
from sv_shared.data.hashing import sha256_hex, stable_json
from sv_shared.runs.folder import read_json, write_json
from sv_shared.runs.schema import SCHEMA_VERSION, ExperimentRef, RecordModel, RunRecordError

Stage = Literal["sft", "rlft-single", "rlft-mixed", "rlft-joint"]
STAGES: Final[tuple[str, ...]] = get_args(Stage)
Status = Literal["training", "complete"]

CHECKPOINT_ID_PATTERN: Final = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
"""The registry's MODEL_ID_PATTERN (secverify_dagster.resources.models.registry), which this package cannot import:
model ids become Dagster partition keys and folder names."""

MODEL_DIR: Final = "model"
MANIFEST_FILE: Final = "manifest.json"
RUN_FILE: Final = "run.json"
LOCK_FILE: Final = ".lock"

LOCK_WAIT_S: Final = 10.0
"""How long a second opener of a run waits for the process training in it before failing, naming that process.
Training takes minutes to hours: waiting long would only hide that someone else is at it."""

STAGE_LOCK_WAIT_S: Final = 60.0
"""How long an opener waits for another one choosing a run in the same stage folder (milliseconds of work)."""


class CheckpointError(ValueError):
    """A checkpoint folder or manifest that cannot be used; the message names the file."""


class CheckpointWarning(UserWarning):
    """A checkpoint folder that listing skipped (unreadable or inconsistent manifest)."""


def utc_now() -> datetime:
    return datetime.now(UTC)


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"a time without a time zone is ambiguous: {moment!r} (pass a UTC time)")
    return moment.astimezone(UTC)


def iso_utc(moment: datetime | None = None) -> str:
    """An ISO 8601 UTC time to the second ("2026-11-24T04:12:00+00:00")."""
    return _utc(moment or utc_now()).isoformat(timespec="seconds")


def parse_iso_utc(text: str) -> datetime:
    """A time written by iso_utc (any ISO 8601 time with a zone), as UTC."""
    return _utc(datetime.fromisoformat(text))


def _check_id(value: str, what: str) -> str:
    if not isinstance(value, str) or not CHECKPOINT_ID_PATTERN.match(value):
        raise ValueError(f"{what} {value!r} is not a registry model id (must match {CHECKPOINT_ID_PATTERN.pattern})")
    return value


def _check_stage(stage: str) -> str:
    if stage not in STAGES:
        raise ValueError(f"unknown training stage {stage!r} (one of {', '.join(STAGES)})")
    return stage


class TrainingRecord(RecordModel):
    """Versioned like the run records: a file without schema_version is refused (no unversioned ones exist)."""

    @classmethod
    def _from_version_0(cls, data: dict[str, Any]) -> dict[str, Any]:
        raise RunRecordError(f"no schema_version: not a {cls.__name__} written by secverify")

    @classmethod
    def read(cls, path: Path) -> Self:
        """The record in a JSON file; RunRecordError (or OSError) names the file."""
        return cls.parse(read_json(path), str(path))


class TrainingRunRecord(TrainingRecord):
    """run.json: who a training run is, written when it starts (the manifest comes when it finishes)."""

    schema_version: Literal[1] = SCHEMA_VERSION
    run_id: str
    model_id: str
    parent_model: str
    base_model: str
    stage: Stage
    run_key: str
    """The opener's key (`recipe_hash` of open_training_run): a later opener with the same key resumes this run."""
    started_at: str


class CheckpointManifest(TrainingRecord):
    """manifest.json: everything that made a checkpoint, and the hashes of its model files."""

    _optional: ClassVar[frozenset[str]] = frozenset({"experiment"})

    schema_version: Literal[1] = SCHEMA_VERSION
    model_id: str
    """The registry id the checkpoint gets: <base model>.<stage>.<run id>."""
    parent_model: str
    """The registry model training started from: the base model, or an earlier checkpoint."""
    base_model: str
    """The pretrained model at the root of the chain."""
    stage: Stage
    run_id: str
    recipe_name: str
    recipe_hash: str
    recipe: dict[str, Any]
    """The full recipe, as plain values."""
    envs: list[str]
    reward_weights: dict[str, dict[str, float]]
    """Per environment, each reward component's weight."""
    data: dict[str, str]
    """Each input asset or dataset by name → its content hash."""
    code_version: str = Field(min_length=1)
    """The checkout's commit, "-dirty" when it had uncommitted changes (the runner's code_version)."""
    dirty_paths: list[str] = Field(default_factory=list)
    """The uncommitted paths when the code version is dirty: what the commit alone does not say."""
    metrics: dict[str, Any] = Field(default_factory=dict)
    created_at: str = Field(default_factory=iso_utc)
    status: Status = "training"
    model_dir: str = MODEL_DIR
    """The HF folder inside the run folder."""
    model_files: dict[str, str] = Field(default_factory=dict)
    """Each file of the model folder (relative POSIX path) → its sha256; filled in by finish_training_run."""
    experiment: ExperimentRef | None = None
    """The experiment record (configs/experiments/<env>/<date>.yaml) the checkpoint was trained from; left out of
    the file when there is none, so manifests written before it keep their content hash."""

    @field_validator("model_id", "parent_model", "base_model")
    @classmethod
    def _registry_id(cls, value: str) -> str:
        return _check_id(value, "model id")

    @field_validator("created_at")
    @classmethod
    def _utc_time(cls, value: str) -> str:
        parse_iso_utc(value)
        return value

    @field_validator("model_dir")
    @classmethod
    def _inside_run(cls, value: str) -> str:
        path = PurePosixPath(value)
        if not value or path.is_absolute() or ".." in path.parts or "\\" in value:
            raise ValueError(f"model_dir must be a relative path inside the run folder, not {value!r}")
        return value

    def content_hash(self) -> str:
        """sha256 of the manifest's canonical JSON: what a safety scan and an approval are bound to."""
        return sha256_hex(stable_json(self.as_dict()))


def checkpoint_dir(root: Path, manifest: CheckpointManifest | TrainingRunRecord) -> Path:
    """The run folder of a checkpoint: root/<parent model>/<stage>/<run id>."""
    return Path(root) / manifest.parent_model / manifest.stage / manifest.run_id


def model_folder(root: Path, manifest: CheckpointManifest) -> Path:
    """The checkpoint's HF model folder."""
    return checkpoint_dir(root, manifest) / manifest.model_dir


def hash_model_files(folder: Path) -> dict[str, str]:
    """sha256 of every file under a model folder, by relative POSIX path, in path order."""
    hashes: dict[str, str] = {}
    for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
        with path.open("rb") as handle:
            hashes[path.relative_to(folder).as_posix()] = hashlib.file_digest(handle, "sha256").hexdigest()
    return hashes


def verify_model_files(run_dir: Path, manifest: CheckpointManifest) -> list[str]:
    """What differs between a checkpoint's model folder and its manifest's hashes (empty: the same files)."""
    current = hash_model_files(Path(run_dir) / manifest.model_dir)
    problems = [f"{name}: missing" for name in manifest.model_files if name not in current]
    problems += [f"{name}: not in the manifest" for name in current if name not in manifest.model_files]
    problems += [
        f"{name}: changed" for name, digest in current.items() if manifest.model_files.get(name, digest) != digest
    ]
    return problems


def read_manifest(run_dir: Path) -> CheckpointManifest:
    """A run folder's manifest.json; CheckpointError names the file when it is missing or malformed."""
    path = Path(run_dir) / MANIFEST_FILE
    try:
        return CheckpointManifest.read(path)
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no manifest (the run has not finished)") from None
    except (OSError, RunRecordError) as error:
        raise CheckpointError(str(error)) from None


class TrainingRun:
    """A training run's folder, held (flock) by this process until `close()` or the end of its `with` block."""

    def __init__(self, root: Path, record: TrainingRunRecord, *, resumed: bool, locks: contextlib.ExitStack) -> None:
        self.root = Path(root)
        self.record = record
        self.resumed = resumed
        self._locks = locks

    @property
    def run_dir(self) -> Path:
        return checkpoint_dir(self.root, self.record)

    @property
    def run_id(self) -> str:
        return self.record.run_id

    @property
    def model_id(self) -> str:
        return self.record.model_id

    @property
    def parent_model(self) -> str:
        return self.record.parent_model

    @property
    def base_model(self) -> str:
        return self.record.base_model

    @property
    def stage(self) -> str:
        return self.record.stage

    @property
    def model_dir(self) -> Path:
        """Where the trainer writes the final HF model folder."""
        return self.run_dir / MODEL_DIR

    @property
    def held(self) -> bool:
        return self._locks is not None

    def close(self) -> None:
        """Release the run folder (idempotent)."""
        if self._locks is not None:
            locks, self._locks = self._locks, None
            locks.close()

    def __enter__(self) -> TrainingRun:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TrainingRun({self.run_dir}, model_id={self.model_id!r}, resumed={self.resumed}, held={self.held})"


def _is_complete(run_dir: Path) -> bool:
    try:
        return read_manifest(run_dir).status == "complete"
    except CheckpointError:
        return False


def _read_run_record(run_dir: Path) -> TrainingRunRecord | None:
    path = run_dir / RUN_FILE
    if not path.is_file():
        return None
    try:
        record = TrainingRunRecord.read(path)
    except (OSError, RunRecordError) as error:
        warnings.warn(f"{path}: skipped ({error})", CheckpointWarning, stacklevel=3)
        return None
    if checkpoint_dir(run_dir.parents[2], record) != run_dir:
        warnings.warn(f"{path}: skipped (it names another folder)", CheckpointWarning, stacklevel=3)
        return None
    return record


def _base_of(root: Path, parent_model: str) -> str:
    """The base of a parent: its own base when it is a checkpoint under root, else the parent itself."""
    for manifest in list_checkpoints(root):
        if manifest.model_id == parent_model:
            return manifest.base_model
    return parent_model


def _unfinished(stage_dir: Path, run_key: str) -> list[TrainingRunRecord]:
    """Runs in a stage folder with this key and no complete manifest, newest first."""
    found = []
    if stage_dir.is_dir():
        for run_dir in sorted((p for p in stage_dir.iterdir() if p.is_dir()), reverse=True):
            record = _read_run_record(run_dir)
            if record is not None and record.run_key == run_key and not _is_complete(run_dir):
                found.append(record)
    return found


def _new_run(
    root: Path, parent_model: str, base_model: str, stage: str, run_key: str, now: datetime
) -> TrainingRunRecord:
    """A new run's record, written into a new folder (called under the stage lock: the name is free)."""
    stage_dir = Path(root) / parent_model / stage
    hash8 = sha256_hex(f"{parent_model}\0{run_key}")[:8]
    moment = _utc(now).replace(microsecond=0)
    while True:
        run_id = f"{moment:%Y%m%dt%H%M%S}-{hash8}"
        if not (stage_dir / run_id).exists():
            break
        moment += timedelta(seconds=1)  # a run of the same key started in the same second: the next free one
    record = TrainingRunRecord(
        run_id=run_id,
        model_id=_check_id(f"{base_model}.{stage}.{run_id}", "checkpoint id"),
        parent_model=parent_model,
        base_model=base_model,
        stage=stage,
        run_key=run_key,
        started_at=iso_utc(),
    )
    run_dir = stage_dir / run_id
    run_dir.mkdir(parents=True)
    write_json(run_dir / RUN_FILE, record.as_dict())
    return record


def open_training_run(
    root: Path,
    parent_model: str,
    stage: str,
    recipe_hash: str,
    *,
    now: datetime | None = None,
    base_model: str | None = None,
    wait_s: float = LOCK_WAIT_S,
) -> TrainingRun:
    """The folder to train in, held by this process: use as `with open_training_run(...) as run:`.

    recipe_hash is the run key: the newest unfinished run (no complete manifest) of the same parent, stage and key
    is resumed (`run.resumed`); otherwise a new run starts. A run another process holds is waited for up to wait_s,
    then FolderBusyError names that process; a run that finished while waiting is not reopened (a new run starts).
    base_model defaults to the parent's base when the parent is a checkpoint under root, else the parent."""
    root = Path(root)
    _check_id(parent_model, "parent model")
    _check_stage(stage)
    if not isinstance(recipe_hash, str) or not recipe_hash or recipe_hash != recipe_hash.strip():
        raise ValueError(f"recipe_hash must be a non-empty string, not {recipe_hash!r}")
    base = _check_id(base_model, "base model") if base_model is not None else _base_of(root, parent_model)
    stage_dir = root / parent_model / stage
    stage_dir.mkdir(parents=True, exist_ok=True)
    while True:
        locks = contextlib.ExitStack()
        try:
            with exclusive(
                stage_dir / LOCK_FILE, wait_s=STAGE_LOCK_WAIT_S, what=f"checkpoint stage folder {stage_dir}"
            ):
                candidates = _unfinished(stage_dir, recipe_hash)
                if not candidates:
                    record = _new_run(root, parent_model, base, stage, recipe_hash, now or utc_now())
                    # Held before the stage folder is released: no other opener sees this run unheld.
                    run_dir = checkpoint_dir(root, record)
                    locks.enter_context(exclusive(run_dir / LOCK_FILE, wait_s=0, what=f"training run {run_dir}"))
                    return TrainingRun(root, record, resumed=False, locks=locks)
            record = candidates[0]
            run_dir = checkpoint_dir(root, record)
            locks.enter_context(exclusive(run_dir / LOCK_FILE, wait_s=wait_s, what=f"training run {run_dir}"))
            if not _is_complete(run_dir):
                return TrainingRun(root, record, resumed=True, locks=locks)
        except BaseException:
            locks.close()
            raise
        locks.close()  # finished by its holder while this opener waited: choose again


def finish_training_run(run: TrainingRun, manifest: CheckpointManifest) -> CheckpointManifest:
    """Write the run's manifest with status "complete" and the hashes of its model files (atomically); returns it.

    The manifest must be this run's (model id, run id, parent, base, stage) and the run must still be held."""
    if not run.held:
        raise CheckpointError(f"{run.run_dir}: the run was closed; finish it while it is held")
    expected = {
        "model_id": run.model_id,
        "run_id": run.run_id,
        "parent_model": run.parent_model,
        "base_model": run.base_model,
        "stage": run.stage,
    }
    wrong = {key: (getattr(manifest, key), value) for key, value in expected.items() if getattr(manifest, key) != value}
    if wrong:
        described = "; ".join(f"{key} {got!r} (the run's is {want!r})" for key, (got, want) in wrong.items())
        raise CheckpointError(f"{run.run_dir}: the manifest is not this run's: {described}")
    folder = run.run_dir / manifest.model_dir
    if not (folder / "config.json").is_file():
        raise CheckpointError(f"{run.run_dir}: no model folder at {folder} (config.json missing); nothing to finish")
    complete = manifest.replace(status="complete", model_files=hash_model_files(folder))
    write_json(run.run_dir / MANIFEST_FILE, complete.as_dict())
    return complete


def _manifest_paths(root: Path) -> Iterator[Path]:
    if Path(root).is_dir():
        yield from sorted(Path(root).glob(f"*/*/*/{MANIFEST_FILE}"))


def list_checkpoints(root: Path) -> list[CheckpointManifest]:
    """Every complete checkpoint under root, oldest first. A manifest that cannot be read, or that names another
    folder than its own, is skipped with a CheckpointWarning naming it; listing never fails on one."""
    found: list[CheckpointManifest] = []
    for path in _manifest_paths(root):
        try:
            manifest = CheckpointManifest.read(path)
        except (OSError, RunRecordError, ValueError) as error:
            warnings.warn(f"{path}: checkpoint skipped ({error})", CheckpointWarning, stacklevel=2)
            continue
        if checkpoint_dir(root, manifest) != path.parent:
            warnings.warn(
                f"{path}: checkpoint skipped (its manifest names {manifest.parent_model}/{manifest.stage}/"
                f"{manifest.run_id}, not this folder)",
                CheckpointWarning,
                stacklevel=2,
            )
            continue
        if manifest.status == "complete":
            found.append(manifest)
    found.sort(key=lambda manifest: (parse_iso_utc(manifest.created_at), manifest.model_id))
    return _parents_first(found)


def _parents_first(manifests: list[CheckpointManifest]) -> list[CheckpointManifest]:
    """The same order, except that a checkpoint never comes before its parent (times are to the second)."""
    by_id = {manifest.model_id: manifest for manifest in manifests}
    ordered: dict[str, CheckpointManifest] = {}

    def place(manifest: CheckpointManifest, seen: frozenset[str]) -> None:
        parent = by_id.get(manifest.parent_model)
        if parent is not None and parent.model_id not in ordered and parent.model_id not in seen:
            place(parent, seen | {manifest.model_id})
        ordered.setdefault(manifest.model_id, manifest)

    for manifest in manifests:
        place(manifest, frozenset())
    # Two manifests with one id (a copied folder) both stay listed: the registry names them.
    return list(ordered.values()) + [m for m in manifests if ordered.get(m.model_id) is not m]


def checkpoint_chain(root: Path, model_id: str) -> list[CheckpointManifest]:
    """The checkpoint and its ancestors, newest first; the last one's parent_model is the base model.

    CheckpointError when model_id is not a complete checkpoint under root or a link of its chain is missing."""
    by_id = {manifest.model_id: manifest for manifest in list_checkpoints(root)}
    if model_id not in by_id:
        raise CheckpointError(f"{model_id!r} is not a complete checkpoint under {root}")
    chain = [by_id[model_id]]
    while chain[-1].parent_model != chain[-1].base_model:
        parent = chain[-1].parent_model
        if parent not in by_id:
            raise CheckpointError(
                f"{chain[-1].model_id}: its parent {parent!r} is not a complete checkpoint under {root} "
                f"(and not the base model {chain[-1].base_model!r})"
            )
        if any(link.model_id == parent for link in chain):
            raise CheckpointError(f"{model_id}: its lineage loops back to {parent!r}")
        chain.append(by_id[parent])
    return chain
