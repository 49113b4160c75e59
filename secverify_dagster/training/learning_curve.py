"""A checkpoint's learning curve written beside it: learning_curve.png (three panels against step), and
learning_curve.json (the rows and the headline figures), from the history its manifest records
(sv_shared.training.learning_curves picks the figures)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sv_shared.data.files import replacing, write_json_atomic
from sv_shared.training.checkpoints import CheckpointManifest, checkpoint_dir
from sv_shared.training.learning_curves import curve_markdown, curve_rows, curve_summary, plot_learning_curve

CURVE_PLOT = "learning_curve.png"
CURVE_FILE = "learning_curve.json"


@dataclass(frozen=True)
class LearningCurve:
    model_id: str
    rows: list[dict[str, float]]
    summary: dict[str, Any]
    plot: Path
    path: Path

    def markdown(self) -> str:
        return f"![learning curve]({self.plot.name})\n\n{curve_markdown(self.rows)}"


def write_learning_curve(manifest: CheckpointManifest, checkpoints_root: Path) -> LearningCurve:
    """Draw and record the checkpoint's curve in its folder (each file replaced whole, so two writers never leave a
    torn one)."""
    folder = checkpoint_dir(checkpoints_root, manifest)
    rows = curve_rows(manifest.metrics.get("history") or [])
    summary = curve_summary(rows)
    with replacing(folder / CURVE_PLOT) as tmp:
        plot_learning_curve(rows, tmp, title=f"{manifest.model_id} ({manifest.stage} {manifest.recipe_name})")
    path = folder / CURVE_FILE
    write_json_atomic(path, {"model_id": manifest.model_id, "summary": summary, "rows": rows})
    return LearningCurve(manifest.model_id, rows, summary, folder / CURVE_PLOT, path)
