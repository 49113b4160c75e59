"""What the weekly memo reports besides rewards: new synthetic volumes and outstanding risks, each read from a file
the project already writes and shown with that file's path.

New in the memo's window (see weekly_memo.memo_window):
  synthetic sets     outputs/datasets/<env>/synthetic/<date>/ manifests written in the window: rows requested, kept,
                     dropped (reports.operations.synthetic_batches, as the environment reports count them);
  synthetic batches  outputs/datasets/<env>/batches/<id>/batch.json created in the window: candidates, kept, and
                     the dropped ones by reason (sv_shared.training.candidates.candidate_counts);
  runs               eval runs with a session started in the window that did not finish (running or incomplete),
                     finished with samples given up after repeated failures, or whose answers collapsed onto one
                     label; failed Dagster runs recorded in outputs/run_failures/.
Outstanding as the memo is written (state, not events):
  checkpoints        every trained checkpoint not promoted and not rejected: no safety scan yet, scan failed or
                     collapsed, awaiting a reviewer's approval (sv_shared.training.promotion.promotion_status);
  models             registry models the weekly sweep would leave out as unreachable (a key or endpoint not set,
                     local weights missing), judged from configuration as the sweep judges them;
  judges             stored judge measurements of the current validation sets with Cohen's κ below LOW_JUDGE_KAPPA
                     in either hint mode;
  unfinished batches synthetic batch folders without batch.json (sv_shared.data.review_batches.unfinished_batches:
                     still being built, or stopped part-way; SFT sets drop them), and any manifest or record that
                     cannot be read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Final

from secverify_dagster.audit.run_failures import failure_path, read_failures
from secverify_dagster.reports.operations import synthetic_batches
from secverify_dagster.reports.scope import parse_utc
from secverify_dagster.resources.models import ModelSpec, reachability
from sv_shared.config import project_root
from sv_shared.data.review import ReviewError
from sv_shared.data.review_batches import BATCH_FILE, batches_root, list_batches, unfinished_batches
from sv_shared.judging.measured import correction_figures, measurement_path
from sv_shared.registry import ENV_NAMES
from sv_shared.runs.folder import RunFolder, RunRecordError
from sv_shared.runs.schema import RunMetadata
from sv_shared.training.checkpoints import checkpoint_dir, list_checkpoints
from sv_shared.training.promotion import promotion_status

LOW_JUDGE_KAPPA: Final = 0.6
"""Cohen's κ below this is low agreement (Landis and Koch's "moderate" band ends at 0.60): the judge's rates then
rest heavily on the correction for its error."""


def shown(path: Path) -> str:
    """A path as the memo shows it: relative to the checkout when it lies in it (the memo is committed there), else
    absolute."""
    resolved = path.resolve()
    try:
        return resolved.relative_to(project_root().resolve()).as_posix()
    except ValueError:
        return resolved.as_posix()


@dataclass(frozen=True)
class Window:
    """[start, end) in UTC."""

    start: datetime
    end: datetime

    def contains(self, when: datetime) -> bool:
        return self.start <= when < self.end

    def describe(self) -> str:
        return f"{self.start:%Y-%m-%d %H:%M} – {self.end:%Y-%m-%d %H:%M} UTC"


@dataclass(frozen=True)
class Finding:
    """One line of the memo and the file or folder it was read from."""

    text: str
    source: str

    def line(self) -> str:
        return f"- {self.text} (`{self.source}`)"


@dataclass(frozen=True)
class SyntheticVolume:
    env_id: str
    kind: str
    """"synthetic set" or "synthetic batch"."""
    name: str
    created_at: str
    requested: int
    """Rows asked of the generators (a set), candidates sampled (a batch)."""
    kept: int
    dropped: int
    dropped_why: str
    path: Path


def synthetic_volumes(
    datasets_root: Path, env_ids: Iterable[str], window: Window
) -> tuple[list[SyntheticVolume], list[Finding]]:
    """The synthetic sets and finished synthetic batches created in the window, oldest first, and each manifest or
    batch record that cannot be read and each unfinished batch folder (risks)."""
    volumes: list[SyntheticVolume] = []
    risks: list[Finding] = []
    for env_id in env_ids:
        sets, problems = synthetic_batches(datasets_root / env_id)
        synthetic = datasets_root / env_id / "synthetic"
        risks += [Finding(f"{env_id}: {problem}", shown(synthetic)) for problem in problems]
        volumes += [
            SyntheticVolume(
                env_id=env_id,
                kind="synthetic set",
                name=batch.name,
                created_at=batch.written_at,
                requested=batch.requested,
                kept=batch.kept,
                dropped=batch.dropped,
                dropped_why="",
                path=synthetic / batch.name,
            )
            for batch in sets
            if window.contains(parse_utc(batch.written_at))
        ]
        root = batches_root(datasets_root, env_id)
        try:
            batches = list_batches(root)
        except ReviewError as error:
            risks.append(Finding(f"{env_id}: synthetic batches unreadable: {error}", shown(root)))
            continue
        for batch in batches:
            try:
                volume = _batch_volume(env_id, batch.path, batch.info)
            except (KeyError, TypeError, ValueError, AttributeError) as error:
                risks.append(
                    Finding(f"{env_id}: {BATCH_FILE} unreadable ({type(error).__name__}: {error})", shown(batch.path))
                )
                continue
            if window.contains(parse_utc(volume.created_at)):
                volumes.append(volume)
        risks += [
            Finding(
                f"{env_id}: synthetic batch {batch_id} is unfinished (no {BATCH_FILE}): its build is still running, "
                "or stopped part-way; SFT sets drop it until it is built again",
                shown(root / batch_id),
            )
            for batch_id in unfinished_batches(root)
        ]
    return sorted(volumes, key=lambda volume: (volume.created_at, volume.env_id, volume.name)), risks


def _batch_volume(env_id: str, path: Path, info: Mapping[str, object]) -> SyntheticVolume:
    counts = info["counts"]
    if not isinstance(counts, dict):
        raise TypeError(f"counts is {type(counts).__name__}, not an object")
    dropped = {str(reason): int(count) for reason, count in (counts.get("dropped") or {}).items()}
    return SyntheticVolume(
        env_id,
        "synthetic batch",
        path.name,
        parse_utc(str(info["created_at"])).isoformat(),
        int(counts.get("candidates", 0)),
        int(counts.get("kept", 0)),
        sum(dropped.values()),
        ", ".join(f"{reason} {count}" for reason, count in sorted(dropped.items())),
        path,
    )


@dataclass(frozen=True)
class RunHealth:
    """The window's eval runs as the memo reports them: collapsed policies (notable) and runs that did not finish
    or gave samples up (risks)."""

    collapsed: list[Finding]
    risks: list[Finding]


def _in_window(metadata: RunMetadata, window: Window) -> bool:
    return any(window.contains(parse_utc(session.started_at)) for session in metadata.sessions)


def run_health(evals_root: Path, env_ids: Iterable[str], window: Window) -> RunHealth:
    """Every eval run folder of the environments with a session started in the window."""
    collapsed: list[Finding] = []
    risks: list[Finding] = []
    for env_id in env_ids:
        for path in sorted(evals_root.glob(f"{ENV_NAMES[env_id]}--*/*/metadata.json")):
            folder = RunFolder(path.parent)
            try:
                metadata = folder.read_metadata()
                if not _in_window(metadata, window):
                    continue
                where = f"{env_id} {metadata.model.id}: run {metadata.run_id}"
                if metadata.status != "complete":
                    done = "" if metadata.n_scored is None else f", {metadata.n_scored} of {metadata.n_items} scored"
                    risks.append(Finding(f"{where} is {metadata.status}{done}", shown(folder.path)))
                    continue
                summary = folder.read_summary()
            except RunRecordError as error:
                risks.append(Finding(f"{env_id}: run folder unreadable: {error}", shown(folder.path)))
                continue
            if summary.n_scored < summary.n_items:
                risks.append(
                    Finding(
                        f"{where} gave up {summary.n_items - summary.n_scored} of {summary.n_items} samples after "
                        "repeated failures (counted as failures; see its errors.jsonl)",
                        shown(folder.path),
                    )
                )
            profile = summary.metrics.get("answers") or {}
            if profile.get("collapsed"):
                collapsed.append(Finding(f"{where}: {profile['collapse']}", shown(folder.path)))
    return RunHealth(collapsed, risks)


def failed_runs(run_failures: Path, window: Window) -> list[Finding]:
    """Dagster runs that failed in the window (the run_failure_recorder sensor's records)."""
    failures, problems = read_failures(run_failures)
    found = [Finding(f"failed run records unreadable: {problem}", shown(run_failures)) for problem in problems]
    for failure in failures:
        if window.contains(parse_utc(failure.failed_at)):
            cause = failure.steps[0].cause if failure.steps else failure.message
            first = cause.strip().splitlines()[0][:200] if cause.strip() else "?"
            envs = ", ".join(failure.envs) or "no environment"
            found.append(
                Finding(
                    f"Dagster run {failure.run_id} ({failure.job_name}, {envs}, cadence {failure.cadence or '–'}) "
                    f"failed {failure.failed_at[:16]}: {first}",
                    shown(failure_path(run_failures, failure.run_id)),
                )
            )
    return found


def pending_checkpoints(checkpoints_root: Path) -> list[Finding]:
    """Checkpoints not promoted and not rejected, with why (awaiting approval, no scan yet, scan failed, collapsed,
    scan of an older manifest)."""
    found = []
    for manifest in list_checkpoints(checkpoints_root):
        folder = checkpoint_dir(checkpoints_root, manifest)
        status = promotion_status(folder)
        if status.promoted or (status.approval is not None and status.approval.decision == "reject"):
            continue
        found.append(
            Finding(
                f"checkpoint {manifest.model_id} ({manifest.stage} of {manifest.parent_model}) is {status.state}: "
                f"{status.reason}",
                shown(folder),
            )
        )
    return found


def unreachable_models(registry: Mapping[str, ModelSpec], env_ids: Sequence[str]) -> list[Finding]:
    """Registry models configured for some of the environments that the weekly sweep would leave out because they
    cannot be called from here (cadences.runnable_pairs' reasons, rule baselines aside)."""
    found = []
    for model_id, spec in registry.items():
        envs = [env_id for env_id in env_ids if spec.supports_env(env_id)]
        if spec.provider == "baseline" or not envs:
            continue
        status = reachability(spec, envs[0])
        if not status.ok:
            found.append(
                Finding(
                    f"model {model_id} ({spec.provider}) is skipped on {', '.join(envs)}: {status.reason}",
                    f"model registry: {model_id}",
                )
            )
    return found


def low_agreement_judges(judges_root: Path) -> list[Finding]:
    """Stored measurements of the current validation sets whose κ (what corrected rates use, either hint mode) is
    below LOW_JUDGE_KAPPA or undefined."""
    found = []
    for path in sorted(judges_root.glob("*.json")):
        try:
            measurement = json.loads(path.read_text(encoding="utf-8"))
            judge_id = str(measurement["judge"])
            if measurement_path(judge_id, judges_root).resolve() != path.resolve():
                continue  # measured on an older validation set: not what today's rates use
            figures = {hint: correction_figures(measurement, category_hint=hint) for hint in (True, False)}
        except (OSError, ValueError, KeyError, TypeError) as error:
            found.append(Finding(f"judge measurement unreadable: {type(error).__name__}: {error}", shown(path)))
            continue
        kappas = {hint: confusion.cohen_kappa for hint, (confusion, _) in figures.items()}
        if all(kappa is not None and kappa >= LOW_JUDGE_KAPPA for kappa in kappas.values()):
            continue
        confusion, source = figures[True]
        where = re.split(r"[:(]", str(source["source"]))[0].strip()
        found.append(
            Finding(
                f"judge {judge_id}: Cohen's κ {_kappa(kappas[True])} with the category hint, "
                f"{_kappa(kappas[False])} without (n={confusion.n}, {where}), below {LOW_JUDGE_KAPPA:.2f}: its "
                "judged rates rest heavily on the correction for its error",
                shown(path),
            )
        )
    return found


def _kappa(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"
