"""A checkpoint's eval results: the checkpoint, its parent and its base model on the held-out test split of every
environment it was trained on, compared item by item.

The runs are ordinary eval runs (outputs/evals/<env>--<model>/<run id>/) made with the eval asset's defaults (seed
42, the environment's default N, the test split, single turn), so their run ids are the ones the new-model sensor's
backfill makes: whichever comes second resumes the complete run instead of generating again. The comparison
(paired bootstrap over the items both scored, the answer profile, the promotion state) is written next to the
checkpoint as evals.json, and is what its Dagster asset shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from secverify_dagster.reports.runs import RunView, paired_delta
from secverify_dagster.resources.models import ModelSpec
from secverify_dagster.runner.eval_runner import EvalRunner
from secverify_dagster.training.paths import Log, TrainingError, TrainingPaths
from secverify_dagster.training.promotion import scan_dataset
from sv_shared.data.files import write_json_atomic
from sv_shared.registry import get_environment
from sv_shared.runs.records import FinishedRun
from sv_shared.training.checkpoints import CheckpointManifest, checkpoint_dir
from sv_shared.training.promotion import promotion_status

EVALS_FILE = "evals.json"
"""The comparison, beside the checkpoint's manifest."""


@dataclass(frozen=True)
class ModelResult:
    """One model's run on one environment."""

    model_id: str
    role: str
    """"checkpoint", "parent" or "base"."""
    run_dir: Path
    reward_mean: float
    n: int
    collapsed: str | None
    """Why its answers collapsed onto one label; None when they did not (or answers are not labels)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "model_id": self.model_id,
            "role": self.role,
            "run_dir": str(self.run_dir),
            "reward_mean": self.reward_mean,
            "n": self.n,
            "collapsed": self.collapsed,
        }


@dataclass(frozen=True)
class EnvComparison:
    """The checkpoint against the models it came from on one environment."""

    env_id: str
    results: tuple[ModelResult, ...]
    deltas: dict[str, dict[str, Any]]
    """Role ("parent", "base") → paired bootstrap of checkpoint − that model over the items both scored."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "env": self.env_id,
            "results": [result.as_dict() for result in self.results],
            "deltas": self.deltas,
        }


@dataclass(frozen=True)
class CheckpointEvals:
    model_id: str
    parent_model: str
    base_model: str
    promotion: str
    comparisons: tuple[EnvComparison, ...]
    path: Path

    def as_dict(self) -> dict[str, Any]:
        return {
            "model_id": self.model_id,
            "parent_model": self.parent_model,
            "base_model": self.base_model,
            "promotion": self.promotion,
            "comparisons": [comparison.as_dict() for comparison in self.comparisons],
        }

    def markdown(self) -> str:
        """The table a reviewer reads before approving: rewards, paired deltas with their CIs, collapse."""
        lines = [
            f"**{self.model_id}** (parent {self.parent_model}, base {self.base_model}): {self.promotion}",
            "",
            "| env | checkpoint | parent | base | Δ vs parent [95% CI] | Δ vs base [95% CI] | collapsed |",
            "|---|---|---|---|---|---|---|",
        ]
        for comparison in self.comparisons:
            by_role = {result.role: result for result in comparison.results}
            cells = [f"{by_role[role].reward_mean:.3f}" if role in by_role else "–" for role in _ROLES]
            deltas = [_delta_text(comparison.deltas.get(role)) for role in ("parent", "base")]
            collapsed = "; ".join(
                f"{result.role}: {result.collapsed}" for result in comparison.results if result.collapsed
            )
            lines.append(f"| {comparison.env_id} | {' | '.join(cells)} | {' | '.join(deltas)} | {collapsed or 'no'} |")
        return "\n".join(lines)


_ROLES = ("checkpoint", "parent", "base")


def _delta_text(delta: Mapping[str, Any] | None) -> str:
    if not delta:
        return "–"
    return f"{delta['delta']:+.3f} [{delta['ci_low']:+.3f}, {delta['ci_high']:+.3f}] (n={delta['n']})"


def _roles(manifest: CheckpointManifest) -> dict[str, str]:
    """Role → model id; a checkpoint trained straight from its base has no separate parent row."""
    roles = {"checkpoint": manifest.model_id, "parent": manifest.parent_model}
    if manifest.base_model != manifest.parent_model:
        roles["base"] = manifest.base_model
    return roles


def evaluate_checkpoint(
    manifest: CheckpointManifest,
    *,
    paths: TrainingPaths,
    registry: Mapping[str, ModelSpec],
    log: Log = print,
) -> CheckpointEvals:
    """Evaluate (or resume) the checkpoint, its parent and its base on each of its environments, compare them, and
    write evals.json beside the checkpoint."""
    roles = _roles(manifest)
    unknown = sorted(model for model in roles.values() if model not in registry)
    if unknown:
        raise TrainingError(f"{manifest.model_id}: not in the model registry: {', '.join(unknown)}")
    comparisons = []
    cache = paths.response_cache()
    try:
        for env_id in manifest.envs:
            env = get_environment(env_id)
            dataset = scan_dataset(env, paths)
            results, views = [], {}
            for role, model_id in roles.items():
                n = env.config.eval.default_n
                log(f"{manifest.model_id}: {role} {model_id} on {env_id} (n={n}, seed 42, test split)")
                runner = EvalRunner(
                    env, registry[model_id], evals_root=paths.evals, cache=cache, registry=dict(registry)
                )
                outcome = runner.run(dataset, n=n, seed=42)
                if outcome.status != "complete" or outcome.run_dir is None:
                    raise TrainingError(
                        f"{model_id} on {env_id}: {outcome.status} ({outcome.reason or 'see its errors.jsonl'})"
                    )
                view = RunView.read(FinishedRun(outcome.run_dir, outcome.metadata))
                views[role] = view
                answers = view.metrics.get("answers") or {}
                results.append(
                    ModelResult(
                        model_id=model_id,
                        role=role,
                        run_dir=outcome.run_dir,
                        reward_mean=float(view.metrics["reward"]["mean"]),
                        n=int(view.metrics["n"]),
                        collapsed=answers.get("collapse") if answers.get("collapsed") else None,
                    )
                )
            comparisons.append(EnvComparison(env_id, tuple(results), _deltas(views)))
    finally:
        cache.close()
    folder = checkpoint_dir(paths.checkpoints, manifest)
    status = promotion_status(folder, verify_files=False)
    evals = CheckpointEvals(
        model_id=manifest.model_id,
        parent_model=manifest.parent_model,
        base_model=manifest.base_model,
        promotion="promoted" if status.promoted else f"not promoted: {status.reason}",
        comparisons=tuple(comparisons),
        path=folder / EVALS_FILE,
    )
    write_json_atomic(evals.path, evals.as_dict())
    return evals


def _deltas(views: Mapping[str, RunView]) -> dict[str, dict[str, Any]]:
    """Role ("parent", "base") → the checkpoint's paired delta against that model."""
    deltas = {}
    for role in ("parent", "base"):
        if role in views and (result := paired_delta(views["checkpoint"], views[role])) is not None:
            deltas[role] = result.to_dict()
    return deltas
