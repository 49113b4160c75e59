"""The report's ablation section: the environment's latest ablation table (written by `secverify ablate` or the
<env>/ablations asset under outputs/reports/<env>/ablations/), shown one heading level down."""

from __future__ import annotations

from pathlib import Path

from sv_shared.runs.ablation_table import TABLE_JSON, TABLE_MARKDOWN
from sv_shared.runs.folder import read_json

ABLATIONS_REPORT_FOLDER = "ablations"


def ablations_report_dir(env_reports: Path) -> Path:
    """outputs/reports/<env>/ablations/: where an environment's latest ablation table is written."""
    return env_reports / ABLATIONS_REPORT_FOLDER


def ablation_report_lines(env_reports: Path) -> list[str]:
    """The section's markdown lines: the latest table with its time, or a line saying there is none yet."""
    folder = ablations_report_dir(env_reports)
    markdown_path = folder / TABLE_MARKDOWN
    if not markdown_path.is_file():
        return ["", "## Ablations", "", f"No ablation table yet (`secverify ablate` writes {markdown_path})."]
    generated = read_json(folder / TABLE_JSON).get("generated_at") if (folder / TABLE_JSON).is_file() else None
    body = markdown_path.read_text(encoding="utf-8").splitlines()[1:]
    return [
        "",
        f"## Ablations (table of {generated or 'unknown time'})",
        *(f"#{line}" if line.startswith("## ") else line for line in body),
    ]
