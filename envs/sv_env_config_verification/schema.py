"""The E2 item every corpus maps into (a config file with its oracle findings), its pandera schema, and the model's
typed answer with its parser.

Items: one Kubernetes manifest (possibly multi-document) or one Terraform module per row. `oracle_findings` is the
JSON list of findings the oracle (all available scanners, deduplicated by canonical id and resource) reported for
the content, and the label follows from it: vulnerable iff there is at least one finding with a canonical id.

Answers: `{"violations": [{"id", "severity", "resource"?, "evidence"?}], "patch": <unified diff> | <JSON Patch op
list> | null, "confidence": 0..1}`; an object that repeats a key anywhere in the answer (a quoted JSON Patch
included) is refused as duplicate_key, JSON nested deeper than sv_shared.answers.parsing.MAX_JSON_DEPTH as
json_too_deep. Violation ids match the canonical vocabulary case-insensitively (surrounding space ignored, "-" read
as "_"). An id outside the vocabulary is NOT a format failure: it is kept (`known: false`) and scored as a false
positive, because one wrong claim should cost that claim, not zero out the whole answer (its patch included).
Everything that makes the answer unusable is a named format failure (AnswerError, FormatError).
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

import pandera.polars as pa
import polars as pl
from pandera.api.polars.types import PolarsData

from sv_env_config_verification.canonical import CANONICAL
from sv_env_config_verification.patching import PatchError, json_patch_from_text, validate_json_patch
from sv_shared.answers.parsing import FormatError, extract_json_object, parse_confidence
from sv_shared.contracts import ParseResult
from sv_shared.data.frames import PROVENANCE_COLUMNS, FrameRules, json_object_rows, provenance_matches_source
from sv_shared.data.hashing import content_hash
from sv_shared.execution.findings import SEVERITIES, Finding

KINDS: tuple[str, ...] = ("kubernetes", "terraform")
LABELS: tuple[str, ...] = ("vulnerable", "secure")
SYNTHETIC_CORPUS = "sv-synthetic"
"""source_corpus of generated rows: exactly these carry generator, generator_params and generator_seed."""
MAX_CONTENT_BYTES = 256_000
"""Items larger than this are not posed to models (prompt budget); loaders drop them with a counted reason."""
EXTENSIONS: dict[str, tuple[str, ...]] = {"kubernetes": (".yaml", ".yml"), "terraform": (".tf",)}

ITEM_SCHEMA: dict[str, pl.DataType] = {
    "config_id": pl.Utf8(),
    "kind": pl.Utf8(),
    "filename": pl.Utf8(),
    "content": pl.Utf8(),
    "label": pl.Utf8(),
    "oracle_findings": pl.Utf8(),
    "source_corpus": pl.Utf8(),
    "content_hash": pl.Utf8(),
    "generator": pl.Utf8(),
    "generator_params": pl.Utf8(),
    "generator_seed": pl.Int64(),
    "secure_variant_id": pl.Utf8(),
}
ITEM_COLUMNS: list[str] = list(ITEM_SCHEMA)
HASH_COLUMNS: tuple[str, ...] = ("kind", "content")
"""content_hash covers the kind and the text: the same file under another name is the same item."""
OBSERVATION_COLUMNS: tuple[str, ...] = ("kind", "filename", "content")
"""What a model (or a rule baseline) may see: never the findings, label or provenance."""

_HEX16 = r"^[0-9a-f]{16}$"
_FILENAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"


def canonical_ids(kind: str | None = None) -> tuple[str, ...]:
    """The canonical vocabulary (optionally for one kind: K8S_* ids for kubernetes, TF_* for terraform)."""
    prefix = {"kubernetes": "K8S_", "terraform": "TF_", None: ""}[kind]
    return tuple(sorted(name for name in CANONICAL if name.startswith(prefix)))


def canonical_severity(canonical_id: str) -> str:
    return str(CANONICAL[canonical_id].severity)


def canonical_title(canonical_id: str) -> str:
    return str(CANONICAL[canonical_id].title)


_CANONICAL_BY_FOLD = {name.casefold(): name for name in CANONICAL}


def canonical_id_of(value: str) -> str | None:
    """The canonical spelling of an id (case-insensitive, "-" as "_"), or None when it is not in the vocabulary."""
    return _CANONICAL_BY_FOLD.get(value.strip().replace("-", "_").casefold())


# --- findings as stored in items ---


def findings_to_json(findings: list[Finding]) -> str:
    """The stored form: canonical-id findings only, in a stable order, as JSON (what the label is computed from)."""
    kept = sorted(
        (finding for finding in findings if finding.canonical_id is not None),
        key=lambda f: (f.canonical_id or "", f.resource or "", f.tool, f.rule_id, f.line or 0),
    )
    return json.dumps([finding.to_dict() for finding in kept], sort_keys=True, ensure_ascii=False)


def findings_from_json(text: str) -> list[Finding]:
    value = json.loads(text)
    if not isinstance(value, list):
        raise ValueError("oracle_findings must be a JSON list")
    return [Finding.from_dict(entry) for entry in value]


def label_of(findings: list[Finding]) -> str:
    return "vulnerable" if any(finding.canonical_id for finding in findings) else "secure"


# --- the item schema ---


class ConfigItemSchema(pa.DataFrameModel):
    """One config file with its oracle findings and provenance."""

    config_id: pl.Utf8 = pa.Field(unique=True, str_matches=_HEX16)
    kind: pl.Utf8 = pa.Field(isin=list(KINDS))
    filename: pl.Utf8 = pa.Field(str_matches=_FILENAME, str_length={"max_value": 200})
    content: pl.Utf8 = pa.Field(str_length={"min_value": 1, "max_value": MAX_CONTENT_BYTES})
    label: pl.Utf8 = pa.Field(isin=list(LABELS))
    oracle_findings: pl.Utf8 = pa.Field()
    source_corpus: pl.Utf8 = pa.Field(str_matches=r"^[a-z0-9][a-z0-9.-]*$")
    content_hash: pl.Utf8 = pa.Field(str_matches=_HEX16)
    generator: pl.Utf8 = pa.Field(nullable=True)
    generator_params: pl.Utf8 = pa.Field(nullable=True)
    generator_seed: pl.Int64 = pa.Field(nullable=True, ge=0)
    secure_variant_id: pl.Utf8 = pa.Field(nullable=True, str_matches=_HEX16)

    class Config:
        strict = True
        ordered = True

    @pa.dataframe_check
    def config_id_is_content_hash(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("config_id") == pl.col("content_hash"))

    @pa.dataframe_check
    def generator_set_iff_synthetic(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(provenance_matches_source(SYNTHETIC_CORPUS))

    @pa.dataframe_check
    def secure_variant_only_on_vulnerable(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("secure_variant_id").is_null() | (pl.col("label") == "vulnerable"))

    @pa.dataframe_check
    def extension_matches_kind(cls, data: PolarsData) -> pl.LazyFrame:
        name = pl.col("filename").str.to_lowercase()
        kubernetes = name.str.ends_with(".yaml") | name.str.ends_with(".yml")
        return data.lazyframe.select(
            pl.when(pl.col("kind") == "kubernetes").then(kubernetes).otherwise(name.str.ends_with(".tf"))
        )


_RULE_COLUMNS: dict[str, list[str]] = {
    "config_id_is_content_hash": ["config_id", "content_hash"],
    "generator_set_iff_synthetic": PROVENANCE_COLUMNS,
    "secure_variant_only_on_vulnerable": ["label", "secure_variant_id"],
    "extension_matches_kind": ["kind", "filename"],
}


_FRAME = FrameRules(
    "E2 item frame",
    ITEM_SCHEMA,
    shown=["config_id", "filename"],
    rule_columns=_RULE_COLUMNS,
    hidden=frozenset({"content"}),
)


def hash_rows(frame: pl.DataFrame) -> list[str]:
    return [content_hash(row, HASH_COLUMNS) for row in frame.select(HASH_COLUMNS).iter_rows(named=True)]


def with_content_hash(frame: pl.DataFrame) -> pl.DataFrame:
    """Set content_hash and config_id from (kind, content); every producer calls this after its last edit."""
    hashes = pl.Series("content_hash", hash_rows(frame), dtype=pl.Utf8)
    return frame.with_columns(hashes, hashes.alias("config_id"))


def _finding_problems(frame: pl.DataFrame) -> list[tuple[str, str, list[int]]]:
    """Rows whose oracle_findings is not a list of valid findings, or whose label disagrees with it."""
    bad_json: list[int] = []
    bad_label: list[int] = []
    for index, (text, label) in enumerate(frame.select("oracle_findings", "label").iter_rows()):
        try:
            findings = findings_from_json(text)
        except (ValueError, TypeError):
            bad_json.append(index)
            continue
        if label_of(findings) != label:
            bad_label.append(index)
    problems = []
    if bad_json:
        problems.append(("oracle_findings", "JSON list of findings", bad_json))
    if bad_label:
        problems.append(("label", "vulnerable iff a canonical finding", bad_label))
    return problems


def validate_items(frame: pl.DataFrame, *, check_hashes: bool = True) -> pl.DataFrame:
    """Cast and order the schema's columns (extra columns are dropped) and validate every rule.

    Raises CorpusValidationError naming each failed column and rule with example rows. With check_hashes the
    content hash is recomputed, so an edited config cannot pass as the original.
    """
    typed = _FRAME.cast(frame)
    findings = _FRAME.schema_failures(ConfigItemSchema, typed)
    findings.extend(_finding_problems(typed))
    bad_params = json_object_rows(typed["generator_params"])
    if bad_params:
        findings.append(("generator_params", "JSON object", bad_params))
    if check_hashes and typed.height:
        stale = (typed["content_hash"] != pl.Series(hash_rows(typed), dtype=pl.Utf8)).arg_true().to_list()
        if stale:
            findings.append(("content_hash", "equals hash of kind + content", stale))
    if findings:
        _FRAME.fail(typed, findings)
    return typed


def empty_frame() -> pl.DataFrame:
    return pl.DataFrame(schema=ITEM_SCHEMA)


# --- the model's answer ---

MAX_VIOLATIONS = 100
MAX_FIELD_CHARS = 2_000


class AnswerError(StrEnum):
    """Why an answer could not be used (besides sv_shared.answers.parsing.FormatError); the value goes to results."""

    MISSING_VIOLATIONS = "missing_violations"
    VIOLATIONS_NOT_LIST = "violations_not_list"
    TOO_MANY_VIOLATIONS = "too_many_violations"
    VIOLATION_NOT_OBJECT = "violation_not_object"
    VIOLATION_MISSING_ID = "violation_missing_id"
    VIOLATION_ID_NOT_STRING = "violation_id_not_string"
    VIOLATION_MISSING_SEVERITY = "violation_missing_severity"
    VIOLATION_BAD_SEVERITY = "violation_bad_severity"
    VIOLATION_RESOURCE_NOT_STRING = "violation_resource_not_string"
    VIOLATION_EVIDENCE_NOT_STRING = "violation_evidence_not_string"
    PATCH_BAD_TYPE = "patch_bad_type"
    PATCH_OPS_INVALID = "patch_ops_invalid"


def _optional_text(entry: dict[str, Any], name: str, error: AnswerError) -> tuple[str | None, AnswerError | None]:
    value = entry.get(name)
    if value is None:
        return None, None
    if not isinstance(value, str):
        return None, error
    stripped = value.strip()[:MAX_FIELD_CHARS]
    return (stripped or None), None


def _violation(entry: Any) -> tuple[dict[str, Any] | None, AnswerError | None]:
    if not isinstance(entry, dict):
        return None, AnswerError.VIOLATION_NOT_OBJECT
    raw_id = entry.get("id")
    if raw_id is None:
        return None, AnswerError.VIOLATION_MISSING_ID
    if not isinstance(raw_id, str) or not raw_id.strip():
        return None, AnswerError.VIOLATION_ID_NOT_STRING
    severity = entry.get("severity")
    if severity is None:
        return None, AnswerError.VIOLATION_MISSING_SEVERITY
    if not isinstance(severity, str) or severity.strip().casefold() not in SEVERITIES:
        return None, AnswerError.VIOLATION_BAD_SEVERITY
    resource, error = _optional_text(entry, "resource", AnswerError.VIOLATION_RESOURCE_NOT_STRING)
    if error:
        return None, error
    evidence, error = _optional_text(entry, "evidence", AnswerError.VIOLATION_EVIDENCE_NOT_STRING)
    if error:
        return None, error
    known = canonical_id_of(raw_id)
    return {
        "id": known or raw_id.strip()[:100],
        "known": known is not None,
        "severity": severity.strip().casefold(),
        "resource": resource,
        "evidence": evidence,
    }, None


def _patch(value: Any) -> tuple[str | list[dict[str, Any]] | None, AnswerError | FormatError | None]:
    """null / "" -> None; a string -> a unified diff (or a JSON Patch quoted as a string, under the same answer rules:
    a repeated key or too deep nesting is a format failure); a list -> JSON Patch."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, None
    if isinstance(value, str):
        ops, error = json_patch_from_text(value)
        if error:
            return None, error
        value = ops if ops is not None else value
    if isinstance(value, str):
        return value, None
    if isinstance(value, list):
        try:
            return validate_json_patch(value), None
        except PatchError:
            return None, AnswerError.PATCH_OPS_INVALID
    return None, AnswerError.PATCH_BAD_TYPE


def parse_answer(completion: str, *, max_chars: int = 100_000) -> ParseResult:
    """Parse a completion into {"violations": [...], "patch": ..., "confidence": float}, or a named failure."""
    obj, error = extract_json_object(completion, max_chars=max_chars)
    if obj is None:
        return ParseResult(None, error)
    if "violations" not in obj:
        return ParseResult(None, AnswerError.MISSING_VIOLATIONS)
    raw = obj["violations"]
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        return ParseResult(None, AnswerError.VIOLATIONS_NOT_LIST)
    if len(raw) > MAX_VIOLATIONS:
        return ParseResult(None, AnswerError.TOO_MANY_VIOLATIONS)
    violations = []
    for entry in raw:
        violation, error = _violation(entry)
        if error:
            return ParseResult(None, error)
        violations.append(violation)
    patch, error = _patch(obj.get("patch"))
    if error:
        return ParseResult(None, error)
    confidence, error = parse_confidence(obj.get("confidence"))
    if error:
        return ParseResult(None, error)
    return ParseResult({"violations": violations, "patch": patch, "confidence": confidence})
