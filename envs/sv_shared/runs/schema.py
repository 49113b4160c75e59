"""The declared schema of an eval run folder's files, and the version policy that reads them back.

outputs/evals/<env name>--<model id>/<run id>/
  metadata.json   RunMetadata    provenance, sessions, status, timings, usage, cost
  results.jsonl   ResultRecord   one scored sample a line
  errors.jsonl    ErrorRecord    one failed attempt at a sample a line (retried on resume, up to a bound for
                                 failures that are about the sample)
  summary.json    RunSummary     the environment's metrics over results.jsonl
  .lock           (no schema)    the lock of the process writing the folder, and who it is

`secverify score` writes ScoredCompletion lines, and a CompletionError line for each completion it could not score.

Every file carries its `schema_version`: metadata.json and summary.json as a field, and every line of results.jsonl
and errors.jsonl as a field of its own, so a run resumed by a later secverify may hold lines of two versions and each
still says what it is. Files written before versions existed have none: they are version 0, read when they parse as
the current version after the migration of each model's `_from_version_0` (which names every field it fills in), and
refused otherwise. A file from a newer version is refused with a message to upgrade.

Writing keeps the files as they were before the schema was declared: fields in the order the runner always wrote them,
numbers as written (an int stays an int), and fields that only some runs have (dialogue counterparts, tool-episode
turns, the fields a run gains when a session finishes) left out rather than written as null.

An optional field added later keeps the version when its absence means exactly what files without it always meant:
Session.dirty_paths (the uncommitted files behind a "-dirty" code version) is left out when the checkout was clean or
the file predates it, so every version-1 file still reads. RunSummary.unscored (the items without a scored sample,
which its metrics count as failures) is left out when every item is scored; an older summary without it and with
n_scored < n_items is one whose metrics left those items out. A secverify older than such a field refuses a file that
has it, naming the field (records are closed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final, Literal, Self

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, ValidationError, model_serializer

SCHEMA_VERSION: Final = 1
"""The version this code writes. Bump it (and add a migration) whenever a field changes meaning, type or presence."""

SUPPORTED_VERSIONS: Final = (0, 1)
"""Versions this code reads: 0 (files from before versioning, when they parse as version 1) and 1."""

Number = int | float
"""A JSON number kept as written: an int stays an int, so reading and re-writing a file leaves it unchanged."""


class RunRecordError(ValueError):
    """A run file this code cannot read: malformed, or of a schema version it does not support."""


class RecordModel(BaseModel):
    """Strict (no string-to-number coercion), closed (an unknown field is an error) and immutable."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    _optional: ClassVar[frozenset[str]] = frozenset()
    """Fields some files lack: left out of the written file when None, instead of written as null."""

    @model_serializer(mode="wrap")
    def _leave_out_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {key: value for key, value in handler(self).items() if not (value is None and key in self._optional)}

    def as_dict(self) -> dict[str, Any]:
        """The record as it is written: plain values, in field order, absent optional fields left out."""
        return self.model_dump()

    def replace(self, **changes: Any) -> Self:
        """A copy with some fields changed, validated like a record read from a file."""
        return self.model_validate(self.as_dict() | changes)

    @classmethod
    def _from_version_0(cls, data: dict[str, Any]) -> dict[str, Any]:
        """A version-0 file's fields as version 1 has them (those models whose fields differed override this)."""
        return data

    @classmethod
    def parse(cls, data: Any, where: str) -> Self:
        """A record read from `where` (a file, or a file and line): migrated from version 0, or refused."""
        if not isinstance(data, Mapping):
            raise RunRecordError(f"{where}: expected a JSON object, found {type(data).__name__}")
        version = data.get("schema_version", 0)
        if type(version) is int and version > SCHEMA_VERSION:
            raise RunRecordError(
                f"{where}: written with run-record schema version {version}, newer than this secverify reads "
                f"({_supported()}); upgrade secverify to read it"
            )
        if type(version) is not int or version not in SUPPORTED_VERSIONS:
            raise RunRecordError(
                f"{where}: schema_version {version!r} is not a version this secverify reads ({_supported()})"
            )
        fields = dict(data)
        if version == 0:
            fields = cls._from_version_0(fields) | {"schema_version": SCHEMA_VERSION}
        try:
            return cls.model_validate(fields)
        except ValidationError as error:
            what = (
                f"a file from before run records were versioned (version 0) that does not parse as version "
                f"{SCHEMA_VERSION}"
                if version == 0
                else f"not a valid {cls.__name__} of schema version {version}"
            )
            raise RunRecordError(f"{where}: {what} ({_supported()}): {_describe(error)}") from None


def _supported() -> str:
    return "supported versions: " + ", ".join(str(version) for version in SUPPORTED_VERSIONS)


def _describe(error: ValidationError, limit: int = 5) -> str:
    problems = [
        f"{'.'.join(str(part) for part in problem['loc']) or 'record'}: {problem['msg']}"
        for problem in error.errors()[:limit]
    ]
    more = error.error_count() - limit
    return "; ".join(problems) + (f"; and {more} more" if more > 0 else "")


class Usage(RecordModel):
    """Tokens a sample (or a run) cost the model under evaluation."""

    prompt_tokens: int
    completion_tokens: int


class ScoredRecord(RecordModel):
    """The verifier's verdict on one completion (`ScoredSample.to_record()`), versioned."""

    schema_version: Literal[1] = SCHEMA_VERSION
    id: str
    reward: Number
    components: dict[str, Number]
    parsed: dict[str, Any] | None
    error: str | None
    """Why the completion could not be parsed or scored (a format failure's name), or None."""
    details: dict[str, Any]
    """The environment's evidence for the score (stages, transcripts, judge verdicts)."""


class ScoredCompletion(ScoredRecord):
    """A stored completion re-scored offline (`secverify score`): the verdict and the text it judged."""

    completion: str


class ResultRecord(ScoredRecord):
    """One line of results.jsonl: a scored sample with what it took to produce it."""

    _optional: ClassVar[frozenset[str]] = frozenset({"counterparts", "turns", "finish_reason"})

    model: str
    """Registry id of the model under evaluation."""
    counterparts: dict[str, str] | None = None
    """Dialogues: the registry model that played each counterpart role."""
    prompt: list[dict[str, Any]]
    """The opening chat messages the model was given."""
    completion: str
    """The model's (final) answer; for dialogues its last turn."""
    usage: Usage
    latency_s: Number
    cost_usd: Number
    cached: bool
    """Whether the answer came from the response cache (never for dialogues)."""
    turns: int | None = None
    """Tool-using episodes: how many model turns the episode took."""
    finish_reason: str | None = None
    """Why the model's (final) reply ended, in OpenAI's words: "stop" (its end of turn, or its answer's end), "length"
    (the token budget: the reply was cut, see sv_shared.answers.completion.cut_by_budget), "tool_calls",
    "content_filter". Left out where the provider gives none (rule baselines, dialogues, files written before it)."""


class ErrorRecord(RecordModel):
    """One line of errors.jsonl: a failed attempt at a sample; the sample is retried on resume (see the runner for
    the failures after which it is given up)."""

    schema_version: Literal[1] = SCHEMA_VERSION
    id: str
    kind: str
    """A provider failure after retries (rate_limit, quota, server, timeout, unreachable, auth, bad_request,
    bad_response, local, counterpart, …) or the runner's own: scoring (the verifier raised or returned an invalid
    verdict), episode (a tool episode raised), unwritable (the record cannot be written as JSON that reads back)."""
    status: int | None
    """The HTTP status, where there was one."""
    message: str
    at: str
    """When it failed (ISO 8601, UTC)."""


class CompletionError(RecordModel):
    """A line of a completions file that `secverify score` could not score; the other lines are scored."""

    schema_version: Literal[1] = SCHEMA_VERSION
    line: int
    """1-based line number in the completions file."""
    id: str | None
    """The line's item id, when it has a string one."""
    kind: str
    """line_too_long, not_json, not_an_object, missing_field, id_not_a_string, completion_not_a_string,
    unknown_id, scoring, unwritable."""
    message: str


class ModelIdentity(RecordModel):
    """A model's public spec for provenance: provider, model name, parameters, prices; never keys or endpoints."""

    id: str
    provider: str
    model: str
    params: dict[str, Any]
    price: dict[str, Number]


class DatasetRef(RecordModel):
    """The frame a run drew its items from."""

    source: str
    split: str
    hash: str
    rows: int


class Session(RecordModel):
    """One invocation of the runner on a run folder (a run resumed after a crash has several)."""

    _optional: ClassVar[frozenset[str]] = frozenset({"dirty_paths", "finished_at", "wall_s", "client", "new_samples"})

    started_at: str
    code_version: str
    dirty_paths: list[str] | None = None
    """The tracked files with uncommitted changes when code_version ends in "-dirty" (None: a clean checkout, or a
    session recorded before dirty paths were)."""
    finished_at: str | None = None
    wall_s: Number | None = None
    client: dict[str, Any] | None = None
    """The model client's counters for the session (requests, cache hits, retries, errors, tokens, cost)."""
    new_samples: int | None = None


RunStatus = Literal["running", "complete", "incomplete"]


class ExperimentRef(RecordModel):
    """An experiment record a run or checkpoint was made from: where it is and the sha256 of its bytes."""

    name: str
    path: str
    """Relative to the project root (configs/experiments/<env>/<date>.yaml)."""
    sha256: str


class RescoredFrom(RecordModel):
    """The run whose stored completions a re-scored run re-scored, and the reward config it used."""

    run_id: str
    ablation: str
    """The ablation's name (configs/ablations/<env>.yaml)."""
    ablation_sha256: str
    """sha256 of the ablation's overrides as canonical JSON, so a changed ablation is told apart."""


class RunMetadata(RecordModel):
    """metadata.json: everything that determines a run's results, and how its sessions went."""

    _optional: ClassVar[frozenset[str]] = frozenset(
        {
            "counterparts",
            "judge",
            "judge_validation",
            "timings",
            "usage",
            "cost_usd",
            "n_scored",
            "n_provider_errors_this_session",
            "experiment",
            "rescored_from",
        }
    )

    schema_version: Literal[1] = SCHEMA_VERSION
    run_id: str
    env: str
    env_name: str
    verifier_version: str
    verifier_provenance: dict[str, Any]
    """What else the scores depend on (scanner versions, rule-set hashes)."""
    counterparts: dict[str, ModelIdentity] | None = None
    """Dialogues: the model playing each counterpart role."""
    judge: str | None = None
    """Dialogues: the judge spec."""
    model: ModelIdentity
    generation: dict[str, Any]
    config: dict[str, Any]
    """The environment's typed config, as plain values."""
    dataset: DatasetRef
    n_requested: int
    n_items: int
    seed: int
    fingerprint_hash: str
    code_version: str
    """The code version of the first session (each session records its own)."""
    created_at: str
    sessions: list[Session]
    status: RunStatus
    judge_validation: dict[str, Any] | None = None
    """Dialogues: the judge's measured accuracy on the validation set, which corrected rates invert."""
    experiment: ExperimentRef | None = None
    """The experiment record (configs/experiments/<env>/<date>.yaml) the run was made from, if any."""
    rescored_from: RescoredFrom | None = None
    """A run whose samples are another run's stored completions re-scored under a changed reward config (an
    ablation): which run, and which config. No model was called for it."""
    # The fields below are written when a session finishes: a run that crashed mid-session has none of them yet.
    timings: dict[str, Number] | None = None
    usage: Usage | None = None
    cost_usd: Number | None = None
    n_scored: int | None = None
    n_provider_errors_this_session: int | None = None

    @classmethod
    def _from_version_0(cls, data: dict[str, Any]) -> dict[str, Any]:
        # Runs from before scanner provenance was recorded: their scores depended on nothing beyond the verifier.
        return {"verifier_provenance": {}} | data

    @property
    def started_at(self) -> str:
        """When the latest session started: the most recent run of a model is the one started last."""
        return self.sessions[-1].started_at


class UnscoredItem(RecordModel):
    """An item of a run that has no scored sample, and why."""

    id: str
    kind: str
    """Its last error's kind (an ErrorRecord kind: scoring, unwritable, server, bad_request, …), or not_played when
    the run has not reached it."""
    message: str
    given_up: bool
    """Whether the runner has given it up (it is no longer retried) rather than retrying it on resume."""
    counted: bool
    """Whether the metrics count it, as the answer of a model that said nothing; false only where even that cannot be
    scored for a dialogue (sv_shared.runs.unscored)."""


class RunSummary(RecordModel):
    """summary.json: the environment's metrics over every item of a run, intent-to-treat: an item without a scored
    sample counts as not scored (sv_shared.runs.unscored) and is named in `unscored`."""

    _optional: ClassVar[frozenset[str]] = frozenset({"unscored"})

    schema_version: Literal[1] = SCHEMA_VERSION
    env: str
    env_name: str
    model: str
    run_id: str
    n_items: int
    n_scored: int
    metrics: dict[str, Any]
    """Free-form: what the environment's `verifier.aggregate` returns (reward, detection, calibration, …)."""
    unscored: list[UnscoredItem] | None = None
    """The items without a scored sample, in item order; left out when every item is scored. Summaries written before
    it existed left such items out of their metrics (n_scored < n_items) without naming them."""
