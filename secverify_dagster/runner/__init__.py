"""The eval runner: one environment × one model over N items, written as a resumable run folder.

outputs/evals/<env name>--<model id>/<run id>/
  metadata.json   provenance: dataset hash and source, verifier version, model and parameters, config, seed,
                  code version, timings, token usage, cost, status
  results.jsonl   one scored sample a line, appended as samples finish (a crash loses at most the line being written)
  errors.jsonl    samples that failed: provider failures (after retries) and failures of the runner's own work on a
                  sample (scoring, a tool episode, writing its record); those samples are retried on resume
  summary.json    the environment's metrics over results.jsonl

The files' schema and version policy are declared in sv_shared.runs.schema; sv_shared.runs.folder reads and writes them.

The run id is derived from everything that determines the results, so the same command after a crash resumes the same
run and finishes the missing samples only.

A failing sample never stops a run: any exception while scoring it, playing its episode or writing its record is
caught and recorded as that sample's error, its batch-mates are scored without it. Failures that say something about
the sample (ITEM_FAILURES: the runner's own, a provider refusing or garbling that request, a baseline or counterpart
raising on it) are counted in errors.jsonl; a sample that failed MAX_ITEM_ATTEMPTS times, over any number of sessions,
is given up: no longer retried, its last error says so, and the run completes without it (summary.n_scored counts
the samples scored). Failures that say something about the service (rate limits, outages, a missing key or model) are
retried on every resume without bound: they would give up on samples that are fine. Samples are given up only in a
run that has scored some sample, so a failure every sample shares (a misconfigured request) leaves the run incomplete
instead of complete and empty.

One process writes a run folder at a time: the runner holds its lock from reading it to writing its summary. A second
runner of the same run waits for it (up to LOCK_WAIT_S, then fails naming the holder) and then resumes a run with
nothing left to do; no sample is generated or scored twice. The lock is the kernel's and dies with its process.
"""

from __future__ import annotations

import inspect
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from secverify_dagster.resources.models import (
    ChatRequest,
    Completion,
    ModelClient,
    ModelSpec,
    ProviderError,
    load_registry,
    open_client,
    reachability,
    require_promoted,
)
from secverify_dagster.resources.models.registry import Reachability
from sv_shared.answers.completion import answer_end_params
from sv_shared.config import outputs_dir, project_root
from sv_shared.contracts import (
    BatchPolicy,
    CompletionVerifier,
    Dialogue,
    Environment,
    Item,
    PolicyReply,
    ScoredSample,
    ToolUse,
)
from sv_shared.data.datasets import read_dataset
from sv_shared.data.hashing import frame_hash, sha256_hex, stable_json
from sv_shared.execution.cache import JsonCache
from sv_shared.judging import build_judge
from sv_shared.judging.factory import judge_generation_params
from sv_shared.judging.measured import ensure_measurement
from sv_shared.judging.verdict import Judge
from sv_shared.runs.folder import LOCK_WAIT_S, RunFolder, UnwritableRecordError, jsonl_line
from sv_shared.runs.schema import (
    CompletionError,
    DatasetRef,
    ErrorRecord,
    ExperimentRef,
    ModelIdentity,
    ResultRecord,
    RunMetadata,
    RunSummary,
    ScoredCompletion,
    Session,
    Usage,
)

ProgressCallback = Callable[[int, int], None]

MAX_ITEM_ATTEMPTS = 3
"""Failed attempts (ITEM_FAILURES, over all sessions) after which a sample is given up and the run completes."""

ITEM_FAILURES = frozenset(
    {"scoring", "episode", "unwritable", "counterpart", "bad_request", "bad_response", "baseline"}
)
"""Error kinds that are about the sample, so retrying it forever cannot help: the runner's own (scoring, episode,
unwritable), a counterpart raising on it, a provider refusing (bad_request) or garbling (bad_response) that request, a
rule baseline raising on it. Every other kind (rate_limit, quota, server, timeout, unreachable, auth, local, internal,
and kinds added later) is retried on every resume."""

RUNNER_FAILURES = frozenset({"scoring", "episode", "unwritable"})
"""The kinds of the runner's own failures (the others come from the model, a counterpart or the judge)."""


@dataclass(frozen=True)
class EvalDataset:
    """The frame an eval draws its items from, and where it came from (recorded in metadata)."""

    frame: pl.DataFrame
    source: str
    split: str

    @property
    def hash(self) -> str:
        return frame_hash(self.frame)


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
    """Samples that failed MAX_ITEM_ATTEMPTS times: the run is complete without them (see errors.jsonl)."""


def code_version(root: Path | None = None) -> str:
    """The git commit of the checkout (with "-dirty" if it has uncommitted changes), or "unknown"."""
    cwd = root or project_root()
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{commit}-dirty" if dirty else commit


def dirty_paths(root: Path | None = None) -> list[str]:
    """Tracked files with uncommitted changes: what "-dirty" in a code version stands for."""
    try:
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root or project_root(),
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return sorted(line[3:] for line in status.splitlines() if len(line) > 3)


def select_items(env: Environment, frame: pl.DataFrame, n: int, seed: int) -> list[Item]:
    """The same N items for every model: a seeded permutation of the split in id order."""
    ordered = frame.sort(env.data.id_column)
    order = np.random.default_rng(seed).permutation(ordered.height)[: min(n, ordered.height)]
    return ordered[order.tolist()].to_dicts()


def embedded_dataset(env: Environment, *, split: str, seed: int) -> EvalDataset:
    """The embedded corpus curated in memory exactly as the Dagster assets curate it."""
    splits = env.data.curate([env.data.load_source("embedded")], seed=seed)
    return EvalDataset(frame=splits[split], source=f"embedded:{split}", split=split)


def file_dataset(env: Environment, path: Path, *, split: str = "file") -> EvalDataset:
    """An items file (parquet, CSV or JSONL) in the environment's schema, or a raw format the environment reads
    itself (E4: labelled raw mail), validated."""
    frame = env.data.load_path(path)
    return EvalDataset(
        frame=env.data.validate(frame if frame is not None else read_dataset(path)), source=str(path), split=split
    )


def run_dir_for(env: Environment, model_id: str, run_id: str, root: Path | None = None) -> Path:
    return (root or outputs_dir() / "evals") / f"{env.name}--{model_id}" / run_id


def _error_record(item_id: str, error: ProviderError) -> ErrorRecord:
    return ErrorRecord(
        id=item_id, kind=error.kind, status=error.status, message=str(error), at=datetime.now(UTC).isoformat()
    )


def _failure(item_id: str, kind: str, error: BaseException | str) -> ErrorRecord:
    """A sample the runner could not finish: kind is "scoring", "episode" or "unwritable"."""
    message = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    return ErrorRecord(id=item_id, kind=kind, status=None, message=message, at=datetime.now(UTC).isoformat())


def _counted_failures(errors: Sequence[ErrorRecord]) -> Counter[str]:
    """Failed attempts per sample that count towards giving it up (ITEM_FAILURES)."""
    return Counter(error.id for error in errors if error.kind in ITEM_FAILURES)


def _number_attempts(errors: Sequence[ErrorRecord], failures: Counter[str]) -> list[ErrorRecord]:
    """Errors with their attempt number where they count (failures is updated); the last one says it gave up."""
    numbered = []
    for error in errors:
        if error.kind not in ITEM_FAILURES:
            numbered.append(error)
            continue
        failures[error.id] += 1
        attempt = failures[error.id]
        note = "; given up, the run completes without this sample" if attempt >= MAX_ITEM_ATTEMPTS else ""
        numbered.append(error.replace(message=f"{error.message} (attempt {attempt} of {MAX_ITEM_ATTEMPTS}{note})"))
    return numbered


def _public_spec(spec: ModelSpec) -> ModelIdentity:
    """The model's identity for provenance: provider, model name, parameters, prices; never keys or endpoints."""
    return ModelIdentity(id=spec.id, provider=spec.provider, model=spec.model, params=spec.params, price=spec.price)


def _chunk_size(spec: ModelSpec) -> int:
    if spec.provider == "local_transformers":
        return max(1, spec.batch_size)
    if spec.provider == "baseline":
        return 512
    return max(1, spec.concurrency) * 4


@dataclass
class DialogueParts:
    """What a dialogue run holds open besides the model under evaluation: counterpart clients and the judge."""

    counterparts: dict[str, BatchPolicy]
    judge: Judge
    clients: list[ModelClient]

    def close(self) -> None:
        for client in self.clients:
            client.close()


def batch_policy(client: ModelClient, params: Mapping[str, Any], seed: int) -> BatchPolicy:
    """A model client as a dialogue environment drives it: every conversation of a turn in one complete_many."""

    def policy(conversations: Sequence[list[dict[str, Any]]]) -> list[PolicyReply | Exception]:
        requests = [
            ChatRequest(messages=list(messages), params=dict(params), seed=seed, observation={"messages": messages})
            for messages in conversations
        ]
        replies: list[PolicyReply | Exception] = []
        for result in client.complete_many(requests):
            if isinstance(result, ProviderError):
                replies.append(result)
            else:
                replies.append(
                    PolicyReply(
                        text=result.text,
                        tool_calls=list(result.tool_calls),
                        usage=result.usage.to_dict(),
                        cost_usd=result.cost_usd,
                    )
                )
        return replies

    return policy


def judge_params(judge_spec: str, spec: ModelSpec) -> dict[str, Any]:
    """A judge model's generation parameters: greedy, then what the judge's form needs, then the model's own."""
    return {"temperature": 0.0, **judge_generation_params(judge_spec), **spec.params}


def counterpart_policy(dialogue: Dialogue, role: str, spec: ModelSpec, client: ModelClient, seed: int) -> BatchPolicy:
    """A dialogue counterpart as a batch policy: its role's generation parameters under the model's own."""
    return batch_policy(client, {**dialogue.counterpart_generation_params(role), **spec.params}, seed)


def open_dialogue_parts(
    dialogue: Dialogue,
    counterparts: Mapping[str, ModelSpec],
    judge_spec: str,
    seed: int,
    lookup: Callable[[str], ModelSpec],
    open_clients: Mapping[str, ModelClient] | None = None,
) -> DialogueParts:
    """The counterpart policies and the judge a dialogue run plays against, as `secverify eval` opens them.

    lookup: a judge's model id → its spec (raising for one that cannot be used); open_clients: clients by role
    ("judge" included) the caller owns and closes itself. Every client opened here is in the parts' `clients`."""
    given = dict(open_clients or {})
    clients: list[ModelClient] = []

    def client_for(spec: ModelSpec, role: str) -> ModelClient:
        if role in given:
            return given[role]
        client = open_client(spec, cache=None, baselines=dialogue.counterpart_baselines())
        clients.append(client)
        return client

    policies = {
        role: counterpart_policy(dialogue, role, spec, client_for(spec, role), seed)
        for role, spec in counterparts.items()
    }

    def judge_policy(model_id: str) -> BatchPolicy:
        spec = lookup(model_id)
        return batch_policy(client_for(spec, "judge"), judge_params(judge_spec, spec), seed)

    return DialogueParts(policies, build_judge(judge_spec, judge_policy), clients)


class JudgeModels:
    """Judges built outside an eval (the validation asset, `secverify judges`); their model clients close after."""

    def __init__(self, registry: Mapping[str, ModelSpec], seed: int = 42) -> None:
        self.registry = registry
        self.seed = seed
        self.clients: list[ModelClient] = []

    def build(self, judge_spec: str) -> Judge:
        def policy_for(model_id: str) -> BatchPolicy:
            if model_id not in self.registry:
                raise KeyError(f"judge model {model_id!r} is not in the model registry")
            spec = self.registry[model_id]
            client = open_client(spec, cache=None)
            self.clients.append(client)
            return batch_policy(client, judge_params(judge_spec, spec), self.seed)

        return build_judge(judge_spec, policy_for)

    def __enter__(self) -> JudgeModels:
        return self

    def __exit__(self, *exc_info: object) -> None:
        for client in self.clients:
            client.close()


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
        for role, spec in self.counterparts.items():
            if spec.provider == "baseline":
                if spec.id not in self.dialogue.counterpart_baselines():
                    reason = f"{role} {spec.id}: {self.env.env_id} offers no such counterpart baseline"
                    return Reachability(False, reason)
                continue
            status = reachability(spec, self.env.env_id)
            if not status.ok:
                return Reachability(False, f"{role} {spec.id}: {status.reason}")
        judge_model = self.judge_spec.split(":", 1)[1] if self.judge_spec and ":" in self.judge_spec else None
        if judge_model:
            status = reachability(self._lookup(judge_model), None)
            if not status.ok:
                return Reachability(False, f"judge {self.judge_spec}: {status.reason}")
        return Reachability(True, "counterparts reachable")

    def fingerprint(self, dataset: EvalDataset, items: Sequence[Item], seed: int, params: Mapping[str, Any]) -> dict:
        """Everything that determines the results; the run id is its hash."""
        fingerprint = {
            "env": self.env.env_id,
            "verifier_version": self.env.verifier.version,
            "config": self.env.config.as_dict(),
            "model": _public_spec(self.spec).as_dict(),
            "generation": dict(params),
            "dataset_hash": dataset.hash,
            "item_ids": [item[self.env.data.id_column] for item in items],
            "seed": seed,
        }
        if self.dialogue:
            fingerprint["counterparts"] = {
                role: _public_spec(spec).as_dict() for role, spec in sorted(self.counterparts.items())
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
        mode = "dialogue" if self.dialogue else "tools" if include_tools else "single"
        fingerprint = self.fingerprint(dataset, items, seed, params) | {"mode": mode}
        if experiment is not None:
            fingerprint["experiment"] = experiment.as_dict()
        fingerprint_hash = sha256_hex(stable_json(fingerprint))
        run_id = run_id or f"seed{seed}-n{len(items)}-{fingerprint_hash[:10]}"
        folder = RunFolder(run_dir_for(self.env, self.spec.id, run_id, self.evals_root))
        folder.path.mkdir(parents=True, exist_ok=True)
        with folder.lock(wait_s=lock_wait_s, on_wait=on_lock_wait):
            return self._run_locked(
                folder,
                dataset,
                items,
                params,
                fingerprint,
                fingerprint_hash,
                n=n,
                seed=seed,
                run_id=run_id,
                progress=progress,
                max_samples=max_samples,
                include_tools=include_tools,
                experiment=experiment,
            )

    def _run_locked(
        self,
        folder: RunFolder,
        dataset: EvalDataset,
        items: Sequence[Item],
        params: Mapping[str, Any],
        fingerprint: Mapping[str, Any],
        fingerprint_hash: str,
        *,
        n: int,
        seed: int,
        run_id: str,
        progress: ProgressCallback | None,
        max_samples: int | None,
        include_tools: bool,
        experiment: ExperimentRef | None,
    ) -> EvalOutcome:
        metadata = self._start_metadata(folder, run_id, dataset, fingerprint, fingerprint_hash, n, seed, experiment)
        id_column = self.env.data.id_column
        done = {record.id: record for record in folder.resume_results()}
        failures = _counted_failures(folder.resume_errors())
        given_up = self._given_up(failures, done)
        pending = [item for item in items if item[id_column] not in done and item[id_column] not in given_up]
        if max_samples is not None:
            pending = pending[:max_samples]

        timings = {"generate_s": 0.0, "score_s": 0.0, "write_s": 0.0}
        session_errors: list[ErrorRecord] = []
        client = self._client or open_client(self.spec, cache=self._cache, baselines=self.env.baselines)
        dialogue = self._open_dialogue(seed) if self.dialogue else None
        started = time.perf_counter()
        try:
            if progress:
                progress(len(done), len(items))
            for start in range(0, len(pending), self.chunk_size):
                batch = pending[start : start + self.chunk_size]
                if dialogue is not None:
                    records, batch_errors, gen_s, score_s = self._dialogue_chunk(client, dialogue, batch, params, seed)
                elif include_tools:
                    records, batch_errors, gen_s, score_s = self._episode_chunk(client, batch, params, seed)
                else:
                    records, batch_errors, gen_s, score_s = self._single_turn_chunk(client, batch, params, seed)
                t2 = time.perf_counter()
                unwritable = folder.append_results(records)
                batch_errors += [_failure(record.id, "unwritable", why) for record, why in unwritable]
                batch_errors = _number_attempts(batch_errors, failures)
                folder.append_errors(batch_errors)
                session_errors.extend(batch_errors)
                left_out = {record.id for record, _ in unwritable}
                for record in records:
                    if record.id not in left_out:
                        done[record.id] = record
                timings["generate_s"] += gen_s
                timings["score_s"] += score_s
                timings["write_s"] += time.perf_counter() - t2
                if progress:
                    progress(len(done), len(items))
            if dialogue is not None:
                # Rates are reported with the judge's measured error: measured once per judge (cached), while its
                # model is still open.
                metadata = metadata.replace(judge_validation=ensure_measurement(dialogue.judge))
        finally:
            if self._client is None:
                client.close()
            if dialogue is not None:
                dialogue.close()
        elapsed = time.perf_counter() - started

        given_up = self._given_up(failures, done)
        ordered = [done[item[id_column]] for item in items if item[id_column] in done]
        item_map = {item[id_column]: item for item in items}
        summary = RunSummary(
            env=self.env.env_id,
            env_name=self.env.name,
            model=self.spec.id,
            run_id=run_id,
            n_items=len(items),
            n_scored=len(ordered),
            # Verifiers take records as the mappings results.jsonl holds.
            metrics=self.env.verifier.aggregate([record.as_dict() for record in ordered], item_map),
        )
        t_summary = time.perf_counter()
        folder.write_summary(summary)
        complete = all(item[id_column] in done or item[id_column] in given_up for item in items)
        provider_errors = [error for error in session_errors if error.kind not in RUNNER_FAILURES]
        finished = self._finish_metadata(metadata, ordered, client, timings, elapsed, complete, provider_errors)
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
            given_up=tuple(item[id_column] for item in items if item[id_column] in given_up),
        )

    @staticmethod
    def _given_up(failures: Counter[str], done: Mapping[str, ResultRecord]) -> set[str]:
        if not done:
            return set()
        return {item_id for item_id, count in failures.items() if count >= MAX_ITEM_ATTEMPTS and item_id not in done}

    def _single_turn_chunk(
        self, client: ModelClient, batch: Sequence[Item], params: Mapping[str, Any], seed: int
    ) -> tuple[list[ResultRecord], list[ErrorRecord], float, float]:
        """One request per item, sent together (the local model batches them, API models run concurrently)."""
        requests = [
            ChatRequest(
                messages=self.env.episodes.messages(item),
                params=dict(params),
                seed=seed,
                observation=self.env.episodes.observation(item),
            )
            for item in batch
        ]
        t0 = time.perf_counter()
        completions = client.complete_many(requests)
        t1 = time.perf_counter()
        answered = [
            (item, request, completion)
            for item, request, completion in zip(batch, requests, completions, strict=True)
            if not isinstance(completion, ProviderError)
        ]
        errors = [
            _error_record(item[self.env.data.id_column], completion)
            for item, completion in zip(batch, completions, strict=True)
            if isinstance(completion, ProviderError)
        ]
        scores = self._score_each([item for item, _, _ in answered], [c.text for _, _, c in answered])
        records = []
        for (item, request, completion), scored in zip(answered, scores, strict=True):
            item_id = item[self.env.data.id_column]
            if isinstance(scored, Exception):
                errors.append(_failure(item_id, "scoring", scored))
                continue
            try:
                records.append(self._record(request, completion, scored))
            except Exception as error:  # the verifier's verdict is not a valid record (a non-number reward, …)
                errors.append(_failure(item_id, "scoring", f"invalid score: {type(error).__name__}: {error}"))
        return records, errors, t1 - t0, time.perf_counter() - t1

    def _score_each(self, items: Sequence[Item], texts: Sequence[str]) -> list[ScoredSample | Exception]:
        """The verifier's verdicts in one batch; if the batch fails, each sample alone, so one bad answer (or a
        verifier bug it triggers) costs that sample only."""
        try:
            scores = list(self.env.verifier.score_many(items, texts))
            if len(scores) == len(items):
                return scores
        except Exception:  # isolated below: the failing sample gets its own error
            pass
        verdicts: list[ScoredSample | Exception] = []
        for item, text in zip(items, texts, strict=True):
            try:
                verdicts.append(self.env.verifier.score(item, text))
            except Exception as error:
                verdicts.append(error)
        return verdicts

    def _episode_chunk(
        self, client: ModelClient, batch: Sequence[Item], params: Mapping[str, Any], seed: int
    ) -> tuple[list[ResultRecord], list[ErrorRecord], float, float]:
        """Multi-turn episodes, up to the model's concurrency at once; a provider failure abandons that episode."""
        local = self.spec.provider in ("local_transformers", "baseline")
        workers = 1 if local else max(1, self.spec.concurrency)
        # Local models have no function calling: they write tool calls as text lines.
        protocol = "text" if local else "native"

        def episode(item: Item) -> ResultRecord | ProviderError:
            turns: list[Completion] = []

            def policy(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> PolicyReply:
                request = ChatRequest(
                    messages=messages,
                    params=dict(params),
                    seed=seed,
                    observation=self.env.episodes.observation(item),
                    tools=tools,
                )
                (completion,) = client.complete_many([request])
                if isinstance(completion, ProviderError):
                    raise completion
                turns.append(completion)
                return PolicyReply(text=completion.text, tool_calls=list(completion.tool_calls))

            scored = self.env.episodes.rollout(item, policy, tool_protocol=protocol)
            return ResultRecord(
                **scored.to_record(),
                model=self.spec.id,
                prompt=self.env.episodes.messages(item),
                completion=turns[-1].text if turns else "",
                usage=Usage(
                    prompt_tokens=sum(t.usage.prompt_tokens for t in turns),
                    completion_tokens=sum(t.usage.completion_tokens for t in turns),
                ),
                latency_s=sum(t.latency_s for t in turns),
                cost_usd=sum(t.cost_usd for t in turns),
                cached=bool(turns) and all(t.cached for t in turns),
                turns=len(turns),
                finish_reason=turns[-1].finish_reason if turns else None,
            )

        def settled(item: Item) -> ResultRecord | ErrorRecord:
            try:
                return episode(item)
            except ProviderError as error:
                return _error_record(item[self.env.data.id_column], error)
            except Exception as error:  # a tool or the episode's own code raised: this episode only is lost
                return _failure(item[self.env.data.id_column], "episode", error)

        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="episode") as pool:
            outcomes = list(pool.map(settled, batch))
        records = [outcome for outcome in outcomes if isinstance(outcome, ResultRecord)]
        errors = [outcome for outcome in outcomes if isinstance(outcome, ErrorRecord)]
        # Generation and verification interleave inside an episode; the whole episode counts as generation.
        return records, errors, time.perf_counter() - started, 0.0

    def _open_dialogue(self, seed: int) -> DialogueParts:
        return open_dialogue_parts(
            self.dialogue, self.counterparts, self.judge_spec, seed, self._lookup, self._counterpart_clients
        )

    def _dialogue_chunk(
        self,
        client: ModelClient,
        dialogue: DialogueParts,
        batch: Sequence[Item],
        params: Mapping[str, Any],
        seed: int,
    ) -> tuple[list[ResultRecord], list[ErrorRecord], float, float]:
        """Dialogues in lockstep; a failed model or judge call abandons that dialogue, which is retried on resume."""
        started = time.perf_counter()
        outcomes = self._play_dialogues(client, dialogue, batch, params, seed)
        wall = time.perf_counter() - started
        records, errors = [], []
        role = self.dialogue.policy_role
        for item, outcome in zip(batch, outcomes, strict=True):
            item_id = item[self.env.data.id_column]
            if isinstance(outcome, ErrorRecord):
                errors.append(outcome)
                continue
            if isinstance(outcome, ProviderError):
                errors.append(_error_record(item_id, outcome))
                continue
            if isinstance(outcome, Exception):
                error = ProviderError(f"{type(outcome).__name__}: {outcome}", kind="counterpart")
                errors.append(_error_record(item_id, error))
                continue
            try:
                records.append(self._dialogue_record(item, outcome, role, wall / len(batch)))
            except Exception as error:  # the verdict is not a valid record
                errors.append(_failure(item_id, "scoring", f"invalid score: {type(error).__name__}: {error}"))
        # Dialogue turns and judging interleave; the whole chunk counts as generation.
        return records, errors, wall, 0.0

    def _play_dialogues(
        self,
        client: ModelClient,
        dialogue: DialogueParts,
        batch: Sequence[Item],
        params: Mapping[str, Any],
        seed: int,
    ) -> list[ScoredSample | Exception | ErrorRecord]:
        """One outcome per dialogue; if the lockstep batch raises, each dialogue alone, so a dialogue that breaks
        the environment's code is that dialogue's error (a scoring failure) and not its batch-mates'."""
        policy = batch_policy(client, params, seed)
        try:
            return list(self.dialogue.run(batch, policy, counterparts=dialogue.counterparts, judge=dialogue.judge))
        except Exception:  # isolated below
            pass
        outcomes: list[ScoredSample | Exception | ErrorRecord] = []
        for item in batch:
            try:
                (outcome,) = self.dialogue.run([item], policy, counterparts=dialogue.counterparts, judge=dialogue.judge)
            except ProviderError as error:
                outcome = error
            except Exception as error:
                outcome = _failure(item[self.env.data.id_column], "scoring", error)
            outcomes.append(outcome)
        return outcomes

    def _dialogue_record(self, item: Item, outcome: ScoredSample, role: str, latency_s: float) -> ResultRecord:
        details = outcome.details
        own_turns = [entry["text"] for entry in details.get("transcript", []) if entry["role"] == role]
        return ResultRecord(
            **outcome.to_record(),
            model=self.spec.id,
            counterparts={name: spec.id for name, spec in self.counterparts.items()},
            prompt=self.env.episodes.messages(item),
            completion=own_turns[-1] if own_turns else "",
            usage=Usage(**details.get("usage", {}).get(role, {"prompt_tokens": 0, "completion_tokens": 0})),
            # Dialogues share batched calls: a dialogue's latency is its share of the chunk's wall time.
            latency_s=latency_s,
            cost_usd=float(details.get("cost_usd", {}).get(role, 0.0)),
            cached=False,
        )

    def _record(self, request: ChatRequest, completion: Completion, scored: ScoredSample) -> ResultRecord:
        return ResultRecord(
            **scored.to_record(),
            model=self.spec.id,
            prompt=request.messages,
            completion=completion.text,
            usage=Usage(
                prompt_tokens=completion.usage.prompt_tokens, completion_tokens=completion.usage.completion_tokens
            ),
            latency_s=completion.latency_s,
            cost_usd=completion.cost_usd,
            cached=completion.cached,
            finish_reason=completion.finish_reason,
        )

    def _start_metadata(
        self,
        folder: RunFolder,
        run_id: str,
        dataset: EvalDataset,
        fingerprint: Mapping[str, Any],
        fingerprint_hash: str,
        n: int,
        seed: int,
        experiment: ExperimentRef | None,
    ) -> RunMetadata:
        now = datetime.now(UTC).isoformat()
        version = code_version()
        session = Session(
            started_at=now, code_version=version, dirty_paths=dirty_paths() if version.endswith("-dirty") else None
        )
        if resumed := folder.resume(fingerprint_hash, session):
            return resumed
        metadata = RunMetadata(
            run_id=run_id,
            env=self.env.env_id,
            env_name=self.env.name,
            verifier_version=self.env.verifier.version,
            verifier_provenance=self.env.verifier.provenance(),
            counterparts=(
                {role: _public_spec(spec) for role, spec in self.counterparts.items()} if self.dialogue else None
            ),
            judge=self.judge_spec if self.dialogue else None,
            model=_public_spec(self.spec),
            generation=fingerprint["generation"],
            config=self.env.config.as_dict(),
            dataset=DatasetRef(
                source=dataset.source, split=dataset.split, hash=dataset.hash, rows=dataset.frame.height
            ),
            n_requested=n,
            n_items=len(fingerprint["item_ids"]),
            seed=seed,
            fingerprint_hash=fingerprint_hash,
            code_version=version,
            created_at=now,
            sessions=[session],
            status="running",
            experiment=experiment,
        )
        folder.write_metadata(metadata)
        return metadata

    def _finish_metadata(
        self,
        metadata: RunMetadata,
        records: Sequence[ResultRecord],
        client: ModelClient,
        timings: Mapping[str, float],
        elapsed: float,
        complete: bool,
        provider_errors: Sequence[ErrorRecord],
    ) -> RunMetadata:
        stats = client.stats
        finished = metadata.sessions[-1].replace(
            finished_at=datetime.now(UTC).isoformat(),
            wall_s=round(elapsed, 4),
            client=stats,
            new_samples=stats.get("requests", 0),
        )
        return metadata.replace(
            status="complete" if complete else "incomplete",
            sessions=[*metadata.sessions[:-1], finished],
            timings={name: round(value, 4) for name, value in timings.items()} | {"wall_s": round(elapsed, 4)},
            usage=Usage(
                prompt_tokens=sum(record.usage.prompt_tokens for record in records),
                completion_tokens=sum(record.usage.completion_tokens for record in records),
            ),
            cost_usd=round(sum(float(record.cost_usd) for record in records), 6),
            n_scored=len(records),
            n_provider_errors_this_session=len(provider_errors),
        )


@dataclass(frozen=True)
class ScoredFile:
    """What `secverify score` made of a completions file: the scored lines, the lines it could not score (named),
    and the metrics over the scored ones (None when no line could be scored)."""

    records: list[ScoredCompletion]
    errors: list[CompletionError]
    metrics: dict[str, Any] | None


def score_completions(env: Environment, items: pl.DataFrame, lines: Sequence[tuple[int, Any]]) -> ScoredFile:
    """Re-score stored completions offline: each (line number, JSON value) should be {"id", "completion"} with an
    id of the items file and a string completion. A line that is not, or whose scoring fails, becomes a named
    CompletionError; every other line is scored."""
    verifier = env.verifier
    if not isinstance(verifier, CompletionVerifier):
        raise ValueError(
            f"{env.name} scores whole dialogues, not single completions: run `secverify eval --env {env.env_id}` "
            "so every turn meets its counterpart and the judge"
        )
    by_id = {item[env.data.id_column]: item for item in env.data.validate(items).to_dicts()}
    records: list[ScoredCompletion] = []
    errors: list[CompletionError] = []
    for number, entry in lines:
        item_id = entry.get("id") if isinstance(entry, dict) else None
        named = item_id if isinstance(item_id, str) else None
        problem = _completion_problem(entry, by_id)
        if problem is not None:
            errors.append(CompletionError(line=number, id=named, kind=problem[0], message=problem[1]))
            continue
        text = entry["completion"]
        try:
            record = ScoredCompletion(**verifier.score(by_id[item_id], text).to_record(), completion=text)
            jsonl_line(record)
        except UnwritableRecordError as error:
            errors.append(CompletionError(line=number, id=named, kind="unwritable", message=str(error)))
            continue
        except Exception as error:  # the verifier raised, or its verdict is not a valid record
            errors.append(
                CompletionError(line=number, id=named, kind="scoring", message=f"{type(error).__name__}: {error}")
            )
            continue
        records.append(record)
    if not records:
        return ScoredFile(records, errors, None)
    scored_items = {record.id: by_id[record.id] for record in records}
    return ScoredFile(records, errors, verifier.aggregate([record.as_dict() for record in records], scored_items))


def _completion_problem(entry: Any, by_id: Mapping[str, Item]) -> tuple[str, str] | None:
    """(kind, message) of what makes a completions line unscorable, or None."""
    if not isinstance(entry, dict):
        return "not_an_object", f'expected {{"id": ..., "completion": ...}}, found {type(entry).__name__}'
    missing = [field for field in ("id", "completion") if field not in entry]
    if missing:
        return "missing_field", f"no {' or '.join(repr(field) for field in missing)} field"
    item_id, text = entry["id"], entry["completion"]
    if not isinstance(item_id, str):
        return "id_not_a_string", f"id must be a string, got {type(item_id).__name__}"
    if item_id not in by_id:
        return "unknown_id", f"id {item_id!r} is not in the items file"
    if not isinstance(text, str):
        return "completion_not_a_string", f"completion for {item_id!r} must be a string, got {_json_type(text)}"
    return None


def _json_type(value: Any) -> str:
    return "null" if value is None else type(value).__name__
