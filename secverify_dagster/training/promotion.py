"""Before a checkpoint is promoted: the safety scan (its replies judged on held-out conversations, next to its
parent's on the same items, and its answers on every environment it was trained on checked for collapse onto one
label), and a reviewer's approval (every checkpoint's status: statuses.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from secverify_dagster.resources.models import ModelSpec
from secverify_dagster.runner.datasets import EvalDataset
from secverify_dagster.runner.eval_runner import EvalRunner
from secverify_dagster.training.parents import checkpoint_by_id
from secverify_dagster.training.paths import Log, TrainingError, TrainingPaths
from secverify_dagster.training.settings import SafetyScanSettings, load_promotion_config
from sv_shared.answers.collapse import profile_line
from sv_shared.contracts import Environment
from sv_shared.data.datasets import read_dataset
from sv_shared.data.hashing import sha256_hex
from sv_shared.registry import get_environment
from sv_shared.runs.folder import RunFolder
from sv_shared.training.checkpoints import CheckpointManifest, checkpoint_dir
from sv_shared.training.promotion import PromotionStatus, promotion_status, record_approval, record_safety_scan


@dataclass(frozen=True)
class SafetyScan:
    """A checkpoint's safety scan: its unsafe conversations next to its parent's on the same items."""

    model_id: str
    parent_model: str
    env_id: str
    judge: str
    dataset: str
    samples: int
    unsafe: int
    parent_unsafe: int
    passed: bool
    reason: str
    run_dir: Path
    parent_run_dir: Path
    collapsed: dict[str, str]
    """Trained environment id -> the collapse flag, where the checkpoint's answers collapsed onto one label."""
    answer_runs: dict[str, Path]
    """Trained environment id -> the run folder of the collapse check's eval."""


def _unsafe_ids(run_dir: Path) -> tuple[int, list[str]]:
    """(scanned conversations, ids of those with a reply judged unsafe) of a finished dialogue run."""
    records = RunFolder(run_dir).read_results()
    unsafe = [record.id for record in records if (record.details or {}).get("outcome") == "unsafe_compliance"]
    return len(records), unsafe


def scan_dataset(env: Environment, paths: TrainingPaths) -> EvalDataset:
    path = paths.datasets(env.env_id) / "curated" / "test.parquet"
    if not path.is_file():
        raise TrainingError(f"the safety scan reads {path}; materialize {env.env_id}/curated_splits first")
    return EvalDataset(frame=read_dataset(path), source=str(path), split="test")


def _evaluate(
    env: Environment,
    model: str,
    dataset: EvalDataset,
    n: int,
    paths: TrainingPaths,
    registry: Mapping[str, ModelSpec],
    cache: Any,
    judge: str | None = None,
) -> Path:
    runner = EvalRunner(env, registry[model], evals_root=paths.evals, cache=cache, judge=judge, registry=dict(registry))
    outcome = runner.run(dataset, n=n, seed=42, progress=lambda done, total: None)
    if outcome.status != "complete" or outcome.run_dir is None:
        raise TrainingError(f"safety scan of {model} on {env.env_id}: {outcome.status} ({outcome.reason})")
    return outcome.run_dir


def _collapse_checks(
    checkpoint: CheckpointManifest,
    settings: SafetyScanSettings,
    paths: TrainingPaths,
    registry: Mapping[str, ModelSpec],
    cache: Any,
    log: Log,
) -> tuple[dict[str, str], dict[str, Path]]:
    """The checkpoint's answers on each environment it was trained on: where answers are labels, whether they
    collapsed onto one (env id -> flag), and each check's run folder."""
    collapsed: dict[str, str] = {}
    runs: dict[str, Path] = {}
    for env_id in checkpoint.envs:
        env = get_environment(env_id)
        if not env.verifier.answers_are_labels:
            continue  # findings, patches, dialogues: no single answer to collapse onto
        run_dir = _evaluate(
            env, checkpoint.model_id, scan_dataset(env, paths), settings.answer_check_n, paths, registry, cache
        )
        runs[env_id] = run_dir
        profile = RunFolder(run_dir).read_summary().metrics["answers"]
        log(f"collapse check: {checkpoint.model_id} on {env_id}: {profile_line(profile)} → {run_dir}")
        if profile["collapsed"]:
            collapsed[env_id] = profile["collapse"]
    return collapsed, runs


def safety_scan(
    model_id: str,
    *,
    paths: TrainingPaths,
    registry: Mapping[str, ModelSpec],
    settings: SafetyScanSettings | None = None,
    log: Log = print,
) -> SafetyScan:
    """Judge the checkpoint's replies on the scan environment's held-out conversations (and its parent's, on the
    same items), check its answers on every environment it was trained on for collapse onto one label, record the
    result next to the checkpoint (ids hashed, no text), and say whether it passed."""
    settings = settings or load_promotion_config().safety_scan
    checkpoint = checkpoint_by_id(paths, model_id)
    if checkpoint is None:
        raise TrainingError(f"{model_id!r} is not a finished checkpoint under {paths.checkpoints}")
    env = get_environment(settings.env)
    dataset = scan_dataset(env, paths)
    run_dirs: dict[str, Path] = {}
    cache = paths.response_cache()
    try:
        for model in (model_id, checkpoint.parent_model):
            run_dirs[model] = _evaluate(env, model, dataset, settings.n, paths, registry, cache, settings.judge)
            log(f"safety scan: {model} on {env.env_id} → {run_dirs[model]}")
        collapsed, answer_runs = _collapse_checks(checkpoint, settings, paths, registry, cache, log)
    finally:
        cache.close()
    samples, unsafe = _unsafe_ids(run_dirs[model_id])
    _, parent_unsafe = _unsafe_ids(run_dirs[checkpoint.parent_model])
    share = len(unsafe) / samples if samples else 1.0
    problems = []
    if share > settings.max_unsafe_share:
        problems.append(f"unsafe share {share:.3f} > {settings.max_unsafe_share}")
    if len(unsafe) > len(parent_unsafe) + settings.max_unsafe_increase:
        problems.append(f"{len(unsafe)} unsafe conversations vs the parent's {len(parent_unsafe)}")
    problems += [f"{env_id}: {flag}" for env_id, flag in sorted(collapsed.items())]
    passed = not problems
    reason = "; ".join(problems) or f"{len(unsafe)}/{samples} unsafe (parent {len(parent_unsafe)})"
    record_safety_scan(
        checkpoint_dir(paths.checkpoints, checkpoint),
        judge_id=settings.judge,
        samples=samples,
        unsafe=len(unsafe),
        unsafe_sample_hashes=[sha256_hex(item_id) for item_id in unsafe],
        passed=passed,
        threshold=settings.max_unsafe_share,
        collapsed=collapsed,
    )
    return SafetyScan(
        model_id=model_id,
        parent_model=checkpoint.parent_model,
        env_id=env.env_id,
        judge=settings.judge,
        dataset=dataset.hash,
        samples=samples,
        unsafe=len(unsafe),
        parent_unsafe=len(parent_unsafe),
        passed=passed,
        reason=reason,
        run_dir=run_dirs[model_id],
        parent_run_dir=run_dirs[checkpoint.parent_model],
        collapsed=collapsed,
        answer_runs=answer_runs,
    )


def approve_checkpoint(
    model_id: str, *, paths: TrainingPaths, approver: str, decision: str = "approve", note: str = ""
) -> PromotionStatus:
    """Record a reviewer's decision on a checkpoint (refused without a passing safety scan of that checkpoint)."""
    checkpoint = checkpoint_by_id(paths, model_id)
    if checkpoint is None:
        raise TrainingError(f"{model_id!r} is not a finished checkpoint under {paths.checkpoints}")
    folder = checkpoint_dir(paths.checkpoints, checkpoint)
    record_approval(folder, approver=approver, note=note, decision=decision)
    return promotion_status(folder)
