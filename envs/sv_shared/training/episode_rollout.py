"""GRPO on the multi-turn environments, played through their own episode code with the trainer's model as the policy.

`EpisodeRollout(env, items, ...)` is a TRL 1.16 `rollout_func(prompts, trainer) -> dict`. For each prompt it
finds the item, plays one episode with the environment's own code (`ToolUse.rollout` for E2/E4 in tools mode,
`Dialogue.run` for E5/E6), and returns what GRPOTrainer trains on:

- prompt_ids: the token ids of the policy's first turn (its opening messages, chat-templated, generation prompt);
- completion_ids: every later token the model saw or wrote, in order: its own turns (env_mask 1) and, between them,
  the tokens the episode put there (tool results, scripted user turns, target replies, chat-template markup: env_mask
  0). prompt_ids + completion_ids is, token for token, the context of the policy's last turn followed by that turn, so
  the log-probabilities TRL recomputes for the env_mask-1 tokens are those of the tokens the model generated, in the
  context it generated them in. Each turn's context is built as the previous turn's context + its generated ids +
  the templated new messages (never by re-templating the whole history, which re-tokenizes earlier turns and shows
  the model the environment's normalized copy of its replies, e.g. E5's parsed attack message instead of its JSON).
- logprobs: None (TRL 1.16 recomputes log-probabilities itself when it generates with transformers and accepts
  None here), or each completion token's sampling log-probability (0.0 on env_mask-0 tokens) when asked for, or when
  the trainer uses vLLM importance-sampling correction, which subtracts them.
- episode_reward: the environment verifier's reward of the episode (ScoredSample.reward), read by `episode_reward`,
  the reward function to give the trainer; episode_failed / episode_error / episode_turns alongside.

A failed episode (its ScoredSample slot holds an exception: a counterpart or judge call failed, the episode's code
raised, the context ran out) never stops training: it gets `failure_reward` (0.0), episode_failed True and its error,
and its completion is one masked end-of-sequence token (the policy is not trained on an episode the environment did
not finish; its turns stay in the rollout's records). `episode_reward` logs the failures (episodes/failed). A
prompt that matches no item, or the model failing to generate, raises: those are set-up errors, not episode failures.

Note for the trainer's config: with the default failure_reward 0.0 a failed episode still counts in its group's mean
(failure_reward=None leaves it out: TRL treats a None reward as unscorable). TRL does not cut rollout_func
completions to max_completion_length: an episode's completion holds all its turns (bounded by max_context_tokens).

Prompts and groups: TRL's sampler repeats each dataset row num_generations times in a row, and rollout_func receives
that per-process slice as it is (already repeated, in order); one completion is returned per prompt received, in the
same order, so each group's completions are consecutive as TRL expects. rollout_func receives only the prompts,
not the rows' other columns, so each prompt is mapped back to its item by its content: the environment's opening
messages for the item (`env.episodes.messages(item)`, the rows' `prompt` column), compared on role and content.
Items whose opening messages are identical cannot be told apart: using such a prompt raises AmbiguousPrompt.

Batching: dialogue episodes advance in lockstep (one batched generate per policy turn, as the environments call a
BatchPolicy); tool-use episodes run one per thread, like the eval runner's concurrent episodes, and their policy
turns are gathered into one batched generate whenever every live episode is waiting for the model.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sv_shared.contracts import (
    Baseline,
    BatchPolicy,
    Dialogue,
    Environment,
    Item,
    Message,
    PolicyReply,
    ScoredSample,
    ToolUse,
)
from sv_shared.judging.verdict import Judge

ROLLOUT_FIELDS = ("episode_reward", "episode_failed", "episode_error", "episode_turns")
"""The extra fields a rollout returns per completion (TRL forwards them to the reward functions)."""

MAX_ERROR_CHARS = 500


class EpisodeRolloutError(RuntimeError):
    """Base class of this module's named errors."""


class PromptNotFound(EpisodeRolloutError):
    """A prompt the trainer passed is not the opening of any item this rollout was given (a set-up error)."""


class AmbiguousPrompt(EpisodeRolloutError):
    """Several items open with the same messages, so a prompt cannot name one of them (a set-up error)."""


class ConversationMismatch(EpisodeRolloutError):
    """An episode's next conversation does not extend what the model saw (the environment rewrote its history, or
    the chat template renders earlier turns differently once more messages follow): that episode fails."""


class ContextBudgetExceeded(EpisodeRolloutError):
    """An episode's context reached max_context_tokens before the policy's next turn: that episode fails."""


class GenerationFailed(EpisodeRolloutError):
    """The trainer's model failed to generate: training stops (this is no episode's failure)."""


# -- prompts and items ----------------------------------------------------------------------------------------------


def _clean_text(text: str) -> str:
    """Text as a dataset row stores it (a lone surrogate cannot be UTF-8): the same rule as the GRPO rows use."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def prompt_key(messages: Sequence[Mapping[str, Any]]) -> str:
    """The identity of a conversational prompt: its messages' roles and text contents, in order (other keys, such as
    the None fields a dataset adds to messages, are ignored)."""
    if isinstance(messages, str) or not isinstance(messages, Sequence):
        raise PromptNotFound(f"a prompt is a list of chat messages, got {type(messages).__name__}")
    parts = []
    for message in messages:
        if not isinstance(message, Mapping):
            raise PromptNotFound(f"a prompt message is a mapping, got {type(message).__name__}")
        role, content = message.get("role"), message.get("content")
        parts.append(
            [str(role), _clean_text(content) if isinstance(content, str) else json.dumps(content, default=str)]
        )
    return json.dumps(parts, ensure_ascii=True)


class ItemIndex:
    """Items by the key of their opening messages (what the GRPO rows' `prompt` column holds)."""

    def __init__(self, env: Environment, items: Mapping[str, Item] | Iterable[Item]) -> None:
        values = list(items.values()) if isinstance(items, Mapping) else list(items)
        self.env = env
        self._by_key: dict[str, list[Item]] = {}
        for item in values:
            self._by_key.setdefault(prompt_key(env.episodes.messages(dict(item))), []).append(item)
        self.size = len(values)

    def item_id(self, item: Item) -> str:
        return str(item.get(self.env.data.id_column))

    def lookup(self, prompt: Sequence[Mapping[str, Any]]) -> Item:
        key = prompt_key(prompt)
        found = self._by_key.get(key)
        if not found:
            raise PromptNotFound(
                f"{self.env.env_id}: a prompt matches none of the {self.size} items this rollout was given "
                f"(its first message starts {key[:120]!r})"
            )
        if len(found) > 1:
            ids = ", ".join(sorted(self.item_id(item) for item in found)[:10])
            raise AmbiguousPrompt(
                f"{self.env.env_id}: {len(found)} items open with the same messages ({ids}); deduplicate the rows by "
                "prompt, since a prompt is all the trainer passes to rollout_func"
            )
        return found[0]


def baseline_counterpart(baseline: Baseline) -> BatchPolicy:
    """A rule baseline (observation -> text) as a dialogue counterpart: it is given {"messages": conversation}, as
    the eval runner gives counterpart baselines (E6's defenders as E5's target)."""

    def policy(conversations: Sequence[list[Message]]) -> list[PolicyReply | Exception]:
        replies: list[PolicyReply | Exception] = []
        for conversation in conversations:
            try:
                replies.append(PolicyReply(text=baseline({"messages": list(conversation)})))
            except Exception as error:  # a failing counterpart ends its own dialogue only
                replies.append(error)
        return replies

    return policy


# -- the trainer's model as a generator -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sampling:
    """How the policy samples each turn."""

    max_new_tokens: int
    temperature: float
    max_batch: int
    max_context_tokens: int | None
    logprobs: bool


class _Generator:
    """The trainer's current model, unwrapped, in eval mode, under no_grad: token ids in, sampled ids out."""

    def __init__(self, trainer: Any, sampling: Sampling) -> None:
        import torch

        self.torch = torch
        self.trainer = trainer
        self.sampling = sampling
        processing = trainer.processing_class
        self.tokenizer = getattr(processing, "tokenizer", processing)
        eos = list(getattr(trainer, "eos_token_ids", None) or [])
        if not eos:
            configured = getattr(getattr(trainer.model, "generation_config", None), "eos_token_id", None)
            eos = list(configured) if isinstance(configured, list) else ([configured] if configured is not None else [])
            if self.tokenizer.eos_token_id is not None and self.tokenizer.eos_token_id not in eos:
                eos.insert(0, self.tokenizer.eos_token_id)
        self.eos_ids: list[int] = [int(token) for token in eos]
        pad = self.tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else self.eos_ids[0])
        self.model: Any = None
        self.calls = 0
        self.tokenizer_lock = threading.RLock()
        """Tool-use episodes template and tokenize in their threads; a fast tokenizer is not safe to share."""

    @contextlib.contextmanager
    def active(self) -> Iterator[_Generator]:
        from trl.models.utils import unwrap_model_for_generation

        trainer = self.trainer
        args = getattr(trainer, "args", None)
        wrapped = getattr(trainer, "model_wrapped", None) or trainer.model
        with unwrap_model_for_generation(
            wrapped,
            trainer.accelerator,
            gather_deepspeed3_params=getattr(args, "ds3_gather_for_generation", True),
            gradient_checkpointing_kwargs=getattr(args, "gradient_checkpointing_kwargs", None),
        ) as model:
            training = model.training
            model.eval()
            self.model = model
            try:
                with self.torch.no_grad():
                    yield self
            finally:
                self.model = None
                if training:
                    model.train()

    def generation_kwargs(self) -> dict[str, Any]:
        """The trainer's sampling settings (GRPOTrainer.generation_kwargs when it has them), per-turn length."""
        trainer = self.trainer
        kwargs = dict(getattr(trainer, "generation_kwargs", None) or {})
        if not kwargs:
            for name in ("top_p", "top_k", "min_p", "repetition_penalty"):
                value = getattr(trainer, name, None)
                if value is not None:
                    kwargs[name] = value
        for name in ("max_new_tokens", "max_length", "eos_token_id", "pad_token_id", "bos_token_id"):
            kwargs.pop(name, None)
        kwargs.update(
            do_sample=True,
            temperature=self.sampling.temperature,
            pad_token_id=self.pad_id,
            eos_token_id=self.eos_ids,
            return_dict_in_generate=True,
            output_logits=self.sampling.logprobs,
        )
        return {key: value for key, value in kwargs.items() if value is not None}

    def generate(self, contexts: Sequence[list[int]], caps: Sequence[int]) -> list[tuple[list[int], list[float]]]:
        """Sampled continuations of token-id contexts, each cut after its first end-of-sequence token or its cap."""
        results: list[tuple[list[int], list[float]]] = []
        step = max(1, self.sampling.max_batch)
        try:
            for start in range(0, len(contexts), step):
                results.extend(self._generate_batch(contexts[start : start + step], caps[start : start + step]))
        except Exception as error:
            raise GenerationFailed(
                f"the trainer's model failed to generate: {type(error).__name__}: {error}"
            ) from error
        return results

    def _generate_batch(
        self, contexts: Sequence[list[int]], caps: Sequence[int]
    ) -> list[tuple[list[int], list[float]]]:
        torch = self.torch
        if self.model is None:
            raise RuntimeError("generate() outside active()")
        self.calls += 1
        device = self.trainer.accelerator.device
        width = max(len(context) for context in contexts)
        input_ids = torch.tensor(
            [[self.pad_id] * (width - len(context)) + list(context) for context in contexts], device=device
        )
        attention_mask = torch.tensor(
            [[0] * (width - len(context)) + [1] * len(context) for context in contexts], device=device
        )
        output = self.model.generate(
            input_ids=input_ids,
            attention_mask=attention_mask,
            max_new_tokens=max(caps),
            **self.generation_kwargs(),
        )
        sequences = output.sequences[:, width:].tolist()
        eos = set(self.eos_ids)
        results = []
        for row, (ids, cap) in enumerate(zip(sequences, caps, strict=True)):
            kept: list[int] = []
            for token in ids[:cap]:
                kept.append(int(token))
                if token in eos:
                    break
            logprobs: list[float] = []
            if self.sampling.logprobs:
                for position, token in enumerate(kept):
                    logits = output.logits[position][row].float() / self.sampling.temperature
                    logprobs.append(float(torch.log_softmax(logits, dim=-1)[token]))
            results.append((kept, logprobs))
        return results


# -- one episode's tokens -------------------------------------------------------------------------------------------

_SENTINEL = "\u2063SVROLLOUTSENTINEL\u2063"


def _same_messages(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]) -> bool:
    return len(a) == len(b) and prompt_key(a) == prompt_key(b)


def _plain(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{key: value for key, value in message.items() if value is not None} for message in messages]


@dataclass
class LaneRecord:
    """One episode's token record, as returned to TRL (prompt_ids + completion_ids, env_mask, logprobs)."""

    item_id: str
    prompt_ids: list[int] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    turn_starts: list[int] = field(default_factory=list)
    """Completion index where each policy turn's generated tokens start (turn 1: 0)."""
    turn_lengths: list[int] = field(default_factory=list)
    """How many tokens the model generated at each turn."""
    turn_contexts: list[list[int]] = field(default_factory=list)
    """The exact token ids the model was given at each turn (kept only when the rollout records contexts)."""
    replies: list[str] = field(default_factory=list)
    """Each turn's reply text, as the environment received it."""
    messages: list[dict[str, Any]] | None = None
    """The conversation the model was given at its last turn."""
    sample: ScoredSample | None = None
    error: str | None = None

    @property
    def context(self) -> list[int]:
        return self.prompt_ids + self.completion_ids

    @property
    def started(self) -> bool:
        return self.messages is not None


class _Lane:
    """Builds one episode's token record turn by turn: between turns, the templated new messages (env_mask 0)."""

    def __init__(self, item: Item, item_id: str, generator: _Generator, opening: list[Message], keep_contexts: bool):
        self.item = item
        self.record = LaneRecord(item_id=item_id)
        self.generator = generator
        self.opening = opening
        self.keep_contexts = keep_contexts
        self.failed = False
        self.seen_key = ""

    def _render(self, messages: Sequence[Mapping[str, Any]], *, generation_prompt: bool) -> str:
        kwargs = dict(getattr(self.generator.trainer, "chat_template_kwargs", None) or {})
        with self.generator.tokenizer_lock:
            return self.generator.tokenizer.apply_chat_template(
                _plain(messages), tokenize=False, add_generation_prompt=generation_prompt, **kwargs
            )

    def _encode(self, text: str) -> list[int]:
        with self.generator.tokenizer_lock:
            return list(self.generator.tokenizer(text, add_special_tokens=False)["input_ids"])

    def extends(self, conversation: Sequence[Mapping[str, Any]]) -> bool:
        """Whether a conversation is the messages of this episode's last turn, a reply, and new messages."""
        seen = self.record.messages or []
        return (
            len(conversation) > len(seen) + 1
            and conversation[len(seen)].get("role") == "assistant"
            and prompt_key(conversation[: len(seen)]) == self.seen_key
        )

    def affinity(self, conversation: Sequence[Mapping[str, Any]]) -> int | None:
        """How well a dialogue's conversation fits as this episode's next turn (None: it cannot be): used to match a
        lockstep call's conversations to episodes. Beyond the history, the environment's copy of the model's last
        reply is compared with the reply (environments normalize it: E6 strips it, E5 keeps the parsed message)."""
        if self.failed:
            return None
        if not self.record.started:
            head = conversation[: len(self.opening)]
            rest = conversation[len(self.opening) :]
            fits = _same_messages(head, self.opening) and all(m.get("role") != "assistant" for m in rest)
            return 0 if fits else None
        if not self.extends(conversation):
            return None
        content = conversation[len(self.record.messages or [])].get("content")
        reply = self.record.replies[-1] if self.record.replies else ""
        if not isinstance(content, str):
            return 0
        if content == reply:
            return 3
        if content.strip() == reply.strip():
            return 2
        core = content.strip()
        if core and (core in reply or json.dumps(core, ensure_ascii=False)[1:-1] in reply):
            return 1
        return 0

    def between(self, conversation: Sequence[Mapping[str, Any]]) -> list[int]:
        """The tokens between the last turn's generated ids and the next generation: the chat template's rendering
        of the new messages (and of the end of the model's turn when the model did not end it itself)."""
        seen = self.record.messages or []
        if not self.extends(conversation):
            raise ConversationMismatch(
                f"turn {len(self.record.replies) + 1}: the conversation does not extend the previous turn's messages "
                "with the model's reply and new messages"
            )
        new = list(conversation[len(seen) + 1 :])
        marked = [*seen, {"role": "assistant", "content": _SENTINEL}, *new]
        text = self._render(marked, generation_prompt=True)
        head, found, tail = text.partition(_SENTINEL)
        if not found or _SENTINEL in tail:
            raise ConversationMismatch("the chat template does not render an assistant turn's content verbatim")
        if head != self._render(seen, generation_prompt=True):
            raise ConversationMismatch(
                "the chat template renders the conversation so far differently once the reply and new messages "
                "follow (it is not append-only), so no single token sequence is what the model saw at every turn"
            )
        ids = self._encode(tail)
        last = self.record.completion_ids[-1] if self.record.completion_ids else None
        if ids and last is not None and last in self.generator.eos_ids and ids[0] == last:
            ids = ids[1:]  # the model ended its turn with the template's own end-of-turn token
        return ids

    def prepare(self, conversation: Sequence[Mapping[str, Any]]) -> tuple[list[int], int]:
        """The context for this turn (the record grows by the between-turn tokens) and its new-token cap."""
        if not self.record.started:
            self.record.prompt_ids = self._encode(self._render(conversation, generation_prompt=True))
        else:
            between = self.between(conversation)
            self.record.completion_ids += between
            self.record.env_mask += [0] * len(between)
            self.record.logprobs += [0.0] * len(between)
        self.record.messages = _plain(conversation)
        self.seen_key = prompt_key(self.record.messages)
        context = self.record.context
        cap = self.generator.sampling.max_new_tokens
        limit = self.generator.sampling.max_context_tokens
        if limit is not None:
            cap = min(cap, limit - len(context))
            if cap < 1:
                raise ContextBudgetExceeded(
                    f"turn {len(self.record.replies) + 1}: the context holds {len(context)} tokens, "
                    f"the limit is {limit}"
                )
        if self.keep_contexts:
            self.record.turn_contexts.append(list(context))
        return context, cap

    def add_turn(self, ids: list[int], logprobs: list[float]) -> PolicyReply:
        self.record.turn_starts.append(len(self.record.completion_ids))
        self.record.turn_lengths.append(len(ids))
        context_tokens = len(self.record.context)
        self.record.completion_ids += ids
        self.record.env_mask += [1] * len(ids)
        self.record.logprobs += logprobs if logprobs else [0.0] * len(ids)
        with self.generator.tokenizer_lock:
            text = self.generator.tokenizer.decode(ids, skip_special_tokens=True)
        self.record.replies.append(text)
        return PolicyReply(text=text, usage={"prompt_tokens": context_tokens, "completion_tokens": len(ids)})

    def fail(self, error: BaseException) -> None:
        self.failed = True
        self.record.error = self.record.error or _describe(error)


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:MAX_ERROR_CHARS]


# -- dialogue policy (lockstep) ---------------------------------------------------------------------------------------


class _DialoguePolicy:
    """The BatchPolicy a Dialogue drives: each call's conversations are matched, in order, to the episodes they
    continue (Dialogue.run passes its active episodes' conversations in episode order), generated in one batch."""

    def __init__(self, lanes: Sequence[_Lane], generator: _Generator) -> None:
        self.lanes = lanes
        self.generator = generator

    def _match(self, conversations: Sequence[list[Message]]) -> list[_Lane | None]:
        """The order-preserving assignment of conversations to episodes that matches the most conversations and,
        among those, fits the replies best (episodes that ended are skipped; identical episodes keep their order)."""
        lanes, m, n = self.lanes, len(conversations), len(self.lanes)
        fit = [[lane.affinity(conversation) for lane in lanes] for conversation in conversations]
        # best[i][j]: best value placing the first i conversations on the first j lanes; a match is worth 10 + fit
        best = [[0] * (n + 1) for _ in range(m + 1)]
        move: list[list[str]] = [[""] * (n + 1) for _ in range(m + 1)]
        for i in range(1, m + 1):
            best[i][0], move[i][0] = best[i - 1][0], "unmatched"
        for j in range(1, n + 1):
            move[0][j] = "skip"
        for i in range(1, m + 1):
            for j in range(1, n + 1):
                options = [(best[i][j - 1], "skip"), (best[i - 1][j], "unmatched")]
                score = fit[i - 1][j - 1]
                if score is not None:
                    options.append((best[i - 1][j - 1] + 10 + score, "match"))
                best[i][j], move[i][j] = max(options, key=lambda option: option[0])
        matched: list[_Lane | None] = [None] * m
        i, j = m, n
        while i > 0:
            step = move[i][j]
            if step == "match":
                matched[i - 1] = lanes[j - 1]
                i, j = i - 1, j - 1
            elif step == "skip":
                j -= 1
            else:
                i -= 1
        return matched

    def __call__(self, conversations: Sequence[list[Message]]) -> list[PolicyReply | Exception]:
        replies: list[PolicyReply | Exception | None] = [None] * len(conversations)
        requests: list[tuple[int, _Lane, list[int], int]] = []
        for position, (conversation, lane) in enumerate(zip(conversations, self._match(conversations), strict=True)):
            if lane is None:
                replies[position] = ConversationMismatch("a conversation continues none of the episodes in flight")
                continue
            try:
                context, cap = lane.prepare(conversation)
            except EpisodeRolloutError as error:
                lane.fail(error)
                replies[position] = error
                continue
            requests.append((position, lane, context, cap))
        if requests:
            outputs = self.generator.generate([r[2] for r in requests], [r[3] for r in requests])
            for (position, lane, _, _), (ids, logprobs) in zip(requests, outputs, strict=True):
                replies[position] = lane.add_turn(ids, logprobs)
        return [reply if reply is not None else RuntimeError("no reply") for reply in replies]


# -- tool-use policies (one thread per episode, batched generation) ---------------------------------------------------


class _Lockstep:
    """Gathers the policy turns of episodes running in threads into one generate call whenever every live episode
    waits for the model (the others run tools meanwhile)."""

    def __init__(self, generator: _Generator, live: int) -> None:
        self.generator = generator
        self._cv = threading.Condition()
        self._live = live
        self._pending: dict[int, tuple[list[int], int]] = {}
        self._done: dict[int, tuple[list[int], list[float]] | BaseException] = {}

    def request(self, lane: int, context: list[int], cap: int) -> tuple[list[int], list[float]]:
        with self._cv:
            self._pending[lane] = (context, cap)
            self._cv.notify_all()
            while lane not in self._done:
                self._cv.wait()
            result = self._done.pop(lane)
        if isinstance(result, BaseException):
            raise result
        return result

    def leave(self) -> None:
        with self._cv:
            self._live -= 1
            self._cv.notify_all()

    def serve(self) -> BaseException | None:
        """Generate for waiting episodes until none is live; returns the generation error that stopped it, if any."""
        fatal: BaseException | None = None
        while True:
            with self._cv:
                while self._live > 0 and len(self._pending) < self._live:
                    self._cv.wait()
                if self._live == 0:
                    return fatal
                batch, self._pending = self._pending, {}
            lanes = sorted(batch)
            results: list[tuple[list[int], list[float]] | BaseException]
            if fatal is None:
                try:
                    results = list(self.generator.generate([batch[i][0] for i in lanes], [batch[i][1] for i in lanes]))
                except GenerationFailed as error:
                    fatal = error
                    results = [error] * len(lanes)
            else:
                results = [fatal] * len(lanes)
            with self._cv:
                self._done.update(zip(lanes, results, strict=True))
                self._cv.notify_all()


# -- the rollout function -----------------------------------------------------------------------------------------


class EpisodeRollout:
    """A TRL rollout_func (`rollout(prompts, trainer) -> dict`) for a multi-turn environment (ToolUse in tools mode:
    E2, E4; Dialogue: E5, E6): each prompt's item is played as one episode with the trainer's model.

    items: the training items (by id, or a list); each prompt the trainer passes must be one item's opening messages.
    counterparts: a BatchPolicy per counterpart role of a Dialogue (E5: {"target": ...}), or the id of a rule
    baseline the environment offers for it (E5's target: "policy-defender", ...). judge: a Judge, a judge spec, or
    None for the environment's default; a model judge spec needs judge_policy_for(model_id) -> BatchPolicy.
    max_new_tokens: per policy turn (default: the environment's generation max_tokens, else the trainer's
    max_completion_length). temperature: default the trainer's (TRL recomputes log-probabilities at the trainer's
    temperature: keep them equal). max_context_tokens: an episode whose context reaches it fails (default: the
    model's max_position_embeddings). sampling_logprobs: return per-token sampling log-probabilities (default: only
    when the trainer uses vLLM importance-sampling correction). failure_reward: the reward of a failed episode
    (None: TRL treats it as unscorable and leaves it out of its group's baseline). keep_contexts: keep each turn's
    exact input ids in the records of `.last` (diagnostics)."""

    def __init__(
        self,
        env: Environment,
        items: Mapping[str, Item] | Iterable[Item],
        *,
        counterparts: Mapping[str, BatchPolicy | str] | None = None,
        judge: Judge | str | None = None,
        judge_policy_for: Callable[[str], BatchPolicy] | None = None,
        tool_protocol: str = "text",
        max_new_tokens: int | None = None,
        temperature: float | None = None,
        max_batch: int = 16,
        max_context_tokens: int | None = None,
        sampling_logprobs: bool | None = None,
        failure_reward: float | None = 0.0,
        keep_contexts: bool = False,
    ) -> None:
        episodes = env.episodes
        if not isinstance(episodes, ToolUse | Dialogue):
            raise TypeError(
                f"{env.env_id}: its episodes are single-turn ({type(episodes).__name__}); train it with the "
                "trainer's own generation and the verifier's reward functions, not an episode rollout"
            )
        if tool_protocol != "text":
            raise ValueError(
                f'tool_protocol {tool_protocol!r}: the trainer\'s model writes tool calls as text lines ("text"); '
                "native function calling needs a provider that parses them"
            )
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, got {max_batch}")
        self.env = env
        self.index = ItemIndex(env, items)
        self.tool_protocol = tool_protocol
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.max_batch = max_batch
        self.max_context_tokens = max_context_tokens
        self.sampling_logprobs = sampling_logprobs
        self.failure_reward = failure_reward
        self.keep_contexts = keep_contexts
        self.counterparts: dict[str, BatchPolicy] = {}
        self.judge: Judge | None = None
        if isinstance(episodes, Dialogue):
            self.counterparts = self._counterparts(episodes, counterparts or {})
            self.judge = self._judge(episodes, judge, judge_policy_for)
        elif counterparts:
            raise ValueError(f"{env.env_id}: tool-use episodes have no counterparts, got {sorted(counterparts)}")
        self.last: list[LaneRecord] = []
        """The records of the last call (diagnostics and tests)."""
        self.failures = 0
        """Failed episodes over all calls."""
        self.episodes = 0

    def _counterparts(self, episodes: Dialogue, given: Mapping[str, BatchPolicy | str]) -> dict[str, BatchPolicy]:
        roles = episodes.counterpart_roles()
        missing = sorted(set(roles) - set(given))
        unknown = sorted(set(given) - set(roles))
        if missing or unknown:
            raise ValueError(
                f"{self.env.env_id}: counterparts must be exactly its roles {sorted(roles)}; "
                f"missing {missing}, unknown {unknown}"
            )
        baselines = episodes.counterpart_baselines()
        resolved: dict[str, BatchPolicy] = {}
        for role, counterpart in given.items():
            if isinstance(counterpart, str):
                if counterpart not in baselines:
                    raise ValueError(
                        f"{self.env.env_id}: counterpart {counterpart!r} for {role!r} is no rule baseline it offers "
                        f"({sorted(baselines)}); pass a BatchPolicy for a model"
                    )
                resolved[role] = baseline_counterpart(baselines[counterpart])
            else:
                resolved[role] = counterpart
        return resolved

    def _judge(
        self, episodes: Dialogue, judge: Judge | str | None, policy_for: Callable[[str], BatchPolicy] | None
    ) -> Judge:
        if judge is not None and not isinstance(judge, str):
            return judge
        from sv_shared.judging.factory import build_judge

        def no_model(model_id: str) -> BatchPolicy:
            raise ValueError(f"the judge needs model {model_id!r}: pass judge_policy_for (or a Judge)")

        return build_judge(judge or episodes.judge_spec(), policy_for or no_model)

    def sampling(self, trainer: Any) -> Sampling:
        max_new = self.max_new_tokens or self.env.generation_params().get("max_tokens")
        max_new = int(max_new or getattr(trainer, "max_completion_length", None) or 256)
        temperature = float(self.temperature if self.temperature is not None else getattr(trainer, "temperature", 1.0))
        if not temperature > 0:
            raise ValueError(f"GRPO samples its completions: temperature must be positive, got {temperature}")
        limit = self.max_context_tokens
        if limit is None:
            config = getattr(getattr(trainer, "model", None), "config", None)
            limit = getattr(config, "max_position_embeddings", None)
        wants = self.sampling_logprobs
        if wants is None:
            wants = bool(
                getattr(trainer, "use_vllm", False) and getattr(trainer, "vllm_importance_sampling_correction", False)
            )
        return Sampling(
            max_new_tokens=max_new,
            temperature=temperature,
            max_batch=self.max_batch,
            max_context_tokens=int(limit) if limit else None,
            logprobs=bool(wants),
        )

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        items = [self.index.lookup(prompt) for prompt in prompts]
        generator = _Generator(trainer, self.sampling(trainer))
        with generator.active():
            if isinstance(self.env.episodes, Dialogue):
                lanes, results = self._run_dialogues(items, generator)
            else:
                lanes, results = self._run_tool_episodes(items, generator)
        return self._output(lanes, results, generator)

    def _lanes(self, items: Sequence[Item], generator: _Generator) -> list[_Lane]:
        return [
            _Lane(item, self.index.item_id(item), generator, self.env.episodes.messages(item), self.keep_contexts)
            for item in items
        ]

    def _run_dialogues(
        self, items: Sequence[Item], generator: _Generator
    ) -> tuple[list[_Lane], list[ScoredSample | BaseException]]:
        lanes = self._lanes(items, generator)
        episodes = self.env.episodes
        assert isinstance(episodes, Dialogue) and self.judge is not None
        policy = _DialoguePolicy(lanes, generator)
        try:
            results: list[ScoredSample | BaseException] = list(
                episodes.run([dict(item) for item in items], policy, counterparts=self.counterparts, judge=self.judge)
            )
        except GenerationFailed:
            raise
        except Exception as error:  # the dialogue code (or its judge) raised for the whole batch: every episode lost
            results = [error] * len(items)
        if len(results) != len(items):
            error = RuntimeError(f"{self.env.env_id}: run returned {len(results)} results for {len(items)} episodes")
            results = [error] * len(items)
        return lanes, results

    def _run_tool_episodes(
        self, items: Sequence[Item], generator: _Generator
    ) -> tuple[list[_Lane], list[ScoredSample | BaseException]]:
        lanes = self._lanes(items, generator)
        episodes = self.env.episodes
        assert isinstance(episodes, ToolUse)
        results: list[ScoredSample | BaseException] = [RuntimeError("episode did not finish")] * len(items)
        lockstep = _Lockstep(generator, len(items))

        def play(index: int) -> None:
            lane = lanes[index]

            def policy(messages: list[Message], tools: list[dict[str, Any]] | None) -> PolicyReply:
                if tools is not None:
                    raise ValueError("the text tool protocol passes no tool specs")
                try:
                    context, cap = lane.prepare(messages)
                except EpisodeRolloutError as error:
                    lane.fail(error)
                    raise
                ids, logprobs = lockstep.request(index, context, cap)
                return lane.add_turn(ids, logprobs)

            try:
                results[index] = episodes.rollout(dict(lane.item), policy, tool_protocol=self.tool_protocol)
            except BaseException as error:  # this episode only is lost (a generation failure is re-raised below)
                results[index] = error
            finally:
                lockstep.leave()

        threads = [
            threading.Thread(target=play, args=(index,), name=f"episode-{index}", daemon=True)
            for index in range(len(items))
        ]
        for thread in threads:
            thread.start()
        fatal = lockstep.serve()
        for thread in threads:
            thread.join()
        if fatal is not None:
            raise fatal
        return lanes, results

    def _output(
        self, lanes: Sequence[_Lane], results: Sequence[ScoredSample | BaseException], generator: _Generator
    ) -> dict[str, Any]:
        prompt_ids, completion_ids, env_mask, logprobs = [], [], [], []
        rewards: list[float | None] = []
        failed: list[bool] = []
        errors: list[str | None] = []
        turns: list[int] = []
        end = generator.eos_ids[0]
        for lane, result in zip(lanes, results, strict=True):
            record = lane.record
            if isinstance(result, ScoredSample) and not math.isfinite(float(result.reward)):
                result = ValueError(f"the verifier returned a non-finite reward {result.reward!r}")
            if isinstance(result, ScoredSample) and lane.failed:
                result = ConversationMismatch(record.error or "the episode's token record is incomplete")
            if not record.prompt_ids:  # the episode ended before the policy's first turn
                record.prompt_ids = lane._encode(
                    lane._render(self.env.episodes.messages(lane.item), generation_prompt=True)
                )
            prompt = list(record.prompt_ids)
            if isinstance(result, ScoredSample):
                record.sample = result
                rewards.append(float(result.reward))
                failed.append(False)
                ids, mask, lps = list(record.completion_ids), list(record.env_mask), list(record.logprobs)
            else:
                # Not trained on: its turns stay in the record; TRL gets its prompt (cut to the context limit, as it
                # may be what overflowed) and one masked end-of-sequence token, so it costs the loss nothing.
                record.error = record.error or _describe(result)
                rewards.append(self.failure_reward)
                failed.append(True)
                limit = generator.sampling.max_context_tokens
                prompt = prompt[: max(1, limit - 1)] if limit else prompt
                ids, mask, lps = [], [], []
            errors.append(record.error if failed[-1] else None)
            if not ids:  # TRL needs a token per completion: an end-of-sequence token the loss does not see
                ids, mask, lps = [end], [0], [0.0]
            prompt_ids.append(prompt)
            completion_ids.append(ids)
            env_mask.append(mask)
            logprobs.append(lps)
            turns.append(len(record.replies))
        self.last = [lane.record for lane in lanes]
        self.episodes += len(lanes)
        self.failures += sum(failed)
        return {
            "prompt_ids": prompt_ids,
            "completion_ids": completion_ids,
            "logprobs": logprobs if generator.sampling.logprobs else None,
            "env_mask": env_mask,
            "episode_reward": rewards,
            "episode_failed": failed,
            "episode_error": errors,
            "episode_turns": turns,
        }


def episode_reward(
    prompts: Sequence[Any],
    completions: Sequence[Any],
    episode_reward: Sequence[float | None] | None = None,
    episode_failed: Sequence[bool] | None = None,
    episode_turns: Sequence[int] | None = None,
    log_metric: Callable[[str, float], None] | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """The reward function for a trainer whose rollout_func is an EpisodeRollout: each episode's verifier reward,
    as the rollout returned it (None for rows the rollout did not play). Logs episodes/failed (failed episodes in
    this batch), episodes/failed_share and episodes/policy_turns_mean (the policy's turns per episode: above 1, it
    called tools or kept a dialogue going; 1, it answered at once)."""
    if episode_reward is None:
        return [None] * len(prompts)
    if len(episode_reward) != len(prompts):
        raise ValueError(f"episode_reward holds {len(episode_reward)} rewards for {len(prompts)} completions")
    failures = list(episode_failed or [False] * len(prompts))
    if log_metric is not None and prompts:
        log_metric("episodes/failed", float(sum(bool(flag) for flag in failures)))
        log_metric("episodes/failed_share", sum(bool(flag) for flag in failures) / len(prompts))
        if episode_turns:
            log_metric("episodes/policy_turns_mean", sum(episode_turns) / len(episode_turns))
    return [None if reward is None else float(reward) for reward in episode_reward]
