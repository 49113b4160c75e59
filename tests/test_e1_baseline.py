"""E1 `heuristic` (issue 14): unknown is not zero, thin evidence abstains, confidences are calibrated on dev."""

from __future__ import annotations

import json
from typing import Any

import pytest

from secverify_dagster.runner.datasets import embedded_dataset
from sv_env_network_logs import baseline
from sv_env_network_logs.schema import FEATURE_COLUMNS
from sv_shared.registry import get_environment

NOTHING_KNOWN: dict[str, Any] = dict.fromkeys(FEATURE_COLUMNS) | {"protocol": "tcp"}

# A closed port answering a SYN with a reset, as Zeek records it without packet counts (NetFlow-style exports).
REJECTED_WITHOUT_PACKETS: dict[str, Any] = NOTHING_KNOWN | {
    "src_ip": "10.0.9.5",
    "dst_ip": "10.0.5.30",
    "src_port": 40_000,
    "dst_port": 5432,
    "duration_s": 0.002,
    "bytes_out": 0,
    "bytes_in": 0,
    "conn_state": "REJ",
    "history": "Sr",
}


@pytest.fixture(scope="module")
def env():
    return get_environment("e1")


def answer(env, observation: dict[str, Any]) -> dict[str, Any]:
    return json.loads(env.baselines["heuristic"](observation))


def test_a_flow_with_nothing_known_abstains_instead_of_benign_at_certainty(env) -> None:
    """Issue 14: the old rules read every missing value as zero and answered Benign at confidence 1.0."""
    reply = answer(env, NOTHING_KNOWN)
    assert reply["label"] == "Abstain"
    assert "too little recorded" in reply["rationale"]
    assert env.verifier.parse(json.dumps(reply)).ok


def test_a_missing_packet_count_is_not_zero_packets(env) -> None:
    """Issue 14: no packet count read as "0 packets in" made a rejected connection an unanswered scan probe."""
    unknown = baseline.assess(REJECTED_WITHOUT_PACKETS)
    assert "packets" not in unknown.known
    assert not any("unanswered" in reason or "no reply" in reason for reason in unknown.reasons)
    recorded_zero = baseline.assess(REJECTED_WITHOUT_PACKETS | {"packets_out": 1, "packets_in": 0})
    assert "unanswered connection attempt (scan or flood probe)" in recorded_zero.reasons
    assert recorded_zero.score > unknown.score


@pytest.mark.parametrize(
    ("hidden", "rule"),
    [
        (("bytes_out", "bytes_in"), "large one-way upload"),
        (("packets_out", "packets_in"), "one-way packet flood"),
        (("conn_state", "history"), "completed download from a common service"),
    ],
)
def test_a_rule_whose_fields_are_missing_does_not_fire(hidden: tuple[str, ...], rule: str) -> None:
    flow = NOTHING_KNOWN | {
        "dst_port": 443,
        "duration_s": 30.0,
        "conn_state": "SF",
        "history": "ShADadFf",
        "bytes_out": 5_000_000,
        "bytes_in": 6_000_000,
        "packets_out": 2_000,
        "packets_in": 0,
    }
    if rule == "large one-way upload":
        flow |= {"bytes_in": 100}
    assert rule in baseline.assess(flow).reasons
    assert rule not in baseline.assess(flow | dict.fromkeys(hidden)).reasons


def test_one_recorded_measurement_without_a_rule_is_thin_but_a_telling_port_is_not(env) -> None:
    assert answer(env, NOTHING_KNOWN | {"dst_port": 443, "duration_s": 1.5})["label"] == "Abstain"
    c2 = answer(env, NOTHING_KNOWN | {"dst_port": 6667})
    assert c2["label"] == "Malicious" and 0.5 <= c2["confidence"] < 1.0
    both = answer(env, NOTHING_KNOWN | {"dst_port": 443, "duration_s": 1.5, "conn_state": "SF"})
    assert both["label"] in ("Benign", "Malicious")


@pytest.mark.parametrize("value", ["12", float("nan"), float("inf"), True, [], {"a": 1}, -1e308, "\ud800"])
def test_values_of_any_type_are_unknown_or_numbers_never_a_crash(env, value: Any) -> None:
    flow = {column: value for column in FEATURE_COLUMNS}
    assert answer(env, flow)["label"] in ("Benign", "Malicious", "Abstain")


def test_confidences_are_fitted_on_the_dev_split_never_on_test(env) -> None:
    dev = embedded_dataset(env, split="dev", seed=env.config.eval.seed).frame
    test = embedded_dataset(env, split="test", seed=env.config.eval.seed).frame
    fitted = baseline.CalibrationTable.fit(baseline.calibration_observations(dev))
    assert env.baselines["heuristic"].table == fitted
    assert baseline.CalibrationTable.fit(baseline.calibration_observations(test)) != fitted
    # A template counts once, however many near-identical flows (and views of them) it has.
    assert sum(total for _, total in fitted.cells.values()) == pytest.approx(
        len({template for _, _, template in baseline.calibration_observations(dev)})
    )


def test_calibrated_confidence_tracks_accuracy_on_test_better_than_the_old_rules(env) -> None:
    """ECE on the held-out test split: 0.26 with the old confidences (0.5 + distance of the score to 0.5)."""
    items = embedded_dataset(env, split="test", seed=42).frame.to_dicts()
    records = []
    for item in items:
        scored = env.verifier.score(item, env.baselines["heuristic"](env.episodes.observation(item)))
        records.append({"id": scored.item_id, "reward": scored.reward, "components": scored.components,
                        "parsed": scored.parsed, "error": scored.error})  # fmt: skip
    metrics = env.verifier.aggregate(records, {item["flow_id"]: item for item in items})
    assert metrics["ece"] < 0.15 and metrics["accuracy"] >= 0.8
