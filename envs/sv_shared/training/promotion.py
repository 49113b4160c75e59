"""Promotion: a checkpoint becomes a model anyone may pick by default only after a passing safety scan and a
person's approval of exactly that checkpoint.

In the checkpoint's run folder (see checkpoints.py):
  safety_scan.json     SafetyScanRecord   the latest scan: judge, samples, unsafe count, threshold, verdict, the
                                          hashes (never the text) of the unsafe samples, and where the checkpoint's
                                          answers collapsed onto one label; bound to the manifest's hash
  safety_scans.jsonl   SafetyScanRecord   every scan, one a line (the history; the JSON file is the latest)
  approvals.jsonl      ApprovalRecord     append-only decisions: who, when, approve or reject, for which model id,
                                          manifest hash and scan hash
  .promotion.lock      held while a scan or a decision is written, so concurrent writers all land

A checkpoint is promoted when its manifest is complete, the latest scan is of that very manifest and passed (safe
enough, and not collapsed on any environment it was trained on), and the
latest decision recorded for that manifest and that scan is "approve". A new manifest (retrained, rewritten) or a new
scan needs a new approval; a reject after an approval withdraws it. An approval is refused without a passing scan of
the current manifest, or when the model files no longer match the manifest's hashes.

Plain Python: no dagster, no secverify_dagster, no torch.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import ClassVar, Final, Literal

from pydantic import Field, NonNegativeInt, field_validator, model_validator

from sv_shared.data.files import exclusive
from sv_shared.data.hashing import sha256_hex, stable_json
from sv_shared.runs.folder import append_jsonl, jsonl_line, read_jsonl, write_json
from sv_shared.runs.schema import SCHEMA_VERSION, RunRecordError
from sv_shared.training.checkpoints import (
    CheckpointError,
    CheckpointManifest,
    TrainingRecord,
    iso_utc,
    parse_iso_utc,
    read_manifest,
    verify_model_files,
)

SCAN_FILE: Final = "safety_scan.json"
SCAN_HISTORY_FILE: Final = "safety_scans.jsonl"
APPROVALS_FILE: Final = "approvals.jsonl"
PROMOTION_LOCK_FILE: Final = ".promotion.lock"
PROMOTION_LOCK_WAIT_S: Final = 60.0
"""A writer of promotion records holds the lock for milliseconds (an approval also re-hashes the model files)."""

MAX_APPROVER_CHARS: Final = 200
_SAMPLE_HASH = re.compile(r"^[0-9a-f]{16,128}$")
_NOT_IN_A_NAME = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Unicode categories refused in an approver's name: controls (newlines, tabs), invisible formatting, surrogates,
private use, unassigned, line and paragraph separators."""

Decision = Literal["approve", "reject"]


class PromotionError(ValueError):
    """A promotion record that cannot be written (no passing scan, a changed checkpoint, a bad approver name)."""


class SafetyScanRecord(TrainingRecord):
    """The safety scan of one checkpoint manifest."""

    _optional: ClassVar[frozenset[str]] = frozenset({"collapsed"})

    schema_version: Literal[1] = SCHEMA_VERSION
    model_id: str
    manifest_hash: str
    judge_id: str = Field(min_length=1)
    samples: NonNegativeInt
    unsafe: NonNegativeInt
    threshold: float = Field(ge=0.0, le=1.0)
    """The largest share of unsafe samples a passing scan may have."""
    passed: bool
    unsafe_sample_hashes: list[str]
    """Hashes of the unsafe samples (their ids or texts): which ones, without storing unsafe text."""
    scanned_at: str
    collapsed: dict[str, str] | None = None
    """Environment id -> the collapse flag of the checkpoint's answers on that environment's held-out items
    (sv_shared.answers.collapse), for each environment it was trained on where it collapsed onto one answer. A
    collapsed checkpoint cannot pass, whatever its safety."""

    @field_validator("unsafe_sample_hashes")
    @classmethod
    def _hashes_only(cls, hashes: list[str]) -> list[str]:
        for value in hashes:
            if not _SAMPLE_HASH.match(value):
                raise ValueError(
                    f"{value[:40]!r} is not a hash (16-128 lower-case hex digits); a scan stores no sample text"
                )
        return hashes

    @field_validator("scanned_at")
    @classmethod
    def _utc_time(cls, value: str) -> str:
        parse_iso_utc(value)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> SafetyScanRecord:
        if self.unsafe > self.samples:
            raise ValueError(f"unsafe ({self.unsafe}) exceeds the samples scanned ({self.samples})")
        if len(self.unsafe_sample_hashes) != self.unsafe:
            raise ValueError(
                f"{len(self.unsafe_sample_hashes)} unsafe sample hashes for {self.unsafe} unsafe samples (one each)"
            )
        if self.passed and self.samples == 0:
            raise ValueError("a scan of no samples cannot pass")
        if self.passed and self.collapsed:
            raise ValueError(f"passed with collapsed answers ({', '.join(sorted(self.collapsed))}): inconsistent")
        if self.passed and self.unsafe > self.threshold * self.samples:
            raise ValueError(
                f"passed with {self.unsafe}/{self.samples} unsafe, above the threshold {self.threshold}: inconsistent"
            )
        return self

    @property
    def unsafe_share(self) -> float | None:
        return self.unsafe / self.samples if self.samples else None

    def content_hash(self) -> str:
        return sha256_hex(stable_json(self.as_dict()))


class ApprovalRecord(TrainingRecord):
    """One line of approvals.jsonl: a person's decision on exactly one checkpoint manifest and scan."""

    schema_version: Literal[1] = SCHEMA_VERSION
    decision: Decision
    approver: str
    note: str
    at: str
    model_id: str
    manifest_hash: str
    scan_hash: str | None
    """The scan the decision was made on (None: a rejection recorded before any scan)."""


@dataclass(frozen=True)
class PromotionStatus:
    promoted: bool
    reason: str
    scan: SafetyScanRecord | None = None
    """The latest scan, when one can be read."""
    approval: ApprovalRecord | None = None
    """The decision that counts (the latest for the current manifest and scan), when there is one."""
    state: str = "unpromoted"
    """One word for reports: promoted; collapsed or scan-failed (the current manifest's scan failed); unpromoted
    (no current scan, awaiting approval, rejected, or model files changed since)."""

    def __bool__(self) -> bool:
        return self.promoted


def _lock(run_dir: Path):
    return exclusive(
        run_dir / PROMOTION_LOCK_FILE, wait_s=PROMOTION_LOCK_WAIT_S, what=f"promotion records of {run_dir}"
    )


def _complete_manifest(run_dir: Path) -> CheckpointManifest:
    try:
        manifest = read_manifest(run_dir)
    except CheckpointError as error:
        raise PromotionError(str(error)) from None
    if manifest.status != "complete":
        raise PromotionError(f"{run_dir}: training has not finished (manifest status {manifest.status!r})")
    return manifest


def record_safety_scan(
    run_dir: Path,
    *,
    judge_id: str,
    samples: int,
    unsafe: int,
    unsafe_sample_hashes: list[str],
    passed: bool,
    threshold: float,
    collapsed: Mapping[str, str] | None = None,
    now: datetime | None = None,
) -> SafetyScanRecord:
    """Record a safety scan of the checkpoint's current manifest (safety_scan.json, and a line of the history).

    Hashes only: unsafe_sample_hashes must be hex digests. A passing scan must have scanned something and be within
    its threshold; PromotionError says what is inconsistent."""
    run_dir = Path(run_dir)
    with _lock(run_dir):
        manifest = _complete_manifest(run_dir)
        try:
            scan = SafetyScanRecord.model_validate(
                {
                    "model_id": manifest.model_id,
                    "manifest_hash": manifest.content_hash(),
                    "judge_id": judge_id,
                    "samples": samples,
                    "unsafe": unsafe,
                    "threshold": threshold,
                    "passed": passed,
                    "unsafe_sample_hashes": list(unsafe_sample_hashes),
                    "scanned_at": iso_utc(now),
                    "collapsed": dict(collapsed) if collapsed else None,
                }
            )
        except ValueError as error:
            raise PromotionError(f"{run_dir}: safety scan not recorded: {error}") from None
        append_jsonl(run_dir / SCAN_HISTORY_FILE, [jsonl_line(scan)])
        write_json(run_dir / SCAN_FILE, scan.as_dict())
    return scan


def _check_approver(approver: object) -> str:
    if not isinstance(approver, str):
        raise PromotionError(f"the approver must be a name, not {type(approver).__name__}")
    name = approver.strip()
    if not name:
        raise PromotionError("the approver must be named (an empty name approves nothing)")
    if len(name) > MAX_APPROVER_CHARS:
        raise PromotionError(f"the approver's name is longer than {MAX_APPROVER_CHARS} characters")
    bad = sorted({f"U+{ord(char):04X}" for char in name if unicodedata.category(char) in _NOT_IN_A_NAME})
    if bad:
        raise PromotionError(
            f"the approver's name {name[:60]!r} holds newlines or control characters ({', '.join(bad)})"
        )
    return name


def _read_scan(run_dir: Path) -> SafetyScanRecord | None:
    """The latest scan, None when there is none; RunRecordError (or OSError) when it cannot be read."""
    path = run_dir / SCAN_FILE
    if not path.exists():
        return None
    return SafetyScanRecord.read(path)


def _stale_scan(scan: SafetyScanRecord | None, manifest: CheckpointManifest) -> str | None:
    """Why the scan does not speak for the checkpoint's current manifest (None: it does)."""
    if scan is None:
        return "no safety scan yet"
    if scan.model_id != manifest.model_id or scan.manifest_hash != manifest.content_hash():
        return f"the safety scan (at {scan.scanned_at}) is of an older manifest; scan the checkpoint again"
    if parse_iso_utc(scan.scanned_at) < parse_iso_utc(manifest.created_at):
        return (
            f"the safety scan (at {scan.scanned_at}) is older than the manifest (created {manifest.created_at}); "
            "scan the checkpoint again"
        )
    return None


def _failed_scan(scan: SafetyScanRecord) -> str | None:
    """Why a current scan does not clear the checkpoint (None: it passed)."""
    if scan.collapsed:
        return "the checkpoint's answers collapsed: " + "; ".join(
            f"{env_id}: {flag}" for env_id, flag in sorted(scan.collapsed.items())
        )
    if not scan.passed:
        return (
            f"the safety scan failed: {scan.unsafe}/{scan.samples} unsafe (threshold {scan.threshold:g}, "
            f"judge {scan.judge_id})"
        )
    return None


def _scan_problem(scan: SafetyScanRecord | None, manifest: CheckpointManifest) -> str | None:
    """Why a scan does not clear the checkpoint for approval (None: it does)."""
    return _stale_scan(scan, manifest) or (_failed_scan(scan) if scan is not None else None)


def _read_approvals(run_dir: Path, *, cut_torn_tail: bool = False) -> list[ApprovalRecord]:
    path = run_dir / APPROVALS_FILE
    return [
        ApprovalRecord.parse(value, f"{path} line {number}")
        for number, value in read_jsonl(path, cut_torn_tail=cut_torn_tail)
    ]


def record_approval(
    run_dir: Path,
    *,
    approver: str,
    note: str = "",
    decision: Decision = "approve",
    now: datetime | None = None,
) -> ApprovalRecord:
    """Append a decision on the checkpoint's current manifest to approvals.jsonl, under the promotion lock.

    An approval is refused (PromotionError) unless the latest safety scan is of the current manifest, at or after
    its creation, and passed, and the model files still match the manifest's hashes. A rejection is always
    recorded. The approver is a non-empty name on one line."""
    run_dir = Path(run_dir)
    name = _check_approver(approver)
    if decision not in ("approve", "reject"):
        raise PromotionError(f"decision must be 'approve' or 'reject', not {decision!r}")
    if not isinstance(note, str):
        raise PromotionError(f"the note must be text, not {type(note).__name__}")
    with _lock(run_dir):
        manifest = _complete_manifest(run_dir)
        try:
            scan = _read_scan(run_dir)
            _read_approvals(run_dir, cut_torn_tail=True)  # a line cut off by a crash is removed before appending
        except (OSError, RunRecordError) as error:
            raise PromotionError(f"{run_dir}: promotion records unreadable, nothing recorded: {error}") from None
        if decision == "approve":
            problem = _scan_problem(scan, manifest)
            if problem is not None:
                raise PromotionError(f"{manifest.model_id}: approval refused: {problem}")
            changed = verify_model_files(run_dir, manifest)
            if changed:
                raise PromotionError(
                    f"{manifest.model_id}: approval refused: the model files differ from the manifest "
                    f"({'; '.join(changed[:5])})"
                )
        record = ApprovalRecord(
            decision=decision,
            approver=name,
            note=note,
            at=iso_utc(now),
            model_id=manifest.model_id,
            manifest_hash=manifest.content_hash(),
            scan_hash=scan.content_hash() if scan is not None else None,
        )
        append_jsonl(run_dir / APPROVALS_FILE, [jsonl_line(record)])
    return record


def promotion_status(run_dir: Path, *, verify_files: bool = False) -> PromotionStatus:
    """Whether the checkpoint is promoted, and why (never raises on a missing or unreadable record: not promoted).

    verify_files also re-hashes the model files against the manifest (seconds for a large model)."""
    run_dir = Path(run_dir)
    try:
        manifest = _complete_manifest(run_dir)
    except PromotionError as error:
        return PromotionStatus(False, str(error))
    try:
        scan = _read_scan(run_dir)
    except (OSError, RunRecordError) as error:
        return PromotionStatus(False, f"safety scan unreadable: {error}")
    stale = _stale_scan(scan, manifest)
    if stale is not None:
        return PromotionStatus(False, stale, scan)
    assert scan is not None
    failed = _failed_scan(scan)
    if failed is not None:
        return PromotionStatus(False, failed, scan, state="collapsed" if scan.collapsed else "scan-failed")
    assert scan is not None
    try:
        approvals = _read_approvals(run_dir)
    except (OSError, RunRecordError) as error:
        return PromotionStatus(False, f"approvals unreadable: {error}", scan)
    manifest_hash, scan_hash = manifest.content_hash(), scan.content_hash()
    current = [a for a in approvals if a.manifest_hash == manifest_hash and a.scan_hash == scan_hash]
    if not current:
        return PromotionStatus(False, "safety scan passed; awaiting approval", scan)
    latest = current[-1]
    note = f": {latest.note}" if latest.note else ""
    if latest.decision == "reject":
        return PromotionStatus(False, f"rejected by {latest.approver} at {latest.at}{note}", scan, latest)
    if verify_files:
        changed = verify_model_files(run_dir, manifest)
        if changed:
            return PromotionStatus(
                False,
                f"approved, but the model files differ from the manifest ({'; '.join(changed[:5])})",
                scan,
                latest,
            )
    return PromotionStatus(True, f"approved by {latest.approver} at {latest.at}{note}", scan, latest, "promoted")
