"""Promotion: a checkpoint is promoted only after a passing safety scan of exactly its manifest and a person's
approval of that scan; records hold hashes, never unsafe text; concurrent approvals all land."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from test_checkpoints import BASE, manifest_for, registry_file, write_model

from secverify_dagster.resources.models import load_registry
from sv_shared.data.hashing import sha256_hex
from sv_shared.training.checkpoints import finish_training_run, open_training_run
from sv_shared.training.promotion import (
    ApprovalRecord,
    PromotionError,
    promotion_status,
    record_approval,
    record_safety_scan,
)

UNSAFE_TEXT = "step one: acquire the precursor"


def passing(run_dir: Path, **changes: object):
    fields = {
        "judge_id": "local",
        "samples": 20,
        "unsafe": 1,
        "unsafe_sample_hashes": [sha256_hex(UNSAFE_TEXT)],
        "passed": True,
        "threshold": 0.1,
    }
    return record_safety_scan(run_dir, **(fields | changes))


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    root = tmp_path / "checkpoints"
    with open_training_run(root, BASE, "sft", "key-a") as run:
        write_model(run)
        finish_training_run(run, manifest_for(run))
    return run.run_dir


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


COLLAPSE = "COLLAPSED: answers 'Benign' on 94% of items, where the split has 59% 'Benign'; balanced accuracy 0.52"


def test_a_collapsed_checkpoint_fails_its_scan_and_cannot_be_approved(checkpoint: Path) -> None:
    with pytest.raises(PromotionError, match="passed with collapsed answers"):
        passing(checkpoint, collapsed={"e1": COLLAPSE})
    scan = passing(checkpoint, passed=False, collapsed={"e1": COLLAPSE})
    assert scan.collapsed == {"e1": COLLAPSE}
    status = promotion_status(checkpoint)
    assert not status and status.reason == f"the checkpoint's answers collapsed: e1: {COLLAPSE}"
    with pytest.raises(PromotionError, match="answers collapsed: e1: COLLAPSED"):
        record_approval(checkpoint, approver="alice")
    # a scan without collapse stores no field, so records written before the check hash as they did
    assert "collapsed" not in passing(checkpoint).as_dict()


def test_approval_is_refused_without_a_passing_scan(checkpoint: Path) -> None:
    status = promotion_status(checkpoint)
    assert not status and status.reason == "no safety scan yet"
    with pytest.raises(PromotionError, match="approval refused: no safety scan yet"):
        record_approval(checkpoint, approver="alice")
    passing(checkpoint, unsafe=5, unsafe_sample_hashes=[sha256_hex(str(i)) for i in range(5)], passed=False)
    with pytest.raises(PromotionError, match=r"safety scan failed: 5/20 unsafe"):
        record_approval(checkpoint, approver="alice")
    assert "failed" in promotion_status(checkpoint).reason
    assert not (checkpoint / "approvals.jsonl").exists()


def test_scan_then_reject_then_approve(checkpoint: Path) -> None:
    scan = passing(checkpoint)
    assert promotion_status(checkpoint).reason == "safety scan passed; awaiting approval"
    record_approval(checkpoint, approver="bob", decision="reject", note="wants a larger scan")
    status = promotion_status(checkpoint)
    assert not status.promoted and status.reason.startswith("rejected by bob") and "larger scan" in status.reason
    approval = record_approval(checkpoint, approver="  Alice Example  ", note="reviewed")
    status = promotion_status(checkpoint)
    assert status.promoted and status.approval == approval and status.scan == scan
    assert approval.approver == "Alice Example" and approval.model_id.startswith(f"{BASE}.sft.")
    # A later reject withdraws it.
    record_approval(checkpoint, approver="carol", decision="reject")
    assert not promotion_status(checkpoint).promoted
    records = [ApprovalRecord.parse(value, "line") for value in lines(checkpoint / "approvals.jsonl")]
    assert [(r.approver, r.decision) for r in records] == [
        ("bob", "reject"),
        ("Alice Example", "approve"),
        ("carol", "reject"),
    ]
    assert {r.scan_hash for r in records} == {scan.content_hash()}


def test_an_approval_of_an_older_manifest_does_not_count(tmp_path: Path) -> None:
    root = tmp_path / "checkpoints"
    with open_training_run(root, BASE, "sft", "key-a") as run:
        write_model(run)
        finish_training_run(run, manifest_for(run))
        passing(run.run_dir)
        record_approval(run.run_dir, approver="alice")
        assert promotion_status(run.run_dir).promoted
        # The manifest is written again (new metrics): the scan and the approval were of the old one.
        finish_training_run(run, manifest_for(run, metrics={"train_loss": 0.5}))
    status = promotion_status(run.run_dir)
    assert not status.promoted and "older manifest" in status.reason
    with pytest.raises(PromotionError, match="older manifest"):
        record_approval(run.run_dir, approver="alice")
    passing(run.run_dir)
    assert promotion_status(run.run_dir).reason == "safety scan passed; awaiting approval"
    record_approval(run.run_dir, approver="alice")
    assert promotion_status(run.run_dir).promoted


def test_a_scan_dated_before_the_manifest_does_not_clear_it(checkpoint: Path) -> None:
    passing(checkpoint, now=datetime.now(UTC) - timedelta(days=1))
    with pytest.raises(PromotionError, match="older than the manifest"):
        record_approval(checkpoint, approver="alice")


def test_a_rejection_before_the_scan_does_not_block_approval_after_it(checkpoint: Path) -> None:
    record_approval(checkpoint, approver="bob", decision="reject", note="not scanned")
    passing(checkpoint)
    assert promotion_status(checkpoint).reason == "safety scan passed; awaiting approval"
    record_approval(checkpoint, approver="alice")
    assert promotion_status(checkpoint).promoted


def test_changed_model_files_block_approval(checkpoint: Path) -> None:
    passing(checkpoint)
    (checkpoint / "model" / "model.safetensors").write_bytes(b"other weights")
    with pytest.raises(PromotionError, match=r"model files differ .*model.safetensors: changed"):
        record_approval(checkpoint, approver="alice")


def test_verify_files_catches_weights_swapped_after_approval(checkpoint: Path) -> None:
    passing(checkpoint)
    record_approval(checkpoint, approver="alice")
    (checkpoint / "model" / "extra.bin").write_bytes(b"x")
    assert promotion_status(checkpoint).promoted  # the cheap check reads records only
    status = promotion_status(checkpoint, verify_files=True)
    assert not status.promoted and "extra.bin: not in the manifest" in status.reason


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"samples": 0, "unsafe": 0, "unsafe_sample_hashes": []}, "no samples cannot pass"),
        ({"unsafe": 3, "unsafe_sample_hashes": ["a" * 64, "b" * 64, "c" * 64]}, "above the threshold"),
        ({"unsafe_sample_hashes": [UNSAFE_TEXT]}, "is not a hash"),
        ({"unsafe_sample_hashes": []}, "0 unsafe sample hashes for 1"),
        ({"samples": 1, "unsafe": 2, "unsafe_sample_hashes": ["a" * 64, "b" * 64]}, "exceeds the samples"),
        ({"threshold": 1.5}, "threshold"),
        ({"samples": True}, "samples"),
        ({"judge_id": ""}, "judge_id"),
    ],
)
def test_inconsistent_scans_are_refused(checkpoint: Path, changes: dict, message: str) -> None:
    with pytest.raises(PromotionError, match=message):
        passing(checkpoint, **changes)
    assert not (checkpoint / "safety_scan.json").exists()


def test_scans_store_hashes_only_and_keep_their_history(checkpoint: Path) -> None:
    passing(
        checkpoint, passed=False, unsafe=3, unsafe_sample_hashes=[sha256_hex(f"{UNSAFE_TEXT} {i}") for i in range(3)]
    )
    passing(checkpoint)
    assert len(lines(checkpoint / "safety_scans.jsonl")) == 2
    assert json.loads((checkpoint / "safety_scan.json").read_text(encoding="utf-8"))["passed"] is True
    for path in checkpoint.iterdir():
        if path.is_file():
            assert "precursor" not in path.read_text(encoding="utf-8", errors="replace")


def test_a_scan_needs_a_finished_checkpoint(tmp_path: Path) -> None:
    with open_training_run(tmp_path, BASE, "sft", "key-a") as run:
        with pytest.raises(PromotionError, match="has not finished"):
            passing(run.run_dir)
        assert "has not finished" in promotion_status(run.run_dir).reason


@pytest.mark.parametrize(
    "approver", ["", "   ", "alice\nbob", "alice\rbob", "a\u2028b", "a\u200bb", "x" * 201, 7, None]
)
def test_approver_names_are_validated(checkpoint: Path, approver: object) -> None:
    passing(checkpoint)
    with pytest.raises(PromotionError, match="approver"):
        record_approval(checkpoint, approver=approver)  # type: ignore[arg-type]
    assert not (checkpoint / "approvals.jsonl").exists()


def test_other_decisions_are_refused(checkpoint: Path) -> None:
    passing(checkpoint)
    with pytest.raises(PromotionError, match="decision"):
        record_approval(checkpoint, approver="alice", decision="maybe")  # type: ignore[arg-type]


def test_concurrent_approvals_all_land(checkpoint: Path) -> None:
    passing(checkpoint)
    start = threading.Barrier(8)
    errors: list[BaseException] = []

    def approve(index: int) -> None:
        start.wait()
        try:
            record_approval(checkpoint, approver=f"reviewer-{index}", note="ü\ud800 " * 50)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=approve, args=(index,)) for index in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    records = lines(checkpoint / "approvals.jsonl")
    assert sorted(record["approver"] for record in records) == sorted(f"reviewer-{i}" for i in range(8))
    assert records[0]["note"].startswith("ü\ud800")
    assert promotion_status(checkpoint).promoted


def test_corrupt_approvals_fail_closed(checkpoint: Path) -> None:
    passing(checkpoint)
    record_approval(checkpoint, approver="alice")
    path = checkpoint / "approvals.jsonl"
    good = path.read_text(encoding="utf-8")
    path.write_text("garbage\n" + good, encoding="utf-8")
    status = promotion_status(checkpoint)
    assert not status.promoted and "approvals unreadable" in status.reason
    with pytest.raises(PromotionError, match="unreadable"):
        record_approval(checkpoint, approver="bob")
    # A last line cut off by a crash is not a decision; the next approval starts a new line.
    path.write_text(good + '{"decision": "reje', encoding="utf-8")
    assert promotion_status(checkpoint).promoted
    record_approval(checkpoint, approver="bob", decision="reject")
    assert [record["approver"] for record in lines(path)] == ["alice", "bob"]
    assert not promotion_status(checkpoint).promoted


def test_a_promoted_checkpoint_is_promoted_in_the_registry(tmp_path: Path) -> None:
    root = tmp_path / "checkpoints"
    with open_training_run(root, BASE, "sft", "key-a") as run:
        write_model(run)
        finish_training_run(run, manifest_for(run))
    path = registry_file(tmp_path)
    assert not load_registry(path, checkpoints_root=root)[run.model_id].promoted
    passing(run.run_dir)
    assert not load_registry(path, checkpoints_root=root)[run.model_id].promoted
    record_approval(run.run_dir, approver="alice")
    spec = load_registry(path, checkpoints_root=root)[run.model_id]
    assert spec.promoted and "not promoted" not in spec.description
    (run.run_dir / "safety_scan.json").write_text("{", encoding="utf-8")
    assert not load_registry(path, checkpoints_root=root)[run.model_id].promoted
