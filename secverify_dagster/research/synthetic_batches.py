"""Synthetic batches: candidate completions sampled from a registry model over a temperature sweep, verified, kept
when the verifier agrees, and queued for a human spot-check.

Sampling is the eval runner's: one run per temperature × sample (the model's parameters with that temperature, the
batch seed + the sample index as the run's seed), written under the batch folder's samples/ (not outputs/evals), so a
crash resumes each run where it stopped, a cached answer is not asked again, and every candidate is a typed record.
Which candidates are kept is sv_shared.training.candidates; the folder and its files are
sv_shared.training.batch_folder. Single-turn answers only: dialogue environments are refused (their teacher path in
sv_shared.training.sft_data covers them).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from secverify_dagster.resources.models import ModelSpec
from secverify_dagster.resources.models.client import ModelClient, make_provider
from secverify_dagster.runner.datasets import EvalDataset, embedded_dataset
from secverify_dagster.runner.eval_runner import EvalRunner, ProgressCallback
from sv_shared.contracts import Environment
from sv_shared.data.datasets import read_dataset
from sv_shared.data.hashing import frame_hash
from sv_shared.data.review_batches import BATCH_FILE, batches_root, read_batch
from sv_shared.execution.cache import JsonCache
from sv_shared.runs.folder import RunFolder
from sv_shared.runs.records import FinishedRun
from sv_shared.training.batch_folder import BATCH_LOCK_WAIT_S, SAMPLES_DIR, batch_dir_for, batch_lock, write_batch
from sv_shared.training.batch_items import ITEM_SOURCES, FailedItems, failed_items, select_items, targeted_slice
from sv_shared.training.candidates import SampledCompletion, candidate_counts, completion_verifier, judge_candidates

SampleProgress = Callable[[float, int, int, int], None]
"""(temperature, sample, done, total) after each chunk of a sampling run."""


class SyntheticBatchError(ValueError):
    """A batch that cannot be built as asked (bad settings, an unreachable model, a run that is not there)."""


@dataclass(frozen=True)
class ItemSource:
    """The frame a batch draws its items from, and where it came from (recorded in batch.json)."""

    kind: str
    frame: pl.DataFrame
    origin: str

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "origin": self.origin, "rows": self.frame.height, "hash": frame_hash(self.frame)}


@dataclass(frozen=True)
class ItemSlice:
    """Which items of the source: ids, column filters, a run's failed items (with their synthetic siblings)."""

    item_ids: tuple[str, ...] = ()
    filters: dict[str, str] = field(default_factory=dict)
    failed: FailedItems | None = None

    def describe(self) -> dict[str, Any]:
        return {
            "item_ids": list(self.item_ids),
            "filters": dict(self.filters),
            "items_from_run": (
                {
                    "run_id": self.failed.run_id,
                    "categories": list(self.failed.categories),
                    "failed_items": len(self.failed.item_ids),
                }
                if self.failed is not None
                else None
            ),
        }


@dataclass(frozen=True)
class BatchRequest:
    """The sampling settings of a batch."""

    temperatures: tuple[float, ...]
    samples_per_temperature: int
    n_items: int | None
    min_reward: float
    seed: int = 42
    review_share: float = 0.05
    """The spot-check (configs/sft_datasets.yaml `review:`): the share of kept examples queued, and its seed."""
    review_seed: int = 42

    def check(self) -> None:
        if not self.temperatures:
            raise SyntheticBatchError("give at least one temperature")
        if any(not math.isfinite(t) or t < 0 for t in self.temperatures):
            raise SyntheticBatchError(f"temperatures must be finite and ≥ 0, got {list(self.temperatures)}")
        if len(set(self.temperatures)) != len(self.temperatures):
            raise SyntheticBatchError(f"temperatures repeat: {list(self.temperatures)}")
        if self.samples_per_temperature < 1:
            raise SyntheticBatchError(f"samples per temperature must be ≥ 1, got {self.samples_per_temperature}")
        if not 0.0 <= self.min_reward <= 1.0:
            raise SyntheticBatchError(f"min_reward must lie in [0, 1], got {self.min_reward}")


@dataclass(frozen=True)
class BatchOutcome:
    """A built batch (status "complete", info = batch.json) or one stopped early ("incomplete", info = settings)."""

    status: str
    batch_dir: Path
    info: dict[str, Any]
    wall_s: float


def embedded_source(env: Environment, kind: str, *, seed: int) -> ItemSource:
    """The embedded corpus's curated train split, or the synthetic set the recipe makes from it."""
    train = embedded_dataset(env, split="train", seed=seed).frame
    if kind == "curated-train":
        return ItemSource(kind, train, "embedded:train")
    if kind == "synthetic":
        frame = env.data.synthesize(env.config.synthetic.n, seed=seed, base=train)
        return ItemSource(kind, frame, f"synthesize(n={env.config.synthetic.n}, seed={seed}, base=embedded:train)")
    raise SyntheticBatchError(f"item source must be one of {', '.join(ITEM_SOURCES)}, got {kind!r}")


def artifact_source(env: Environment, kind: str, datasets_dir: Path) -> ItemSource:
    """The curated train split or the latest synthetic set the Dagster assets wrote under datasets_dir."""
    if kind == "curated-train":
        path = datasets_dir / "curated" / "train.parquet"
    elif kind == "synthetic":
        written = sorted((datasets_dir / "synthetic").glob("*/synthetic.parquet"))
        if not written:
            raise SyntheticBatchError(f"{env.env_id}: no synthetic set under {datasets_dir / 'synthetic'}")
        path = written[-1]
    else:
        raise SyntheticBatchError(f"item source must be one of {', '.join(ITEM_SOURCES)}, got {kind!r}")
    return ItemSource(kind, read_dataset(path), str(path))


def failed_in_run(env: Environment, evals_root: Path, run_id: str, categories: Sequence[str]) -> FailedItems:
    """The items a finished eval run of this environment (any model) failed in the given triage categories."""
    folders = sorted(path for path in evals_root.glob(f"{env.name}--*/{run_id}") if (path / "metadata.json").is_file())
    if len(folders) != 1:
        found = "no run" if not folders else f"{len(folders)} runs ({', '.join(str(f) for f in folders)})"
        raise SyntheticBatchError(f"{env.env_id}: {found} with id {run_id!r} under {evals_root}")
    folder = RunFolder(folders[0])
    run = FinishedRun(folder.path, folder.read_metadata())
    return failed_items(run.run_id, run.records(), categories)


def _sampling_spec(spec: ModelSpec, temperature: float) -> ModelSpec:
    return dataclasses.replace(spec, params={**spec.params, "temperature": temperature})


def build_synthetic_batch(
    env: Environment,
    spec: ModelSpec,
    source: ItemSource,
    request: BatchRequest,
    *,
    datasets_root: Path,
    item_slice: ItemSlice | None = None,
    cache: JsonCache | None = None,
    wait_s: float = BATCH_LOCK_WAIT_S,
    on_lock_wait: Callable[[str], None] | None = None,
    progress: SampleProgress | None = None,
    max_new_samples: int | None = None,
) -> BatchOutcome:
    """Sample, verify and write one batch (or find it already written). max_new_samples stops after that many new
    samples, leaving the batch unfinished (an interrupted build, for resume tests)."""
    started = time.perf_counter()
    verifier = completion_verifier(env)
    request.check()
    item_slice = item_slice or ItemSlice()
    sliced = targeted_slice(
        env, source.frame, item_ids=item_slice.item_ids, filters=item_slice.filters, failed=item_slice.failed
    )
    items = select_items(env, sliced, request.n_items, request.seed)
    settings = {
        "env": env.env_id,
        "verifier_version": verifier.version,
        "model": spec.public_dict(),
        "temperatures": list(request.temperatures),
        "samples_per_temperature": request.samples_per_temperature,
        "seed": request.seed,
        "min_reward": request.min_reward,
        "review": {"share": request.review_share, "seed": request.review_seed},
        "items_hash": frame_hash(items),
    }
    batch_dir = batch_dir_for(batches_root(datasets_root, env.env_id), settings)
    batch_dir.mkdir(parents=True, exist_ok=True)
    with batch_lock(batch_dir, wait_s=wait_s, on_wait=on_lock_wait):
        if (batch_dir / BATCH_FILE).is_file():
            return BatchOutcome("complete", batch_dir, read_batch(batch_dir).info, time.perf_counter() - started)
        sampled, runs, complete = _sample(
            env, spec, items, source, request, batch_dir / SAMPLES_DIR, cache, progress, max_new_samples
        )
        info = {
            **settings,
            "env_name": env.name,
            "model": spec.id,
            "model_spec": spec.public_dict(),
            "item_source": source.describe(),
            "item_slice": item_slice.describe(),
            "items": {"count": items.height, "hash": settings["items_hash"], "id_column": env.data.id_column},
            "sample_runs": runs,
            "source_run_ids": sorted(
                {*(run["run_id"] for run in runs), *([item_slice.failed.run_id] if item_slice.failed else [])}
            ),
        }
        if not complete:
            return BatchOutcome("incomplete", batch_dir, info, time.perf_counter() - started)
        by_id = {str(row[env.data.id_column]): row for row in items.to_dicts()}
        candidates = judge_candidates(env, by_id, sampled, min_reward=request.min_reward)
        info["counts"] = candidate_counts(candidates)
        info["wall_s"] = round(time.perf_counter() - started, 3)
        finished = write_batch(
            batch_dir, info, items, candidates, review_share=request.review_share, review_seed=request.review_seed
        )
    return BatchOutcome("complete", batch_dir, finished, time.perf_counter() - started)


def _run_progress(progress: SampleProgress | None, temperature: float, sample: int) -> ProgressCallback | None:
    if progress is None:
        return None
    return lambda done, total: progress(temperature, sample, done, total)


def _sample(
    env: Environment,
    spec: ModelSpec,
    items: pl.DataFrame,
    source: ItemSource,
    request: BatchRequest,
    samples_root: Path,
    cache: JsonCache | None,
    progress: SampleProgress | None,
    max_new_samples: int | None,
) -> tuple[list[SampledCompletion], list[dict[str, Any]], bool]:
    """One eval run per temperature × sample; their records as sampled completions, the runs, and whether all
    finished."""
    dataset = EvalDataset(frame=items, source=f"synthetic-batch:{source.origin}", split=source.kind)
    # One provider for every run: the local model is loaded once; each run gets its own client (its own stats).
    provider = make_provider(spec, env.baselines)
    sampled: list[SampledCompletion] = []
    runs: list[dict[str, Any]] = []
    budget = max_new_samples
    for temperature in request.temperatures:
        sampling_spec = _sampling_spec(spec, temperature)
        for sample in range(request.samples_per_temperature):
            if budget is not None and budget <= 0:
                return sampled, runs, False
            client = ModelClient(sampling_spec, provider, cache=cache)
            runner = EvalRunner(env, sampling_spec, evals_root=samples_root, client=client)
            outcome = runner.run(
                dataset,
                n=items.height,
                seed=request.seed + sample,
                max_samples=budget,
                progress=(lambda done, total, t=temperature, s=sample: progress(t, s, done, total))
                if progress
                else None,
            )
            if outcome.status == "skipped":
                raise SyntheticBatchError(f"{spec.id} cannot sample {env.env_id} here: {outcome.reason}")
            records = RunFolder(outcome.run_dir).read_results()
            if budget is not None:
                budget -= client.stats["requests"]
            runs.append({"temperature": temperature, "sample": sample, "run_id": outcome.metadata.run_id})
            sampled.extend(
                SampledCompletion(
                    item_id=record.id,
                    temperature=temperature,
                    sample=sample,
                    completion=record.completion,
                    reward=float(record.reward),
                    components={name: float(value) for name, value in record.components.items()},
                    prompt=record.prompt,
                    run_id=outcome.metadata.run_id,
                )
                for record in records
            )
            if outcome.status != "complete":
                return sampled, runs, False
    return sampled, runs, True
