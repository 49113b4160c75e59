"""The normalized E1 flow record every corpus maps into, its pandera schema, and the model's typed answer.

Every loader (IoT-23, CIC-IDS-2017, UNSW-NB15, the embedded corpus, the synthetic generator) produces exactly
these columns, so the prompt renderer, the verifier and the heuristic baseline are written once against them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

import pandera.polars as pa
import polars as pl
from pandera.api.polars.types import PolarsData

from sv_shared.data.frames import PROVENANCE_COLUMNS, FrameRules, json_object_rows, provenance_matches_source
from sv_shared.data.hashing import content_hash

LABELS: tuple[str, ...] = ("Benign", "Malicious")
SCENARIOS: tuple[str, ...] = (
    "benign",
    "port_scan",
    "brute_force",
    "c2_beaconing",
    "exfiltration",
    "ddos",
    "other_attack",
)
ANSWER_LABELS: tuple[str, ...] = ("Benign", "Malicious", "Abstain")
SYNTHETIC_CORPUS = "sv-synthetic"
"""source_corpus of generated rows: exactly these carry generator, generator_params and generator_seed."""

FLOW_SCHEMA: dict[str, pl.DataType] = {
    "flow_id": pl.Utf8(),
    "ts": pl.Float64(),
    "src_ip": pl.Utf8(),
    "dst_ip": pl.Utf8(),
    "src_port": pl.Int64(),
    "dst_port": pl.Int64(),
    "protocol": pl.Utf8(),
    "service": pl.Utf8(),
    "duration_s": pl.Float64(),
    "bytes_out": pl.Int64(),
    "bytes_in": pl.Int64(),
    "packets_out": pl.Int64(),
    "packets_in": pl.Int64(),
    "conn_state": pl.Utf8(),
    "history": pl.Utf8(),
    "label": pl.Utf8(),
    "attack_family": pl.Utf8(),
    "scenario": pl.Utf8(),
    "source_corpus": pl.Utf8(),
    "content_hash": pl.Utf8(),
    "generator": pl.Utf8(),
    "generator_params": pl.Utf8(),
    "generator_seed": pl.Int64(),
}
FLOW_COLUMNS: list[str] = list(FLOW_SCHEMA)
FEATURE_COLUMNS: list[str] = [
    "ts",
    "src_ip",
    "dst_ip",
    "src_port",
    "dst_port",
    "protocol",
    "service",
    "duration_s",
    "bytes_out",
    "bytes_in",
    "packets_out",
    "packets_in",
    "conn_state",
    "history",
]
"""What a model may see: the flow itself, never the label, attack family, scenario or provenance."""
HASH_COLUMNS: tuple[str, ...] = (*FEATURE_COLUMNS, "label")
"""content_hash covers features and label: the same flow with another label is another item."""

MAX_EPOCH_S = 4_102_444_800.0  # 2100-01-01: anything later is a unit error (ms or µs), not a flow time.
_HEX16 = r"^[0-9a-f]{16}$"


class FlowSchema(pa.DataFrameModel):
    """One network flow, normalized; nullable columns are those some real corpora do not record."""

    flow_id: pl.Utf8 = pa.Field(unique=True, str_matches=_HEX16)
    ts: pl.Float64 = pa.Field(nullable=True, in_range={"min_value": 0.0, "max_value": MAX_EPOCH_S})
    src_ip: pl.Utf8 = pa.Field(nullable=True)
    dst_ip: pl.Utf8 = pa.Field(nullable=True)
    src_port: pl.Int64 = pa.Field(nullable=True, in_range={"min_value": 0, "max_value": 65535})
    dst_port: pl.Int64 = pa.Field(nullable=True, in_range={"min_value": 0, "max_value": 65535})
    protocol: pl.Utf8 = pa.Field(str_matches=r"^[^A-Z\s]+$")
    service: pl.Utf8 = pa.Field(nullable=True)
    duration_s: pl.Float64 = pa.Field(nullable=True, ge=0.0)
    bytes_out: pl.Int64 = pa.Field(nullable=True, ge=0)
    bytes_in: pl.Int64 = pa.Field(nullable=True, ge=0)
    packets_out: pl.Int64 = pa.Field(nullable=True, ge=0)
    packets_in: pl.Int64 = pa.Field(nullable=True, ge=0)
    conn_state: pl.Utf8 = pa.Field(nullable=True)
    history: pl.Utf8 = pa.Field(nullable=True)
    label: pl.Utf8 = pa.Field(isin=list(LABELS))
    attack_family: pl.Utf8 = pa.Field(nullable=True)
    scenario: pl.Utf8 = pa.Field(isin=list(SCENARIOS))
    source_corpus: pl.Utf8 = pa.Field(str_matches=r"^[a-z0-9][a-z0-9.-]*$")
    content_hash: pl.Utf8 = pa.Field(str_matches=_HEX16)
    generator: pl.Utf8 = pa.Field(nullable=True)
    generator_params: pl.Utf8 = pa.Field(nullable=True)
    generator_seed: pl.Int64 = pa.Field(nullable=True, ge=0)

    class Config:
        strict = True
        ordered = True

    @pa.check("duration_s", name="finite")
    def duration_finite(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col(data.key).is_finite())

    @pa.dataframe_check
    def flow_id_is_content_hash(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("flow_id") == pl.col("content_hash"))

    @pa.dataframe_check
    def attack_family_null_iff_benign(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("attack_family").is_null() == (pl.col("label") == "Benign"))

    @pa.dataframe_check
    def scenario_benign_iff_benign(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select((pl.col("scenario") == "benign") == (pl.col("label") == "Benign"))

    @pa.dataframe_check
    def generator_set_iff_synthetic(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(provenance_matches_source(SYNTHETIC_CORPUS))


# Columns shown in error examples for each frame-level rule (column rules show the failing column).
_RULE_COLUMNS: dict[str, list[str]] = {
    "flow_id_is_content_hash": ["flow_id", "content_hash"],
    "attack_family_null_iff_benign": ["label", "attack_family"],
    "scenario_benign_iff_benign": ["label", "scenario"],
    "generator_set_iff_synthetic": PROVENANCE_COLUMNS,
}


_FRAME = FrameRules("E1 flow frame", FLOW_SCHEMA, shown=["flow_id"], rule_columns=_RULE_COLUMNS)


def hash_rows(frame: pl.DataFrame) -> list[str]:
    """content_hash of every row (features + label), from values already cast to the schema's dtypes."""
    return [content_hash(row, HASH_COLUMNS) for row in frame.select(HASH_COLUMNS).iter_rows(named=True)]


def with_content_hash(frame: pl.DataFrame) -> pl.DataFrame:
    """Set content_hash and flow_id from the row content; every producer calls this after its last edit."""
    typed = frame.with_columns(
        [pl.col(column).cast(FLOW_SCHEMA[column]) for column in HASH_COLUMNS if column in frame.columns]
    )
    hashes = pl.Series("content_hash", hash_rows(typed), dtype=pl.Utf8)
    return typed.with_columns(hashes, hashes.alias("flow_id"))


def validate_flows(frame: pl.DataFrame, *, check_hashes: bool = True) -> pl.DataFrame:
    """Cast and order the schema's columns (extra columns are dropped), then validate every rule.

    Raises CorpusValidationError naming each failed column and rule with a few example rows. With check_hashes
    the stored content_hash is recomputed, so an edit that forgot to rehash cannot pass as the original flow.
    """
    typed = _FRAME.cast(frame)
    findings = _FRAME.schema_failures(FlowSchema, typed)
    bad_json = json_object_rows(typed["generator_params"])
    if bad_json:
        findings.append(("generator_params", "JSON object", bad_json))
    if check_hashes and typed.height:
        expected = pl.Series(hash_rows(typed), dtype=pl.Utf8)
        stale = (typed["content_hash"] != expected).arg_true().to_list()
        if stale:
            findings.append(("content_hash", "equals hash of features + label", stale))
    if findings:
        _FRAME.fail(typed, findings)
    return typed


@dataclass(frozen=True)
class NetworkLogAnswer:
    """The model's typed output for one flow: a verdict (or abstention), its confidence and a short reason."""

    label: Literal["Benign", "Malicious", "Abstain"]
    confidence: float
    rationale: str

    def __post_init__(self) -> None:
        if self.label not in ANSWER_LABELS:
            raise ValueError(f"label must be one of {ANSWER_LABELS}, got {self.label!r}")
        if isinstance(self.confidence, bool) or not isinstance(self.confidence, int | float):
            raise ValueError(f"confidence must be a number, got {self.confidence!r}")
        if not math.isfinite(self.confidence) or not 0.0 <= self.confidence <= 1.0:
            raise ValueError(f"confidence must be in [0, 1], got {self.confidence!r}")
        if not isinstance(self.rationale, str):
            raise ValueError(f"rationale must be a string, got {type(self.rationale).__name__}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
