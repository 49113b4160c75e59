"""E5/E6 as inspect Tasks: our own dialogue episodes (lockstep turns, judge, storage screen, redaction, verifier)
played with inspect's model as the model under evaluation, so the reward is the one `secverify eval` computes.

The model under evaluation is inspect's model (`--model`): E5's attacker, E6's defender. E5's target is, in order:
the `target` task argument (a registry id, as `secverify eval --target`), the inspect model role `target`
(`--model-role target=...`), or the environment's default (configs/envs/e5.yaml). A registry counterpart (a rule
baseline or a model) and the judge (configs/envs/<env>.yaml `dialogue.judge`, or the `judge` argument) are built as
EvalRunner builds them. The conversation the log shows is our stored transcript, and every model call in the log is
redacted the same way (log_redaction).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import transcript
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageUser,
    GenerateConfig,
    ModelOutput,
    get_model,
    model_roles,
)
from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from secverify.interop.inspect.bridge import sync_batch_policy
from secverify.interop.inspect.log_redaction import (
    model_outputs,
    private_model_events,
    redacted_events,
    withheld_texts,
)
from secverify.interop.inspect.messages import chat_messages, generation_config, log_safe, loggable_text
from secverify.interop.inspect.scorers import ITEM_ID, run_metrics, score_of
from secverify.interop.items import eval_slice
from secverify_dagster.resources.models import ModelSpec, load_registry, open_client
from secverify_dagster.runner.dialogue import JudgeModels, counterpart_policy
from sv_shared.contracts import BatchPolicy, Dialogue, Environment, Item, Message, PolicyReply, ScoredSample
from sv_shared.judging.verdict import Exchange, Judge, Verdict

SCORED = "sv_scored"
"""Store key of the episode's scored record (what results.jsonl would hold)."""


class NotADialogueError(ValueError):
    """dialogue_task was given an environment whose episodes are not dialogues (E1-E4)."""


class SerializedJudge:
    """A judge shared by samples that inspect plays concurrently: one batch at a time (a model judge's client is
    not shared across threads)."""

    def __init__(self, inner: Judge) -> None:
        self.inner = inner
        self.judge_id = inner.judge_id
        self.lock = threading.Lock()

    def judge_many(self, exchanges: Sequence[Exchange]) -> list[Verdict]:
        with self.lock:
            return self.inner.judge_many(exchanges)


def serialized(policy: BatchPolicy) -> BatchPolicy:
    """A registry counterpart shared by concurrent samples, called one batch at a time (a local model's client is
    not thread-safe)."""
    lock = threading.Lock()

    def one_at_a_time(conversations: Sequence[list[Message]]) -> list[PolicyReply | Exception]:
        with lock:
            return policy(conversations)

    return one_at_a_time


class RegistryParts:
    """The registry counterparts and the judge of one task, opened on first use (a local model loads once) and
    shared by its samples for the life of the process, as EvalRunner holds them for a run."""

    def __init__(self, episodes: Dialogue, judge_spec: str, seed: int) -> None:
        self.episodes = episodes
        self.judge_spec = judge_spec
        self.seed = seed
        self.lock = threading.Lock()
        self.policies: dict[tuple[str, str], BatchPolicy] = {}
        self._judge: SerializedJudge | None = None

    def counterpart(self, role: str, spec: ModelSpec) -> BatchPolicy:
        with self.lock:
            key = (role, spec.id)
            if key not in self.policies:
                client = open_client(spec, cache=None, baselines=self.episodes.counterpart_baselines())
                self.policies[key] = serialized(counterpart_policy(self.episodes, role, spec, client, self.seed))
            return self.policies[key]

    def judge(self, registry: Mapping[str, ModelSpec]) -> SerializedJudge:
        with self.lock:
            if self._judge is None:
                self._judge = SerializedJudge(JudgeModels(registry, self.seed).build(self.judge_spec))
            return self._judge


def _counterparts(
    episodes: Dialogue, parts: RegistryParts, registry: Mapping[str, ModelSpec], target: str | None, seed: int
) -> dict[str, BatchPolicy]:
    """Each counterpart role's policy: the given registry id, else the inspect model role of that name, else the
    environment's default registry model."""
    chosen: dict[str, BatchPolicy] = {}
    bound = model_roles()
    for role, default_id in episodes.counterpart_roles().items():
        given = target if role == "target" else None
        if given is None and role in bound:
            config = generation_config(episodes.counterpart_generation_params(role), seed=seed)
            chosen[role] = sync_batch_policy(get_model(role=role), config)
            continue
        model_id = given or default_id
        if model_id not in registry:
            raise KeyError(f"{role} {model_id!r} is not in the model registry (see `secverify models`)")
        chosen[role] = parts.counterpart(role, registry[model_id])
    return chosen


def _conversation(episodes: Dialogue, transcript_entries: Sequence[Mapping[str, Any]]) -> list[ChatMessage]:
    """The stored (redacted) transcript as chat turns: the model under evaluation's turns are the assistant's."""
    return [
        (ChatMessageAssistant if entry.get("role") == episodes.policy_role else ChatMessageUser)(
            content=loggable_text(str(entry["text"]))
        )
        for entry in transcript_entries
    ]


def dialogue_solver(
    env: Environment,
    episodes: Dialogue,
    items: Mapping[str, Item],
    *,
    judge_spec: str,
    target: str | None,
    seed: int,
) -> Solver:
    """Plays one item's dialogue per sample with our episode code; leaves the scored record in the store."""
    registry = load_registry()
    if target is not None and target not in registry:
        raise KeyError(f"target {target!r} is not in the model registry (see `secverify models`)")
    parts = RegistryParts(episodes, judge_spec, seed)

    @solver(name=f"{env.name}/dialogue")
    def play_dialogue() -> Solver:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            item = items[state.metadata[ITEM_ID]]
            model = get_model()
            # The task's GenerateConfig (env defaults, then the CLI's) applies to the active model by itself.
            policy = sync_batch_policy(model, GenerateConfig())
            counterparts = _counterparts(episodes, parts, registry, target, seed)
            judge = parts.judge(registry)

            def play() -> tuple[ScoredSample | Exception, Any]:
                captured = private_model_events()
                (outcome,) = episodes.run([item], policy, counterparts=counterparts, judge=judge)
                return outcome, captured

            outcome, captured = await anyio.to_thread.run_sync(play)
            entries = outcome.details.get("transcript", []) if isinstance(outcome, ScoredSample) else []
            withheld = withheld_texts(
                model_outputs(captured.events),
                entries,
                derived=lambda text: _derived(env, text),
                as_completion=episodes.policy_turn_completion,
                completion_role=episodes.policy_role,
            )
            for event in redacted_events(captured, withheld):
                transcript()._event(event)
            if isinstance(outcome, Exception):
                raise outcome  # a failed model or judge call: the sample's error (`inspect eval-retry` plays it again)
            state.messages = [m for m in state.messages if m.role == "system"] + _conversation(episodes, entries)
            own = [str(entry["text"]) for entry in entries if entry.get("role") == episodes.policy_role]
            # The completion is the model under evaluation's last stored turn, as the runner's record keeps it.
            state.output = ModelOutput.from_content(model=str(model), content=loggable_text(own[-1] if own else ""))
            state.store.set(SCORED, log_safe(outcome.to_record()))
            return state

        return solve

    return play_dialogue()


def _derived(env: Environment, text: str) -> list[str]:
    """The texts an episode reads from a model output (E5's message, E6's reply), for matching redaction markers."""
    parsed = env.verifier.parse_turn(text)
    return [value for value in (parsed.output or {}).values() if isinstance(value, str)]


def outcome_name(record: Mapping[str, Any]) -> str:
    """The dialogue's named error, else its outcome (E6), else whether the attack succeeded (E5)."""
    details = record.get("details") or {}
    if record.get("error"):
        return str(record["error"])
    if details.get("outcome"):
        return str(details["outcome"])
    return "success" if (record.get("components") or {}).get("success") else "no_success"


def dialogue_scorer(env: Environment) -> Scorer:
    """The episode's verdict as the sample's Score (the episode scored itself, as `Dialogue.run` does for our runner);
    the explanation names the dialogue's error or outcome."""

    @scorer(metrics=[], name=env.name)
    def secverify_dialogue() -> Scorer:
        async def score(state: TaskState, target: Target) -> Score:
            record = state.store.get(SCORED)
            verdict = score_of(record, state.output.completion)
            return verdict.model_copy(update={"explanation": outcome_name(record)})

        return score

    return secverify_dialogue()


def dialogue_task(
    env_id: str,
    *,
    split: str = "test",
    n: int | None = None,
    seed: int = 42,
    dataset: str = "embedded",
    judge: str | None = None,
    target: str | None = None,
) -> Task:
    """An E5/E6 Task over the runner's items (eval_slice: same split, seeded order, first N)."""
    chosen = eval_slice(env_id, split=split, n=n, seed=seed, dataset=dataset)
    env = chosen.env
    episodes = env.episodes
    if not isinstance(episodes, Dialogue):
        raise NotADialogueError(f"{env.name} has no dialogue episodes (dialogue_task is for E5 and E6)")
    if target is not None and "target" not in episodes.counterpart_roles():
        raise ValueError(f"{env.name} has no target (target is for E5)")
    judge_spec = judge or episodes.judge_spec()
    id_column = env.data.id_column
    items = {str(item[id_column]): item for item in chosen.items}
    samples = [
        Sample(
            id=item_id,
            input=chat_messages(episodes.messages(item)),
            metadata={ITEM_ID: item_id, "item": log_safe(item)},
        )
        for item_id, item in items.items()
    ]
    return Task(
        name=env.name,
        dataset=MemoryDataset(samples, name=f"{env.name}:{chosen.split}", location=chosen.source),
        solver=dialogue_solver(env, episodes, items, judge_spec=judge_spec, target=target, seed=seed),
        scorer=dialogue_scorer(env),
        metrics=run_metrics(env, items),
        config=generation_config(env.generation_params(), seed=seed),
        version=env.verifier.version,
        metadata={
            "env_id": env.env_id,
            "split": chosen.split,
            "seed": seed,
            "dataset": chosen.source,
            "judge": judge_spec,
            "target": target,
        },
    )
