"""Reward components and the E1 reward: exact values, and the orderings the cost design promises."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sv_env_network_logs.verify import NetworkLogsVerifier, detection_task
from sv_shared.answers.costs import CostTable
from sv_shared.answers.rewards import RewardWeights, reward_asymmetric_cost, reward_calibration
from sv_shared.registry import load_env_config

TASK = detection_task(load_env_config("e1"))
VERIFIER = NetworkLogsVerifier(load_env_config("e1"))


def answer(label: str, confidence: float) -> str:
    return json.dumps({"label": label, "confidence": confidence, "rationale": "r"})


def test_configured_weights_and_costs_are_the_documented_ones() -> None:
    assert dict(TASK.weights.weights) == {"accuracy": 0.7, "calibration": 0.2, "format": 0.1, "asymmetric_cost": 0.7}
    assert TASK.weights.penalties == {"asymmetric_cost"}
    assert TASK.costs == CostTable(miss=1.0, false_alarm=0.3, abstain=0.15)


@pytest.mark.parametrize(
    ("truth", "completion", "reward", "components"),
    [
        # true positive, confidence 0.9: .7 + .2*.99 + .1, no cost
        (
            "Malicious",
            answer("Malicious", 0.9),
            0.998,
            {"accuracy": 1.0, "calibration": 0.99, "asymmetric_cost": 1.0, "format": 1.0},
        ),
        # missed attack, confidence 0.8: calibration 1 - .8², format, less the whole cost penalty .7
        (
            "Malicious",
            answer("Benign", 0.8),
            -0.528,
            {"accuracy": 0.0, "calibration": 0.36, "asymmetric_cost": 0.0, "format": 1.0},
        ),
        # false alarm, confidence 0.6: calibration 1 - .6², format, less .7 * .3
        (
            "Benign",
            answer("Malicious", 0.6),
            0.018,
            {"accuracy": 0.0, "calibration": 0.64, "asymmetric_cost": 0.7, "format": 1.0},
        ),
        # abstention: no accuracy, no calibration credit, format, less .7 * .15
        (
            "Malicious",
            answer("Abstain", 0.9),
            -0.005,
            {"accuracy": 0.0, "calibration": 0.0, "asymmetric_cost": 0.85, "format": 1.0},
        ),
        # unparseable: every component zero, so the whole penalty: the least reward of all
        (
            "Benign",
            "benign, I think",
            -0.7,
            {"accuracy": 0.0, "calibration": 0.0, "asymmetric_cost": 0.0, "format": 0.0},
        ),
    ],
)
def test_e1_reward_exact_values(truth: str, completion: str, reward: float, components: dict) -> None:
    scored = VERIFIER.score({"flow_id": "flow-1", "label": truth}, completion)
    assert scored.reward == pytest.approx(reward)
    assert scored.components == pytest.approx(components)


def test_parse_failure_is_recorded_with_its_reason() -> None:
    scored = VERIFIER.score({"flow_id": "flow-1", "label": "Benign"}, '{"label": "Benign", "confidence": 2}')
    assert scored.error == "confidence_out_of_range"
    assert scored.parsed is None


@pytest.mark.parametrize("truth", ["Benign", "Malicious"])
def test_abstaining_is_cheaper_than_wrong_but_never_better_than_right(truth: str) -> None:
    wrong = "Benign" if truth == "Malicious" else "Malicious"
    abstain = VERIFIER.score({"flow_id": "f", "label": truth}, answer("Abstain", 1.0))
    for confidence in (0.0, 0.5, 1.0):
        right = VERIFIER.score({"flow_id": "f", "label": truth}, answer(truth, confidence))
        miss = VERIFIER.score({"flow_id": "f", "label": truth}, answer(wrong, confidence))
        assert right.reward > abstain.reward
        assert abstain.components["asymmetric_cost"] > miss.components["asymmetric_cost"]


def test_a_missed_attack_costs_more_than_a_false_alarm() -> None:
    costs = TASK.costs
    assert reward_asymmetric_cost(costs.cost(True, False, abstained=False), costs) < reward_asymmetric_cost(
        costs.cost(False, True, abstained=False), costs
    )


def test_calibration_component() -> None:
    # One minus the Brier score: a proper scoring rule, so no constant or extreme confidence beats the honest one.
    assert reward_calibration(0.75, True) == 0.9375
    assert reward_calibration(0.75, False) == 0.4375


def test_invalid_cost_and_weight_configs_are_rejected() -> None:
    with pytest.raises(ValueError, match="abstain < false_alarm <= miss"):
        CostTable(miss=1.0, false_alarm=0.1, abstain=0.2)
    with pytest.raises(ValueError, match="non-negative"):
        RewardWeights({"accuracy": -1.0})
    with pytest.raises(KeyError, match="calibration"):
        RewardWeights({"accuracy": 1.0, "calibration": 1.0}).combine({"accuracy": 1.0})


def test_a_perfect_answer_earns_exactly_one_whatever_the_weights_sum_to_in_floats() -> None:
    """0.6 + 0.3 + 0.1 is 0.9999999999999999 in floats, and w/Σw summed to 1.0000000000000002 (a reward above 1)."""
    weights = RewardWeights({"detection": 0.6, "patch": 0.3, "format": 0.1})
    assert sum(weights.normalized().values()) == 1.0
    assert weights.combine({"detection": 1.0, "patch": 1.0, "format": 1.0}) == 1.0
    exact = RewardWeights({"accuracy": 0.5, "calibration": 0.25, "format": 0.25})
    assert exact.normalized() == dict(exact.weights)  # weights summing to exactly 1.0 are their own shares
    with pytest.raises(ValueError, match="too far apart"):
        RewardWeights({"detection": 0.6, "patch": 0.3, "format": 0.1, "style": 1e-17})


@given(
    weights=st.lists(st.just(0.0) | st.floats(min_value=1e-6, max_value=1e6), min_size=1, max_size=8).filter(
        lambda values: sum(values) > 0
    ),
    data=st.data(),
)
def test_rewards_stay_in_the_unit_interval_and_equal_a_rubric_sum(weights: list[float], data: st.DataObject) -> None:
    """Components in [0, 1] give a reward in [0, 1], all ones give exactly 1.0, and the reward is Σ share·component in
    config order: what a weighted rubric (verifiers' Trace.reward) computes from `normalized()`."""
    reward_weights = RewardWeights({f"c{index}": weight for index, weight in enumerate(weights)})
    components = {name: data.draw(st.floats(min_value=0.0, max_value=1.0)) for name in reward_weights.weights}
    shares = reward_weights.normalized()
    assert sum(shares.values()) == 1.0
    assert reward_weights.combine(dict.fromkeys(components, 1.0)) == 1.0
    reward = reward_weights.combine(components)
    assert 0.0 <= reward <= 1.0
    rubric = 0.0
    for name, share in shares.items():
        rubric += components[name] * share
    assert reward == rubric


def test_a_penalty_takes_its_shortfall_away_and_the_floor_is_every_penalty_whole() -> None:
    weights = RewardWeights({"accuracy": 0.7, "calibration": 0.2, "format": 0.1, "cost": 0.7}, frozenset({"cost"}))
    assert weights.gains == {"accuracy": 0.7, "calibration": 0.2, "format": 0.1}
    assert weights.combine({"accuracy": 1.0, "calibration": 1.0, "format": 1.0, "cost": 1.0}) == 1.0
    assert weights.combine({"accuracy": 0.0, "calibration": 0.0, "format": 0.0, "cost": 0.0}) == weights.floor == -0.7
    assert weights.combine({"accuracy": 1.0, "calibration": 1.0, "format": 1.0, "cost": 0.5}) == pytest.approx(0.65)
    with pytest.raises(ValueError, match="not reward components"):
        RewardWeights({"accuracy": 1.0}, frozenset({"cost"}))
    with pytest.raises(ValueError, match="gain weights must not all be zero"):
        RewardWeights({"accuracy": 0.0, "cost": 1.0}, frozenset({"cost"}))


@given(
    weights=st.lists(st.just(0.0) | st.floats(min_value=1e-6, max_value=1e6), min_size=2, max_size=8).filter(
        lambda values: sum(values[:-1]) > 0
    ),
    penalty=st.floats(min_value=0.0, max_value=2.0),
    data=st.data(),
)
def test_rewards_with_a_penalty_equal_a_rubric_sum_of_their_terms(
    weights: list[float], penalty: float, data: st.DataObject
) -> None:
    """Σ weight·term over `terms()`, a penalty's term being 1 − component: what a weighted rubric computes, bit for bit;
    the reward stays within [floor, 1]."""
    named = {f"c{index}": weight for index, weight in enumerate(weights[:-1])} | {"cost": penalty}
    reward_weights = RewardWeights(named, frozenset({"cost"}))
    components = {name: data.draw(st.floats(min_value=0.0, max_value=1.0)) for name in named}
    reward = reward_weights.combine(components)
    assert reward_weights.floor <= reward <= 1.0
    rubric = 0.0
    for name, weight, is_penalty in reward_weights.terms():
        rubric += weight * (1.0 - components[name] if is_penalty else components[name])
    assert reward == rubric
