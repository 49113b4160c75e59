"""The audit's experiment link: the record a run or checkpoint was made from, and whether its file still has the
hash that was recorded."""

from __future__ import annotations

from secverify_dagster.audit.links import Link, missing, present
from sv_shared.config import project_root
from sv_shared.config.experiments import ref_status
from sv_shared.runs.schema import ExperimentRef


def experiment_link(ref: ExperimentRef) -> Link:
    """Present when the record exists (with a "changed since" note when it was edited after); missing when gone."""
    facts = {"path": ref.path, "sha256": ref.sha256}
    status = ref_status(ref, project_root())
    if status is not None and not (project_root() / ref.path).is_file():
        return missing("experiment", ref.name, status, facts=facts)
    return present("experiment", ref.name, note=status or "the file still has the recorded hash", facts=facts)
