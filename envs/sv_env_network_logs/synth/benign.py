"""The benign playbook: one client's ordinary traffic (web, DNS, NTP, SSH) mixed with the benign flows that look
like attacks (backups like exfiltration, failing health checks like scans, update check-ins like beacons)."""

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


def benign_traffic_episode(rng: np.random.Generator, n: int) -> Episode:
    kinds = ("web", "http", "dns", "ntp", "ssh", "bulk_upload", "monitoring", "update_checkin")
    weights = np.array([0.32, 0.1, 0.2, 0.07, 0.06, 0.05, 0.12, 0.08])
    picks = rng.choice(len(kinds), size=n, p=weights)
    start = episode_start(rng)
    client, server, monitor = internal_ip(rng), internal_ip(rng), internal_ip(rng)
    resolver = client.rsplit(".", 1)[0] + ".1"
    rows: list[Row] = []
    ts = start
    for step, pick in enumerate(picks.tolist()):
        kind = kinds[pick]
        ts += float(rng.exponential(20.0))
        if kind == "web":
            rows.append(
                session(
                    rng,
                    ts,
                    client,
                    external_ip(rng),
                    443,
                    service="ssl",
                    duration=lognormal(rng, 4.0, 1.3, 0.05, 600.0),
                    bytes_out=int(lognormal(rng, 1400, 0.7, 300, 40_000)),
                    bytes_in=int(lognormal(rng, 45_000, 1.6, 1_500, 3_000_000)),
                    family=None,
                    scenario="benign",
                    state=str(rng.choice(["SF"] * 8 + ["RSTO", "RSTR"])),
                )
            )
        elif kind == "http":
            rows.append(
                session(
                    rng,
                    ts,
                    client,
                    external_ip(rng),
                    80,
                    service="http",
                    duration=lognormal(rng, 0.6, 1.0, 0.01, 30.0),
                    bytes_out=int(lognormal(rng, 420, 0.4, 150, 2_000)),
                    bytes_in=int(lognormal(rng, 12_000, 1.4, 200, 900_000)),
                    family=None,
                    scenario="benign",
                )
            )
        elif kind == "dns":
            answered = rng.random() > 0.08  # resolvers time out now and then
            rows.append(
                datagram(
                    rng,
                    ts,
                    client,
                    ephemeral_port(rng),
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
                datagram(
                    rng,
                    start + 1024.0 * step,
                    client,
                    123,
                    external_ip(rng),
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
                session(
                    rng,
                    ts,
                    client,
                    server,
                    22,
                    service="ssh",
                    duration=lognormal(rng, 400.0, 1.0, 20.0, 3_600.0),
                    bytes_out=int(lognormal(rng, 15_000, 1.0, 3_000, 400_000)),
                    bytes_in=int(lognormal(rng, 60_000, 1.2, 4_000, 2_000_000)),
                    family=None,
                    scenario="benign",
                )
            )
        elif kind == "bulk_upload":  # backups look like exfiltration
            size = int(lognormal(rng, 60_000_000, 1.0, 8_000_000, 450_000_000))
            rows.append(
                session(
                    rng,
                    ts,
                    client,
                    external_ip(rng),
                    443,
                    service="ssl",
                    duration=size / lognormal(rng, 4_000_000, 0.4, 1_000_000, 12_000_000),
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
                    session(
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
                rows.append(probe(rng, ts, monitor, server, port, outcome, family=None, scenario="benign"))
        else:  # periodic update check-ins look like beacons
            rows.append(
                session(
                    rng,
                    start + 300.0 * step + float(rng.normal(0, 4)),
                    client,
                    external_ip(rng),
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
