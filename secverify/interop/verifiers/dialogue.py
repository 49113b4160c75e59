"""Dialogue environments (E5 red-team attack, E6 red-team defense) as Prime `verifiers` multi-agent envs.

The library's agent plays the policy role (E5's attacker, E6's defender) through `agents.<role>.interaction(task)`,
and everything else is secverify's own episode code: `DialogueEnv.run` calls `env.episodes.run([item], policy,
counterparts=…, judge=…)`, the very code `secverify eval` runs, in a worker thread, with a policy (`AgentTurns`) that
relays each of the dialogue's policy turns to the interaction's `turn()` on the event loop. The judge, the storage
screen, redaction, turn limits and `score_dialogue` are therefore ours, and the trace's reward is our reward by
construction. Counterparts (E5's target) and the judge are built from the model registry as `secverify eval` builds
them.

The library writes every trace's messages to its own log (vf-eval's `traces.jsonl`). Before a trace leaves
`DialogueEnv.run`, `redact_trace` replaces what our transcript redacted (judged unsafe, or flagged by the storage
screen) with the transcript's stored form, and withholds behind a redaction marker every model text our runner
never stored (a reply that was never judged, any reasoning); replaced messages lose their token ids too.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import verifiers.v1 as vf
from verifiers.v1.errors import EnvError
from verifiers.v1.types import content_text

from secverify.interop.verifiers.common import SecverifyTask
from secverify_dagster.resources.models import ModelSpec, load_registry, reachability, require_promoted
from secverify_dagster.runner.dialogue import DialogueParts
from secverify_dagster.runner.dialogue import open_dialogue_parts as runner_dialogue_parts
from sv_shared.contracts import Dialogue, Environment, Item, Message, PolicyReply, ScoredSample
from sv_shared.data.files import replace_lone_surrogates
from sv_shared.judging.redaction import UNJUDGED, redaction_marker
from sv_shared.registry import get_environment

DIALOGUE_KEY = "secverify_dialogue"
"""trace.info key of the scored dialogue: our record (reward, components, error, details with the redacted
transcript), exactly what `secverify eval` writes to results.jsonl for it."""

NOT_A_DIALOGUE = "not_played_as_dialogue"
"""The named error of a dialogue task scored without a dialogue (played by an env other than its own)."""


class DialogueNotScoredError(EnvError):
    """Our runner could not score the dialogue (a model, counterpart or judge call failed, or the library ended the
    agent's run before the dialogue ended): the trace fails unscored (retried with --env.retries, or on --resume), as
    `secverify eval` retries such a dialogue."""


class CounterpartUnavailableError(RuntimeError):
    """A counterpart or the judge's model cannot be called from here (no key, no endpoint, not a counterpart)."""


class ConversationMismatchError(RuntimeError):
    """Our runner's conversation did not extend what the agent was already shown (a bug, never a model's doing)."""


class DialogueTask(SecverifyTask):
    """A dialogue's verdict is the one our runner scored while the env played it (trace.info[DIALOGUE_KEY]); its
    components are metrics, since E5/E6 rewards are not weighted sums of them."""

    async def score_answer(self, trace: vf.Trace) -> ScoredSample:
        record = trace.info.get(DIALOGUE_KEY)
        if not isinstance(record, Mapping):
            return ScoredSample(
                item_id=self.data.id or "", reward=0.0, components={}, parsed=None, error=NOT_A_DIALOGUE
            )
        return ScoredSample(
            item_id=record["id"],
            reward=record["reward"],
            components=dict(record["components"]),
            parsed=record.get("parsed"),
            error=record.get("error"),
            details=dict(record.get("details", {})),
        )

    @vf.metric
    async def components(self, trace: vf.Trace) -> dict[str, float]:
        """Our verifier's reward components, as `<env>_<component>` (e6_safe, e5_success, …)."""
        verdict = await self.verdict(trace)
        return {f"{self.ENV_ID}_{name}": float(value) for name, value in verdict["components"].items()}


def dialogue_task(env_id: str, reward_name: str) -> type[DialogueTask]:
    """The Task class of a dialogue env: one `@vf.reward` named `reward_name`, weight 1, our dialogue reward."""

    async def reward(self: DialogueTask, trace: vf.Trace) -> float:
        return float((await self.verdict(trace))["reward"])

    reward.__name__ = reward.__qualname__ = reward_name
    reward.__doc__ = f"Our {env_id.upper()} verifier's dialogue reward (score_dialogue)."
    namespace = {"ENV_ID": env_id, "__module__": DialogueTask.__module__, reward_name: vf.reward(reward, weight=1.0)}
    return type(f"{env_id.upper()}DialogueTask", (DialogueTask,), namespace)


@dataclass
class PolicyTurn:
    """One turn relayed to the agent: what our runner sent (new messages only) and the raw reply (None: no reply)."""

    sent: list[Message]
    reply: str | None = None


@dataclass
class AgentTurns:
    """Our BatchPolicy for one dialogue: each call relays the conversation's new messages to the agent's open
    interaction (`turn()`, run on the event loop) and returns the agent's raw reply, as a model provider would."""

    chat: Any
    """The open `vf` Interaction of the policy role."""
    loop: asyncio.AbstractEventLoop
    system_prompt: str | None
    role: str
    turns: list[PolicyTurn] = field(default_factory=list)
    shown: list[Message] = field(default_factory=list)
    """Our runner's conversation as of the last call."""

    def __call__(self, conversations: Sequence[list[Message]]) -> list[PolicyReply | Exception]:
        if len(conversations) != 1:
            raise ConversationMismatchError(f"one dialogue per agent, got {len(conversations)} conversations")
        conversation = list(conversations[0])
        turn = PolicyTurn(self._new_messages(conversation))
        self.turns.append(turn)
        self.shown = conversation
        try:
            segment = asyncio.run_coroutine_threadsafe(self.chat.turn(turn.sent), self.loop).result()
        except Exception as error:  # the call failed: our runner ends this dialogue unscored, as on a provider error
            return [error]
        if segment.terminated:
            stop = self.chat.trace.stop_condition
            return [DialogueNotScoredError(f"the library ended the {self.role}'s run ({stop}) before the dialogue")]
        replies = [message for message in segment.messages if isinstance(message, vf.AssistantMessage)]
        turn.reply = content_text(replies[-1].content) if replies and replies[-1].content is not None else ""
        return [PolicyReply(text=turn.reply, usage=self._last_usage())]

    def _new_messages(self, conversation: list[Message]) -> list[Message]:
        if not self.turns:
            system = [m["content"] for m in conversation if m["role"] == "system"]
            opening = [m for m in conversation if m["role"] != "system"]
            if ("\n\n".join(system) if system else None) != self.system_prompt:
                raise ConversationMismatchError("the dialogue's system prompt is not the task's")
            return opening
        seen = len(self.shown)
        if conversation[:seen] != self.shown or len(conversation) <= seen + 1:
            raise ConversationMismatchError("the conversation does not extend the one the agent was shown")
        if conversation[seen]["role"] != "assistant" or any(m["role"] != "user" for m in conversation[seen + 1 :]):
            raise ConversationMismatchError("a turn must be the agent's reply followed by user messages")
        return conversation[seen + 1 :]

    def _last_usage(self) -> dict[str, int]:
        calls = [call for call in self.chat.trace.calls if call.usage is not None]
        if not calls:
            return {}
        return {"prompt_tokens": calls[-1].usage.prompt_tokens, "completion_tokens": calls[-1].usage.completion_tokens}


def encodable(value: Any) -> Any:
    """`value` with every lone surrogate in its strings replaced by U+FFFD: the library writes traces as UTF-8
    JSON, which cannot carry them (our run files escape them; a parsed attack or reply can hold one)."""
    if isinstance(value, str):
        return replace_lone_surrogates(value)
    if isinstance(value, Mapping):
        return {encodable(key): encodable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [encodable(item) for item in value]
    return value


def _withheld(text: str) -> str:
    return redaction_marker(text, [UNJUDGED])


def stored_forms(
    dialogue: Dialogue, item: Item, transcript: Sequence[Mapping[str, Any]], turns: Sequence[PolicyTurn]
) -> dict[str, str]:
    """Raw text → what may be stored instead, for every text of the relayed turns our runner did not store as is:
    a reply our transcript redacted (its stored completion), a reply it never stored (never judged: withheld), and
    a message carrying a counterpart's redacted text (re-rendered from the stored transcript, or withheld)."""
    policy_entries = [(index, entry) for index, entry in enumerate(transcript) if entry["role"] == dialogue.policy_role]
    counterpart_redacted = any(entry.get("redacted") for entry in transcript if entry["role"] != dialogue.policy_role)
    forms: dict[str, str] = {}
    for number, turn in enumerate(turns):
        stored = policy_entries[number][1] if number < len(policy_entries) else None
        if turn.reply is not None and turn.reply.strip():
            if stored is None:
                forms[turn.reply] = _withheld(turn.reply)
            elif stored.get("redacted"):
                forms[turn.reply] = dialogue.policy_turn_completion(stored)
        if number and counterpart_redacted:
            before = transcript[: policy_entries[number][0]] if stored is not None else transcript
            forms |= _rerendered(dialogue, item, before, turn.sent)
    return forms


def _rerendered(
    dialogue: Dialogue, item: Item, before: Sequence[Mapping[str, Any]], sent: Sequence[Message]
) -> dict[str, str]:
    """The sent messages as the stored transcript renders them (where they differ); withheld where it cannot."""
    try:
        view = dialogue.policy_view(item, before)
    except (ValueError, KeyError):
        view = []
    rendered = view[len(view) - len(sent) :] if len(view) >= len(sent) else []
    if [m["role"] for m in rendered] != [m["role"] for m in sent]:
        return {m["content"]: _withheld(m["content"]) for m in sent}
    return {m["content"]: r["content"] for m, r in zip(sent, rendered, strict=True) if m["content"] != r["content"]}


_TOKEN_FIELDS = ("token_ids", "mask", "is_content", "logprobs")


def redact_trace(trace: vf.Trace, forms: Mapping[str, str]) -> None:
    """Replace every message of the trace whose text is a key of `forms` by its stored form (its token ids go with
    it), and withhold every reasoning text: our judge never reads reasoning, so our runner never stores it."""
    for node in trace.nodes:
        message = node.message
        if message.role not in ("user", "assistant"):
            continue
        update: dict[str, Any] = {}
        if isinstance(message, vf.AssistantMessage) and message.reasoning_content:
            update["reasoning_content"] = _withheld(message.reasoning_content)
        text = content_text(message.content) if message.content is not None else ""
        if text in forms:
            update["content"] = forms[text]
            for name in _TOKEN_FIELDS:
                setattr(node, name, [])
            node.renderer_token_ids = None
        if update:
            node.message = message.model_copy(update=update)
    if trace.root_reply is not None and trace.root_reply in forms:
        trace.root_reply = forms[trace.root_reply]


def open_dialogue_parts(
    env: Environment,
    *,
    counterparts: Mapping[str, str],
    judge_spec: str,
    seed: int,
    registry: Mapping[str, ModelSpec] | None = None,
) -> DialogueParts:
    """The counterpart policies (role → registry model id; a role left out takes the environment's default) and the
    judge, opened as EvalRunner opens them (runner.open_dialogue_parts); unreachable ones fail here, not mid-turn."""
    dialogue: Dialogue = env.episodes
    registry = registry if registry is not None else load_registry()
    unknown_roles = set(counterparts) - set(dialogue.counterpart_roles())
    if unknown_roles:
        raise ValueError(f"{env.name} has no counterpart roles {sorted(unknown_roles)}")
    specs: dict[str, ModelSpec] = {}
    for role, default in dialogue.counterpart_roles().items():
        model_id = counterparts.get(role) or default
        if model_id not in registry:
            raise KeyError(f"{role} {model_id!r} is not in the model registry (see `secverify models`)")
        if role not in counterparts or not counterparts[role]:
            require_promoted(registry, [model_id], where=f"{env.name}'s default {role}")
        specs[role] = registry[model_id]
    for role, spec in specs.items():
        if spec.provider == "baseline":
            if spec.id not in dialogue.counterpart_baselines():
                raise CounterpartUnavailableError(f"{role} {spec.id}: {env.env_id} offers no such counterpart baseline")
        elif not (status := reachability(spec, env.env_id)):
            raise CounterpartUnavailableError(f"{role} {spec.id}: {status.reason}")

    def judge_model(model_id: str) -> ModelSpec:
        if model_id not in registry:
            raise KeyError(f"judge model {model_id!r} is not in the model registry")
        if not (status := reachability(registry[model_id], None)):
            raise CounterpartUnavailableError(f"judge {judge_spec}: {status.reason}")
        return registry[model_id]

    return runner_dialogue_parts(dialogue, specs, judge_spec, seed, judge_model)


class DialogueEnvConfig(vf.EnvConfig):
    """Settings every dialogue env has; the policy role's seat is declared by each env's config."""

    judge: str = ""
    """Judge spec (local, refusal-detector, llama-guard-3:<model id>, llm:<model id>, …); empty: the environment's
    configured judge (configs/envs/<env>.yaml dialogue.judge), as `secverify eval --judge`."""


class DialogueEnv(vf.Env):
    """Plays each task as one of our dialogues, the library's agent in the policy role (`ENV_ID`'s
    `episodes.policy_role`). Counterparts and judge are opened once per serving (`start`) and shared by the
    episodes (our model clients are thread-safe)."""

    ENV_ID: ClassVar[str] = ""

    def __init__(self, config: DialogueEnvConfig) -> None:
        super().__init__(config)
        self.environment = get_environment(self.ENV_ID)
        self._parts: DialogueParts | None = None
        self._parts_lock = threading.Lock()

    def counterpart_models(self) -> dict[str, str]:
        """Counterpart role → registry model id chosen in the config (empty: none chosen, the defaults play)."""
        return {}

    def judge_spec(self) -> str:
        return self.config.judge or self.environment.episodes.judge_spec()

    def parts(self) -> DialogueParts:
        with self._parts_lock:
            if self._parts is None:
                self._parts = open_dialogue_parts(
                    self.environment,
                    counterparts=self.counterpart_models(),
                    judge_spec=self.judge_spec(),
                    seed=self.config.taskset.seed,
                )
            return self._parts

    async def start(self) -> None:
        await asyncio.to_thread(self.parts)

    async def stop(self) -> None:
        with self._parts_lock:
            parts, self._parts = self._parts, None
        if parts is not None:
            parts.close()

    async def run(self, task: vf.Task, agents: Any) -> None:
        dialogue: Dialogue = self.environment.episodes
        item = task.data.item
        parts = await asyncio.to_thread(self.parts)
        # The agent's side opens through its first turn (our runner's opening messages), so its prompt is nulled.
        agent_task = type(task)(task.data.model_copy(update={"prompt": None}), task.config)
        turns: AgentTurns | None = None
        trace: vf.Trace | None = None
        try:
            async with getattr(agents, dialogue.policy_role).interaction(agent_task) as chat:
                trace = chat.trace
                turns = AgentTurns(chat, asyncio.get_running_loop(), task.data.system_prompt, dialogue.policy_role)
                (outcome,) = await asyncio.to_thread(
                    dialogue.run, [item], turns, counterparts=parts.counterparts, judge=parts.judge
                )
                if isinstance(outcome, Exception):
                    raise DialogueNotScoredError(f"{type(outcome).__name__}: {outcome}") from outcome
                chat.trace.info[DIALOGUE_KEY] = encodable(outcome.to_record())
        finally:
            if trace is not None and turns is not None:
                record = trace.info.get(DIALOGUE_KEY, {})
                transcript = record.get("details", {}).get("transcript", [])
                forms = stored_forms(dialogue, item, transcript, turns.turns)
                redact_trace(trace, {raw: encodable(stored) for raw, stored in forms.items()})
