"""What the auditor audits and what its chains share: the subjects under one outputs folder (eval runs, reports,
checkpoints) found by name; the model registry and the code-version link that eval runs and checkpoints both have;
a report's JSON and the runs it names."""

from __future__ import annotations

import json
import subprocess
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from secverify_dagster.audit.links import Link, SubjectKind, missing, present
from secverify_dagster.resources.models import ModelSpec, load_registry
from sv_shared.config import ConfigError, project_root
from sv_shared.training.checkpoints import CheckpointManifest, checkpoint_dir, list_checkpoints


class UnknownSubjectError(LookupError):
    """What was asked to be audited is no eval run, report or checkpoint here; the message lists what is."""


@dataclass(frozen=True)
class Subject:
    kind: SubjectKind
    name: str
    path: Path
    """The run folder, the report's report.json, or the checkpoint's run folder."""


class Subjects:
    """What every chain of an Auditor reads: the subjects to audit, the model registry, the code versions (the state
    they keep, once per Auditor, is set by Auditor.__init__)."""

    # -- what can be audited -----------------------------------------------------------------------------------------

    @property
    def checkpoints_root(self) -> Path:
        return self.outputs / "checkpoints"

    def eval_runs(self) -> list[Path]:
        """Every eval run folder: the feature-ablated view runs under evals/views/<view>/<env>--<model>/<run id>/
        (whose numbers E1's reports publish too), the re-scored runs under evals/ablations/<ablation>/…, then the
        runs on whole splits, evals/<env>--<model>/<run id>/ (last, so listings that show the newest few show those)."""
        evals = self.outputs / "evals"
        views = sorted(path.parent for path in evals.glob("views/*/*/*/metadata.json"))
        rescored = sorted(path.parent for path in evals.glob("ablations/*/*/*/metadata.json"))
        return views + rescored + sorted(path.parent for path in evals.glob("*/*/metadata.json"))

    def reports(self) -> list[Path]:
        return sorted((self.outputs / "reports").rglob("report.json"))

    def manifests(self) -> dict[str, CheckpointManifest]:
        if self._manifests is None:
            with warnings.catch_warnings():
                # An unreadable manifest is no checkpoint: its id shows up below as one without a manifest.
                warnings.simplefilter("ignore")
                self._manifests = {m.model_id: m for m in list_checkpoints(self.checkpoints_root)}
        return self._manifests

    def resolve(self, text: str) -> Subject:
        """An eval run (its id, `<env name>--<model>/<run id>` or folder), a report (its folder relative to
        outputs/reports, its folder or report.json) or a checkpoint (its model id or folder)."""
        path = Path(text).resolve() if Path(text).exists() else Path(text)
        if path.is_dir() and (path / "metadata.json").is_file():
            return Subject("eval run", f"{path.parent.name}/{path.name}", path)
        report = path if path.name == "report.json" else (path.parent if path.is_file() else path) / "report.json"
        if report.is_file():
            return Subject("report", self._report_name(report), report)
        if path.is_dir() and (path / "manifest.json").is_file():
            for model_id, manifest in self.manifests().items():
                if checkpoint_dir(self.checkpoints_root, manifest).resolve() == path.resolve():
                    return Subject("checkpoint", model_id, path)
        if text in self.manifests():
            return Subject("checkpoint", text, checkpoint_dir(self.checkpoints_root, self.manifests()[text]))
        runs = [run for run in self.eval_runs() if text in (run.name, f"{run.parent.name}/{run.name}")]
        if len(runs) > 1:
            raise UnknownSubjectError(
                f"{text!r} names {len(runs)} eval runs; name one as <env name>--<model>/<run id>: "
                + ", ".join(f"{run.parent.name}/{run.name}" for run in runs)
            )
        if runs:
            return Subject("eval run", f"{runs[0].parent.name}/{runs[0].name}", runs[0])
        reports = [report for report in self.reports() if text in (report.parent.name, self._report_name(report))]
        if len(reports) == 1:
            return Subject("report", self._report_name(reports[0]), reports[0])
        raise UnknownSubjectError(self._unknown(text))

    def _report_name(self, report_json: Path) -> str:
        folder = report_json.parent
        try:
            return folder.relative_to(self.outputs / "reports").as_posix()
        except ValueError:
            return str(folder)

    def _unknown(self, text: str, shown: int = 5) -> str:
        runs = [f"{run.parent.name}/{run.name}" for run in self.eval_runs()]
        reports = [self._report_name(report) for report in self.reports()]
        checkpoints = list(self.manifests())
        lines = [f"{text!r} is no eval run, report or checkpoint under {self.outputs}. It can audit:"]
        for what, names, form in (
            ("eval runs", runs, "<run id> or <env name>--<model>/<run id>"),
            ("reports", reports, "<env>/<report folder> under outputs/reports, or a report.json"),
            ("checkpoints", checkpoints, "<model id>"),
        ):
            listed = ", ".join(names[-shown:]) if names else "none yet"
            more = f" (and {len(names) - shown} more)" if len(names) > shown else ""
            lines.append(f"  {len(names)} {what} ({form}): {listed}{more}")
        return "\n".join(lines)

    # -- shared by the chains ----------------------------------------------------------------------------------------

    def registry(self) -> dict[str, ModelSpec] | None:
        if self._registry is None and not self._registry_error:
            try:
                self._registry = load_registry(checkpoints_root=self.checkpoints_root)
            except (ConfigError, OSError) as error:
                self._registry_error = str(error)
        return self._registry

    def _code(self, versions: Sequence[str], dirty_paths: Sequence[str] | None) -> Link:
        unique = list(dict.fromkeys(versions))
        facts: dict[str, Any] = {"versions": unique}
        name = unique[0][:12] if unique else "none"
        if not unique or "unknown" in unique:
            return missing("code version", name, "not recorded (the checkout was no git repository)", facts=facts)
        commits = list(dict.fromkeys(version.removesuffix("-dirty") for version in unique))
        lost = [commit for commit in commits if self._commit_known(commit) is False]
        if lost:
            why = f"commit {', '.join(c[:12] for c in lost)} is not in the repository at {project_root()}"
            return missing("code version", name, why, facts=facts)
        notes = []
        if any(version.endswith("-dirty") for version in unique):
            facts["dirty_paths"] = list(dirty_paths) if dirty_paths is not None else "not recorded"
            notes.append("uncommitted changes: the commit alone does not reproduce it")
        if len(unique) > 1:
            notes.append("its sessions ran different code versions")
        return present("code version", name, note="; ".join(notes), facts=facts)

    def _commit_known(self, commit: str) -> bool | None:
        """Whether the checkout's repository holds the commit (None: no repository to ask)."""
        if commit not in self._commits:
            try:
                result = subprocess.run(
                    ["git", "cat-file", "-e", f"{commit}^{{commit}}"],
                    cwd=project_root(),
                    capture_output=True,
                    timeout=10,
                    check=False,
                )
                inside = subprocess.run(
                    ["git", "rev-parse", "--is-inside-work-tree"],
                    cwd=project_root(),
                    capture_output=True,
                    timeout=10,
                    check=False,
                )
                self._commits[commit] = (result.returncode == 0) if inside.returncode == 0 else None
            except (OSError, subprocess.SubprocessError):
                self._commits[commit] = None
        return self._commits[commit]


def recipe_kind(manifest: CheckpointManifest) -> str:
    return "sft" if manifest.stage == "sft" else "rlft"


def read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def run_entries(runs: Any, label: str = "") -> Iterator[tuple[str, str]]:
    """(label, run folder) of every run a report names: `runs` maps a model to its folder, or to an object with a
    run_dir, possibly nested (per environment); labels are the keys on the way down."""
    if isinstance(runs, str):
        yield label, runs
    elif isinstance(runs, Mapping):
        if isinstance(runs.get("run_dir"), str):
            yield label, runs["run_dir"]
            return
        for key, value in runs.items():
            yield from run_entries(value, f"{label}/{key}" if label else str(key))
    elif isinstance(runs, list):
        for index, value in enumerate(runs):
            yield from run_entries(value, f"{label}[{index}]")
