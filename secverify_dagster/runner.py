"""The eval runner: one environment × one model over N items, written as a resumable run folder.

outputs/evals/<env name>--<model id>/<run id>/
  metadata.json   provenance: dataset hash and source, verifier version, model and parameters, config, seed,
                  code version, timings, token usage, cost, status
  results.jsonl   one scored sample a line, appended as samples finish (a crash loses at most the line being written)
  errors.jsonl    provider failures (after retries); those samples are not in results and are retried on resume
  summary.json    the environment's metrics over results.jsonl

The files' schema and version policy are declared in sv_shared.runs.schema; sv_shared.runs.folder reads and writes them.

The run id is derived from everything that determines the results, so the same command after a crash resumes the same
run and finishes the missing samples only.
"""

from __future__ import annotations

import inspect
import subprocess
import time
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
)
from secverify_dagster.resources.models.registry import Reachability
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
from sv_shared.runs.folder import RunFolder
from sv_shared.runs.schema import (
    DatasetRef,
    ErrorRecord,
    ModelIdentity,
    ResultRecord,
    RunMetadata,
    RunSummary,
    ScoredCompletion,
    Session,
    Usage,
)

ProgressCallback = Callable[[int, int], None]


class RunMismatchError(RuntimeError):
    """A run folder exists for this run id but was made with different inputs."""


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
    """An items file (parquet, CSV or JSONL) in the environment's schema, validated."""
    return EvalDataset(frame=env.data.validate(read_dataset(path)), source=str(path), split=split)


def run_dir_for(env: Environment, model_id: str, run_id: str, root: Path | None = None) -> Path:
    return (root or outputs_dir() / "evals") / f"{env.name}--{model_id}" / run_id


def _error_record(item_id: str, error: ProviderError) -> ErrorRecord:
    return ErrorRecord(
        id=item_id, kind=error.kind, status=error.status, message=str(error), at=datetime.now(UTC).isoformat()
    )


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
            params = {"temperature": 0.0, **judge_generation_params(judge_spec), **spec.params}
            return batch_policy(client, params, self.seed)

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
    ) -> EvalOutcome:
        """Evaluate; `max_samples` stops after that many new samples (an interrupted run, for resume tests).

        include_tools plays tool-using episodes (`episodes.rollout`) instead of one turn.
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

        params = {**self.env.generation_params(), **self.spec.params}
        items = select_items(self.env, dataset.frame, n, seed)
        mode = "dialogue" if self.dialogue else "tools" if include_tools else "single"
        fingerprint = self.fingerprint(dataset, items, seed, params) | {"mode": mode}
        fingerprint_hash = sha256_hex(stable_json(fingerprint))
        run_id = run_id or f"seed{seed}-n{len(items)}-{fingerprint_hash[:10]}"
        folder = RunFolder(run_dir_for(self.env, self.spec.id, run_id, self.evals_root))
        folder.path.mkdir(parents=True, exist_ok=True)
        metadata = self._start_metadata(folder, run_id, dataset, fingerprint, fingerprint_hash, n, seed)

        done = {record.id: record for record in folder.resume_results()}
        pending = [item for item in items if item[self.env.data.id_column] not in done]
        if max_samples is not None:
            pending = pending[:max_samples]

        timings = {"generate_s": 0.0, "score_s": 0.0, "write_s": 0.0}
        provider_errors: list[ErrorRecord] = []
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
                folder.append_results(records)
                folder.append_errors(batch_errors)
                provider_errors.extend(batch_errors)
                for record in records:
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

        id_column = self.env.data.id_column
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
        complete = len(ordered) == len(items)
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
        )

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
        scores = self.env.verifier.score_many([item for item, _, _ in answered], [c.text for _, _, c in answered])
        records = [
            self._record(request, completion, scored)
            for (_, request, completion), scored in zip(answered, scores, strict=True)
        ]
        return records, errors, t1 - t0, time.perf_counter() - t1

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

            try:
                scored = self.env.episodes.rollout(item, policy, tool_protocol=protocol)
            except ProviderError as error:
                return error
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
            )

        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="episode") as pool:
            outcomes = list(pool.map(episode, batch))
        records, errors = [], []
        for item, outcome in zip(batch, outcomes, strict=True):
            if isinstance(outcome, ProviderError):
                errors.append(_error_record(item[self.env.data.id_column], outcome))
            else:
                records.append(outcome)
        # Generation and verification interleave inside an episode; the whole episode counts as generation.
        return records, errors, time.perf_counter() - started, 0.0

    def _open_dialogue(self, seed: int) -> DialogueParts:
        clients: list[ModelClient] = []

        def client_for(spec: ModelSpec, role: str) -> ModelClient:
            if role in self._counterpart_clients:
                return self._counterpart_clients[role]
            client = open_client(spec, cache=None, baselines=self.dialogue.counterpart_baselines())
            clients.append(client)
            return client

        counterparts = {
            role: batch_policy(
                client_for(spec, role),
                {**self.dialogue.counterpart_generation_params(role), **spec.params},
                seed,
            )
            for role, spec in self.counterparts.items()
        }

        def judge_policy(model_id: str) -> BatchPolicy:
            spec = self._lookup(model_id)
            params = {"temperature": 0.0, **judge_generation_params(self.judge_spec), **spec.params}
            return batch_policy(client_for(spec, "judge"), params, seed)

        return DialogueParts(counterparts, build_judge(self.judge_spec, judge_policy), clients)

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
        outcomes = self.dialogue.run(
            batch, batch_policy(client, params, seed), counterparts=dialogue.counterparts, judge=dialogue.judge
        )
        wall = time.perf_counter() - started
        records, errors = [], []
        role = self.dialogue.policy_role
        for item, outcome in zip(batch, outcomes, strict=True):
            item_id = item[self.env.data.id_column]
            if isinstance(outcome, ProviderError):
                errors.append(_error_record(item_id, outcome))
                continue
            if isinstance(outcome, Exception):
                error = ProviderError(f"{type(outcome).__name__}: {outcome}", kind="counterpart")
                errors.append(_error_record(item_id, error))
                continue
            details = outcome.details
            own_turns = [entry["text"] for entry in details.get("transcript", []) if entry["role"] == role]
            records.append(
                ResultRecord(
                    **outcome.to_record(),
                    model=self.spec.id,
                    counterparts={name: spec.id for name, spec in self.counterparts.items()},
                    prompt=self.env.episodes.messages(item),
                    completion=own_turns[-1] if own_turns else "",
                    usage=Usage(**details.get("usage", {}).get(role, {"prompt_tokens": 0, "completion_tokens": 0})),
                    # Dialogues share batched calls: a dialogue's latency is its share of the chunk's wall time.
                    latency_s=wall / len(batch),
                    cost_usd=float(details.get("cost_usd", {}).get(role, 0.0)),
                    cached=False,
                )
            )
        # Dialogue turns and judging interleave; the whole chunk counts as generation.
        return records, errors, wall, 0.0

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
    ) -> RunMetadata:
        now = datetime.now(UTC).isoformat()
        version = code_version()
        session = Session(started_at=now, code_version=version)
        if folder.metadata_path.exists():
            previous = folder.read_metadata()
            if previous.fingerprint_hash != fingerprint_hash:
                raise RunMismatchError(
                    f"{folder.path} holds a run with different inputs (fingerprint {previous.fingerprint_hash}, "
                    f"now {fingerprint_hash}); choose another --run-id"
                )
            resumed = previous.replace(sessions=[*previous.sessions, session], status="running")
            folder.write_metadata(resumed)
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


def score_completions(
    env: Environment, items: pl.DataFrame, completions: Sequence[Mapping[str, Any]]
) -> tuple[list[ScoredCompletion], dict[str, Any]]:
    """Re-score stored completions offline: every completion id must name an item."""
    verifier = env.verifier
    if not isinstance(verifier, CompletionVerifier):
        raise ValueError(
            f"{env.name} scores whole dialogues, not single completions: run `secverify eval --env {env.env_id}` "
            "so every turn meets its counterpart and the judge"
        )
    by_id = {item[env.data.id_column]: item for item in env.data.validate(items).to_dicts()}
    unknown = [c.get("id") for c in completions if c.get("id") not in by_id]
    if unknown:
        raise KeyError(f"{len(unknown)} completion ids are not in the items file, e.g. {unknown[:3]}")
    records = []
    for entry in completions:
        text = entry.get("completion")
        if not isinstance(text, str):
            raise ValueError(f"completion for {entry['id']!r} must be a string, got {type(text).__name__}")
        records.append(ScoredCompletion(**verifier.score(by_id[entry["id"]], text).to_record(), completion=text))
    scored_items = {record.id: by_id[record.id] for record in records}
    return records, verifier.aggregate([record.as_dict() for record in records], scored_items)
