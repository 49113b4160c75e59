"""Extreme JSON numbers are named format errors, and no item leaves the headline.

Issue 25, item 4: a 400-digit confidence made `parse_confidence` raise OverflowError, so `verifier.score` raised, the
training reward function lost its whole batch, and `secverify eval` gave the item up and left it out of the metrics
(29 of 32 scored): a policy could drop the items it would fail from its own headline. Now every number that is not a
plain finite value is refused while decoding, by name, with a format failure's reward; and an item a run cannot
score counts as a failure in its intent-to-treat metrics and is named in its summary.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import datasets
import polars as pl
import pytest
from e2_fakes import PRIVILEGED_WEB as WEB
from e2_fakes import FakeOracle, make_item

from secverify_dagster.resources.models import ChatRequest, Completion, ProviderError, load_registry
from secverify_dagster.runner.datasets import embedded_dataset, select_items
from secverify_dagster.runner.eval_runner import EvalOutcome, EvalRunner
from secverify_dagster.runner.failures import MAX_ITEM_ATTEMPTS
from secverify_dagster.runner.offline_scoring import score_completions
from sv_env_config_verification import verify as e2_verify
from sv_env_phishing_detection.reputation import ReputationTool
from sv_shared.answers.completion import json_answer_complete
from sv_shared.answers.parsing import (
    MAX_EXACT_INTEGER,
    FormatError,
    JsonClassificationParser,
    decode_json,
    extract_json_object,
    parse_confidence,
)
from sv_shared.contracts import Environment, Item
from sv_shared.registry import get_environment
from sv_shared.runs.folder import RunFolder
from sv_shared.runs.unscored import NOT_SCORED

REGISTRY = load_registry()
E1 = get_environment("e1")
PARSER = JsonClassificationParser(labels=("Benign", "Malicious", "Abstain"))

EXTREME: dict[str, FormatError] = {
    "9" * 400: FormatError.NUMBER_TOO_LARGE,
    "-" + "9" * 400: FormatError.NUMBER_TOO_LARGE,
    "9" * 5000: FormatError.NUMBER_TOO_LARGE,  # json.loads alone raises ValueError past 4300 digits
    str(MAX_EXACT_INTEGER + 1): FormatError.NUMBER_TOO_LARGE,
    str(-MAX_EXACT_INTEGER - 1): FormatError.NUMBER_TOO_LARGE,
    "1e400": FormatError.NUMBER_TOO_LARGE,
    "-1E400": FormatError.NUMBER_TOO_LARGE,
    "1" + "0" * 400 + ".5": FormatError.NUMBER_TOO_LARGE,
    "NaN": FormatError.NUMBER_NOT_FINITE,
    "Infinity": FormatError.NUMBER_NOT_FINITE,
    "-Infinity": FormatError.NUMBER_NOT_FINITE,
    "-0": FormatError.NEGATIVE_ZERO,
    "-0.0": FormatError.NEGATIVE_ZERO,
    "-0e5": FormatError.NEGATIVE_ZERO,
    "-1e-400": FormatError.NEGATIVE_ZERO,  # underflows to -0.0
}
"""Each literal, and the answer rule it breaks."""

HUGE = "9" * 400
"""The issue's example: a 400-digit integer confidence."""


def e1_answer(number: str, label: str = "Benign") -> str:
    return f'{{"label": "{label}", "confidence": {number}, "rationale": "flow"}}'


# --- the parser ---


@pytest.mark.parametrize(("literal", "rule"), EXTREME.items(), ids=[key[:12] for key in EXTREME])
def test_every_extreme_number_is_refused_by_name_wherever_it_sits(literal: str, rule: FormatError) -> None:
    assert decode_json(literal) == (None, rule)
    assert decode_json(f'{{"a": [1, {{"b": {literal}}}]}}') == (None, rule)
    assert extract_json_object(e1_answer(literal)) == (None, rule)
    # Found in prose or a fence, the answer is refused, never passed over for a later object.
    fenced = f"Answer:\n```json\n{e1_answer(literal)}\n```\nor {e1_answer('0.5')}"
    assert extract_json_object(fenced) == (None, rule)
    assert extract_json_object(f"I think {e1_answer(literal)} and {e1_answer('0.5')}") == (None, rule)
    result = PARSER.parse(e1_answer(literal))
    assert (result.output, result.error) == (None, rule)
    # More text cannot change that verdict: a generation may stop there.
    assert json_answer_complete(e1_answer(literal))


def test_a_repeated_key_is_named_before_a_number() -> None:
    """E5 reads text that is no answer as a plain message, and refuses only a repeated key: that must still fire."""
    assert decode_json('{"message": "a", "message": "b", "n": NaN}') == (None, FormatError.DUPLICATE_KEY)
    assert decode_json('{"n": 1e400, "m": [NaN, -0]}') == (None, FormatError.NUMBER_TOO_LARGE)  # the first number


@pytest.mark.parametrize(
    ("literal", "value"),
    [
        (str(MAX_EXACT_INTEGER), MAX_EXACT_INTEGER),
        (str(-MAX_EXACT_INTEGER), -MAX_EXACT_INTEGER),
        ("0", 0),
        ("0.0", 0.0),
        ("1e308", 1e308),
        ("1e-400", 0.0),  # a tiny positive number reads as 0, with no sign to lose
        ("-0.5", -0.5),
        ("0." + "1" * 5000, 0.1111111111111111),
    ],
)
def test_plain_numbers_are_kept_exactly(literal: str, value: float) -> None:
    decoded, error = decode_json(f"[{literal}]")
    assert error is None and decoded == [value] and type(decoded[0]) is type(value)


def test_a_confidence_handed_over_decoded_is_judged_without_converting_it() -> None:
    """A tool call's arguments arrive decoded by someone else: a huge integer there must not raise either."""
    assert parse_confidence(10**400) == (None, FormatError.CONFIDENCE_OUT_OF_RANGE)
    assert parse_confidence(-(10**400)) == (None, FormatError.CONFIDENCE_OUT_OF_RANGE)
    assert parse_confidence(float("nan")) == (None, FormatError.CONFIDENCE_NOT_FINITE)
    assert parse_confidence(float("-inf")) == (None, FormatError.CONFIDENCE_NOT_FINITE)
    assert parse_confidence(1) == (1.0, None)


# --- every scorer: E1, E2, E4 score 0 with the name; E3's parser names it ---


@cache
def e2_verifier() -> e2_verify.ConfigVerifier:
    """E2's verifier with the deterministic fake oracle (the real scanners cost seconds per call)."""
    return e2_verify.ConfigVerifier(get_environment("e2").config, oracle=FakeOracle())  # type: ignore[arg-type]


def _first_item(env_id: str) -> Item:
    return get_environment(env_id).data.load_source("embedded").head(1).to_dicts()[0]


def _answers(env_id: str, literal: str) -> list[str]:
    """Answers of the environment's shape holding the literal where a model would write a number."""
    if env_id == "e1":
        return [e1_answer(literal), e1_answer(literal, label="Abstain")]
    if env_id == "e4":
        evidence = '[{"type": "lookalike_domain", "quote": "paypa1.com"}]'
        return [f'{{"label": "Phishing", "confidence": {literal}, "evidence": {evidence}}}']
    patch = f'[{{"op": "replace", "path": "/spec/replicas", "value": {literal}}}]'
    return [
        f'{{"violations": [], "patch": null, "confidence": {literal}}}',
        f'{{"violations": [], "patch": {patch}, "confidence": 0.5}}',
        f'{{"violations": [{{"id": "k8s-privileged", "severity": "high", "line": {literal}}}], "confidence": 0.5}}',
    ]


@pytest.mark.parametrize("env_id", ["e1", "e2", "e4"])
def test_scoring_an_extreme_number_gives_the_format_failure_reward_and_its_name(env_id: str) -> None:
    """The reward a format failure earns: 0, or E1's and E4's floor (-0.7, every cost penalty whole)."""
    if env_id == "e2":
        verifier: Any = e2_verifier()
        item = make_item(FakeOracle(), "kubernetes", "web.yaml", WEB)
    else:
        verifier, item = get_environment(env_id).verifier, _first_item(env_id)
    for literal, rule in EXTREME.items():
        for answer in _answers(env_id, literal):
            sample = verifier.score(item, answer)
            assert (sample.reward, sample.parsed, sample.error) == (verifier.reward_floor, None, rule), answer[:80]
            assert set(sample.components.values()) <= {0.0}
            json.dumps(sample.to_record(), allow_nan=False)  # what results.jsonl gets


def test_e3_names_an_extreme_number_in_its_answer() -> None:
    verifier = get_environment("e3").verifier
    for literal, rule in EXTREME.items():
        result = verifier.parse(f'{{"diff": "", "cwe": {literal}, "explanation": "x"}}')
        assert (result.output, result.error) == (None, rule)


def test_e4_tool_arguments_with_extreme_numbers_are_refused_not_raised() -> None:
    tool = ReputationTool(store=get_environment("e4").episodes.reputation_tool().store, budget=10)
    for literal in ("9" * 5000, "NaN", "1e400", "-0"):
        result = tool(f'{{"target": "paypal.com", "n": {literal}}}')
        assert result["error"].startswith("arguments must be a JSON object")
    assert tool("[" * 100_000)["error"].startswith("arguments must be a JSON object")
    json.dumps(tool.transcript, allow_nan=False)  # the transcript the runner writes with the sample


# --- the training reward function ---


def test_the_training_reward_is_the_floor_for_each_extreme_number_and_the_batch_survives() -> None:
    from sv_shared.training.rewards import grpo_prompt_rows, grpo_reward_functions

    envs = {"e1": E1, "e4": get_environment("e4")}
    functions, _ = grpo_reward_functions(envs)
    for env_id, env in envs.items():
        items = env.data.load_source("embedded").head(2).to_dicts()
        rows = list(datasets.Dataset.from_list(grpo_prompt_rows(env, items)))
        honest = _answers(env_id, "0.6")[0]
        for literal in EXTREME:
            completions = [_answers(env_id, literal)[0], honest]
            columns = {key: [row[key] for row in rows] for key in rows[0] if key != "prompt"}
            total = next(f for f in functions if f.__name__ == f"{env_id}/reward")
            rewards = total(prompts=[row["prompt"] for row in rows], completions=completions, **columns)
            assert rewards[0] == env.verifier.reward_floor and rewards[1] == env.verifier.score(items[1], honest).reward


# --- no item leaves the headline: `secverify eval` ---


@pytest.fixture(scope="module")
def dataset():
    return embedded_dataset(E1, split="test", seed=42)


class Answers:
    """A model client answering each item's request with answers[item id] (else an honest-looking answer); items in
    `down` get a server error, as from a provider that is down."""

    stats: ClassVar[dict[str, Any]] = {}

    def __init__(self, items: Sequence[Item], answers: Mapping[str, str], down: Sequence[str] = ()) -> None:
        self.by_request = {json.dumps(E1.episodes.messages(item)): item["flow_id"] for item in items}
        self.answers, self.down = dict(answers), set(down)

    def complete_many(self, requests: Sequence[ChatRequest]) -> list[Completion | ProviderError]:
        replies: list[Completion | ProviderError] = []
        for request in requests:
            item_id = self.by_request[json.dumps(request.messages)]
            if item_id in self.down:
                replies.append(ProviderError("HTTP 503", kind="server", retryable=True, status=503))
            else:
                replies.append(Completion(text=self.answers.get(item_id, e1_answer("0.6")), finish_reason="stop"))
        return replies

    def close(self) -> None:
        return None


class ParserAsItWas(type(E1.verifier)):  # type: ignore[misc]
    """E1's verifier with the confidence read as it was before the fix: float() of a 400-digit integer raises."""

    def __init__(self) -> None:
        self.__dict__.update(vars(E1.verifier))

    def score(self, item, completion):
        if HUGE in completion:
            float(int(HUGE))
        return super().score(item, completion)

    def score_many(self, items, completions):
        return [self.score(item, completion) for item, completion in zip(items, completions, strict=True)]


def _run(env: Environment, items: Sequence[Item], client: Answers, tmp_path: Path, dataset) -> EvalOutcome:
    """The run of env over items (the first len(items) the runner selects), the model answering through client."""
    runner = EvalRunner(env, REGISTRY["heuristic"], evals_root=tmp_path, client=client)
    return runner.run(dataset, n=len(items), seed=42)


def test_an_answer_that_crashes_the_scorer_counts_as_a_failure_and_is_named(tmp_path: Path, dataset) -> None:
    items = select_items(E1, dataset.frame, 10, 42)
    negative = next(item for item in items if item["label"] == "Benign")
    client = Answers(items, {negative["flow_id"]: e1_answer(HUGE)})
    env = dataclasses.replace(E1, verifier=ParserAsItWas())
    for session in range(1, MAX_ITEM_ATTEMPTS + 1):
        outcome = _run(env, items, client, tmp_path, dataset)
        summary = outcome.summary
        assert summary is not None and (summary.n_items, summary.n_scored) == (10, 9)
        # From the first session on, and after it is given up, the item counts in every metric.
        metrics = summary.metrics
        assert metrics["n"] == 10 and metrics["rates"]["itt"]["n"] == 10
        assert metrics["format_errors"] == {NOT_SCORED: 1} and metrics["n_format_failures"] == 1
        assert metrics["rates"]["unanswered"]["negative"] == 1  # an unanswered negative: a false positive in ITT
        (why,) = summary.unscored or []
        assert (why.id, why.kind, why.counted) == (negative["flow_id"], "scoring", True)
        assert why.message.startswith("OverflowError: int too large to convert to float")
        assert why.given_up == (session == MAX_ITEM_ATTEMPTS)
    assert outcome.status == "complete" and outcome.given_up == (negative["flow_id"],)
    scored = RunFolder(outcome.run_dir).read_results()
    # The unscored item counts what saying nothing earns (E1's floor, -0.7), never more than a wrong answer.
    unscored = E1.verifier.reward_floor
    assert metrics["reward"]["mean"] == pytest.approx((sum(record.reward for record in scored) + unscored) / 10)
    # The summary on disk says the same, and names it.
    on_disk = RunFolder(outcome.run_dir).read_summary()
    assert on_disk == summary and [why.id for why in on_disk.unscored or []] == [negative["flow_id"]]


def test_extreme_numbers_from_a_model_are_scored_as_named_format_errors(tmp_path: Path, dataset) -> None:
    items = select_items(E1, dataset.frame, len(EXTREME), 42)
    answers = {item["flow_id"]: e1_answer(literal) for item, literal in zip(items, EXTREME, strict=True)}
    outcome = _run(E1, items, Answers(items, answers), tmp_path, dataset)
    assert outcome.status == "complete" and outcome.n_done == len(items) and outcome.n_failures == 0
    assert outcome.summary is not None and outcome.summary.unscored is None
    records = {record.id: record for record in RunFolder(outcome.run_dir).read_results()}
    for item, rule in zip(items, EXTREME.values(), strict=True):
        assert (records[item["flow_id"]].reward, records[item["flow_id"]].error) == (E1.verifier.reward_floor, rule)


def test_items_a_provider_left_unanswered_count_and_are_named_apart(tmp_path: Path, dataset) -> None:
    items = select_items(E1, dataset.frame, 6, 42)
    down = [items[1]["flow_id"], items[4]["flow_id"]]
    outcome = _run(E1, items, Answers(items, {}, down=down), tmp_path, dataset)
    assert outcome.status == "incomplete" and outcome.given_up == ()
    summary = outcome.summary
    assert summary is not None and summary.n_scored == 4 and summary.metrics["n"] == 6
    assert [(why.id, why.kind, why.given_up, why.counted) for why in summary.unscored or []] == [
        (item_id, "server", False, True) for item_id in down
    ]
    # Resumed once the provider is back: scored, and no longer named.
    outcome = _run(E1, items, Answers(items, {}), tmp_path, dataset)
    assert outcome.status == "complete" and outcome.summary is not None and outcome.summary.unscored is None


def test_an_item_that_breaks_the_scorer_whatever_the_answer_counts_as_a_bare_failure(tmp_path: Path, dataset) -> None:
    items = select_items(E1, dataset.frame, 5, 42)
    broken = items[3]["flow_id"]

    class Broken(ParserAsItWas):
        def score(self, item, completion):
            if item["flow_id"] == broken:
                raise KeyError("label")
            return super().score(item, completion)

    outcome = _run(dataclasses.replace(E1, verifier=Broken()), items, Answers(items, {}), tmp_path, dataset)
    summary = outcome.summary
    assert summary is not None and summary.metrics["n"] == 5 and summary.metrics["format_errors"] == {NOT_SCORED: 1}
    assert [(why.id, why.kind, why.counted) for why in summary.unscored or []] == [(broken, "scoring", True)]


def test_a_dialogue_counts_an_item_whose_answer_broke_it_and_names_one_it_cannot_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path))
    e5 = get_environment("e5")
    id_column = e5.data.id_column
    e5_data = embedded_dataset(e5, split="test", seed=42)
    chosen = select_items(e5, e5_data.frame, 4, 42)
    answer_breaks, item_breaks = chosen[1][id_column], chosen[2][id_column]

    class Breaking(type(e5.episodes)):  # type: ignore[misc]
        """Breaks on one item when the attacker says anything (as a hostile answer would), on another always."""

        def run(self, items, policy, *, counterparts, judge):
            ids = {item[id_column] for item in items}

            def guarded(conversations):
                replies = policy(conversations)
                if answer_breaks in ids and any(getattr(reply, "text", "") for reply in replies):
                    raise OverflowError("int too large to convert to float")
                return replies

            if item_breaks in ids:
                raise KeyError("transcript")
            return super().run(items, guarded, counterparts=counterparts, judge=judge)

    episodes = copy.copy(e5.episodes)
    episodes.__class__ = Breaking
    runner = EvalRunner(
        dataclasses.replace(e5, episodes=episodes),
        REGISTRY["template-attacker"],
        counterparts={"target": REGISTRY["naive-complier"]},
        registry=REGISTRY,
    )
    outcome = runner.run(e5_data, n=4, seed=42)
    summary = outcome.summary
    assert summary is not None and summary.n_scored == 2
    whys = {why.id: why for why in summary.unscored or []}
    assert (whys[answer_breaks].kind, whys[answer_breaks].counted) == ("scoring", True)
    assert (whys[item_breaks].kind, whys[item_breaks].counted) == ("scoring", False)
    # The attack the scorer could not judge is a failed attack over the three items the metrics can count.
    assert summary.metrics["n"] == 3 and summary.metrics["format_errors"] == {NOT_SCORED: 1}


# --- `secverify score` ---


def test_offline_scoring_names_extreme_numbers_and_counts_a_line_that_crashed_the_scorer(dataset) -> None:
    items = select_items(E1, dataset.frame, 4, 42)
    lines = [(1, {"id": items[0]["flow_id"], "completion": e1_answer("NaN")})]
    lines += [(2, {"id": items[1]["flow_id"], "completion": e1_answer(HUGE)})]
    lines += [(3, {"id": items[2]["flow_id"], "completion": e1_answer("0.7")})]
    frame = pl.DataFrame(items)
    scored = score_completions(E1, frame, lines)
    assert [record.error for record in scored.records] == ["number_not_finite", "number_too_large", None]
    assert scored.errors == [] and scored.metrics is not None and scored.metrics["n"] == 3
    crashing = score_completions(dataclasses.replace(E1, verifier=ParserAsItWas()), frame, lines)
    assert [(error.line, error.kind) for error in crashing.errors] == [(2, "scoring")]
    assert crashing.metrics is not None and crashing.metrics["n"] == 3
    assert crashing.metrics["format_errors"] == {"number_not_finite": 1, NOT_SCORED: 1}
