"""The synthetic set: oracle-confirmed variants of the secure bases (generate, SynthReport) and the (vulnerable, secure)
diff pairs for SFT (diff_pairs)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from sv_env_config_verification import hcltext
from sv_env_config_verification.config_model import ConfigParseError
from sv_env_config_verification.data import Scanner
from sv_env_config_verification.manifests import unified_diff
from sv_env_config_verification.schema import (
    HASH_COLUMNS,
    ITEM_COLUMNS,
    ITEM_SCHEMA,
    SYNTHETIC_CORPUS,
    empty_frame,
    findings_from_json,
    findings_to_json,
    label_of,
    validate_items,
)
from sv_env_config_verification.synth.mutations import apply_mutation, canonical_form, introduced_ids, mutations_for
from sv_shared.data.hashing import content_hash, stable_json

MAX_SEED = 2**62


@dataclass
class SynthReport:
    """What a generate() call tried, kept and dropped, by mutation."""

    attempted: dict[str, int] = field(default_factory=dict)
    confirmed: dict[str, int] = field(default_factory=dict)
    unconfirmed: dict[str, int] = field(default_factory=dict)
    """The oracle did not report every id the mutation was meant to introduce, found something after a secure edit,
    or the twin was not secure."""
    not_applicable: dict[str, int] = field(default_factory=dict)
    rejected: dict[str, int] = field(default_factory=dict)
    """The base or the variant did not parse, or the oracle refused it."""
    not_needed: dict[str, int] = field(default_factory=dict)
    """Scanned in the last batch after n variants were already confirmed."""

    @staticmethod
    def count(bucket: dict[str, int], name: str) -> None:
        bucket[name] = bucket.get(name, 0) + 1

    def summary(self) -> dict[str, dict[str, int]]:
        return {
            name: dict(sorted(getattr(self, name).items()))
            for name in ("attempted", "confirmed", "unconfirmed", "not_applicable", "rejected", "not_needed")
        }


def _labelled(row: dict[str, Any], result: Any) -> dict[str, Any]:
    findings = list(result.findings)
    row = {**row, "oracle_findings": findings_to_json(findings), "label": label_of(findings)}
    row["content_hash"] = row["config_id"] = content_hash(row, HASH_COLUMNS)
    return row


def generate(
    base: pl.DataFrame,
    n: int,
    seed: int,
    oracle: Scanner,
    *,
    report: SynthReport | None = None,
    recipe: Callable[[str], list[str]] = mutations_for,
) -> pl.DataFrame:
    """Up to n oracle-confirmed variants of the secure rows of `base` (plus canonical-form twins).

    `recipe` names the generators tried per kind (default: every single mutation; mutation_pairs_for,
    secure_edits_for). A mutation is confirmed when the oracle reports every id it introduces, and the variant
    names its secure twin; a secure edit when the oracle reports nothing (the variant is secure, with no twin).
    Candidates are every (secure base, generator) pair in a seeded order, each with its own seed; they are scanned
    in batches and confirmed until n variants exist or the candidates run out (the report says how many were
    dropped and why). A pure function of (base rows, n, seed, recipe) and the oracle's rules.
    """
    report = report if report is not None else SynthReport()
    secure = base.filter(pl.col("label") == "secure").sort("config_id")
    rng = np.random.default_rng(seed)
    candidates = [(row, name) for row in secure.iter_rows(named=True) for name in recipe(row["kind"])]
    order = rng.permutation(len(candidates)).tolist()
    seeds = rng.integers(0, MAX_SEED, size=len(candidates)).tolist()
    variants: list[dict[str, Any]] = []
    twins: dict[str, dict[str, Any] | None] = {}  # base id -> its canonical-form twin (None: not secure)
    canonical: dict[str, str] = {}  # base id -> its text in canonical form
    position = 0
    while len(variants) < n and position < len(order):
        step = max(n - len(variants), 8)
        pending: list[tuple[dict[str, Any], tuple[str, ...] | None]] = []  # (row, ids to introduce | None: twin)
        queued_twins: set[str] = set()
        for index in order[position : position + step]:
            row, name = candidates[index]
            report.count(report.attempted, name)
            try:
                outcome = apply_mutation(row["kind"], row["content"], name, int(seeds[index]))
                if row["config_id"] not in canonical:
                    canonical[row["config_id"]] = canonical_form(row["kind"], row["content"])
                twin_text = canonical[row["config_id"]]
            except (ConfigParseError, hcltext.HclScanError):
                report.count(report.rejected, name)
                continue
            if outcome is None:
                report.count(report.not_applicable, name)
                continue
            text, params = outcome
            pending.append(
                (
                    _row(row, text, name, {"base_id": row["config_id"], **params}, int(seeds[index])),
                    introduced_ids(name),
                )
            )
            if twin_text != row["content"] and row["config_id"] not in twins and row["config_id"] not in queued_twins:
                queued_twins.add(row["config_id"])
                pending.append((_row(row, twin_text, "canonical_form", {"base_id": row["config_id"]}, 0), None))
        position += step
        results = oracle.scan_many([(row["filename"], row["content"]) for row, _ in pending]) if pending else []
        scanned = list(zip(pending, results, strict=True))
        for (row, wanted), result in scanned:
            if wanted is None:
                twin = None if result.error else _labelled(row, result)
                twins[json.loads(row["generator_params"])["base_id"]] = (
                    twin if twin and twin["label"] == "secure" else None
                )
        for (row, wanted), result in scanned:
            if wanted is None:
                continue
            if len(variants) >= n:
                report.count(report.not_needed, row["generator"])
                continue
            if result.error:
                report.count(report.rejected, row["generator"])
                continue
            variant = _labelled(row, result)
            base_id = json.loads(row["generator_params"])["base_id"]
            found = {finding.canonical_id for finding in findings_from_json(variant["oracle_findings"])}
            confirmed = set(wanted) <= found if wanted else variant["label"] == "secure"
            if not confirmed or (base_id in twins and twins[base_id] is None):
                report.count(report.unconfirmed, row["generator"])
                continue
            if wanted:
                twin = twins.get(base_id)
                variant["secure_variant_id"] = twin["config_id"] if twin is not None else base_id
            variants.append(variant)
            report.count(report.confirmed, row["generator"])
    used = {variant["secure_variant_id"] for variant in variants}
    rows = variants + [twin for twin in twins.values() if twin is not None and twin["config_id"] in used]
    if not rows:
        return empty_frame()
    frame = pl.DataFrame(rows, schema=ITEM_SCHEMA).select(ITEM_COLUMNS)
    return validate_items(frame.unique(subset="config_id", keep="first", maintain_order=True))


def _row(base: dict[str, Any], text: str, generator: str, params: dict[str, Any], seed: int) -> dict[str, Any]:
    return {
        "kind": base["kind"],
        "filename": base["filename"],
        "content": text,
        "source_corpus": SYNTHETIC_CORPUS,
        "generator": generator,
        "generator_params": stable_json(params),
        "generator_seed": seed,
        "secure_variant_id": None,
    }


# --- (vulnerable, secure) diff pairs for SFT ---

PAIR_SCHEMA: dict[str, pl.DataType] = {
    "vulnerable_id": pl.Utf8(),
    "secure_id": pl.Utf8(),
    "kind": pl.Utf8(),
    "filename": pl.Utf8(),
    "vulnerable": pl.Utf8(),
    "secure": pl.Utf8(),
    "diff": pl.Utf8(),
    "fixed_ids": pl.Utf8(),
    "generator": pl.Utf8(),
}


def diff_pairs(frame: pl.DataFrame, secure: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per vulnerable item whose secure twin (secure_variant_id) is in `frame` or `secure`: both texts, the
    unified diff that fixes the vulnerable one, and the canonical ids the fix removes (JSON list)."""
    pool = frame if secure is None else pl.concat([frame, secure.select(frame.columns)])
    by_id = {row["config_id"]: row for row in pool.iter_rows(named=True)}
    rows = []
    for row in frame.filter(pl.col("secure_variant_id").is_not_null()).sort("config_id").iter_rows(named=True):
        twin = by_id.get(row["secure_variant_id"])
        if twin is None:
            continue
        before = {f.canonical_id for f in findings_from_json(row["oracle_findings"])}
        after = {f.canonical_id for f in findings_from_json(twin["oracle_findings"])}
        rows.append(
            {
                "vulnerable_id": row["config_id"],
                "secure_id": twin["config_id"],
                "kind": row["kind"],
                "filename": row["filename"],
                "vulnerable": row["content"],
                "secure": twin["content"],
                "diff": unified_diff(row["content"], twin["content"], row["filename"]),
                "fixed_ids": json.dumps(sorted(i for i in before - after if i)),
                "generator": row["generator"],
            }
        )
    return pl.DataFrame(rows, schema=PAIR_SCHEMA)
