"""Checkpoints and eval summaries as W&B artifacts, written offline by the real wandb SDK and read back from the
offline runs' transaction logs (the records `wandb sync` uploads): which artifact each run logged, which it used."""

from __future__ import annotations

import json
import multiprocessing
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from secverify_dagster.publishing.wandb_artifacts import (
    ArtifactRecord,
    WandbArtifactError,
    artifact_name,
    log_checkpoint_artifact,
    log_eval_artifact,
)
from secverify_dagster.resources.training import TrackingResource
from sv_shared.runs.folder import RunFolder
from sv_shared.runs.schema import DatasetRef, ModelIdentity, RunMetadata, RunSummary, Session
from sv_shared.training.checkpoints import (
    CheckpointManifest,
    finish_training_run,
    open_training_run,
    read_manifest,
)

BASE = "smollm2-135m-instruct"
SFT_DATA = "a" * 64
TRAIN_SPLIT = "b" * 64
TEST_SPLIT = "c" * 64


class LoopbackListener:
    """A W&B server address that counts who connects: offline, nobody may."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.getsockname()[1]}"

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            self.connections += 1
            connection.close()


@pytest.fixture()
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackListener]:
    import wandb

    listener = LoopbackListener()
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path / "outputs"))
    for name, value in {
        "WANDB_MODE": "offline",
        "WANDB_DIR": str(tmp_path / "wandb"),
        "WANDB_SILENT": "true",
        "WANDB_DATA_DIR": str(tmp_path / "wandb-data"),
        "WANDB_CACHE_DIR": str(tmp_path / "wandb-cache"),
        "WANDB_CONFIG_DIR": str(tmp_path / "wandb-config"),
        "WANDB_BASE_URL": listener.url,
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    try:
        yield listener
    finally:
        # W&B keeps its service and settings process-wide: stop them so later tests start afresh.
        wandb.teardown()
        listener.server.close()


def _checkpoint(root: Path, parent: str, stage: str, data: dict[str, str]) -> tuple[CheckpointManifest, Path]:
    """A finished checkpoint folder, made the way training makes one (its model files stand in for weights)."""
    with open_training_run(root, parent, stage, f"key-{parent}-{stage}", base_model=BASE) as run:
        run.model_dir.mkdir()
        (run.model_dir / "config.json").write_text('{"model_type": "llama"}', encoding="utf-8")
        (run.model_dir / "model.safetensors").write_bytes(b"\0" * 4096)
        manifest = CheckpointManifest(
            model_id=run.model_id,
            parent_model=parent,
            base_model=BASE,
            stage=stage,
            run_id=run.run_id,
            recipe_name=f"tiny-{stage}",
            recipe_hash="r" * 64,
            recipe={"name": f"tiny-{stage}"},
            envs=["e1"],
            reward_weights={"e1": {"label": 1.0}},
            data=data,
            code_version="abc123",
        )
        return finish_training_run(run, manifest), run.run_dir


@dataclass
class OfflineRun:
    """What an offline run will upload: its identity and config, the artifacts it logged and those it used."""

    project: str = ""
    name: str = ""
    group: str = ""
    job_type: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    logged: list[dict[str, Any]] = field(default_factory=list)
    used: list[dict[str, Any]] = field(default_factory=list)


def read_offline_run(sync_dir: Path) -> OfflineRun:
    """Scan the run's transaction log (.wandb) record by record, as `wandb sync` does."""
    import wandb
    from wandb.proto import wandb_internal_pb2
    from wandb.sdk.internal import datastore

    # A finished run's log is complete once W&B's service has written it out: at the latest when the service stops
    # (the process exits, or this teardown).
    wandb.teardown()
    (log_file,) = sync_dir.glob("run-*.wandb")
    store = datastore.DataStore()
    store.open_for_scan(str(log_file))
    run = OfflineRun()
    while (data := store.scan_data()) is not None:
        record = wandb_internal_pb2.Record()
        record.ParseFromString(data)
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run.project, run.name = record.run.project, record.run.display_name
            run.group, run.job_type = record.run.run_group, record.run.job_type
            run.config = {item.key: json.loads(item.value_json) for item in record.run.config.update}
        elif kind == "artifact":
            artifact = record.artifact
            (run.used if artifact.use_after_commit else run.logged).append(
                {
                    "name": artifact.name,
                    "type": artifact.type,
                    "digest": artifact.digest,
                    "aliases": list(artifact.aliases),
                    "metadata": json.loads(artifact.metadata or "{}"),
                    "files": {entry.path: entry.ref for entry in artifact.manifest.contents},
                }
            )
    return run


def _log_checkpoint(manifest: CheckpointManifest, run_dir: Path, warnings: list[str]) -> ArtifactRecord | None:
    return log_checkpoint_artifact(
        TrackingResource(),
        manifest,
        run_dir,
        f"dagster-run-{manifest.stage}",
        f"checkpoints/{manifest.stage}/tiny",
        log=warnings.append,
    )


def _eval_folder(evals: Path, model_id: str, counterpart: str | None = None) -> tuple[Path, RunMetadata]:
    """An eval run folder with the metadata.json and summary.json the runner writes."""
    folder = RunFolder(evals / f"sv-env-network-logs--{model_id}" / "run-1")
    folder.path.mkdir(parents=True)
    identity = ModelIdentity(id=model_id, provider="local_transformers", model="x", params={}, price={})
    metadata = RunMetadata(
        run_id="run-1",
        env="e1",
        env_name="sv-env-network-logs",
        verifier_version="e1-verifier-1",
        verifier_provenance={},
        counterparts={"target": identity.replace(id=counterpart)} if counterpart else None,
        model=identity,
        generation={},
        config={},
        dataset=DatasetRef(
            source=str(evals.parent / "datasets/e1/curated/test.parquet"), split="test", hash=TEST_SPLIT, rows=5
        ),
        n_requested=5,
        n_items=5,
        seed=0,
        fingerprint_hash="f" * 64,
        code_version="abc123",
        created_at="2026-11-24T04:12:00+00:00",
        sessions=[Session(started_at="2026-11-24T04:12:00+00:00", code_version="abc123")],
        status="complete",
    )
    folder.write_metadata(metadata)
    folder.write_summary(
        RunSummary(
            env="e1",
            env_name="sv-env-network-logs",
            model=model_id,
            run_id="run-1",
            n_items=5,
            n_scored=5,
            metrics={"n": 5, "reward": {"mean": 0.4, "ci": [0.1, 0.7]}, "calibration": {"ece": float("nan")}},
        )
    )
    return folder.path, metadata


def test_an_rlft_checkpoint_uses_its_sft_parent_and_the_sft_its_base_and_data(
    tmp_path: Path, offline: LoopbackListener
) -> None:
    root = tmp_path / "checkpoints"
    sft, sft_dir = _checkpoint(root, BASE, "sft", {"e1/sft_dataset": SFT_DATA})
    rlft, rlft_dir = _checkpoint(
        root, sft.model_id, "rlft-single", {"e1/curated/train": TRAIN_SPLIT, "joint/side": "x"}
    )
    warnings: list[str] = []
    sft_record = _log_checkpoint(sft, sft_dir, warnings)
    rlft_record = _log_checkpoint(rlft, rlft_dir, warnings)
    assert warnings == [] and sft_record is not None and rlft_record is not None
    assert sft_record.wandb_run_id != rlft_record.wandb_run_id
    assert sft_record.wandb_run_dir.parent == tmp_path / "wandb" / "wandb"

    sft_run = read_offline_run(sft_record.wandb_run_dir)
    assert (sft_run.project, sft_run.name, sft_run.group, sft_run.job_type) == (
        "security-verifiers",
        sft.model_id,
        "tiny-sft",
        "train",
    )
    assert sft_run.config["dagster_run_id"] == "dagster-run-sft"
    assert {(used["name"], used["type"]) for used in sft_run.used} == {(BASE, "model"), ("e1-sft_dataset", "dataset")}
    (logged,) = sft_run.logged
    assert (logged["name"], logged["type"], logged["digest"]) == (sft.model_id, "model", sft_record.digest)
    assert set(logged["aliases"]) == {"latest", "sft"}
    assert logged["metadata"]["dagster_run_id"] == "dagster-run-sft"
    assert logged["metadata"]["asset_key"] == "checkpoints/sft/tiny"
    assert logged["metadata"]["manifest_sha256"] == sft.content_hash()
    # Model files by reference (nothing copied), the manifest itself as a file of the artifact.
    assert logged["files"]["model/model.safetensors"] == (sft_dir / "model" / "model.safetensors").as_uri()
    assert logged["files"]["manifest.json"] == ""

    rlft_run = read_offline_run(rlft_record.wandb_run_dir)
    parent = next(used for used in rlft_run.used if used["type"] == "model")
    assert (parent["name"], parent["digest"]) == (sft.model_id, sft_record.digest)
    (dataset,) = (used for used in rlft_run.used if used["type"] == "dataset")
    assert (dataset["name"], dataset["metadata"]["sha256"]) == ("e1-curated-train", TRAIN_SPLIT)
    assert rlft_run.config["run_settings"] == {"joint/side": "x"}  # not a dataset: no artifact
    assert rlft_record.used == (f"{sft.model_id}@{sft_record.digest}", f"e1-curated-train@{dataset['digest']}")
    assert set(rlft_run.logged[0]["aliases"]) == {"latest", "rlft-single"}
    assert offline.connections == 0


def test_an_eval_uses_the_checkpoint_it_evaluated_and_a_base_model_eval_the_base_a_checkpoint_used(
    tmp_path: Path, offline: LoopbackListener
) -> None:
    root = tmp_path / "checkpoints"
    sft, sft_dir = _checkpoint(root, BASE, "sft", {"e1/sft_dataset": SFT_DATA})
    warnings: list[str] = []
    checkpoint = _log_checkpoint(sft, sft_dir, warnings)
    assert checkpoint is not None
    run_dir, metadata = _eval_folder(tmp_path / "evals", sft.model_id, counterpart=BASE)
    record = log_eval_artifact(
        TrackingResource(),
        run_dir,
        metadata,
        "dagster-run-eval",
        "e1/eval_results",
        sft.model_id,
        checkpoints_root=root,
        log=warnings.append,
    )
    assert warnings == [] and record is not None
    run = read_offline_run(record.wandb_run_dir)
    assert run.job_type == "eval" and run.config["partition"] == sft.model_id
    used = {item["name"]: item for item in run.used}
    assert used[sft.model_id]["digest"] == checkpoint.digest
    assert used["e1-curated-test"]["metadata"] == {"dataset": "e1/curated/test", "sha256": TEST_SPLIT}
    base_used_by_training = next(i for i in read_offline_run(checkpoint.wandb_run_dir).used if i["name"] == BASE)
    assert used[BASE]["digest"] == base_used_by_training["digest"]  # the counterpart: one base-model version
    (summary,) = run.logged
    assert (summary["name"], summary["type"]) == (f"eval-sv-env-network-logs--{sft.model_id}", "eval-summary")
    assert summary["metadata"]["metrics"]["reward"]["mean"] == 0.4
    assert summary["metadata"]["metrics"]["calibration"]["ece"] == "nan"  # strict JSON, as W&B requires
    assert summary["metadata"]["dagster_run_id"] == "dagster-run-eval"
    assert set(summary["files"]) == {"summary.json", "metadata.json"}
    assert offline.connections == 0


def test_disabled_tracking_logs_nothing(tmp_path: Path, offline: LoopbackListener) -> None:
    sft, sft_dir = _checkpoint(tmp_path / "checkpoints", BASE, "sft", {})
    run_dir, metadata = _eval_folder(tmp_path / "evals", BASE)
    disabled = TrackingResource(mode="disabled")
    assert log_checkpoint_artifact(disabled, sft, sft_dir, "r", "k", log=pytest.fail) is None
    eval_record = log_eval_artifact(
        disabled, run_dir, metadata, "r", "k", BASE, checkpoints_root=tmp_path / "checkpoints", log=pytest.fail
    )
    assert eval_record is None
    assert not (tmp_path / "wandb").exists()


def test_a_w_and_b_failure_warns_offline_and_raises_online(tmp_path: Path, offline: LoopbackListener) -> None:
    sft, sft_dir = _checkpoint(tmp_path / "checkpoints", BASE, "sft", {})
    (sft_dir / "model" / "model.safetensors").unlink()
    warnings: list[str] = []
    assert _log_checkpoint(sft, sft_dir, warnings) is None
    (warning,) = warnings
    assert "model.safetensors" in warning and sft.model_id in warning
    assert not list((tmp_path / "wandb").glob("wandb/offline-run-*"))  # it failed before a run was started
    with pytest.raises(WandbArtifactError, match=r"online.*model\.safetensors"):
        log_checkpoint_artifact(TrackingResource(mode="online"), sft, sft_dir, "r", "k", log=pytest.fail)
    assert offline.connections == 0


def _log_in_this_process(run_dir: Path, dagster_run_id: str, results: Any) -> None:
    record = log_checkpoint_artifact(
        TrackingResource(), read_manifest(run_dir), run_dir, dagster_run_id, "k", log=print
    )
    assert record is not None
    import wandb

    wandb.teardown()  # what exiting does (a forked child leaves by os._exit, skipping W&B's exit hook)
    results.put((dagster_run_id, record.wandb_run_id, str(record.wandb_run_dir), record.digest))


def test_two_processes_logging_at_once_write_two_runs(tmp_path: Path, offline: LoopbackListener) -> None:
    root = tmp_path / "checkpoints"
    sft, sft_dir = _checkpoint(root, BASE, "sft", {"e1/sft_dataset": SFT_DATA})
    rlft, rlft_dir = _checkpoint(root, sft.model_id, "rlft-single", {"e1/curated/train": TRAIN_SPLIT})
    # Forked: two processes with their own W&B service each, as Dagster's step processes, without paying for a
    # second import of dagster and wandb.
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    processes = [
        context.Process(target=_log_in_this_process, args=(run_dir, f"dagster-{index}", results))
        for index, run_dir in enumerate((sft_dir, rlft_dir))
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [process.exitcode for process in processes] == [0, 0]
    by_dagster_run = {item[0]: item[1:] for item in (results.get(timeout=5) for _ in processes)}
    (sft_run_id, sft_dir_logged, sft_digest), (rlft_run_id, rlft_dir_logged, _) = (
        by_dagster_run["dagster-0"],
        by_dagster_run["dagster-1"],
    )
    assert sft_run_id != rlft_run_id
    runs = [read_offline_run(Path(folder)) for folder in (sft_dir_logged, rlft_dir_logged)]
    assert [run.logged[0]["name"] for run in runs] == [sft.model_id, rlft.model_id]
    assert [run.config["dagster_run_id"] for run in runs] == ["dagster-0", "dagster-1"]
    # Both processes named the parent by its content: the child's input is the version the other process logged.
    assert next(used["digest"] for used in runs[1].used if used["type"] == "model") == sft_digest
    assert offline.connections == 0


def test_artifact_names_keep_to_w_and_b_characters_and_length() -> None:
    assert artifact_name("smollm2.sft.20261124t041200-0a1b2c3d") == "smollm2.sft.20261124t041200-0a1b2c3d"
    assert artifact_name("e1/curated/train") == "e1-curated-train"
    long_a, long_b = artifact_name("x" * 200 + "a"), artifact_name("x" * 200 + "b")
    assert len(long_a) == 128 and long_a != long_b
