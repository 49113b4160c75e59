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
    assert dict(TASK.weights.weights) == {"accuracy": 0.45, "calibration": 0.2, "asymmetric_cost": 0.25, "format": 0.1}
    assert TASK.costs == CostTable(miss=1.0, false_alarm=0.3, abstain=0.15)


@pytest.mark.parametrize(
    ("truth", "completion", "reward", "components"),
    [
        # true positive, confidence 0.9: .45 + .2*.9 + .25 + .1
        (
            "Malicious",
            answer("Malicious", 0.9),
            0.998,
            {"accuracy": 1.0, "calibration": 0.99, "asymmetric_cost": 1.0, "format": 1.0},
        ),
        # missed attack, confidence 0.8: calibration 1 - .8², worst cost
        (
            "Malicious",
            answer("Benign", 0.8),
            0.172,
            {"accuracy": 0.0, "calibration": 0.36, "asymmetric_cost": 0.0, "format": 1.0},
        ),
        # false alarm, confidence 0.6: calibration 1 - .6², cost 1 - .3
        (
            "Benign",
            answer("Malicious", 0.6),
            0.403,
            {"accuracy": 0.0, "calibration": 0.64, "asymmetric_cost": 0.7, "format": 1.0},
        ),
        # abstention: no accuracy, no calibration credit, cost 1 - .15
        (
            "Malicious",
            answer("Abstain", 0.9),
            0.3125,
            {"accuracy": 0.0, "calibration": 0.0, "asymmetric_cost": 0.85, "format": 1.0},
        ),
        # unparseable: everything zero
        (
            "Benign",
            "benign, I think",
            0.0,
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
    exact = RewardWeights(dict(TASK.weights.weights))
    assert exact.normalized() == dict(TASK.weights.weights)  # weights summing to 1.0 are their own shares
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
