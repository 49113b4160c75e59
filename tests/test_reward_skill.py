"""Rewards that reward skill (issue 26): on each detection environment's test split no answer-independent strategy
(one label at one confidence for every item, or always abstaining) earns half the reward, and the rule baseline
keeps a clear lead over the best of them. E2 and E3 hold the same bar in the reward-hacking suite."""

from __future__ import annotations

import json

import pytest

from sv_shared.answers.constant_answers import constant_answers
from sv_shared.contracts import Environment, Item
from sv_shared.registry import get_environment

LABELS = {"e1": ("Malicious", "Benign", "Abstain"), "e4": ("Phishing", "Legitimate", "Abstain")}
RULE_BASELINES = {"e1": "heuristic", "e4": "phish-rules"}


def _test_items(env: Environment) -> list[Item]:
    return env.data.curate([env.data.load_source("embedded")], seed=env.config.eval.seed)["test"].to_dicts()


def _mean_reward(env: Environment, items: list[Item], completions: list[str]) -> float:
    return sum(env.verifier.score(item, text).reward for item, text in zip(items, completions, strict=True)) / len(
        items
    )


@pytest.mark.parametrize("env_id", ["e1", "e4"])
def test_no_answer_independent_strategy_earns_half_and_the_rule_baseline_leads(env_id: str) -> None:
    env = get_environment(env_id)
    items = _test_items(env)
    answers = constant_answers(LABELS[env_id], with_evidence=env_id == "e4")
    assert len(answers) == 3 * 21
    constants = {name: _mean_reward(env, items, [answer] * len(items)) for name, answer in answers.items()}
    best_name, best = max(constants.items(), key=lambda pair: pair[1])
    baseline = env.baselines[RULE_BASELINES[env_id]]
    rules = _mean_reward(env, items, [baseline(item) for item in items])
    assert best <= 0.5, (best_name, best)
    assert rules >= best + 0.2, (rules, best_name, best)


@pytest.mark.parametrize("env_id", ["e1", "e4"])
def test_a_completion_that_does_not_parse_earns_the_least_of_any_answer(env_id: str) -> None:
    env = get_environment(env_id)
    items = _test_items(env)[:8]
    floor = env.verifier.reward_floor
    for item in items:
        garbage = env.verifier.score(item, "no answer here").reward
        assert garbage == floor < 0
        for label in LABELS[env_id]:
            answer = {"label": label, "confidence": 1.0, "rationale": ""}
            if env_id == "e4":
                answer["evidence"] = []
            assert env.verifier.score(item, json.dumps(answer)).reward >= garbage


def test_e4_abstention_pays_where_the_evidence_is_mixed_and_nowhere_else() -> None:
    """The rule baseline's answer, and the same answer turned into an abstention: on the test split, abstaining on the
    items whose evidence is genuinely mixed earns more than answering them (the abstention the seed's RLFT calibrates),
    while abstaining on the others, or on every item, earns less than answering."""
    from sv_env_phishing_detection.detectors import analyze, is_mixed

    env = get_environment("e4")
    items = _test_items(env)
    band = tuple(env.config.abstention.mixed_band)
    answers = [env.baselines["phish-rules"](item) for item in items]
    abstained = [json.dumps(json.loads(answer) | {"label": "Abstain"}) for answer in answers]
    mixed = [is_mixed(analyze(item["raw_email"]).suspicion, band) for item in items]
    assert 0 < sum(mixed) < len(items)

    def mean(chosen: list[str], where: list[bool]) -> float:
        picked = [(item, text) for item, text, keep in zip(items, chosen, where, strict=True) if keep]
        return sum(env.verifier.score(item, text).reward for item, text in picked) / len(picked)

    clear = [not flag for flag in mixed]
    assert mean(abstained, mixed) > mean(answers, mixed)
    assert mean(abstained, clear) < mean(answers, clear)
