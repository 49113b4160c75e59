"""The five attack playbooks (port scan, brute force, C2 beaconing, exfiltration, DDoS): each samples its episode
parameters, then emits n flows of its attack family."""

from __future__ import annotations

import numpy as np

from sv_env_network_logs.synth.flows import (
    Episode,
    Row,
    datagram,
    ephemeral_port,
    episode_start,
    external_ip,
    internal_ip,
    lognormal,
    probe,
    session,
)
from sv_shared.data.seeds import pick


def port_scan_episode(rng: np.random.Generator, n: int) -> Episode:
    style = str(rng.choice(["vertical", "horizontal"]))
    attacker = external_ip(rng) if rng.random() < 0.5 else internal_ip(rng)
    target = internal_ip(rng)
    port = int(rng.choice([22, 23, 445, 2323, 3389, 8080]))
    rate_hz = float(rng.choice([200.0, 20.0, 0.002]))  # fast, moderate, or slow enough to hide
    open_share = float(rng.uniform(0.0, 0.15))
    closed_share = float(rng.uniform(0.2, 0.8))
    start = episode_start(rng)
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
        rows.append(probe(rng, ts, attacker, host, dport, outcome, family=f"PortScan-{style}", scenario="port_scan"))
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


def brute_force_episode(rng: np.random.Generator, n: int) -> Episode:
    service = str(rng.choice(list(_BRUTE_SERVICES)))
    port, zeek_service, out_range, in_range = _BRUTE_SERVICES[service]
    attacker, target = external_ip(rng), internal_ip(rng)
    interval = float(rng.uniform(0.5, 8.0))
    start = episode_start(rng)
    rows: list[Row] = []
    ts = start
    for _ in range(n):
        ts += interval * float(rng.uniform(0.7, 1.3))
        state = str(rng.choice(["SF", "SF", "SF", "RSTR", "RSTO"]))
        rows.append(
            session(
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


def c2_beaconing_episode(rng: np.random.Generator, n: int) -> Episode:
    channel = str(rng.choice(list(_BEACON_CHANNELS)))
    port, service = _BEACON_CHANNELS[channel]
    implant, server = internal_ip(rng), external_ip(rng)
    interval = float(rng.choice([30.0, 60.0, 300.0, 900.0, 3600.0]))
    jitter = float(rng.uniform(0.0, 0.3))
    out_median = float(rng.uniform(60, 1_100))
    in_median = float(rng.uniform(30, 3_000))
    start = episode_start(rng)
    rows: list[Row] = []
    for beat in range(n):
        ts = start + beat * interval + interval * jitter * float(rng.uniform(-1, 1))
        rows.append(
            session(
                rng,
                ts,
                implant,
                server,
                port,
                service=service,
                duration=float(rng.uniform(0.05, 1.5)),
                bytes_out=int(lognormal(rng, out_median, 0.2, 10, 20_000)),
                bytes_in=int(lognormal(rng, in_median, 0.3, 0, 50_000)),
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


def exfiltration_episode(rng: np.random.Generator, n: int) -> Episode:
    channel = str(rng.choice(["https", "dns", "raw_tcp"]))
    source, destination = internal_ip(rng), external_ip(rng)
    start = episode_start(rng)
    rows: list[Row] = []
    ts = start
    for _ in range(n):
        if channel == "dns":  # long encoded names through the resolver
            ts += float(rng.uniform(0.1, 3.0))
            rows.append(
                datagram(
                    rng,
                    ts,
                    source,
                    ephemeral_port(rng),
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
        size = int(lognormal(rng, 20_000_000, 1.2, 500_000, 300_000_000))
        duration = size / lognormal(rng, 2_500_000, 0.5, 200_000, 10_000_000)
        ts += duration + float(rng.exponential(60.0))
        port, service = (443, "ssl") if channel == "https" else (int(rng.choice([8443, 9001, 2222])), None)
        rows.append(
            session(
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


def ddos_episode(rng: np.random.Generator, n: int) -> Episode:
    vector = str(rng.choice(["syn_flood", "udp_flood", "http_flood"]))
    bots = [internal_ip(rng) for _ in range(int(rng.integers(1, 6)))]
    target = external_ip(rng)
    start = episode_start(rng)
    rows: list[Row] = []
    ts = start
    for _ in range(n):
        ts += float(rng.exponential(0.01))
        bot = pick(rng, bots)
        if vector == "syn_flood":
            rows.append(probe(rng, ts, bot, target, 80, "filtered", family="DDoS-syn", scenario="ddos"))
        elif vector == "udp_flood":
            packets = int(rng.choice([1, 1, 2, 40_000]))  # mostly fragments, sometimes one long flood flow
            rows.append(
                datagram(
                    rng,
                    ts,
                    bot,
                    ephemeral_port(rng),
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
                session(
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
