"""The playbook registry: one playbook run as a frame with its provenance on every row (`episode_frame`), and the
public playbooks `PLAYBOOKS[name](n, seed)` that return it validated."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from sv_env_network_logs.schema import (
    FLOW_COLUMNS,
    FLOW_SCHEMA,
    SYNTHETIC_CORPUS,
    validate_flows,
    with_content_hash,
)
from sv_env_network_logs.synth.attacks import (
    brute_force_episode,
    c2_beaconing_episode,
    ddos_episode,
    exfiltration_episode,
    port_scan_episode,
)
from sv_env_network_logs.synth.benign import benign_traffic_episode
from sv_env_network_logs.synth.flows import ROW_COLUMNS, Episode
from sv_shared.data.hashing import stable_json
from sv_shared.data.seeds import check_seed

_PLAYBOOK_IMPLS: dict[str, Callable[[np.random.Generator, int], Episode]] = {
    "benign_traffic": benign_traffic_episode,
    "port_scan": port_scan_episode,
    "brute_force": brute_force_episode,
    "c2_beaconing": c2_beaconing_episode,
    "exfiltration": exfiltration_episode,
    "ddos": ddos_episode,
}
ATTACK_PLAYBOOKS: tuple[str, ...] = ("port_scan", "brute_force", "c2_beaconing", "exfiltration", "ddos")


def episode_frame(name: str, n: int, seed: int) -> pl.DataFrame:
    """One playbook run as a hashed (not yet validated) frame with its provenance on every row."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    check_seed(seed)
    params, rows = _PLAYBOOK_IMPLS[name](np.random.default_rng(seed), n)
    frame = pl.DataFrame(rows, schema={column: FLOW_SCHEMA[column] for column in ROW_COLUMNS})
    frame = frame.with_columns(
        pl.lit(SYNTHETIC_CORPUS).alias("source_corpus"),
        pl.lit(name).alias("generator"),
        pl.lit(stable_json(params)).alias("generator_params"),
        pl.lit(seed, dtype=pl.Int64).alias("generator_seed"),
    )
    return with_content_hash(frame).select(FLOW_COLUMNS)


def benign_traffic(n: int, seed: int) -> pl.DataFrame:
    """Ordinary traffic: web, DNS, NTP, SSH, and hard cases (backups, failing health checks, check-ins)."""
    return validate_flows(episode_frame("benign_traffic", n, seed))


def port_scan(n: int, seed: int) -> pl.DataFrame:
    """One scanner sweeping a host's ports (vertical) or a subnet on one port (horizontal), fast or slow."""
    return validate_flows(episode_frame("port_scan", n, seed))


def brute_force(n: int, seed: int) -> pl.DataFrame:
    """Repeated short login sessions (SSH, FTP, telnet or RDP) against one server at a steady pace."""
    return validate_flows(episode_frame("brute_force", n, seed))


def c2_beaconing(n: int, seed: int) -> pl.DataFrame:
    """An implant calling its server at a fixed interval with jitter and small, similar payloads."""
    return validate_flows(episode_frame("c2_beaconing", n, seed))


def exfiltration(n: int, seed: int) -> pl.DataFrame:
    """Data leaving one host: large HTTPS or raw-TCP uploads, or DNS queries with long encoded names."""
    return validate_flows(episode_frame("exfiltration", n, seed))


def ddos(n: int, seed: int) -> pl.DataFrame:
    """A flood (SYN, UDP or HTTP GET) from one to five bots at one target."""
    return validate_flows(episode_frame("ddos", n, seed))


PLAYBOOKS: dict[str, Callable[[int, int], pl.DataFrame]] = {
    "benign_traffic": benign_traffic,
    "port_scan": port_scan,
    "brute_force": brute_force,
    "c2_beaconing": c2_beaconing,
    "exfiltration": exfiltration,
    "ddos": ddos,
}
