"""Checkpoints and eval summaries as W&B artifacts, so W&B's lineage view shows the graph Dagster's does.

Each logging call is one W&B run of its own in the tracking resource's `artifacts_project` (W&B links lineage within
a project), offline by default (outputs/wandb/wandb/offline-run-*, uploaded later by `wandb sync`):

- a checkpoint: a "train" run (named by the model id, grouped by the recipe) that uses its parent (the parent
  checkpoint's artifact, or the base model's) and every dataset the manifest names by content hash, and logs the
  checkpoint as a "model" artifact (aliases "latest" and the stage);
- an eval run: an "eval" run that uses the evaluated model's artifact (and its dialogue counterparts') and the
  dataset it drew its items from, and logs summary.json and metadata.json as an "eval-summary" artifact with the
  metrics in its metadata.

Both artifacts' metadata and both runs' config carry the Dagster run id and asset key; the returned ArtifactRecord
goes into the asset's materialization metadata, so each side names the other.

Inputs are named by content, not by a lookup: a used artifact is rebuilt here from the same files, so its digest is
the digest of the version that logged it, and W&B resolves a used artifact to the existing version of that name and
digest when the run is synced. A model's files are added by reference with the path as their digest (checkpoints
hold GBs; nothing is read or copied) beside manifest.json, which holds the sha256 of every model file, so a
retrained folder makes a new version. A dataset or a registry model is an "identity" artifact: one small JSON file
with its name and content hash (a file:// reference would need the file to exist, and would carry only its path, so
a dataset rebuilt in place would collapse into the old version).

W&B refuses `run.use_artifact` offline, because it resolves names through the server. Offline, an input is declared
the way `use_artifact` declares an artifact object online: the artifact is written to the run with the
"use after commit" flag, which `wandb sync` commits (deduplicated by digest) and then marks as used by the run.
Sync the runs one at a time, oldest first, so a parent's version exists, with its metadata, before a child uses it
(`wandb sync` given several runs uploads five at once). A run's transaction log is complete once W&B's service has
written it out, which may be after the call returns and is at the latest when the process exits.

A W&B failure never fails the asset offline (the `log` callable gets a warning and the call returns None); online it
raises WandbArtifactError naming what was not logged. Mode "disabled" logs nothing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import dagster as dg

from secverify_dagster.resources.training import TrackingResource, wandb_dir
from sv_shared.data.hashing import sha256_hex, stable_json
from sv_shared.runs.folder import RunFolder
from sv_shared.runs.schema import RunMetadata
from sv_shared.training.checkpoints import (
    MANIFEST_FILE,
    CheckpointError,
    CheckpointManifest,
    checkpoint_dir,
    list_checkpoints,
)

if TYPE_CHECKING:
    from wandb import Artifact
    from wandb.sdk.wandb_run import Run

NAME_MAXLEN: Final = 128
"""W&B's longest artifact name."""

_NOT_IN_NAME: Final = re.compile(r"[^A-Za-z0-9_.-]+")
"""W&B's artifact names are letters, digits, "_", "-" and "."."""

CONTENT_HASH: Final = re.compile(r"^[0-9a-f]{64}$")
"""A manifest's data entry that is a dataset: its value is a sha256. Others (a joint round's side, its frozen model)
describe the run and go to its config."""

IDENTITY_FILE: Final = "identity.json"

Log = Callable[[str], None]


class WandbArtifactError(RuntimeError):
    """Online W&B could not log an artifact; the message names which and why."""


def artifact_name(text: str) -> str:
    """A W&B artifact name for a model id or dataset key: other characters become "-"; a name over W&B's limit is
    cut and ends in a hash of the whole, so two long names stay apart."""
    name = _NOT_IN_NAME.sub("-", text).strip("-") or "unnamed"
    if len(name) > NAME_MAXLEN:
        name = f"{name[: NAME_MAXLEN - 9]}-{sha256_hex(text)[:8]}"
    return name


@dataclass(frozen=True)
class ArtifactRecord:
    """What one logging call made: the artifact, the W&B run that logged it, and what that run used."""

    name: str
    type: str
    project: str
    digest: str
    """W&B's content digest of the artifact (the manifest's); a used artifact of the same name and digest resolves
    to this version."""
    version: str | None
    """The version W&B gave it online (v0, v1, …); None offline, where W&B numbers it when the run is synced."""
    wandb_run_id: str
    wandb_run_dir: Path
    """The run's folder under outputs/wandb/wandb/ (offline-run-* until synced)."""
    mode: str
    url: str | None = None
    """The W&B run's page (online only)."""
    used: tuple[str, ...] = ()
    """The artifacts the run used, as "name@digest"."""

    @property
    def reference(self) -> str:
        """project/name:version online; project/name@digest offline (the version does not exist yet)."""
        return (
            f"{self.project}/{self.name}:{self.version}"
            if self.version
            else f"{self.project}/{self.name}@{self.digest}"
        )

    def as_metadata(self) -> dict[str, Any]:
        """Materialization metadata that points from the Dagster UI to the W&B artifact and run."""
        run = dg.MetadataValue.url(self.url) if self.url else dg.MetadataValue.path(str(self.wandb_run_dir))
        return {
            "wandb_artifact": self.reference,
            "wandb_artifact_digest": self.digest,
            "wandb_mode": self.mode,
            "wandb_run_id": self.wandb_run_id,
            "wandb_run": run,
            "wandb_used": dg.MetadataValue.json(list(self.used)),
        }


@dataclass(frozen=True)
class _RunPlan:
    """One W&B run to write: who it is, the artifacts it uses and the one it logs."""

    name: str
    group: str
    job_type: str
    config: dict[str, Any]
    tags: list[str]
    inputs: list[Artifact]
    output: Artifact
    aliases: list[str]


def log_checkpoint_artifact(
    tracking: TrackingResource,
    manifest: CheckpointManifest,
    run_dir: Path,
    dagster_run_id: str,
    asset_key: str,
    *,
    log: Log,
) -> ArtifactRecord | None:
    """Log a finished checkpoint (its folder `run_dir`, under the checkpoints root) as a W&B "model" artifact from a
    "train" run that uses its parent's artifact and its datasets'. None when tracking is disabled, or offline when
    W&B failed (warned through `log`)."""

    def plan() -> _RunPlan:
        link = {"dagster_run_id": dagster_run_id, "asset_key": asset_key}
        datasets = {key: digest for key, digest in manifest.data.items() if CONTENT_HASH.match(digest)}
        return _RunPlan(
            name=manifest.model_id,
            group=manifest.recipe_name,
            job_type="train",
            config={
                **link,
                "model_id": manifest.model_id,
                "parent_model": manifest.parent_model,
                "base_model": manifest.base_model,
                "stage": manifest.stage,
                "recipe_name": manifest.recipe_name,
                "recipe_hash": manifest.recipe_hash,
                "code_version": manifest.code_version,
                "run_settings": {key: value for key, value in manifest.data.items() if key not in datasets},
            },
            tags=["dagster", manifest.stage],
            inputs=[
                _parent_artifact(manifest, Path(run_dir)),
                *(_dataset_artifact(key, digest) for key, digest in sorted(datasets.items())),
            ],
            output=_checkpoint_artifact(manifest, Path(run_dir), link),
            aliases=["latest", manifest.stage],
        )

    return _log_run(tracking, f"checkpoint {manifest.model_id}", plan, log)


def log_eval_artifact(
    tracking: TrackingResource,
    run_dir: Path,
    metadata: RunMetadata,
    dagster_run_id: str,
    asset_key: str,
    partition: str,
    *,
    checkpoints_root: Path,
    log: Log,
) -> ArtifactRecord | None:
    """Log an eval run folder's summary.json and metadata.json as a W&B "eval-summary" artifact from an "eval" run
    that uses the evaluated model's artifact (a checkpoint under checkpoints_root, else the registry model's) and
    its dataset's. None when tracking is disabled, or offline when W&B failed (warned through `log`)."""

    def plan() -> _RunPlan:
        folder = RunFolder(Path(run_dir))
        summary = folder.read_summary()
        link = {"dagster_run_id": dagster_run_id, "asset_key": asset_key, "partition": partition}
        dataset_key = _eval_dataset_key(metadata)
        checkpoints = {manifest.model_id: manifest for manifest in list_checkpoints(checkpoints_root)}
        models = [metadata.model.id, *(identity.id for identity in (metadata.counterparts or {}).values())]
        output = _artifact(
            artifact_name(f"eval-{metadata.env_name}--{metadata.model.id}{_view_suffix(metadata)}"),
            "eval-summary",
            metadata={
                **link,
                "env": metadata.env,
                "env_name": metadata.env_name,
                "model": metadata.model.id,
                "run_id": metadata.run_id,
                "status": metadata.status,
                "n_items": summary.n_items,
                "n_scored": summary.n_scored,
                "metrics": summary.metrics,
                "verifier_version": metadata.verifier_version,
                "dataset": metadata.dataset.as_dict(),
                "code_version": metadata.code_version,
                "seed": metadata.seed,
            },
        )
        output.add_file(str(folder.summary_path), name=folder.summary_path.name)
        output.add_file(str(folder.metadata_path), name=folder.metadata_path.name)
        return _RunPlan(
            name=f"eval {metadata.env} {metadata.model.id}",
            group=metadata.model.id,
            job_type="eval",
            config={
                **link,
                "env": metadata.env,
                "model": metadata.model.id,
                "run_id": metadata.run_id,
                "verifier_version": metadata.verifier_version,
                "code_version": metadata.code_version,
                "seed": metadata.seed,
                "n_requested": metadata.n_requested,
            },
            tags=["dagster", metadata.env],
            inputs=[
                *(_model_artifact(model_id, checkpoints, checkpoints_root) for model_id in dict.fromkeys(models)),
                _dataset_artifact(dataset_key, metadata.dataset.hash),
            ],
            output=output,
            aliases=["latest"],
        )

    return _log_run(tracking, f"eval summary {run_dir}", plan, log)


def _checkpoint_artifact(manifest: CheckpointManifest, run_dir: Path, link: Mapping[str, str]) -> Artifact:
    """A checkpoint's "model" artifact: its model files by reference, its manifest.json copied. Its digest depends
    on the files' paths and the manifest's bytes only, so the parent rebuilt for a child's run (whose `link` is
    empty) has the digest of the version that logged it."""
    if checkpoint_dir(run_dir.parents[2], manifest) != run_dir:
        raise CheckpointError(f"{run_dir}: not the folder of checkpoint {manifest.model_id}")
    artifact = _artifact(
        artifact_name(manifest.model_id),
        "model",
        metadata={
            "model_id": manifest.model_id,
            "parent_model": manifest.parent_model,
            "base_model": manifest.base_model,
            "stage": manifest.stage,
            "run_id": manifest.run_id,
            "recipe_name": manifest.recipe_name,
            "recipe_hash": manifest.recipe_hash,
            "envs": manifest.envs,
            "data": manifest.data,
            "reward_weights": manifest.reward_weights,
            "code_version": manifest.code_version,
            "created_at": manifest.created_at,
            "experiment": manifest.experiment.as_dict() if manifest.experiment else None,
            "manifest_sha256": manifest.content_hash(),
            **link,
        },
    )
    model_dir = run_dir / manifest.model_dir
    for relative in sorted(manifest.model_files):
        artifact.add_reference((model_dir / relative).as_uri(), name=f"{manifest.model_dir}/{relative}", checksum=False)
    artifact.add_file(str(run_dir / MANIFEST_FILE), name=MANIFEST_FILE)
    return artifact


def _parent_artifact(manifest: CheckpointManifest, run_dir: Path) -> Artifact:
    """The parent checkpoint's artifact as it was logged, or the base model's when training started from it."""
    root = run_dir.parents[2]
    if manifest.parent_model == manifest.base_model:
        return _identity_artifact(manifest.base_model, "model", {"model_id": manifest.base_model})
    parent = next((m for m in list_checkpoints(root) if m.model_id == manifest.parent_model), None)
    if parent is None:
        raise CheckpointError(
            f"{manifest.model_id}: its parent {manifest.parent_model!r} is not a checkpoint under {root}"
        )
    return _checkpoint_artifact(parent, checkpoint_dir(root, parent), {})


def _model_artifact(model_id: str, checkpoints: Mapping[str, CheckpointManifest], root: Path) -> Artifact:
    """A checkpoint's artifact as it was logged, or a registry model's identity artifact (the one a checkpoint
    trained from it uses as its base)."""
    if model_id in checkpoints:
        manifest = checkpoints[model_id]
        return _checkpoint_artifact(manifest, checkpoint_dir(root, manifest), {})
    return _identity_artifact(model_id, "model", {"model_id": model_id})


def _dataset_artifact(key: str, content_hash: str) -> Artifact:
    return _identity_artifact(key, "dataset", {"dataset": key, "sha256": content_hash})


def _eval_dataset_key(metadata: RunMetadata) -> str:
    """The key training names the same frame by (<env>/curated/<split>), for a run on a curated split; a view run's
    key names its view."""
    source = Path(metadata.dataset.source)
    return f"{metadata.env}/{source.parent.name}/{metadata.dataset.split}{_view_suffix(metadata)}"


def _view_suffix(metadata: RunMetadata) -> str:
    """A run on an ablated view (its dataset source is "<path>:<view>") is named with "-<view>"; others with ""."""
    _, _, view = Path(metadata.dataset.source).name.partition(":")
    return f"-{view}" if view else ""


def _identity_artifact(name: str, kind: str, identity: Mapping[str, str]) -> Artifact:
    """An artifact that is its identity only (one small JSON file): the same identity, the same digest."""
    artifact = _artifact(artifact_name(name), kind, metadata=dict(identity))
    with artifact.new_file(IDENTITY_FILE, mode="w", encoding="utf-8") as handle:
        handle.write(stable_json(dict(identity)))
    return artifact


def _artifact(name: str, kind: str, *, metadata: Mapping[str, Any]) -> Artifact:
    import wandb  # imported here: it takes a second, and definitions load without it

    return wandb.Artifact(name, type=kind, metadata=_json_compliant(metadata))


def _json_compliant(value: Any) -> Any:
    """W&B refuses metadata that strict JSON cannot hold; a summary's metrics may hold NaN or infinity (an
    undefined metric), written here as "nan", "inf" or "-inf"."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, Mapping):
        return {key: _json_compliant(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_compliant(item) for item in value]
    return value


def _settings(tracking: TrackingResource) -> Any:
    import wandb

    # No console capture, system metrics, git or package scan: these runs only link artifacts, and each one of
    # those costs time in every asset that logs.
    return wandb.Settings(
        mode=tracking.mode,
        console="off",
        silent=True,
        disable_git=True,
        save_code=False,
        x_disable_stats=True,
        x_disable_machine_info=True,
        x_save_requirements=False,
    )


def _use(run: Run, artifact: Artifact, offline: bool) -> str:
    """Declare the artifact an input of the run (see the module's docstring for offline)."""
    if offline:
        # run.use_artifact raises offline before it gets here: this is the call it makes online for an artifact
        # object (wandb is pinned at 0.29.0; the tests read the flag back from the run's log).
        run._log_artifact(artifact, use_after_commit=True)
    else:
        run.use_artifact(artifact)
    return f"{artifact.name}@{artifact.digest}"


def _write_run(tracking: TrackingResource, plan: _RunPlan) -> ArtifactRecord:
    import wandb

    offline = tracking.mode == "offline"
    # A run of its own ("create_new"): a training run this process still has open stays open and untouched.
    with wandb.init(
        project=tracking.artifacts_project,
        name=plan.name,
        group=plan.group,
        job_type=plan.job_type,
        config=plan.config,
        tags=plan.tags,
        dir=str(wandb_dir()),
        reinit="create_new",
        settings=_settings(tracking),
    ) as run:
        used = tuple(_use(run, artifact, offline) for artifact in plan.inputs)
        logged = run.log_artifact(plan.output, aliases=plan.aliases)
        if not offline:
            logged.wait()
        record = ArtifactRecord(
            name=plan.output.name,
            type=plan.output.type,
            project=tracking.artifacts_project,
            digest=plan.output.digest,
            version=None if offline else logged.version,
            wandb_run_id=run.id,
            wandb_run_dir=Path(run.settings.sync_dir),
            mode=tracking.mode,
            url=None if offline else run.url,
            used=used,
        )
    return record


def _log_run(tracking: TrackingResource, what: str, plan: Callable[[], _RunPlan], log: Log) -> ArtifactRecord | None:
    if tracking.mode == "disabled":
        return None
    try:
        # The artifacts are built before the run starts: a missing file fails before any run folder is written.
        return _write_run(tracking, plan())
    except Exception as error:  # any W&B or file failure: offline it must not fail the asset
        reason = f"{type(error).__name__}: {error}"
        if tracking.mode == "online":
            raise WandbArtifactError(f"W&B (online) could not log the {what} as an artifact: {reason}") from error
        log(f"W&B (offline): the {what} was not logged as an artifact ({reason}); the asset itself is unaffected")
        return None
