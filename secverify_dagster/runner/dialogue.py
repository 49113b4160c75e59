"""Dialogue episodes (E5/E6): the model plays its seat against counterparts, and a judge scores each reply.

Also the dialogue's parts as other callers open them: counterpart and judge policies (`open_dialogue_parts`), and
judges built outside an eval (`JudgeModels`: the validation asset, `secverify judges`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from secverify_dagster.resources.models import (
    ChatRequest,
    ModelClient,
    ModelSpec,
    ProviderError,
    open_client,
    reachability,
)
from secverify_dagster.resources.models.registry import Reachability
from secverify_dagster.runner.episodes import EpisodeKind, PlayedChunk
from secverify_dagster.runner.failures import provider_failure, runner_failure
from sv_shared.contracts import BatchPolicy, Dialogue, Environment, Item, PolicyReply, ScoredSample
from sv_shared.judging import build_judge
from sv_shared.judging.factory import judge_generation_params
from sv_shared.judging.measured import ensure_measurement
from sv_shared.judging.verdict import Judge
from sv_shared.runs.schema import ErrorRecord, ResultRecord, Usage


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


def counterpart_reachability(
    env: Environment,
    counterparts: Mapping[str, ModelSpec],
    judge_spec: str | None,
    lookup: Callable[[str], ModelSpec],
) -> Reachability:
    """Whether every counterpart (and the judge's model) can be called from here."""
    dialogue = env.episodes
    for role, spec in counterparts.items():
        if spec.provider == "baseline":
            if spec.id not in dialogue.counterpart_baselines():
                reason = f"{role} {spec.id}: {env.env_id} offers no such counterpart baseline"
                return Reachability(False, reason)
            continue
        status = reachability(spec, env.env_id)
        if not status.ok:
            return Reachability(False, f"{role} {spec.id}: {status.reason}")
    judge_model = judge_spec.split(":", 1)[1] if judge_spec and ":" in judge_spec else None
    if judge_model:
        status = reachability(lookup(judge_model), None)
        if not status.ok:
            return Reachability(False, f"judge {judge_spec}: {status.reason}")
    return Reachability(True, "counterparts reachable")


class DialogueEpisode(EpisodeKind):
    """Dialogues in lockstep; a failed model or judge call abandons that dialogue, which is retried on resume."""

    mode = "dialogue"

    def __init__(
        self, env: Environment, spec: ModelSpec, client: ModelClient, parts: DialogueParts, roles: Mapping[str, str]
    ) -> None:
        """parts: the counterparts and judge it plays against (closed with it); roles: each counterpart's model id."""
        super().__init__(env, spec, client)
        self.dialogue: Dialogue = env.episodes
        self.parts = parts
        self.roles = dict(roles)

    def play(self, batch: Sequence[Item], params: Mapping[str, Any], seed: int) -> PlayedChunk:
        started = time.perf_counter()
        outcomes = self._play_dialogues(batch, params, seed)
        wall = time.perf_counter() - started
        records, errors = [], []
        for item, outcome in zip(batch, outcomes, strict=True):
            item_id = self.item_id(item)
            if isinstance(outcome, ErrorRecord):
                errors.append(outcome)
                continue
            if isinstance(outcome, ProviderError):
                errors.append(provider_failure(item_id, outcome))
                continue
            if isinstance(outcome, Exception):
                error = ProviderError(f"{type(outcome).__name__}: {outcome}", kind="counterpart")
                errors.append(provider_failure(item_id, error))
                continue
            try:
                records.append(self._record(item, outcome, wall / len(batch)))
            except Exception as error:  # the verdict is not a valid record
                errors.append(runner_failure(item_id, "scoring", f"invalid score: {type(error).__name__}: {error}"))
        # Dialogue turns and judging interleave; the whole chunk counts as generation.
        return PlayedChunk(records, errors, wall, 0.0)

    def _play_dialogues(
        self, batch: Sequence[Item], params: Mapping[str, Any], seed: int
    ) -> list[ScoredSample | Exception | ErrorRecord]:
        """One outcome per dialogue; if the lockstep batch raises, each dialogue alone, so a dialogue that breaks
        the environment's code is that dialogue's error (a scoring failure) and not its batch-mates'."""
        policy = batch_policy(self.client, params, seed)
        counterparts, judge = self.parts.counterparts, self.parts.judge
        try:
            return list(self.dialogue.run(batch, policy, counterparts=counterparts, judge=judge))
        except Exception:  # isolated below
            pass
        outcomes: list[ScoredSample | Exception | ErrorRecord] = []
        for item in batch:
            try:
                (outcome,) = self.dialogue.run([item], policy, counterparts=counterparts, judge=judge)
            except ProviderError as error:
                outcome = error
            except Exception as error:
                outcome = runner_failure(self.item_id(item), "scoring", error)
            outcomes.append(outcome)
        return outcomes

    def silent_sample(self, item: Item) -> ScoredSample | None:
        """The dialogue played with a model that says nothing: its first turn fails to parse and ends it, so no
        counterpart or judge is called, and the environment scores it as any dialogue that ended so. None when even
        that raises: the dialogue's metrics need a judged dialogue, and the item breaks it whatever the model says."""

        def silent(conversations: Sequence[list[dict[str, Any]]]) -> list[PolicyReply | Exception]:
            return [PolicyReply(text="") for _ in conversations]

        try:
            (outcome,) = self.dialogue.run([item], silent, counterparts=self.parts.counterparts, judge=self.parts.judge)
        except Exception:  # the environment's own failure on this item, already recorded as its error
            return None
        return None if isinstance(outcome, Exception) else outcome

    def _record(self, item: Item, outcome: ScoredSample, latency_s: float) -> ResultRecord:
        role = self.dialogue.policy_role
        details = outcome.details
        own_turns = [entry["text"] for entry in details.get("transcript", []) if entry["role"] == role]
        return ResultRecord(
            **outcome.to_record(),
            model=self.spec.id,
            counterparts=self.roles,
            prompt=self.env.episodes.messages(item),
            completion=own_turns[-1] if own_turns else "",
            usage=Usage(**details.get("usage", {}).get(role, {"prompt_tokens": 0, "completion_tokens": 0})),
            # Dialogues share batched calls: a dialogue's latency is its share of the chunk's wall time.
            latency_s=latency_s,
            cost_usd=float(details.get("cost_usd", {}).get(role, 0.0)),
            cached=False,
        )

    def judge_validation(self) -> dict[str, Any] | None:
        # Rates are reported with the judge's measured error: measured once per judge (cached), while its model is
        # still open.
        return ensure_measurement(self.parts.judge)

    def close(self) -> None:
        self.parts.close()
