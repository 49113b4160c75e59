"""Every finished checkpoint's lineage and promotion status, read from its folder (no model runs here: the reports
and `secverify checkpoints` list them; promotion.py decides them)."""

from __future__ import annotations

from typing import Any

from secverify_dagster.training.paths import TrainingPaths
from sv_shared.training.checkpoints import checkpoint_dir, list_checkpoints
from sv_shared.training.promotion import promotion_status


def checkpoint_rows(paths: TrainingPaths) -> list[dict[str, Any]]:
    """Every finished checkpoint with its lineage and promotion status (for `secverify checkpoints` and reports)."""
    rows = []
    for manifest in list_checkpoints(paths.checkpoints):
        status = promotion_status(checkpoint_dir(paths.checkpoints, manifest))
        rows.append(
            {
                "model_id": manifest.model_id,
                "stage": manifest.stage,
                "parent_model": manifest.parent_model,
                "promoted": status.promoted,
                "state": status.state,
                "promotion": "yes" if status.promoted else f"no: {status.reason}",
            }
        )
    return rows
