"""E1 synthetic data: playbooks, perturbation of real flows, and the exactly balanced, reproducible mix."""

from __future__ import annotations

import ipaddress
import json
import math

import polars as pl
import pytest

from sv_env_network_logs import data, schema, synth
from sv_shared.data.hashing import frame_hash

ATTACKS = ("port_scan", "brute_force", "c2_beaconing", "exfiltration", "ddos")


@pytest.fixture(scope="module")
def embedded() -> pl.DataFrame:
    return data.load_embedded()


@pytest.mark.parametrize("name", list(synth.PLAYBOOKS))
def test_playbook_rows_carry_scenario_and_provenance(name: str) -> None:
    frame = synth.PLAYBOOKS[name](20, 11)
    assert frame.height == 20
    expected_scenario, expected_label = ("benign", "Benign") if name == "benign_traffic" else (name, "Malicious")
    assert frame["scenario"].unique().to_list() == [expected_scenario]
    assert frame["label"].unique().to_list() == [expected_label]
    assert frame["generator"].unique().to_list() == [name]
    assert frame["generator_seed"].unique().to_list() == [11]
    assert frame["source_corpus"].unique().to_list() == [schema.SYNTHETIC_CORPUS]
    params = json.loads(frame["generator_params"][0])
    assert params["n"] == 20 and isinstance(params["start_ts"], float)
    assert frame["ts"].min() >= synth.EPOCH_2024


def test_playbook_is_a_function_of_n_and_seed() -> None:
    assert frame_hash(synth.port_scan(30, 5)) == frame_hash(synth.port_scan(30, 5))
    assert frame_hash(synth.port_scan(30, 5)) != frame_hash(synth.port_scan(30, 6))


def test_port_scan_looks_like_a_scan() -> None:
    frame = pl.concat([synth.port_scan(40, seed) for seed in range(6)])
    assert set(frame["conn_state"].unique().to_list()) <= {"S0", "REJ", "RSTO"}
    assert frame.filter(pl.col("bytes_out") > 0).height == 0
    assert set(frame["attack_family"].unique().to_list()) == {"PortScan-vertical", "PortScan-horizontal"}


@pytest.mark.parametrize(
    ("n", "share", "malicious"),
    [(400, 0.5, 200), (401, 0.5, 201), (10, 0.35, 4), (7, 0.0, 0), (7, 1.0, 7), (0, 0.5, 0)],
)
def test_generate_balances_labels_exactly(n: int, share: float, malicious: int, embedded: pl.DataFrame) -> None:
    for base in (None, embedded):
        frame = synth.generate(n, 3, base, malicious_share=share)
        assert frame.height == n
        assert frame.filter(pl.col("label") == "Malicious").height == malicious


def test_generate_is_deterministic_and_seed_sensitive(embedded: pl.DataFrame) -> None:
    first = synth.generate(200, 42, embedded)
    assert frame_hash(first) == frame_hash(synth.generate(200, 42, embedded))
    shuffled = embedded.sample(fraction=1.0, shuffle=True, seed=5)
    assert frame_hash(first) == frame_hash(synth.generate(200, 42, shuffled))  # base row order is irrelevant
    assert frame_hash(first) != frame_hash(synth.generate(200, 43, embedded))
    assert frame_hash(synth.generate(50, 1)) == frame_hash(synth.generate(50, 1))


def test_generate_mix_and_provenance(embedded: pl.DataFrame) -> None:
    frame = synth.generate(400, 42, embedded)
    assert schema.validate_flows(frame).height == 400
    assert frame["source_corpus"].unique().to_list() == [schema.SYNTHETIC_CORPUS]
    assert dict(frame.group_by("generator").len().sort("generator").iter_rows()) == {
        "benign_traffic": 140,
        "brute_force": 28,
        "c2_beaconing": 28,
        "ddos": 28,
        "exfiltration": 28,
        "perturb": 120,  # 30% of each label's 200 rows
        "port_scan": 28,
    }
    assert frame.select(pl.sum_horizontal(pl.col("generator_params", "generator_seed").null_count())).item() == 0
    base_labels = dict(embedded.select("flow_id", "label").iter_rows())
    for row in frame.filter(pl.col("generator") == "perturb").iter_rows(named=True):
        assert base_labels[json.loads(row["generator_params"])["base_flow_id"]] == row["label"]


def test_playbook_rows_can_be_regenerated_from_their_provenance() -> None:
    frame = synth.generate(120, 9)
    for (name, seed), rows in frame.group_by("generator", "generator_seed"):
        params = json.loads(rows["generator_params"][0])
        replay = synth.PLAYBOOKS[str(name)](params["n"], int(seed))
        assert set(rows["flow_id"].to_list()) <= set(replay["flow_id"].to_list())


def test_generate_without_base_uses_every_attack_playbook() -> None:
    frame = synth.generate(100, 2, perturb_share=0.9)  # no base: nothing to perturb, playbooks fill in
    assert set(frame["scenario"].unique().to_list()) == {"benign", *ATTACKS}
    assert dict(frame.group_by("generator").len().sort("generator").iter_rows()) == {
        "benign_traffic": 50,
        **dict.fromkeys(sorted(ATTACKS), 10),
    }


def test_generate_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="n must be"):
        synth.generate(-1, 1)
    with pytest.raises(ValueError, match="malicious_share"):
        synth.generate(10, 1, malicious_share=1.5)
    with pytest.raises(ValueError, match="perturb_share"):
        synth.generate(10, 1, perturb_share=-0.1)
    with pytest.raises(ValueError, match="seed"):
        synth.generate(10, -5)


def test_perturb_keeps_values_valid_and_within_the_noise_bound(embedded: pl.DataFrame) -> None:
    noise = 0.5
    perturbed = synth.perturb(embedded, 3, noise=noise)
    assert perturbed.height == embedded.height
    assert perturbed["generator"].unique().to_list() == ["perturb"]
    pairs = perturbed.with_columns(
        pl.col("generator_params").str.json_decode(pl.Struct({"base_flow_id": pl.Utf8, "ts_shift_s": pl.Float64}))
    ).unnest("generator_params")
    joined = pairs.join(embedded, left_on="base_flow_id", right_on="flow_id", suffix="_base")
    assert joined.height == embedded.height
    for column in (
        "dst_port",
        "protocol",
        "service",
        "conn_state",
        "history",
        "label",
        "attack_family",
        "scenario",
    ):
        assert joined[column].equals(joined[f"{column}_base"], null_equal=True), column
    for row in joined.iter_rows(named=True):
        assert abs(row["ts"] - row["ts_base"] - row["ts_shift_s"]) <= 0.5 + 1e-6
        if row["src_port_base"] < 1024:
            assert row["src_port"] == row["src_port_base"]
        else:
            assert 32768 <= row["src_port"] <= 60999
        if row["duration_s_base"] is None:
            assert row["duration_s"] is None
        else:
            low, high = row["duration_s_base"] * (1 - noise), row["duration_s_base"] * (1 + noise)
            assert low - 1e-6 <= row["duration_s"] <= high + 1e-6
        for column in ("bytes_out", "bytes_in", "packets_out", "packets_in"):
            value, base = row[column], row[f"{column}_base"]
            if base is None or base == 0:
                assert value == base, column
            else:
                assert max(1, math.floor(base * (1 - noise))) <= value <= math.ceil(base * (1 + noise)), column


def test_perturb_renames_addresses_one_to_one_within_their_block(embedded: pl.DataFrame) -> None:
    perturbed = synth.perturb(embedded, 8)
    joined = perturbed.with_columns(
        pl.col("generator_params").str.json_decode(pl.Struct({"base_flow_id": pl.Utf8})).struct.field("base_flow_id")
    ).join(embedded, left_on="generator_params", right_on="flow_id", suffix="_base")
    mapping: dict[str, str] = {}
    for column in ("src_ip", "dst_ip"):
        for new, old in joined.select(column, f"{column}_base").iter_rows():
            assert mapping.setdefault(old, new) == new  # one host stays one host
    assert len(set(mapping.values())) == len(mapping)  # and two hosts stay two
    for old, new in mapping.items():
        assert new != old
        if ipaddress.ip_address(old).is_private and not old.startswith(("192.0.2.", "198.51.100.", "203.0.113.")):
            assert new.split(".")[0] == old.split(".")[0]
        else:
            assert new.startswith(("192.0.2.", "198.51.100.", "203.0.113."))
    kept = synth.perturb(embedded.head(5), 8, swap_ips=False)
    assert sorted(kept["src_ip"].to_list()) == sorted(embedded.head(5)["src_ip"].to_list())


def test_perturb_collapses_variants_that_cannot_differ(embedded: pl.DataFrame) -> None:
    bare = schema.with_content_hash(
        embedded.head(1).with_columns(
            pl.lit(None, pl.Float64).alias("ts"),
            pl.lit(80).alias("src_port"),
            pl.lit(None, pl.Utf8).alias("src_ip"),
            pl.lit(None, pl.Utf8).alias("dst_ip"),
            pl.lit(0.0).alias("duration_s"),
            *[pl.lit(0).alias(column) for column in ("bytes_out", "bytes_in", "packets_out", "packets_in")],
        )
    )
    assert synth.perturb(pl.concat([bare, bare]), 1).height == 1


def test_perturb_rejects_bad_arguments(embedded: pl.DataFrame) -> None:
    with pytest.raises(ValueError, match="noise"):
        synth.perturb(embedded, 1, noise=1.0)
    with pytest.raises(ValueError, match="seed"):
        synth.perturb(embedded, -1)
    with pytest.raises(ValueError, match="missing"):
        synth.perturb(embedded.drop("label"), 1)
