"""Perturbation of real flows: label-keeping variants with addresses renamed one-to-one, sizes and durations
scaled within a noise bound, ephemeral ports redrawn and times shifted."""

from __future__ import annotations

import ipaddress

import numpy as np
import polars as pl

from sv_env_network_logs.schema import (
    FLOW_COLUMNS,
    FLOW_SCHEMA,
    SYNTHETIC_CORPUS,
    validate_flows,
    with_content_hash,
)
from sv_env_network_logs.synth.flows import ROW_COLUMNS, Row, ephemeral_port, external_ip
from sv_shared.data.hashing import stable_json
from sv_shared.data.seeds import check_seed


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
    return external_ip(rng)


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
    check_seed(seed)
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
        new = {column: row[column] for column in ROW_COLUMNS}
        new["src_ip"] = mapping.get(row["src_ip"], row["src_ip"])
        new["dst_ip"] = mapping.get(row["dst_ip"], row["dst_ip"])
        if row["ts"] is not None:
            new["ts"] = round(max(0.0, row["ts"] + shift + float(rng.uniform(-0.5, 0.5))), 6)
        if row["src_port"] is not None and row["src_port"] >= 1024:
            new["src_port"] = ephemeral_port(rng)
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
