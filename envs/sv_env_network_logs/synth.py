"""Synthetic E1 flows, following the seed's recipe: perturb real flows (IP swapping, bounded noise), simulate
attack playbooks with event generators, balance the labels exactly, and tag every row with its scenario.

Every generated row records how it was made: `generator` (a playbook name or "perturb"), `generator_params`
(canonical JSON) and `generator_seed`. A playbook row comes back from
`PLAYBOOKS[generator](params["n"], generator_seed)`; a perturbed row names its base flow and the seed of the
perturb call; generate() as a whole is a pure function of its arguments (numpy.random.default_rng throughout).
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from sv_env_network_logs.schema import (
    FEATURE_COLUMNS,
    FLOW_COLUMNS,
    FLOW_SCHEMA,
    SYNTHETIC_CORPUS,
    validate_flows,
    with_content_hash,
)
from sv_shared.data.hashing import stable_json
from sv_shared.data.splits import allocate_counts

Row = dict[str, Any]
Episode = tuple[dict[str, Any], list[Row]]

EPOCH_2024 = 1_704_067_200.0  # 2024-01-01 00:00:00 UTC: synthetic flows live in 2024
MSS = 1448
MAX_SEED = 2**62
_EPHEMERAL = (32768, 60999)
_DOC_NETS = ("192.0.2.", "198.51.100.", "203.0.113.")  # RFC 5737: documentation only, never routed
_MAX_TOP_UPS = 50
_ROW_COLUMNS = [*FEATURE_COLUMNS, "label", "attack_family", "scenario"]


# --- addresses and single flows ---


def _internal_ip(rng: np.random.Generator) -> str:
    if rng.random() < 0.5:
        return f"10.{int(rng.integers(0, 4))}.{int(rng.integers(0, 256))}.{int(rng.integers(2, 255))}"
    return f"192.168.{int(rng.integers(0, 4))}.{int(rng.integers(2, 255))}"


def _external_ip(rng: np.random.Generator) -> str:
    return f"{_DOC_NETS[int(rng.integers(0, len(_DOC_NETS)))]}{int(rng.integers(1, 255))}"


def _ephemeral(rng: np.random.Generator) -> int:
    return int(rng.integers(_EPHEMERAL[0], _EPHEMERAL[1] + 1))


def _start(rng: np.random.Generator) -> float:
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


def _session(
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
        src_port=_ephemeral(rng) if sport is None else sport,
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


def _probe(
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
            src_port=_ephemeral(rng),
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
        src_port=_ephemeral(rng),
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


def _datagram(
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


def _lognormal(rng: np.random.Generator, median: float, sigma: float, low: float, high: float) -> float:
    return float(np.clip(rng.lognormal(math.log(median), sigma), low, high))


# --- playbooks: each samples its episode parameters, then emits n flows ---


def _benign_traffic(rng: np.random.Generator, n: int) -> Episode:
    kinds = ("web", "http", "dns", "ntp", "ssh", "bulk_upload", "monitoring", "update_checkin")
    weights = np.array([0.32, 0.1, 0.2, 0.07, 0.06, 0.05, 0.12, 0.08])
    picks = rng.choice(len(kinds), size=n, p=weights)
    start = _start(rng)
    client, server, monitor = _internal_ip(rng), _internal_ip(rng), _internal_ip(rng)
    resolver = client.rsplit(".", 1)[0] + ".1"
    rows: list[Row] = []
    ts = start
    for step, pick in enumerate(picks.tolist()):
        kind = kinds[pick]
        ts += float(rng.exponential(20.0))
        if kind == "web":
            rows.append(
                _session(
                    rng,
                    ts,
                    client,
                    _external_ip(rng),
                    443,
                    service="ssl",
                    duration=_lognormal(rng, 4.0, 1.3, 0.05, 600.0),
                    bytes_out=int(_lognormal(rng, 1400, 0.7, 300, 40_000)),
                    bytes_in=int(_lognormal(rng, 45_000, 1.6, 1_500, 3_000_000)),
                    family=None,
                    scenario="benign",
                    state=str(rng.choice(["SF"] * 8 + ["RSTO", "RSTR"])),
                )
            )
        elif kind == "http":
            rows.append(
                _session(
                    rng,
                    ts,
                    client,
                    _external_ip(rng),
                    80,
                    service="http",
                    duration=_lognormal(rng, 0.6, 1.0, 0.01, 30.0),
                    bytes_out=int(_lognormal(rng, 420, 0.4, 150, 2_000)),
                    bytes_in=int(_lognormal(rng, 12_000, 1.4, 200, 900_000)),
                    family=None,
                    scenario="benign",
                )
            )
        elif kind == "dns":
            answered = rng.random() > 0.08  # resolvers time out now and then
            rows.append(
                _datagram(
                    rng,
                    ts,
                    client,
                    _ephemeral(rng),
                    resolver,
                    53,
                    service="dns" if answered else None,
                    bytes_out=int(rng.integers(28, 49)),
                    bytes_in=int(rng.integers(60, 321)) if answered else None,
                    family=None,
                    scenario="benign",
                )
            )
        elif kind == "ntp":
            rows.append(
                _datagram(
                    rng,
                    start + 1024.0 * step,
                    client,
                    123,
                    _external_ip(rng),
                    123,
                    service=None,
                    bytes_out=48,
                    bytes_in=48,
                    family=None,
                    scenario="benign",
                )
            )
        elif kind == "ssh":
            rows.append(
                _session(
                    rng,
                    ts,
                    client,
                    server,
                    22,
                    service="ssh",
                    duration=_lognormal(rng, 400.0, 1.0, 20.0, 3_600.0),
                    bytes_out=int(_lognormal(rng, 15_000, 1.0, 3_000, 400_000)),
                    bytes_in=int(_lognormal(rng, 60_000, 1.2, 4_000, 2_000_000)),
                    family=None,
                    scenario="benign",
                )
            )
        elif kind == "bulk_upload":  # backups look like exfiltration
            size = int(_lognormal(rng, 60_000_000, 1.0, 8_000_000, 450_000_000))
            rows.append(
                _session(
                    rng,
                    ts,
                    client,
                    _external_ip(rng),
                    443,
                    service="ssl",
                    duration=size / _lognormal(rng, 4_000_000, 0.4, 1_000_000, 12_000_000),
                    bytes_out=size,
                    bytes_in=int(rng.integers(6_000, 60_001)),
                    family=None,
                    scenario="benign",
                )
            )
        elif kind == "monitoring":  # health checks fail like scans when a service is down
            outcome = str(rng.choice(["up", "up", "up", "closed", "filtered"]))
            port = int(rng.choice([22, 80, 443, 3306, 5432, 9100]))
            if outcome == "up":
                rows.append(
                    _session(
                        rng,
                        ts,
                        monitor,
                        server,
                        port,
                        service=None,
                        duration=float(rng.uniform(0.002, 0.05)),
                        bytes_out=int(rng.integers(0, 91)),
                        bytes_in=int(rng.integers(40, 601)),
                        family=None,
                        scenario="benign",
                    )
                )
            else:
                rows.append(_probe(rng, ts, monitor, server, port, outcome, family=None, scenario="benign"))
        else:  # periodic update check-ins look like beacons
            rows.append(
                _session(
                    rng,
                    start + 300.0 * step + float(rng.normal(0, 4)),
                    client,
                    _external_ip(rng),
                    443,
                    service="ssl",
                    duration=float(rng.uniform(0.3, 0.9)),
                    bytes_out=int(rng.integers(600, 761)),
                    bytes_in=int(rng.integers(3_900, 4_401)),
                    family=None,
                    scenario="benign",
                )
            )
    mix = {kind: int((picks == index).sum()) for index, kind in enumerate(kinds)}
    return {
        "n": n,
        "start_ts": start,
        "client": client,
        "server": server,
        "monitor": monitor,
        "mix": mix,
    }, rows


def _port_scan(rng: np.random.Generator, n: int) -> Episode:
    style = str(rng.choice(["vertical", "horizontal"]))
    attacker = _external_ip(rng) if rng.random() < 0.5 else _internal_ip(rng)
    target = _internal_ip(rng)
    port = int(rng.choice([22, 23, 445, 2323, 3389, 8080]))
    rate_hz = float(rng.choice([200.0, 20.0, 0.002]))  # fast, moderate, or slow enough to hide
    open_share = float(rng.uniform(0.0, 0.15))
    closed_share = float(rng.uniform(0.2, 0.8))
    start = _start(rng)
    rows: list[Row] = []
    ts = start
    ports = rng.permutation(np.arange(1, 10_001))[:n].tolist() if style == "vertical" else []
    for index in range(n):
        ts += float(rng.exponential(1.0 / rate_hz))
        roll = rng.random()
        outcome = "open" if roll < open_share else "closed" if roll < open_share + closed_share else "filtered"
        if style == "vertical":
            host, dport = target, int(ports[index])
        else:
            host, dport = target.rsplit(".", 1)[0] + f".{int(rng.integers(1, 255))}", port
        rows.append(_probe(rng, ts, attacker, host, dport, outcome, family=f"PortScan-{style}", scenario="port_scan"))
    params = {
        "n": n,
        "style": style,
        "attacker": attacker,
        "target": target,
        "rate_hz": rate_hz,
        "open_share": round(open_share, 6),
        "closed_share": round(closed_share, 6),
        "start_ts": start,
    }
    if style == "horizontal":
        params["port"] = port
    return params, rows


_BRUTE_SERVICES: dict[str, tuple[int, str | None, tuple[int, int], tuple[int, int]]] = {
    # service: (port, Zeek service, bytes out range, bytes in range) of one failed login session
    "ssh": (22, "ssh", (1_250, 1_800), (2_000, 2_700)),
    "ftp": (21, "ftp", (28, 70), (170, 280)),
    "telnet": (23, None, (40, 100), (60, 180)),
    "rdp": (3389, None, (1_800, 3_200), (1_500, 4_000)),
}


def _brute_force(rng: np.random.Generator, n: int) -> Episode:
    service = str(rng.choice(list(_BRUTE_SERVICES)))
    port, zeek_service, out_range, in_range = _BRUTE_SERVICES[service]
    attacker, target = _external_ip(rng), _internal_ip(rng)
    interval = float(rng.uniform(0.5, 8.0))
    start = _start(rng)
    rows: list[Row] = []
    ts = start
    for _ in range(n):
        ts += interval * float(rng.uniform(0.7, 1.3))
        state = str(rng.choice(["SF", "SF", "SF", "RSTR", "RSTO"]))
        rows.append(
            _session(
                rng,
                ts,
                attacker,
                target,
                port,
                service=zeek_service,
                duration=float(rng.uniform(0.2, 4.5)),
                bytes_out=int(rng.integers(*out_range)),
                bytes_in=int(rng.integers(*in_range)),
                family=f"BruteForce-{service}",
                scenario="brute_force",
                state=state,
            )
        )
    return {
        "n": n,
        "service": service,
        "attacker": attacker,
        "target": target,
        "interval_s": round(interval, 6),
        "start_ts": start,
    }, rows


_BEACON_CHANNELS: dict[str, tuple[int, str | None]] = {
    "https": (443, "ssl"),
    "http": (8080, "http"),
    "irc": (6667, "irc"),
    "raw": (4444, None),
}


def _c2_beaconing(rng: np.random.Generator, n: int) -> Episode:
    channel = str(rng.choice(list(_BEACON_CHANNELS)))
    port, service = _BEACON_CHANNELS[channel]
    implant, server = _internal_ip(rng), _external_ip(rng)
    interval = float(rng.choice([30.0, 60.0, 300.0, 900.0, 3600.0]))
    jitter = float(rng.uniform(0.0, 0.3))
    out_median = float(rng.uniform(60, 1_100))
    in_median = float(rng.uniform(30, 3_000))
    start = _start(rng)
    rows: list[Row] = []
    for beat in range(n):
        ts = start + beat * interval + interval * jitter * float(rng.uniform(-1, 1))
        rows.append(
            _session(
                rng,
                ts,
                implant,
                server,
                port,
                service=service,
                duration=float(rng.uniform(0.05, 1.5)),
                bytes_out=int(_lognormal(rng, out_median, 0.2, 10, 20_000)),
                bytes_in=int(_lognormal(rng, in_median, 0.3, 0, 50_000)),
                family=f"C2-{channel}",
                scenario="c2_beaconing",
                state=str(rng.choice(["SF", "SF", "S1"])),
            )
        )
    return {
        "n": n,
        "channel": channel,
        "implant": implant,
        "server": server,
        "interval_s": interval,
        "jitter": round(jitter, 6),
        "start_ts": start,
    }, rows


def _exfiltration(rng: np.random.Generator, n: int) -> Episode:
    channel = str(rng.choice(["https", "dns", "raw_tcp"]))
    source, destination = _internal_ip(rng), _external_ip(rng)
    start = _start(rng)
    rows: list[Row] = []
    ts = start
    for _ in range(n):
        if channel == "dns":  # long encoded names through the resolver
            ts += float(rng.uniform(0.1, 3.0))
            rows.append(
                _datagram(
                    rng,
                    ts,
                    source,
                    _ephemeral(rng),
                    source.rsplit(".", 1)[0] + ".1",
                    53,
                    service="dns",
                    bytes_out=int(rng.integers(160, 256)),
                    bytes_in=int(rng.integers(80, 220)),
                    family="Exfiltration-dns",
                    scenario="exfiltration",
                )
            )
            continue
        size = int(_lognormal(rng, 20_000_000, 1.2, 500_000, 300_000_000))
        duration = size / _lognormal(rng, 2_500_000, 0.5, 200_000, 10_000_000)
        ts += duration + float(rng.exponential(60.0))
        port, service = (443, "ssl") if channel == "https" else (int(rng.choice([8443, 9001, 2222])), None)
        rows.append(
            _session(
                rng,
                ts,
                source,
                destination,
                port,
                service=service,
                duration=duration,
                bytes_out=size,
                bytes_in=int(rng.integers(0, 30_001)),
                family=f"Exfiltration-{channel}",
                scenario="exfiltration",
            )
        )
    return {"n": n, "channel": channel, "source": source, "destination": destination, "start_ts": start}, rows


def _ddos(rng: np.random.Generator, n: int) -> Episode:
    vector = str(rng.choice(["syn_flood", "udp_flood", "http_flood"]))
    bots = [_internal_ip(rng) for _ in range(int(rng.integers(1, 6)))]
    target = _external_ip(rng)
    start = _start(rng)
    rows: list[Row] = []
    ts = start
    for _ in range(n):
        ts += float(rng.exponential(0.01))
        bot = bots[int(rng.integers(0, len(bots)))]
        if vector == "syn_flood":
            rows.append(_probe(rng, ts, bot, target, 80, "filtered", family="DDoS-syn", scenario="ddos"))
        elif vector == "udp_flood":
            packets = int(rng.choice([1, 1, 2, 40_000]))  # mostly fragments, sometimes one long flood flow
            rows.append(
                _datagram(
                    rng,
                    ts,
                    bot,
                    _ephemeral(rng),
                    target,
                    int(rng.choice([53, 80, 123, 1900])),
                    service=None,
                    bytes_out=packets * int(rng.integers(512, 1_401)),
                    bytes_in=None,
                    packets_out=packets,
                    family="DDoS-udp",
                    scenario="ddos",
                )
            )
        else:  # each request looks like an ordinary page load
            rows.append(
                _session(
                    rng,
                    ts,
                    bot,
                    target,
                    80,
                    service="http",
                    duration=float(rng.uniform(0.02, 0.2)),
                    bytes_out=int(rng.integers(90, 181)),
                    bytes_in=int(rng.integers(500, 9_001)),
                    family="DDoS-http",
                    scenario="ddos",
                )
            )
    return {"n": n, "vector": vector, "bots": bots, "target": target, "start_ts": start}, rows


_PLAYBOOK_IMPLS: dict[str, Callable[[np.random.Generator, int], Episode]] = {
    "benign_traffic": _benign_traffic,
    "port_scan": _port_scan,
    "brute_force": _brute_force,
    "c2_beaconing": _c2_beaconing,
    "exfiltration": _exfiltration,
    "ddos": _ddos,
}
ATTACK_PLAYBOOKS: tuple[str, ...] = ("port_scan", "brute_force", "c2_beaconing", "exfiltration", "ddos")


def _episode(name: str, n: int, seed: int) -> pl.DataFrame:
    """One playbook run as a hashed (not yet validated) frame with its provenance on every row."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if not 0 <= seed < MAX_SEED:
        raise ValueError(f"seed must be in [0, 2**62), got {seed}")
    params, rows = _PLAYBOOK_IMPLS[name](np.random.default_rng(seed), n)
    frame = pl.DataFrame(rows, schema={column: FLOW_SCHEMA[column] for column in _ROW_COLUMNS})
    frame = frame.with_columns(
        pl.lit(SYNTHETIC_CORPUS).alias("source_corpus"),
        pl.lit(name).alias("generator"),
        pl.lit(stable_json(params)).alias("generator_params"),
        pl.lit(seed, dtype=pl.Int64).alias("generator_seed"),
    )
    return with_content_hash(frame).select(FLOW_COLUMNS)


def benign_traffic(n: int, seed: int) -> pl.DataFrame:
    """Ordinary traffic: web, DNS, NTP, SSH, and hard cases (backups, failing health checks, check-ins)."""
    return validate_flows(_episode("benign_traffic", n, seed))


def port_scan(n: int, seed: int) -> pl.DataFrame:
    """One scanner sweeping a host's ports (vertical) or a subnet on one port (horizontal), fast or slow."""
    return validate_flows(_episode("port_scan", n, seed))


def brute_force(n: int, seed: int) -> pl.DataFrame:
    """Repeated short login sessions (SSH, FTP, telnet or RDP) against one server at a steady pace."""
    return validate_flows(_episode("brute_force", n, seed))


def c2_beaconing(n: int, seed: int) -> pl.DataFrame:
    """An implant calling its server at a fixed interval with jitter and small, similar payloads."""
    return validate_flows(_episode("c2_beaconing", n, seed))


def exfiltration(n: int, seed: int) -> pl.DataFrame:
    """Data leaving one host: large HTTPS or raw-TCP uploads, or DNS queries with long encoded names."""
    return validate_flows(_episode("exfiltration", n, seed))


def ddos(n: int, seed: int) -> pl.DataFrame:
    """A flood (SYN, UDP or HTTP GET) from one to five bots at one target."""
    return validate_flows(_episode("ddos", n, seed))


PLAYBOOKS: dict[str, Callable[[int, int], pl.DataFrame]] = {
    "benign_traffic": benign_traffic,
    "port_scan": port_scan,
    "brute_force": brute_force,
    "c2_beaconing": c2_beaconing,
    "exfiltration": exfiltration,
    "ddos": ddos,
}


# --- perturbation of real flows ---


def _new_address(rng: np.random.Generator, address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """A random address playing the same role: same private block, or a documentation address for public ones.

    None keeps the original: loopback, link-local, multicast, unspecified and broadcast-like addresses carry
    meaning of their own.
    """
    if address.is_loopback or address.is_link_local or address.is_multicast or address.is_unspecified:
        return None
    if address.version == 6:
        return f"2001:db8::{int(rng.integers(1, 0xFFFF)):x}:{int(rng.integers(1, 0xFFFF)):x}"
    octets = str(address).split(".")
    if octets[3] in ("0", "255"):
        return None
    host = f"{int(rng.integers(0, 256))}.{int(rng.integers(1, 255))}"
    if address in ipaddress.ip_network("10.0.0.0/8"):
        return f"10.{int(rng.integers(0, 256))}.{host}"
    if address in ipaddress.ip_network("172.16.0.0/12"):
        return f"172.{int(rng.integers(16, 32))}.{host}"
    if address in ipaddress.ip_network("192.168.0.0/16"):
        return f"192.168.{host}"
    return _external_ip(rng)


def _address_map(rng: np.random.Generator, addresses: list[str]) -> dict[str, str]:
    """A one-to-one renaming of every address (consistent within one call, so a scanner stays one host)."""
    mapping: dict[str, str] = {}
    used = set(addresses)
    for original in addresses:
        try:
            parsed = ipaddress.ip_address(original)
        except ValueError:
            continue  # not an address (a hostname or a masked value): left as it is
        for _ in range(100):
            candidate = _new_address(rng, parsed)
            if candidate is None or candidate not in used:
                break
        else:
            raise RuntimeError(f"no free address to replace {original}")
        if candidate is not None:
            mapping[original] = candidate
            used.add(candidate)
    return mapping


def _jitter(rng: np.random.Generator, value: int | float | None, noise: float, *, integer: bool) -> int | float | None:
    """value scaled by a factor in [1 - noise, 1 + noise]; zero stays zero and a positive count stays >= 1."""
    if value is None:
        return None
    factor = float(rng.uniform(1.0 - noise, 1.0 + noise))
    if not integer:
        return round(value * factor, 6)
    if value == 0:
        return 0
    return max(1, round(value * factor))


def perturb(frame: pl.DataFrame, seed: int, *, noise: float = 0.1, swap_ips: bool = True) -> pl.DataFrame:
    """Variants of real flows that keep their label: addresses renamed, sizes and durations scaled by at
    most +-noise, ephemeral source ports redrawn, times shifted by one offset (keeping the gaps) plus jitter.

    Values stay valid: counts stay non-negative integers, zeros stay zero, well-known ports are kept. Rows
    whose variants coincide (flows with nothing to vary) are kept once, so the result can be shorter.
    """
    if not 0.0 <= noise < 1.0:
        raise ValueError(f"noise must be in [0, 1), got {noise}")
    if not 0 <= seed < MAX_SEED:
        raise ValueError(f"seed must be in [0, 2**62), got {seed}")
    missing = [column for column in FLOW_COLUMNS if column not in frame.columns]
    if missing:
        raise ValueError(f"perturb needs E1 flow frames; missing column(s) {missing}")
    base = frame.select([pl.col(column).cast(dtype) for column, dtype in FLOW_SCHEMA.items()])
    rng = np.random.default_rng(seed)
    addresses = sorted({ip for column in ("src_ip", "dst_ip") for ip in base[column].drop_nulls().to_list()})
    mapping = _address_map(rng, addresses) if swap_ips else {}
    shift = round(float(rng.uniform(-3_600.0, 3_600.0)), 6)
    rows: list[Row] = []
    for row in base.iter_rows(named=True):
        new = {column: row[column] for column in _ROW_COLUMNS}
        new["src_ip"] = mapping.get(row["src_ip"], row["src_ip"])
        new["dst_ip"] = mapping.get(row["dst_ip"], row["dst_ip"])
        if row["ts"] is not None:
            new["ts"] = round(max(0.0, row["ts"] + shift + float(rng.uniform(-0.5, 0.5))), 6)
        if row["src_port"] is not None and row["src_port"] >= 1024:
            new["src_port"] = _ephemeral(rng)
        new["duration_s"] = _jitter(rng, row["duration_s"], noise, integer=False)
        for column in ("bytes_out", "bytes_in", "packets_out", "packets_in"):
            new[column] = _jitter(rng, row[column], noise, integer=True)
        params = {"base_flow_id": row["flow_id"], "noise": noise, "swap_ips": swap_ips, "ts_shift_s": shift}
        new.update(
            source_corpus=SYNTHETIC_CORPUS,
            generator="perturb",
            generator_params=stable_json(params),
            generator_seed=seed,
        )
        rows.append(new)
    schema = {column: FLOW_SCHEMA[column] for column in FLOW_COLUMNS if column not in ("flow_id", "content_hash")}
    perturbed = with_content_hash(pl.DataFrame(rows, schema=schema))
    return validate_flows(perturbed.unique("content_hash", keep="first", maintain_order=True))


# --- the balanced mix ---


def _fill(quota: int, make: Callable[[int], pl.DataFrame], seen: set[str]) -> pl.DataFrame:
    """Exactly `quota` rows none of which duplicates a row already taken: batches from `make` until full."""
    chunks: list[pl.DataFrame] = []
    have = 0
    for _ in range(_MAX_TOP_UPS):
        if have >= quota:
            break
        batch = make(quota - have).unique("content_hash", keep="first", maintain_order=True)
        batch = batch.filter(~pl.col("content_hash").is_in(list(seen))).head(quota - have)
        seen.update(batch["content_hash"].to_list())
        chunks.append(batch.select(FLOW_COLUMNS))
        have += batch.height
    if have < quota:
        raise RuntimeError(f"could not generate {quota} distinct flows (got {have})")
    return pl.concat(chunks) if chunks else pl.DataFrame(schema=FLOW_SCHEMA)


def _playbook_rows(name: str, k: int, rng: np.random.Generator) -> pl.DataFrame:
    """k rows of one playbook, as episodes of 8-40 flows, each with its own seed drawn from rng."""
    episodes = []
    remaining = k
    while remaining > 0:
        size = min(remaining, int(rng.integers(8, 41)))
        episodes.append(_episode(name, size, int(rng.integers(0, MAX_SEED))))
        remaining -= size
    return pl.concat(episodes)


def _perturbed_rows(pool: pl.DataFrame, k: int, rng: np.random.Generator) -> pl.DataFrame:
    """k variants of rows drawn from pool (sorted by flow_id first, so the input order does not matter)."""
    picks = rng.choice(pool.height, size=k, replace=k > pool.height)
    return perturb(pool[np.sort(picks).tolist()], int(rng.integers(0, MAX_SEED)))


def generate(
    n: int,
    seed: int,
    base: pl.DataFrame | None = None,
    *,
    malicious_share: float = 0.5,
    perturb_share: float = 0.3,
) -> pl.DataFrame:
    """n synthetic flows with exactly round(n * malicious_share) malicious rows (halves round up).

    Within each label, round(share * perturb_share) rows perturb base rows of that label (when base has any),
    the rest come from playbooks: benign traffic for benign rows, the five attack playbooks in equal shares
    for malicious rows. The same seed and base give the same frame; every row carries its scenario tag.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if not 0 <= seed < MAX_SEED:
        raise ValueError(f"seed must be in [0, 2**62), got {seed}")
    for name, share in (("malicious_share", malicious_share), ("perturb_share", perturb_share)):
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {share}")
    rng = np.random.default_rng(seed)
    n_malicious = math.floor(n * malicious_share + 0.5)
    pool = validate_flows(base, check_hashes=False).sort("flow_id") if base is not None else None
    seen: set[str] = set()
    parts: list[pl.DataFrame] = []
    for label, quota in (("Benign", n - n_malicious), ("Malicious", n_malicious)):
        candidates = pool.filter(pl.col("label") == label) if pool is not None else None
        n_perturbed = math.floor(quota * perturb_share + 0.5) if candidates is not None and candidates.height else 0
        if n_perturbed:
            parts.append(_fill(n_perturbed, lambda k, c=candidates: _perturbed_rows(c, k, rng), seen))
        rest = quota - n_perturbed
        if label == "Benign":
            parts.append(_fill(rest, lambda k: _playbook_rows("benign_traffic", k, rng), seen))
            continue
        counts = allocate_counts(rest, dict.fromkeys(ATTACK_PLAYBOOKS, 1 / len(ATTACK_PLAYBOOKS)))
        for name in ATTACK_PLAYBOOKS:
            parts.append(_fill(counts[name], lambda k, p=name: _playbook_rows(p, k, rng), seen))
    frame = pl.concat(parts) if parts else pl.DataFrame(schema=FLOW_SCHEMA)
    return validate_flows(frame)
