"""The eval loop: one environment × one model over N items, played chunk by chunk through its episode kind."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from secverify_dagster.resources.models import (
    ModelClient,
    ModelSpec,
    load_registry,
    open_client,
    reachability,
    require_promoted,
)
from secverify_dagster.resources.models.registry import Reachability
from secverify_dagster.runner.datasets import EvalDataset, select_items
from secverify_dagster.runner.dialogue import (
    DialogueEpisode,
    DialogueParts,
    counterpart_reachability,
    open_dialogue_parts,
)
from secverify_dagster.runner.episodes import EpisodeKind
from secverify_dagster.runner.failures import (
    RUNNER_FAILURES,
    counted_failures,
    given_up,
    number_attempts,
    runner_failure,
)
from secverify_dagster.runner.metadata import finish_metadata, public_spec, start_metadata
from secverify_dagster.runner.single_turn import SingleTurn
from secverify_dagster.runner.tool_episode import ToolEpisode
from sv_shared.answers.completion import answer_end_params
from sv_shared.config import outputs_dir
from sv_shared.contracts import Dialogue, Environment, Item, ToolUse
from sv_shared.data.hashing import sha256_hex, stable_json
from sv_shared.execution.cache import JsonCache
from sv_shared.runs.folder import LOCK_WAIT_S, RunFolder
from sv_shared.runs.schema import ErrorRecord, ExperimentRef, ResultRecord, RunMetadata, RunSummary, UnscoredItem
from sv_shared.runs.unscored import NOT_PLAYED, not_scored_record

ProgressCallback = Callable[[int, int], None]


@dataclass
class EvalOutcome:
    """What a run produced: its folder, metrics and status ("complete", "incomplete" or "skipped")."""

    env_id: str
    model_id: str
    status: str
    run_dir: Path | None = None
    summary: RunSummary | None = None
    """None when skipped, as is metadata."""
    metadata: RunMetadata | None = None
    reason: str | None = None
    n_done: int = 0
    n_provider_errors: int = 0
    """Provider failures this session (those samples are retried on resume unless given up)."""
    n_failures: int = 0
    """Failures of the runner's own work on a sample this session (scoring, episode, unwritable record)."""
    given_up: tuple[str, ...] = ()
    """Samples that failed MAX_ITEM_ATTEMPTS times: the run is complete without a scored sample of them; its metrics
    count them as failures (see summary.unscored and errors.jsonl)."""


def run_dir_for(env: Environment, model_id: str, run_id: str, root: Path | None = None) -> Path:
    return (root or outputs_dir() / "evals") / f"{env.name}--{model_id}" / run_id


def _chunk_size(spec: ModelSpec) -> int:
    if spec.provider == "local_transformers":
        return max(1, spec.batch_size)
    if spec.provider == "baseline":
        return 512
    return max(1, spec.concurrency) * 4


class EvalRunner:
    """Runs one environment for one model; the unit behind `secverify eval` and the `<env>/eval_results` assets."""

    def __init__(
        self,
        env: Environment,
        spec: ModelSpec,
        *,
        evals_root: Path | None = None,
        cache: JsonCache | None = None,
        client: ModelClient | None = None,
        chunk_size: int | None = None,
        counterparts: Mapping[str, ModelSpec] | None = None,
        counterpart_clients: Mapping[str, ModelClient] | None = None,
        judge: str | None = None,
        registry: Mapping[str, ModelSpec] | None = None,
    ) -> None:
        """counterparts (dialogue environments) maps each role to a model, by default the environment's choice
        from the registry; judge is a judge spec (default: the environment's). counterpart_clients replace the
        clients the runner would open (tests, a shared server)."""
        self.env = env
        self.spec = spec
        self.evals_root = evals_root or outputs_dir() / "evals"
        self.dialogue = env.episodes if isinstance(env.episodes, Dialogue) else None
        # A dialogue's text may be harmful: the response cache would store it unjudged, so none is kept.
        self._cache = None if self.dialogue else cache
        self._client = client
        self.chunk_size = chunk_size or _chunk_size(spec)
        self._registry = registry
        self.counterparts: dict[str, ModelSpec] = dict(counterparts or {})
        self._counterpart_clients = dict(counterpart_clients or {})
        self.judge_spec = judge or (self.dialogue.judge_spec() if self.dialogue else None)
        if self.dialogue:
            for role, model_id in self.dialogue.counterpart_roles().items():
                if role not in self.counterparts:
                    self.counterparts[role] = self._lookup(model_id)
                    require_promoted(self._registry or {}, [model_id], where=f"{env.name}'s default {role}")
            # A local counterpart batches a whole chunk's turns in one generate call: give it full batches.
            local_batches = [
                other.batch_size for other in self.counterparts.values() if other.provider == "local_transformers"
            ]
            if local_batches and chunk_size is None:
                self.chunk_size = max(self.chunk_size, *local_batches)

    def _lookup(self, model_id: str) -> ModelSpec:
        if self._registry is None:
            self._registry = load_registry()
        if model_id not in self._registry:
            raise KeyError(f"{model_id!r} is not in the model registry (see `secverify models`)")
        return self._registry[model_id]

    def counterpart_reachability(self) -> Reachability:
        """Whether every counterpart (and the judge's model) can be called from here."""
        return counterpart_reachability(self.env, self.counterparts, self.judge_spec, self._lookup)

    def fingerprint(self, dataset: EvalDataset, items: Sequence[Item], seed: int, params: Mapping[str, Any]) -> dict:
        """Everything that determines the results; the run id is its hash."""
        fingerprint = {
            "env": self.env.env_id,
            "verifier_version": self.env.verifier.version,
            "config": self.env.config.as_dict(),
            "model": public_spec(self.spec).as_dict(),
            "generation": dict(params),
            "dataset_hash": dataset.hash,
            "item_ids": [item[self.env.data.id_column] for item in items],
            "seed": seed,
        }
        if self.dialogue:
            fingerprint["counterparts"] = {
                role: public_spec(spec).as_dict() for role, spec in sorted(self.counterparts.items())
            }
            fingerprint["judge"] = self.judge_spec
        if self.spec.provider == "baseline" and self.spec.id in self.env.baselines:
            # A rule baseline is code: editing its rules must start a new run, not resume the old one.
            module = inspect.getmodule(self.env.baselines[self.spec.id])
            fingerprint["baseline_source"] = sha256_hex(inspect.getsource(module))[:16] if module else None
        return fingerprint

    def run(
        self,
        dataset: EvalDataset,
        *,
        n: int,
        seed: int = 42,
        run_id: str | None = None,
        progress: ProgressCallback | None = None,
        max_samples: int | None = None,
        include_tools: bool = False,
        lock_wait_s: float = LOCK_WAIT_S,
        on_lock_wait: Callable[[str], None] | None = None,
        experiment: ExperimentRef | None = None,
    ) -> EvalOutcome:
        """Evaluate; `max_samples` stops after that many new samples (an interrupted run, for resume tests).

        experiment: the experiment record the run is made from; recorded in its metadata and part of its
        fingerprint, so an edited record makes a new run.

        include_tools plays tool-using episodes (`episodes.rollout`) instead of one turn. When another process is
        running the same run, this one waits up to lock_wait_s (on_lock_wait is told once who it waits for), then
        raises FolderBusyError naming it.
        """
        if include_tools and not isinstance(self.env.episodes, ToolUse):
            raise ValueError(f"{self.env.name} has no tool-using mode")
        status = reachability(self.spec, self.env.env_id, available_baselines=self.env.baselines.keys())
        if not status.ok:
            return EvalOutcome(self.env.env_id, self.spec.id, "skipped", reason=status.reason)
        if self.dialogue:
            status = self.counterpart_reachability()
            if not status.ok:
                return EvalOutcome(self.env.env_id, self.spec.id, "skipped", reason=status.reason)

        # The local model stops each sequence at its answer's end; API providers do not take the parameter.
        answer_end = answer_end_params(self.env.env_id) if self.spec.provider == "local_transformers" else {}
        params = {**self.env.generation_params(), **answer_end, **self.spec.params}
        items = select_items(self.env, dataset.frame, n, seed)
        mode = self._episode_kind(include_tools).mode
        fingerprint = self.fingerprint(dataset, items, seed, params) | {"mode": mode}
        if experiment is not None:
            fingerprint["experiment"] = experiment.as_dict()
        fingerprint_hash = sha256_hex(stable_json(fingerprint))
        run_id = run_id or f"seed{seed}-n{len(items)}-{fingerprint_hash[:10]}"
        folder = RunFolder(run_dir_for(self.env, self.spec.id, run_id, self.evals_root))
        folder.path.mkdir(parents=True, exist_ok=True)
        with folder.lock(wait_s=lock_wait_s, on_wait=on_lock_wait):
            metadata = start_metadata(
                folder,
                self.env,
                self.spec,
                run_id=run_id,
                dataset=dataset,
                fingerprint=fingerprint,
                fingerprint_hash=fingerprint_hash,
                n=n,
                seed=seed,
                experiment=experiment,
                counterparts=self.counterparts if self.dialogue else None,
                judge_spec=self.judge_spec if self.dialogue else None,
            )
            return self._run_locked(
                folder,
                metadata,
                items,
                params,
                run_id=run_id,
                seed=seed,
                progress=progress,
                max_samples=max_samples,
                include_tools=include_tools,
            )

    def _open_dialogue(self, seed: int) -> DialogueParts:
        return open_dialogue_parts(
            self.dialogue, self.counterparts, self.judge_spec, seed, self._lookup, self._counterpart_clients
        )

    def _episode_kind(self, include_tools: bool) -> type[EpisodeKind]:
        """A dialogue for dialogue environments, else tool episodes (include_tools) or a single turn."""
        if self.dialogue:
            return DialogueEpisode
        return ToolEpisode if include_tools else SingleTurn

    def _episodes(self, client: ModelClient, seed: int, include_tools: bool) -> EpisodeKind:
        """The run's episode kind, opened with the model's client (and a dialogue's counterparts and judge)."""
        kind = self._episode_kind(include_tools)
        if kind is DialogueEpisode:
            roles = {role: spec.id for role, spec in self.counterparts.items()}
            return DialogueEpisode(self.env, self.spec, client, self._open_dialogue(seed), roles)
        return kind(self.env, self.spec, client)

    def _unscored(
        self,
        episodes: EpisodeKind,
        items: Sequence[Item],
        done: Mapping[str, ResultRecord],
        errors: Sequence[ErrorRecord],
        skipped: set[str],
    ) -> list[tuple[UnscoredItem, dict[str, Any] | None]]:
        """Each item without a scored sample: why (its last error, or not played yet) and the record the metrics
        count for it, None where it cannot be counted (sv_shared.runs.unscored)."""
        id_column = self.env.data.id_column
        last = {error.id: error for error in errors}
        unscored = []
        for item in items:
            item_id = item[id_column]
            if item_id in done:
                continue
            error = last.get(item_id)
            silent = episodes.silent_sample(item)
            why = UnscoredItem(
                id=item_id,
                kind=error.kind if error else NOT_PLAYED,
                message=error.message if error else "the run has not played it yet",
                given_up=item_id in skipped,
                counted=silent is not None,
            )
            unscored.append((why, None if silent is None else not_scored_record(item_id, silent)))
        return unscored

    def _run_locked(
        self,
        folder: RunFolder,
        metadata: RunMetadata,
        items: Sequence[Item],
        params: Mapping[str, Any],
        *,
        run_id: str,
        seed: int,
        progress: ProgressCallback | None,
        max_samples: int | None,
        include_tools: bool,
    ) -> EvalOutcome:
        id_column = self.env.data.id_column
        done = {record.id: record for record in folder.resume_results()}
        previous_errors = folder.resume_errors()
        failures = counted_failures(previous_errors)
        skipped = given_up(failures, done)
        pending = [item for item in items if item[id_column] not in done and item[id_column] not in skipped]
        if max_samples is not None:
            pending = pending[:max_samples]

        timings = {"generate_s": 0.0, "score_s": 0.0, "write_s": 0.0}
        session_errors: list[ErrorRecord] = []
        client = self._client or open_client(self.spec, cache=self._cache, baselines=self.env.baselines)
        try:
            episodes = self._episodes(client, seed, include_tools)
        except BaseException:
            if self._client is None:
                client.close()
            raise
        started = time.perf_counter()
        try:
            if progress:
                progress(len(done), len(items))
            for start in range(0, len(pending), self.chunk_size):
                chunk = episodes.play(pending[start : start + self.chunk_size], params, seed)
                t2 = time.perf_counter()
                unwritable = folder.append_results(chunk.records)
                unwritten = [runner_failure(record.id, "unwritable", why) for record, why in unwritable]
                batch_errors = number_attempts(chunk.errors + unwritten, failures)
                folder.append_errors(batch_errors)
                session_errors.extend(batch_errors)
                left_out = {record.id for record, _ in unwritable}
                for record in chunk.records:
                    if record.id not in left_out:
                        done[record.id] = record
                timings["generate_s"] += chunk.generate_s
                timings["score_s"] += chunk.score_s
                timings["write_s"] += time.perf_counter() - t2
                if progress:
                    progress(len(done), len(items))
            if (judge_validation := episodes.judge_validation()) is not None:
                metadata = metadata.replace(judge_validation=judge_validation)
            # While the episode kind is open: a dialogue plays its silent sample with its counterparts and judge.
            unscored = self._unscored(
                episodes, items, done, [*previous_errors, *session_errors], given_up(failures, done)
            )
        finally:
            if self._client is None:
                client.close()
            episodes.close()
        elapsed = time.perf_counter() - started

        skipped = given_up(failures, done)
        ordered = [done[item[id_column]] for item in items if item[id_column] in done]
        item_map = {item[id_column]: item for item in items}
        # Verifiers take records as the mappings results.jsonl holds; an unscored item counts as not scored.
        counted = {record.id: record.as_dict() for record in ordered}
        counted |= {why.id: record for why, record in unscored if record is not None}
        summary = RunSummary(
            env=self.env.env_id,
            env_name=self.env.name,
            model=self.spec.id,
            run_id=run_id,
            n_items=len(items),
            n_scored=len(ordered),
            metrics=self.env.verifier.aggregate(
                [counted[item[id_column]] for item in items if item[id_column] in counted], item_map
            ),
            unscored=[why for why, _ in unscored] or None,
        )
        t_summary = time.perf_counter()
        folder.write_summary(summary)
        complete = all(item[id_column] in done or item[id_column] in skipped for item in items)
        provider_errors = [error for error in session_errors if error.kind not in RUNNER_FAILURES]
        finished = finish_metadata(metadata, ordered, client.stats, timings, elapsed, complete, provider_errors)
        metadata = finished.replace(
            timings={**finished.timings, "summary_s": round(time.perf_counter() - t_summary, 4)}
        )
        folder.write_metadata(metadata)
        return EvalOutcome(
            self.env.env_id,
            self.spec.id,
            "complete" if complete else "incomplete",
            run_dir=folder.path,
            summary=summary,
            metadata=metadata,
            n_done=len(ordered),
            n_provider_errors=len(provider_errors),
            n_failures=len(session_errors) - len(provider_errors),
            given_up=tuple(item[id_column] for item in items if item[id_column] in skipped),
        )
