"""E1 `heuristic` (issues 14 and 28): unknown is not zero, rules use what is recorded, a missing reply means something
only where one is expected, confidences are fitted on the train split alone, and abstention swallows no class."""

from __future__ import annotations

import json
from typing import Any

import polars as pl
import pytest

from sv_env_network_logs import baseline
from sv_env_network_logs.figures import ENDPOINTS_AND_STATE, baseline_figures
from sv_env_network_logs.schema import FEATURE_COLUMNS
from sv_env_network_logs.views import ENDPOINT_FIELDS, combined_name, keep_only, missing_groups
from sv_shared.registry import get_environment

NOTHING_KNOWN: dict[str, Any] = dict.fromkeys(FEATURE_COLUMNS) | {"protocol": "tcp"}

# A TCP flow Zeek saw midstream (OTH: no handshake seen), recorded without packet counts (NetFlow-style exports).
MIDSTREAM_WITHOUT_PACKETS: dict[str, Any] = NOTHING_KNOWN | {
    "src_ip": "10.0.9.5",
    "dst_ip": "10.0.5.30",
    "src_port": 40_000,
    "dst_port": 443,
    "duration_s": 0.002,
    "conn_state": "OTH",
}

# A login attempt as Zeek records it: a short, small, completed session on a remote-access port.
LOGIN_ATTEMPT: dict[str, Any] = NOTHING_KNOWN | {
    "dst_port": 22,
    "service": "ssh",
    "duration_s": 2.5,
    "bytes_out": 1_500,
    "bytes_in": 2_400,
    "packets_out": 6,
    "packets_in": 5,
    "conn_state": "SF",
    "history": "ShADadFf",
}
ZEEK_STATES = ("S0", "S1", "SF", "REJ", "S2", "S3", "RSTO", "RSTR", "RSTOS0", "RSTRH", "SH", "SHR", "OTH")


@pytest.fixture(scope="module")
def env():
    return get_environment("e1")


@pytest.fixture(scope="module")
def splits(env) -> dict[str, pl.DataFrame]:
    return env.data.curate([env.data.load_source("embedded")], seed=env.config.eval.seed)


def answer(env, observation: dict[str, Any]) -> dict[str, Any]:
    return json.loads(env.baselines["heuristic"](observation))


def test_a_flow_with_nothing_known_abstains_instead_of_benign_at_certainty(env) -> None:
    """Issue 14: the old rules read every missing value as zero and answered Benign at confidence 1.0."""
    reply = answer(env, NOTHING_KNOWN)
    assert reply["label"] == "Abstain"
    assert "too little recorded" in reply["rationale"]
    assert env.verifier.parse(json.dumps(reply)).ok


def test_a_missing_packet_count_is_not_zero_packets(env) -> None:
    """Issue 14: no packet count read as "0 packets in" made a connection an unanswered attempt."""
    unknown = baseline.assess(MIDSTREAM_WITHOUT_PACKETS)
    assert "packets" not in unknown.known and not unknown.reasons
    recorded_zero = baseline.assess(MIDSTREAM_WITHOUT_PACKETS | {"packets_out": 1, "packets_in": 0})
    assert recorded_zero.reasons == ("short TCP attempt that got no session",)
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


@pytest.mark.parametrize(
    "recorded",
    [
        ("duration_s",),
        ("bytes_in",),
        ("bytes_out",),
        ("packets_out",),
        ("packets_in", "conn_state"),
        ("duration_s", "bytes_out", "packets_in"),
    ],
)
def test_a_login_attempt_is_judged_from_whichever_measurement_is_recorded(recorded: tuple[str, ...]) -> None:
    """Issue 28: the rule needed byte or packet counts in both directions, so hiding them hid every login attempt."""
    measured = ("duration_s", "bytes_out", "bytes_in", "packets_out", "packets_in", "conn_state", "history")
    flow = LOGIN_ATTEMPT | {field: None for field in measured if field not in recorded}
    assert "short session on a remote-access port (login attempt)" in baseline.assess(flow).reasons
    # A long interactive session on the same port is no login attempt, whatever else is recorded.
    assert not baseline.assess(flow | {"duration_s": 900.0, "bytes_in": 400_000}).reasons


@pytest.mark.parametrize("protocol", ["udp", "icmp"])
@pytest.mark.parametrize("state", ZEEK_STATES)
def test_zeek_state_alone_raises_no_suspicion_where_no_reply_is_expected(protocol: str, state: str) -> None:
    """Issue 28: Zeek calls every unanswered datagram S0 (broadcasts, discovery, one-way UDP), and with the state as
    the only measurement a rule flagged most benign flows of a public IoT-23 sample."""
    for port in (53, 123, 1900, 5353):
        flow = NOTHING_KNOWN | {"protocol": protocol, "dst_port": port, "dst_ip": "239.255.255.250"}
        assert baseline.assess(flow | {"conn_state": state}).reasons == baseline.assess(flow).reasons


@pytest.mark.parametrize("state", ["S0", "REJ", "RSTOS0", "SH"])
def test_a_tcp_attempt_that_never_completed_its_handshake_reads_as_a_probe(state: str) -> None:
    flow = NOTHING_KNOWN | {"dst_port": 443, "conn_state": state}
    assert "TCP connection that carried no data (scan probe)" in baseline.assess(flow).reasons
    completed = baseline.assess(flow | {"conn_state": "SF", "history": "ShADadFf"})
    assert "TCP connection that carried no data (scan probe)" not in completed.reasons


MONITOR = "10.0.9.5"
"""The corpus's benign monitoring host, whose failed checks look like a scan on purpose (build_e1_embedded.py)."""


def test_conn_state_makes_a_rule_fire_on_few_benign_flows(splits) -> None:
    """Endpoints only, then endpoints and Zeek's conn_state: the benign flows on which the state adds a rule are the
    monitoring host's failed checks and no others, under a tenth of the benign flows in all (8 of 165; they sit in
    whichever split holds that host, test since issue 26's split)."""
    added_in_all, benign_in_all = 0, 0
    for frame in splits.values():
        benign = frame.filter(pl.col("label") == "Benign")
        endpoints = keep_only(benign, ENDPOINT_FIELDS).to_dicts()
        with_state = keep_only(benign, (*ENDPOINT_FIELDS, "conn_state")).to_dicts()
        sources = benign["src_ip"].to_list()
        added = [
            source
            for source, before, after in zip(sources, endpoints, with_state, strict=True)
            if set(baseline.assess(after).reasons) - set(baseline.assess(before).reasons)
        ]
        assert set(added) <= {MONITOR}, added
        added_in_all += len(added)
        benign_in_all += benign.height
    assert added_in_all <= 0.1 * benign_in_all, (added_in_all, benign_in_all)


def test_a_port_alone_is_judged_at_a_fitted_confidence_below_certainty(env) -> None:
    """A destination port is a basis for an answer (the IoT-23-derived benchmark shows nothing more); abstaining on
    it made the old baseline abstain on 46 of 50 malicious flows of such a sample."""
    for port in (443, 53, 6667, 2323):
        reply = answer(env, NOTHING_KNOWN | {"dst_port": port})
        assert reply["label"] in ("Benign", "Malicious") and 0.5 <= reply["confidence"] < 1.0
    assert answer(env, NOTHING_KNOWN | {"dst_port": 6667})["label"] == "Malicious"


@pytest.mark.parametrize("value", ["12", float("nan"), float("inf"), True, [], {"a": 1}, -1e308, "\ud800"])
def test_values_of_any_type_are_unknown_or_numbers_never_a_crash(env, value: Any) -> None:
    flow = {column: value for column in FEATURE_COLUMNS}
    assert answer(env, flow)["label"] in ("Benign", "Malicious", "Abstain")


def _flipped(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(
        pl.when(pl.col("label") == "Malicious").then(pl.lit("Benign")).otherwise(pl.lit("Malicious")).alias("label")
    )


def test_the_fit_reads_the_train_split_and_nothing_else(env, splits) -> None:
    """Issue 28: confidences fitted on dev scored 1.000 on dev. Relabelling dev and test changes nothing the baseline
    fitted or answers; relabelling train does."""
    fitted = baseline.CalibrationTable.fit(baseline.calibration_observations(splits["train"]))
    assert env.baselines["heuristic"].table == fitted
    relabelled = splits | {"dev": _flipped(splits["dev"]), "test": _flipped(splits["test"])}
    blind = baseline.HeuristicBaseline(lambda: relabelled)
    assert blind.table == fitted
    observations = [env.episodes.observation(item) for item in splits["dev"].to_dicts()]
    assert [blind(flow) for flow in observations] == [env.baselines["heuristic"](flow) for flow in observations]
    retrained = baseline.HeuristicBaseline(lambda: splits | {"train": _flipped(splits["train"])})
    assert retrained.table != fitted


def test_a_cell_counts_templates_as_evidence_and_flows_as_the_share() -> None:
    """A hundred probes of one scan are one template of evidence, but a hundred of the flows answers are scored on:
    the cell's share is counted in flows, and shrunk toward 1/2 by how few templates hold it."""
    probe = NOTHING_KNOWN | {"dst_port": 23, "conn_state": "S0"}
    scan = [(probe | {"src_port": 40_000 + index}, "Malicious", "one scan") for index in range(100)]
    printers = [(probe | {"src_port": 50_000 + index}, "Benign", f"printer {index}") for index in range(10)]
    table = baseline.CalibrationTable.fit(scan + printers)
    evidence = baseline.assess(probe)
    cell = table.cells[evidence.profile, evidence.score_bin]
    assert (cell.malicious, cell.flows, len(cell.templates)) == (100, 110, 11)
    assert table.p_malicious(evidence) == pytest.approx((100 / 110 * 11 + 1) / 13)
    lone = baseline.CalibrationTable.fit(scan)
    assert lone.p_malicious(evidence) == pytest.approx(2 / 3)  # one template, however many flows


@pytest.fixture(scope="module")
def figures(env, splits):
    return baseline_figures(env, splits)


def test_abstention_swallows_no_class_on_any_split_or_missing_fields(figures) -> None:
    """Every split x every combination of missing field groups (and endpoint-only logs): each class keeps at least
    90% of its flows answered, where the old rules abstained on all of them once bytes, packets and state were
    gone."""
    assert len(figures) == 3 * 18
    for row in figures:
        assert set(row.abstention) == {"Benign", "Malicious"}, row
        assert max(row.abstention.values()) <= 0.1, row


def _best_constant(env, frame: pl.DataFrame) -> float:
    items = frame.to_dicts()
    rewards = []
    for label in ("Malicious", "Benign", "Abstain"):
        for confidence in (step / 20 for step in range(21)):
            text = json.dumps({"label": label, "confidence": confidence, "rationale": "same for every flow"})
            rewards.append(sum(env.verifier.score(item, text).reward for item in items) / len(items))
    return max(rewards)


@pytest.mark.parametrize("split", ["dev", "test"])
def test_every_missing_field_combination_stays_well_above_the_best_constant(env, splits, figures, split) -> None:
    """Issue 28: hiding bytes and packets together dropped test reward to 0.44 (F1 0.222), near the best constant's
    0.41. On the splits it never saw, every combination keeps a lead of 0.1 over the best constant (the full split
    keeps the 0.2 tests/test_reward_skill.py asks). Since issue 26 test holds every attack kind, beacons, exfiltration
    over HTTPS and downloads included, which no single-flow rule separates once sizes are hidden: worst of the 16 on
    test 0.591 against a best constant of 0.448 (no bytes and no packets 0.760, F1 0.80)."""
    bar = _best_constant(env, splits[split]) + 0.1
    rows = {row.view: row for row in figures if row.split == split}
    assert rows["no-bytes+no-packets"].reward >= bar and rows["no-bytes+no-packets"].f1 >= 0.75
    for view in map(combined_name, missing_groups()):
        assert rows[view].reward >= bar, (view, rows[view].reward, bar)
    assert rows[ENDPOINTS_AND_STATE].balanced_accuracy > 0.5


def _metrics(env, frame: pl.DataFrame) -> dict[str, Any]:
    items = frame.to_dicts()
    records = []
    for item in items:
        scored = env.verifier.score(item, env.baselines["heuristic"](env.episodes.observation(item)))
        records.append({"id": scored.item_id, "reward": scored.reward, "components": scored.components,
                        "parsed": scored.parsed, "error": scored.error})  # fmt: skip
    metrics = env.verifier.aggregate(records, {item["flow_id"]: item for item in items})
    confidences = [record["parsed"]["confidence"] for record in records if record["parsed"]["label"] != "Abstain"]
    return metrics | {"mean_confidence": sum(confidences) / len(confidences)}


def test_confidences_are_calibrated_where_fitted_and_never_overconfident_where_not(env, splits) -> None:
    """On train, where they are fitted, confidences track accuracy (ECE < 0.1). On dev and test the fitted
    confidences run below accuracy, never above it, and on test (every attack kind, as train) they still carry
    information: its Brier score beats the same labels given at certainty (0.162 vs 0.184)."""
    assert _metrics(env, splits["train"])["ece"] < 0.1
    for name in ("dev", "test"):
        metrics = _metrics(env, splits[name])
        assert metrics["accuracy"] >= 0.8 and metrics["mean_confidence"] <= metrics["accuracy"], name
    test = _metrics(env, splits["test"])
    assert test["brier"] < 1 - test["accuracy"]
