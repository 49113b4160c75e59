"""Addresses and single flows: the address, port and start-time draws every playbook uses, and the Zeek-style
records of one TCP session, one payload-less probe or one UDP exchange (label and scenario set from the family)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sv_env_network_logs.schema import FEATURE_COLUMNS
from sv_shared.data.seeds import pick

Row = dict[str, Any]
Episode = tuple[dict[str, Any], list[Row]]

EPOCH_2024 = 1_704_067_200.0  # 2024-01-01 00:00:00 UTC: synthetic flows live in 2024
MSS = 1448
ROW_COLUMNS = [*FEATURE_COLUMNS, "label", "attack_family", "scenario"]
_EPHEMERAL = (32768, 60999)
_DOC_NETS = ("192.0.2.", "198.51.100.", "203.0.113.")  # RFC 5737: documentation only, never routed


def internal_ip(rng: np.random.Generator) -> str:
    if rng.random() < 0.5:
        return f"10.{int(rng.integers(0, 4))}.{int(rng.integers(0, 256))}.{int(rng.integers(2, 255))}"
    return f"192.168.{int(rng.integers(0, 4))}.{int(rng.integers(2, 255))}"


def external_ip(rng: np.random.Generator) -> str:
    return f"{pick(rng, _DOC_NETS)}{int(rng.integers(1, 255))}"


def ephemeral_port(rng: np.random.Generator) -> int:
    return int(rng.integers(_EPHEMERAL[0], _EPHEMERAL[1] + 1))


def episode_start(rng: np.random.Generator) -> float:
    """An episode start somewhere in the 30 days after EPOCH_2024, at microsecond resolution."""
    return round(EPOCH_2024 + float(rng.uniform(0, 30 * 86_400)), 6)


def _flow(
    *,
    ts: float,
    src_ip: str,
    src_port: int,
    dst_ip: str,
    dst_port: int,
    protocol: str,
    service: str | None,
    duration_s: float | None,
    bytes_out: int | None,
    bytes_in: int | None,
    packets_out: int,
    packets_in: int,
    conn_state: str,
    history: str | None,
    family: str | None,
    scenario: str,
) -> Row:
    return {
        "ts": round(ts, 6),
        "src_ip": src_ip,
        "dst_ip": dst_ip,
        "src_port": src_port,
        "dst_port": dst_port,
        "protocol": protocol,
        "service": service,
        "duration_s": None if duration_s is None else round(duration_s, 6),
        "bytes_out": bytes_out,
        "bytes_in": bytes_in,
        "packets_out": packets_out,
        "packets_in": packets_in,
        "conn_state": conn_state,
        "history": history,
        "label": "Benign" if family is None else "Malicious",
        "attack_family": family,
        "scenario": scenario,
    }


def session(
    rng: np.random.Generator,
    ts: float,
    src: str,
    dst: str,
    dport: int,
    *,
    service: str | None,
    duration: float,
    bytes_out: int,
    bytes_in: int,
    family: str | None,
    scenario: str,
    state: str = "SF",
    sport: int | None = None,
) -> Row:
    """A TCP connection that completed its handshake; packet counts follow from the payload sizes."""
    history = {"SF": "ShADadFf", "S1": "ShADad", "RSTO": "ShADadR", "RSTR": "ShADadr"}[state]
    return _flow(
        ts=ts,
        src_ip=src,
        src_port=ephemeral_port(rng) if sport is None else sport,
        dst_ip=dst,
        dst_port=dport,
        protocol="tcp",
        service=service,
        duration_s=duration,
        bytes_out=bytes_out,
        bytes_in=bytes_in,
        packets_out=3 + math.ceil(bytes_out / MSS) + int(rng.integers(0, 3)),
        packets_in=2 + math.ceil(bytes_in / MSS) + int(rng.integers(0, 3)),
        conn_state=state,
        history=history,
        family=family,
        scenario=scenario,
    )


def probe(
    rng: np.random.Generator,
    ts: float,
    src: str,
    dst: str,
    dport: int,
    outcome: str,
    *,
    family: str | None,
    scenario: str,
) -> Row:
    """A connection attempt without payload: filtered (S0), closed (REJ), or open and reset by the prober."""
    if outcome == "filtered":
        tries = int(rng.choice([1, 1, 2, 3]))
        duration = None if tries == 1 else {2: 1.0, 3: 3.0}[tries] + float(rng.uniform(0, 0.02))
        payload = None if tries == 1 else 0
        return _flow(
            ts=ts,
            src_ip=src,
            src_port=ephemeral_port(rng),
            dst_ip=dst,
            dst_port=dport,
            protocol="tcp",
            service=None,
            duration_s=duration,
            bytes_out=payload,
            bytes_in=payload,
            packets_out=tries,
            packets_in=0,
            conn_state="S0",
            history="S",
            family=family,
            scenario=scenario,
        )
    state, history, packets = {"closed": ("REJ", "Sr", (1, 1)), "open": ("RSTO", "ShR", (2, 1))}[outcome]
    return _flow(
        ts=ts,
        src_ip=src,
        src_port=ephemeral_port(rng),
        dst_ip=dst,
        dst_port=dport,
        protocol="tcp",
        service=None,
        duration_s=float(rng.uniform(0.0001, 0.003)),
        bytes_out=0,
        bytes_in=0,
        packets_out=packets[0],
        packets_in=packets[1],
        conn_state=state,
        history=history,
        family=family,
        scenario=scenario,
    )


def datagram(
    rng: np.random.Generator,
    ts: float,
    src: str,
    sport: int,
    dst: str,
    dport: int,
    *,
    service: str | None,
    bytes_out: int,
    bytes_in: int | None,
    family: str | None,
    scenario: str,
    packets_out: int = 1,
) -> Row:
    """A UDP exchange: answered (SF) or not (S0; a lone datagram has no duration or byte counts in Zeek)."""
    answered = bytes_in is not None
    if answered:
        duration: float | None = float(rng.uniform(0.0005, 0.08))
    else:  # a flood of many datagrams lasts as long as it takes to send them
        duration = (packets_out - 1) * float(rng.uniform(0.0002, 0.002)) if packets_out > 1 else None
    return _flow(
        ts=ts,
        src_ip=src,
        src_port=sport,
        dst_ip=dst,
        dst_port=dport,
        protocol="udp",
        service=service,
        duration_s=duration,
        bytes_out=bytes_out if duration is not None else None,
        bytes_in=(bytes_in or 0) if duration is not None else None,
        packets_out=packets_out,
        packets_in=packets_out if answered else 0,
        conn_state="SF" if answered else "S0",
        history="Dd" if answered else "D",
        family=family,
        scenario=scenario,
    )


def lognormal(rng: np.random.Generator, median: float, sigma: float, low: float, high: float) -> float:
    return float(np.clip(rng.lognormal(math.log(median), sigma), low, high))
