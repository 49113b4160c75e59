"""`secverify export`: a sanitized bundle of a period's results for sharing outside the team.

The bundle holds the benchmark sheet (sheet/), each environment's report of the same cadence and period
(reports/<env>/: markdown, HTML, JSON, plots), and for every run in the sheet its metadata, summary and samples
(runs/<env name>--<model>/<run id>/: metadata.json, summary.json, samples.jsonl). Everything textual goes through
sv_shared.publishing: secrets and local paths are replaced by markers, samples keep no model text
(sv_shared.publishing.run_files). PNG plots are copied as drawn: their pixels and metadata (matplotlib's Software tag)
are not scanned. manifest.json lists every file
with its sha256 and size, and how many replacements each rule made.

The bundle is assembled in a private folder beside its destination and moved into place in one step (a folder by
rename, which refuses an existing destination; a .tar.gz by atomic replacement), so a reader never sees half a bundle
and two exports at once never mix their files. Tar members carry no owner names, ids or local times.
"""

from __future__ import annotations

import json
import os
import shutil
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from secverify_dagster.publishing.benchmark_sheet import SheetCadence, SheetContent, compose_sheet, write_sheet
from secverify_dagster.reports.environment_report import build_report
from secverify_dagster.reports.scope import report_scope
from sv_shared.contracts import Environment
from sv_shared.data.files import json_text, replacing, write_json_atomic, write_text_atomic
from sv_shared.data.hashing import sha256_hex
from sv_shared.publishing.run_files import public_sample
from sv_shared.publishing.sanitize import LocalFacts, Sanitizer
from sv_shared.runs.folder import RunFolder

BUNDLE_FORMAT: Final = "secverify-export-1"
TEXT_SUFFIXES: Final = frozenset({".md", ".html", ".txt", ".csv"})
REPORT_FILES: Final = frozenset({"report.md", "report.html", "report.json"})
"""What a bundle takes from a report folder, besides its PNG plots: the trajectory pages beside a report show prompts
and completions, model text a bundle never holds."""
ARCHIVE_SUFFIXES: Final = (".tar.gz", ".tgz")
POLICY: Final = {
    "samples": "no model text: prompt and completion kept as sha256 and length (a completion that is already a "
    "redaction marker is kept as the marker); parsed answers and details left out",
    "secrets": "credential formats, Authorization headers, bearer tokens, values of *_KEY/*_TOKEN/*_SECRET/*_PASSWORD "
    "environment variables and secret-named fields replaced by [REDACTED credential:<rule>]",
    "paths": "outputs root -> outputs, project root -> ., home -> ~, any other absolute path -> [REDACTED path]",
    "identity": "host name -> [REDACTED host], user name -> [REDACTED user]",
    "images": "PNG plots copied as drawn; their metadata is not scanned",
}


class ExportError(RuntimeError):
    """The bundle cannot be written where it was asked to go."""


@dataclass(frozen=True)
class Bundle:
    path: Path
    manifest: dict[str, Any]


def is_archive(destination: Path) -> bool:
    return destination.name.endswith(ARCHIVE_SUFFIXES)


def _copy_runs(content: SheetContent, evals_root: Path, runs_dir: Path, sanitizer: Sanitizer) -> list[dict[str, Any]]:
    """Each run of the sheet, sanitized: metadata.json, summary.json and samples.jsonl (no model text)."""
    listed = []
    for sheet in content.envs:
        for cell in sheet.cells.values():
            source = RunFolder(evals_root / cell.run_path)
            target = runs_dir / cell.run_path
            target.mkdir(parents=True, exist_ok=True)
            for path in (source.metadata_path, source.summary_path):
                raw = json.loads(path.read_text(encoding="utf-8"))
                write_json_atomic(target / path.name, sanitizer.json(raw))
            samples = [json_text(public_sample(record.as_dict(), sanitizer)) for record in source.read_results()]
            write_text_atomic(target / "samples.jsonl", "".join(f"{line}\n" for line in samples))
            listed.append({"env": sheet.env_id, "model": cell.model_id, "run_id": cell.run_id, "path": cell.run_path})
    return listed


def _build_reports(
    envs: Sequence[Environment],
    evals_root: Path,
    reports_dir: Path,
    sanitizer: Sanitizer,
    *,
    cadence: SheetCadence,
    period: str | None,
    now: datetime,
    parents: Mapping[str, str] | None,
) -> None:
    """Each environment's report of the cadence's period, as its report asset builds it, keeping only the report
    itself and its plots (the files left out are counted under `left-out:<name>`)."""
    for env in envs:
        out_dir = reports_dir / env.env_id
        scope = report_scope(env, cadence, period=period, now=now)
        build_report(env, evals_root, out_dir, scope=scope, parents=parents)
        for path in sorted(out_dir.rglob("*")):
            if path.is_file() and path.name not in REPORT_FILES and path.suffix != ".png":
                sanitizer.counts[f"left-out:{path.name}"] += 1
                path.unlink()


def _sanitize_in_place(folder: Path, sanitizer: Sanitizer) -> None:
    """Every text and JSON file under folder sanitized (reports and sheet as built); images are left as drawn."""
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        if path.suffix == ".json":
            write_json_atomic(path, sanitizer.json(json.loads(path.read_text(encoding="utf-8"))))
        elif path.suffix in TEXT_SUFFIXES:
            write_text_atomic(path, sanitizer.text(path.read_text(encoding="utf-8")))


def _file_list(folder: Path) -> list[dict[str, Any]]:
    return [
        {
            "path": path.relative_to(folder).as_posix(),
            "sha256": sha256_hex(path.read_bytes()),
            "bytes": path.stat().st_size,
        }
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    ]


def _anonymous(member: tarfile.TarInfo) -> tarfile.TarInfo:
    member.uid = member.gid = 0
    member.uname = member.gname = ""
    member.mtime = 0
    return member


def _publish(staging: Path, destination: Path) -> None:
    if is_archive(destination):
        destination.parent.mkdir(parents=True, exist_ok=True)
        with replacing(destination) as tmp, tarfile.open(tmp, "w:gz") as archive:
            for path in sorted(staging.rglob("*")):
                archive.add(path, arcname=path.relative_to(staging).as_posix(), recursive=False, filter=_anonymous)
        return
    if destination.exists():
        raise ExportError(f"{destination} already exists: choose a new folder (an export never overwrites one)")
    try:
        os.rename(staging, destination)
    except OSError as error:
        raise ExportError(f"{destination} could not be created ({error.strerror}): another export took it?") from None


def default_destination(outputs_root: Path, label: str, now: datetime) -> Path:
    """outputs/exports/<period label>-<UTC time>[-N]: a name no earlier export has."""
    stamp = now.strftime("%Y-%m-%dT%H%M%SZ")
    exports = outputs_root / "exports"
    for attempt in range(1, 1000):
        candidate = exports / (f"{label}-{stamp}" if attempt == 1 else f"{label}-{stamp}-{attempt}")
        if not candidate.exists():
            return candidate
    raise ExportError(f"no free export name for {label}-{stamp} under {exports}")


def export_bundle(
    envs: Sequence[Environment],
    outputs_root: Path,
    destination: Path | None = None,
    *,
    project_root: Path,
    cadence: SheetCadence = "biweekly",
    period: str | None = None,
    now: datetime | None = None,
    model_envs: Mapping[str, Sequence[str]] | None = None,
    parents: Mapping[str, str] | None = None,
    facts: LocalFacts | None = None,
) -> Bundle:
    """The sanitized bundle of `envs` for a cadence's period (as the benchmark sheet chooses its runs), written to
    destination (a folder, or a .tar.gz), by default a new folder under outputs/exports/."""
    moment = now or datetime.now(UTC)
    evals_root = outputs_root / "evals"
    content = compose_sheet(envs, evals_root, cadence=cadence, period=period, now=moment, model_envs=model_envs)
    target = destination or default_destination(outputs_root, content.label, moment)
    if not is_archive(target) and target.exists():
        raise ExportError(f"{target} already exists: choose a new folder (an export never overwrites one)")
    target.parent.mkdir(parents=True, exist_ok=True)
    sanitizer = Sanitizer(facts or LocalFacts.of_this_machine(outputs=outputs_root, project=project_root))
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        write_sheet(content, staging / "sheet")
        _build_reports(
            envs,
            evals_root,
            staging / "reports",
            sanitizer,
            cadence=cadence,
            period=period,
            now=moment,
            parents=parents,
        )
        _sanitize_in_place(staging, sanitizer)
        runs = _copy_runs(content, evals_root, staging / "runs", sanitizer)
        manifest = {
            "format": BUNDLE_FORMAT,
            "generated_at": moment.isoformat(),
            "cadence": cadence,
            "period": content.label,
            "full_eval": cadence == "biweekly",
            "envs": [env.env_id for env in envs],
            "runs": runs,
            "policy": POLICY,
            "redactions": dict(sorted(sanitizer.counts.items())),
            "files": _file_list(staging),
        }
        write_json_atomic(staging / "manifest.json", manifest)
        _publish(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Bundle(target, manifest)
