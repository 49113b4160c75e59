"""What running an environment's evals took, for its report: tokens, cost and GPU-hours per model, synthetic-data
volumes, the failed runs of the period, and the code each run was made with ("-dirty" and its files included).

Tokens and cost are counted per session (one invocation of the runner on a run folder) from the model client's
counters the runner records when a session finishes: fresh calls only, so answers served from the response cache cost
nothing again, and a session resumed on a complete run adds nothing. They are the model under evaluation's (dialogue
counterparts and judges are not in these counters). A session that crashed has no counters and is counted as such.

GPU-hours: the wall time of sessions whose model ran on our GPUs, decided from the model's public spec in the run's
metadata: a self-served model (provider openai_compatible at a price of 0, which configs/models.yaml reserves for
models we serve with vLLM on GPU nodes) is on a GPU; API models (priced per token), rule baselines and in-process
local_transformers models count 0. The last run on this machine's CPU; run records do not say which device an
in-process model used, so one run on a CUDA machine is counted as 0 too.

Synthetic batches: outputs/datasets/<env>/synthetic/<batch>/ with their manifests: rows kept, rows requested (n), and
dropped = requested − kept (items a generator rejected, e.g. an oracle-unconfirmed E2 variant).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from secverify_dagster.audit.run_failures import RunFailure, read_failures
from secverify_dagster.reports.runs import RunView
from secverify_dagster.reports.scope import Period, ReportScope, parse_utc
from secverify_dagster.runner.metadata import code_version, dirty_paths
from sv_shared.contracts import Environment
from sv_shared.runs.folder import RunFolder, RunRecordError, read_json
from sv_shared.runs.schema import ModelIdentity, RunMetadata

SELF_SERVED_PROVIDER = "openai_compatible"
RECENT_FAILURES = 10
"""A latest report (no period) lists this many of the environment's most recent failed runs."""
SHOWN_BATCHES = 10
"""Synthetic batches listed, newest first."""


def runs_on_gpu(model: ModelIdentity) -> bool:
    """A model we serve ourselves (see the module's docstring)."""
    return model.provider == SELF_SERVED_PROVIDER and not any(float(price) for price in model.price.values())


@dataclass(frozen=True)
class ModelUsage:
    model_id: str
    provider: str
    sessions: int
    unfinished_sessions: int
    """Sessions with no counters (they crashed before finishing)."""
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    wall_hours: float
    gpu_hours: float


@dataclass
class _Tally:
    sessions: int = 0
    unfinished: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    wall_s: float = 0.0


def run_metadata(evals_root: Path, env_name: str) -> list[RunMetadata]:
    """The metadata of every run of an environment, complete or not (their sessions all cost something)."""
    return [
        RunFolder(path.parent).read_metadata() for path in sorted(evals_root.glob(f"{env_name}--*/*/metadata.json"))
    ]


def usage_by_model(runs: Iterable[RunMetadata], period: Period | None) -> list[ModelUsage]:
    """Per model (model order): its sessions' counters, for the sessions started in `period` (None: all sessions)."""
    tallies: dict[str, _Tally] = {}
    models: dict[str, ModelIdentity] = {}
    for metadata in runs:
        models[metadata.model.id] = metadata.model
        tally = tallies.setdefault(metadata.model.id, _Tally())
        for session in metadata.sessions:
            if period is not None and not period.contains(parse_utc(session.started_at)):
                continue
            tally.sessions += 1
            if session.client is None or session.wall_s is None:
                tally.unfinished += 1
                continue
            tally.prompt_tokens += int(session.client.get("prompt_tokens", 0))
            tally.completion_tokens += int(session.client.get("completion_tokens", 0))
            tally.cost_usd += float(session.client.get("cost_usd", 0.0))
            tally.wall_s += float(session.wall_s)
    return [
        ModelUsage(
            model_id=model_id,
            provider=models[model_id].provider,
            sessions=tally.sessions,
            unfinished_sessions=tally.unfinished,
            prompt_tokens=tally.prompt_tokens,
            completion_tokens=tally.completion_tokens,
            cost_usd=tally.cost_usd,
            wall_hours=tally.wall_s / 3600,
            gpu_hours=tally.wall_s / 3600 if runs_on_gpu(models[model_id]) else 0.0,
        )
        for model_id, tally in sorted(tallies.items())
        if tally.sessions
    ]


def _usage_lines(scope: ReportScope, usage: Sequence[ModelUsage]) -> list[str]:
    where = (
        f"the sessions of every run (any slice, finished or not) started in {scope.period.label}"
        if scope.period
        else "all sessions of the runs in this report"
    )
    lines = [
        "",
        "## Tokens, cost and GPU-hours",
        "",
        f"Per model on this environment, {where}: fresh calls of the model under evaluation (cached "
        "answers cost nothing again). GPU-hours: wall time of self-served models (openai_compatible at price 0, "
        "served by vLLM on our GPUs); API models, rule baselines and in-process local models count 0.",
        "",
    ]
    if not usage:
        return [*lines, "No eval sessions."]
    lines += [
        "| model | provider | sessions | prompt tokens | completion tokens | cost USD | wall h | GPU-h |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in usage:
        crashed = f" ({row.unfinished_sessions} unfinished)" if row.unfinished_sessions else ""
        lines.append(
            f"| {row.model_id} | {row.provider} | {row.sessions}{crashed} | {row.prompt_tokens:,} | "
            f"{row.completion_tokens:,} | {row.cost_usd:.4f} | {row.wall_hours:.3f} | {row.gpu_hours:.3f} |"
        )
    cost, gpu_hours = sum(row.cost_usd for row in usage), sum(row.gpu_hours for row in usage)
    return [*lines, "", f"Total: {cost:.4f} USD, {gpu_hours:.3f} GPU-hours."]


@dataclass(frozen=True)
class SyntheticBatch:
    name: str
    written_at: str
    requested: int
    kept: int
    generators: dict[str, int]

    @property
    def dropped(self) -> int:
        return max(0, self.requested - self.kept)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"dropped": self.dropped}


def synthetic_batches(env_datasets: Path) -> tuple[list[SyntheticBatch], list[str]]:
    """The synthetic batches under <env datasets>/synthetic/<batch>/, newest first, and a message naming each
    manifest that cannot be read (listed in the report rather than stopping it)."""
    batches: list[SyntheticBatch] = []
    problems: list[str] = []
    for path in sorted((env_datasets / "synthetic").glob("*/*.metadata.json")):
        try:
            manifest = read_json(path)
            batches.append(
                SyntheticBatch(
                    name=path.parent.name,
                    written_at=parse_utc(str(manifest["written_at"])).isoformat(),
                    requested=int(manifest.get("n", manifest["rows"])),
                    kept=int(manifest["rows"]),
                    generators={str(name): int(count) for name, count in (manifest.get("generators") or {}).items()},
                )
            )
        except (RunRecordError, KeyError, TypeError, ValueError, AttributeError) as error:
            problems.append(f"{path}: not a readable manifest ({type(error).__name__}: {error})")
    return sorted(batches, key=lambda batch: batch.written_at, reverse=True), problems


def _in_period(period: Period | None, stamp: str) -> bool:
    return period is None or period.contains(parse_utc(stamp))


def _synthetic_lines(scope: ReportScope, batches: Sequence[SyntheticBatch], problems: Sequence[str]) -> list[str]:
    lines = ["", "## Synthetic data", ""]
    if not batches:
        lines.append("No synthetic batches.")
    else:
        recent = [batch for batch in batches if _in_period(scope.period, batch.written_at)]
        where = f"written in {scope.period.label}" if scope.period else "in all"
        lines += [
            f"{len(recent)} batches {where}: {sum(batch.kept for batch in recent):,} rows kept, "
            f"{sum(batch.dropped for batch in recent):,} dropped.",
            "",
            "| batch | written | requested | kept | dropped | generators |",
            "|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {batch.name} | {batch.written_at[:16]} | {batch.requested:,} | {batch.kept:,} | {batch.dropped:,} | "
            + ", ".join(f"{name} {count}" for name, count in sorted(batch.generators.items()))
            + " |"
            for batch in batches[:SHOWN_BATCHES]
        ]
    return lines + [f"- unreadable: {problem}" for problem in problems]


def env_failures(env: Environment, period: Period | None, failures: Sequence[RunFailure]) -> list[RunFailure]:
    """Failed runs of this environment (and those tied to no environment) in the period; with no period, the most
    recent ones."""
    own = [failure for failure in failures if env.env_id in failure.envs or not failure.envs]
    if period is None:
        return own[-RECENT_FAILURES:]
    return [failure for failure in own if _in_period(period, failure.failed_at)]


def _first_line(text: str, limit: int = 200) -> str:
    lines = text.strip().splitlines()
    return lines[0][:limit] if lines else "?"


def _failure_lines(scope: ReportScope, failures: Sequence[RunFailure], problems: Sequence[str]) -> list[str]:
    title = f"Failed runs in {scope.period.label}" if scope.period else "Recent failed runs"
    lines = ["", f"## {title}", ""]
    if not failures:
        lines.append("None recorded.")
    for failure in failures:
        steps = "; ".join(f"{step.step_key}: {_first_line(step.cause)}" for step in failure.steps)
        unscoped = "" if failure.envs else " (not tied to one environment)"
        lines.append(
            f"- {failure.failed_at[:16]} `{failure.run_id}` {failure.job_name}{unscoped} · cadence "
            f"{failure.cadence or '–'} · partition {failure.partition or '–'}: {steps or _first_line(failure.message)}"
        )
    return lines + [f"- unreadable: {problem}" for problem in problems]


def code_versions(metadata: RunMetadata) -> str:
    """A run's full code version per session, with the uncommitted files behind each "-dirty"."""
    parts = []
    for version in dict.fromkeys(session.code_version for session in metadata.sessions):
        paths = sorted(
            {
                path
                for session in metadata.sessions
                if session.code_version == version
                for path in session.dirty_paths or ()
            }
        )
        dirty = ""
        if version.endswith("-dirty"):
            dirty = f" (uncommitted: {', '.join(paths)})" if paths else " (uncommitted files not recorded)"
        parts.append(f"`{version}`{dirty}")
    return ", then ".join(parts)


def _provenance_lines(runs: Sequence[RunView]) -> list[str]:
    lines = ["", "## Provenance", ""]
    lines += [
        f"- {run.model_id}: run `{run.run_dir}` started {run.metadata.started_at[:16]} · code "
        f"{code_versions(run.metadata)} · model `{run.metadata.model.model}` · generation "
        f"`{json.dumps(run.metadata.generation)}`"
        for run in runs
    ]
    version = code_version()
    paths = dirty_paths() if version.endswith("-dirty") else []
    built = f"`{version}`" + (f" (uncommitted: {', '.join(paths)})" if paths else "")
    return [*lines, f"- this report: built by code {built}"]


def operations(
    env: Environment, scope: ReportScope, evals_root: Path, runs: Sequence[RunView]
) -> tuple[list[str], dict[str, Any]]:
    """The report's operational sections (markdown lines) and their facts (for report.json). The outputs folder is
    evals_root's parent: datasets/ and run_failures/ are read beside evals/."""
    outputs = evals_root.parent
    usage = usage_by_model(
        run_metadata(evals_root, env.name) if scope.period else [run.metadata for run in runs], scope.period
    )
    batches, batch_problems = synthetic_batches(outputs / "datasets" / env.env_id)
    recorded, failure_problems = read_failures(outputs / "run_failures")
    failures = env_failures(env, scope.period, recorded)
    lines = [
        *_usage_lines(scope, usage),
        *_synthetic_lines(scope, batches, batch_problems),
        *_failure_lines(scope, failures, failure_problems),
        *(_provenance_lines(runs) if runs else []),
    ]
    facts = {
        "usage": [asdict(row) for row in usage],
        "synthetic": [batch.as_dict() for batch in batches],
        "failed_runs": [failure.as_dict() for failure in failures],
        "code_versions": {run.model_id: [session.as_dict() for session in run.metadata.sessions] for run in runs},
    }
    return lines, facts
