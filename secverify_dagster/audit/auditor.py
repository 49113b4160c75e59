"""`secverify audit`: the chain behind an eval run, a report or a checkpoint, checked link by link.

For an eval run: its numbers recomputed from results.jsonl; the model (a checkpoint: its whole training chain); the
items (curated split → manifest → raw corpora, synthetic generators; a fallback corpus named as one); the verifier and
its tools' versions; the code version; dialogue counterparts and judge; the Dagster run that materialized it. For a
report: each number it publishes against its run's summary, and each run's chain. For a checkpoint: model files,
recipe, training data, parent, code, the Dagster run; its safety scan and approval (optional links). Every hash that
can be recomputed is (see audit.datasets); a record is never taken on its word.

The audit reads files and the Dagster event log and writes nothing. The governance asset and the CLI both use it.
Auditor is the chains of eval_runs, checkpoints and reports over subjects (what can be audited, what they share).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from secverify_dagster.audit.checkpoints import CheckpointChains
from secverify_dagster.audit.datasets import DatasetAuditor
from secverify_dagster.audit.eval_runs import RunChains
from secverify_dagster.audit.events import DagsterRecords
from secverify_dagster.audit.links import Audit, Link
from secverify_dagster.audit.reports import ReportChains
from secverify_dagster.audit.subjects import Subject, read_json, run_entries
from secverify_dagster.resources.models import ModelSpec
from sv_shared.training.checkpoints import CheckpointManifest, checkpoint_dir
from sv_shared.training.promotion import promotion_status


class Auditor(RunChains, CheckpointChains, ReportChains):
    """Audits subjects under one outputs folder against one Dagster event log; each chain is built once."""

    def __init__(self, outputs: Path, events: DagsterRecords) -> None:
        self.outputs = outputs
        self.events = events
        self.datasets = DatasetAuditor(outputs, events)
        self._runs: dict[Path, Link] = {}
        self._checkpoints: dict[str, Link] = {}
        self._registry: dict[str, ModelSpec] | None = None
        self._registry_error = ""
        self._manifests: dict[str, CheckpointManifest] | None = None
        self._commits: dict[str, bool | None] = {}
        self._tournament_runs: dict[Path, str] | None = None

    def audit(self, subject: Subject) -> Audit:
        if subject.kind == "eval run":
            return Audit("eval run", subject.name, self.run_chain(subject.path))
        if subject.kind == "report":
            return Audit("report", subject.name, self.report_chain(subject.path))
        return Audit("checkpoint", subject.name, self.checkpoint_chain(subject.name))

    def published(self) -> list[Audit]:
        """Every published number's chain: each report, each eval run a report used, each promoted checkpoint."""
        audits: list[Audit] = []
        used: dict[Path, str] = {}
        for report in self.reports():
            audits.append(self.audit(Subject("report", self._report_name(report), report)))
            for _, run_dir in run_entries(read_json(report).get("runs")):
                used.setdefault(Path(run_dir).resolve(), f"{Path(run_dir).parent.name}/{Path(run_dir).name}")
        audits += [Audit("eval run", name, self.run_chain(path)) for path, name in sorted(used.items())]
        for model_id, manifest in self.manifests().items():
            if promotion_status(checkpoint_dir(self.checkpoints_root, manifest)).promoted:
                audits.append(Audit("checkpoint", model_id, self.checkpoint_chain(model_id)))
        return audits


def governance_record(audits: Sequence[Audit]) -> dict[str, Any]:
    """What the governance asset publishes: how many chains were audited, and each incomplete one with its gaps."""
    incomplete = [audit for audit in audits if not audit.complete]
    return {
        "audited": len(audits),
        "complete": len(audits) - len(incomplete),
        "incomplete": [
            {
                "kind": audit.kind,
                "subject": audit.subject,
                "gaps": [gap.as_dict() | {"describe": gap.describe()} for gap in audit.gaps],
            }
            for audit in incomplete
        ],
    }
