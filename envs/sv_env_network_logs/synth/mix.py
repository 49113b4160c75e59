"""The balanced synthetic set: exact label counts, perturbed base rows and playbook episodes in their shares, no
duplicate flows."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import polars as pl

from sv_env_network_logs.schema import FLOW_COLUMNS, FLOW_SCHEMA, validate_flows
from sv_env_network_logs.synth.perturb import perturb
from sv_env_network_logs.synth.playbooks import ATTACK_PLAYBOOKS, episode_frame
from sv_shared.data.seeds import MAX_SEED, check_seed
from sv_shared.data.splits import allocate_counts

_MAX_TOP_UPS = 50


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
        episodes.append(episode_frame(name, size, int(rng.integers(0, MAX_SEED))))
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
    check_seed(seed)
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
