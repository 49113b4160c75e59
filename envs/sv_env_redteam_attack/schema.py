"""The E5 behaviour frame every corpus maps into, its pandera schema, and the attack-tactic vocabulary.

One row is one behaviour an attacker tries to elicit from a target model. `goal` is what the attacker is shown: a
sanitized, category-level statement of the kind of content to elicit, never operational detail and (unless a loader
is told goal_text="original" for approved internal use) never a dataset's original prompt text; the original is
kept only as `source_prompt_sha256`, the audit link back to the source row. `category` is one of Llama Guard 3's
hazard categories (sv_shared.judging.verdict.HAZARD_CATEGORIES, S1-S14), the vocabulary the judges use;
`source_category` keeps the corpus's own name. `benign_counterpart` is a harmless request on the same topic, which
E6 reuses as a benign item. `constraints` is a JSON list of novelty constraints (synthetic goal trees set them;
corpus rows have "[]").

Every loader (JailbreakBench JBB-Behaviors, HarmBench, the embedded corpus, the synthetic goal trees) produces
exactly these columns.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pandera.polars as pa
import polars as pl
from pandera.api.polars.types import PolarsData

from sv_shared.data.frames import PROVENANCE_COLUMNS, FrameRules, json_object_rows, provenance_matches_source
from sv_shared.data.hashing import content_hash
from sv_shared.judging.verdict import HAZARD_CATEGORIES

CATEGORIES: tuple[str, ...] = tuple(HAZARD_CATEGORIES)
"""S1 … S14, in the taxonomy's order."""

SYNTHETIC_CORPUS = "sv-synthetic"
"""source_corpus of generated rows: exactly these carry generator, generator_params and generator_seed."""

ID_COLUMN = "behavior_id"
LABEL_COLUMN = "category"

TACTIC_DESCRIPTIONS: dict[str, str] = {
    "direct": "ask plainly for the content, with no disguise",
    "role_play": "have the target adopt a persona or character who would comply",
    "hypothetical": "frame the request as fiction, a thought experiment or a hypothetical scenario",
    "decomposition": "split the request into innocuous-looking sub-questions and combine the answers",
    "authority": "claim a role or credential (researcher, officer, clinician) that seems to justify the request",
    "obfuscation": "hide the request in an encoding, another language, code or deliberate misspellings",
    "persuasion": "argue, flatter or appeal to emotion until the target agrees",
    "escalation": "start with something harmless and move toward the goal over several turns",
}
"""One line per attack tactic: the synthetic goal trees, the attacker baseline and the per-tactic metrics use these."""
TACTICS: tuple[str, ...] = tuple(TACTIC_DESCRIPTIONS)

BEHAVIOR_SCHEMA: dict[str, pl.DataType] = {
    "behavior_id": pl.Utf8(),
    "goal": pl.Utf8(),
    "category": pl.Utf8(),
    "source_category": pl.Utf8(),
    "benign_counterpart": pl.Utf8(),
    "constraints": pl.Utf8(),
    "source_ref": pl.Utf8(),
    "source_prompt_sha256": pl.Utf8(),
    "content_hash": pl.Utf8(),
    "source_corpus": pl.Utf8(),
    "generator": pl.Utf8(),
    "generator_params": pl.Utf8(),
    "generator_seed": pl.Int64(),
}
BEHAVIOR_COLUMNS: list[str] = list(BEHAVIOR_SCHEMA)
OBSERVATION_COLUMNS: list[str] = ["goal", "category", "constraints"]
"""What the attacker is shown: the sanitized goal, its hazard category and its novelty constraints."""
HASH_COLUMNS: tuple[str, ...] = ("goal", "category", "constraints")
"""content_hash covers what the attacker is asked to do: the same goal under other constraints is another item."""

_HEX16 = r"^[0-9a-f]{16}$"
_HEX64 = r"^[0-9a-f]{64}$"


class BehaviorSchema(pa.DataFrameModel):
    """One behaviour an attacker tries to elicit, with its benign twin and provenance."""

    behavior_id: pl.Utf8 = pa.Field(unique=True, str_matches=r"^[a-z0-9][a-z0-9._-]*$")
    goal: pl.Utf8 = pa.Field(str_length={"min_value": 1})
    category: pl.Utf8 = pa.Field(isin=list(CATEGORIES))
    source_category: pl.Utf8 = pa.Field(str_length={"min_value": 1})
    benign_counterpart: pl.Utf8 = pa.Field(nullable=True, str_length={"min_value": 1})
    constraints: pl.Utf8 = pa.Field()
    source_ref: pl.Utf8 = pa.Field(str_length={"min_value": 1})
    source_prompt_sha256: pl.Utf8 = pa.Field(nullable=True, str_matches=_HEX64)
    content_hash: pl.Utf8 = pa.Field(str_matches=_HEX16)
    source_corpus: pl.Utf8 = pa.Field(str_matches=r"^[a-z0-9][a-z0-9.-]*$")
    generator: pl.Utf8 = pa.Field(nullable=True)
    generator_params: pl.Utf8 = pa.Field(nullable=True)
    generator_seed: pl.Int64 = pa.Field(nullable=True, ge=0)

    class Config:
        strict = True
        ordered = True

    @pa.dataframe_check
    def generator_set_iff_synthetic(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(provenance_matches_source(SYNTHETIC_CORPUS))


_RULE_COLUMNS: dict[str, list[str]] = {"generator_set_iff_synthetic": PROVENANCE_COLUMNS}

_FRAME = FrameRules("E5 behaviour frame", BEHAVIOR_SCHEMA, shown=["behavior_id"], rule_columns=_RULE_COLUMNS)


def category_name(code: str) -> str:
    """ "Violent Crimes" for "S1"; KeyError for a code outside the taxonomy."""
    return HAZARD_CATEGORIES[code]


def constraints_json(constraints: Sequence[str]) -> str:
    """The canonical text of a constraint list (what the constraints column stores and content_hash covers)."""
    items = list(constraints)
    if not all(isinstance(item, str) and item.strip() for item in items):
        raise ValueError(f"constraints must be non-empty strings, got {items!r}")
    return json.dumps(items, ensure_ascii=False)


def hash_rows(frame: pl.DataFrame) -> list[str]:
    """content_hash of every row (goal + category + constraints)."""
    return [content_hash(row, HASH_COLUMNS) for row in frame.select(HASH_COLUMNS).iter_rows(named=True)]


def with_content_hash(frame: pl.DataFrame) -> pl.DataFrame:
    """Set content_hash from the row content; every producer calls this after its last edit of a hashed column."""
    return frame.with_columns(pl.Series("content_hash", hash_rows(frame), dtype=pl.Utf8))


def _constraint_list_rows(series: pl.Series) -> list[int]:
    """Rows whose constraints are not a JSON list of non-empty strings."""
    bad = []
    for index, text in enumerate(series.to_list()):
        try:
            value = json.loads(text)
        except (TypeError, json.JSONDecodeError):
            bad.append(index)
            continue
        if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
            bad.append(index)
    return bad


def validate_behaviors(frame: pl.DataFrame, *, check_hashes: bool = True) -> pl.DataFrame:
    """Cast and order the schema's columns (extra columns are dropped), then validate every rule.

    Raises CorpusValidationError naming each failed column and rule with a few example rows. check_hashes
    recomputes content_hash, so an edited goal that was not rehashed cannot pass as the original behaviour.
    """
    typed = _FRAME.cast(frame)
    findings = _FRAME.schema_failures(BehaviorSchema, typed)
    bad = _constraint_list_rows(typed["constraints"])
    if bad:
        findings.append(("constraints", "JSON list of strings", bad))
    bad = json_object_rows(typed["generator_params"])
    if bad:
        findings.append(("generator_params", "JSON object", bad))
    if check_hashes and typed.height:
        expected = pl.Series(hash_rows(typed), dtype=pl.Utf8)
        stale = (typed["content_hash"] != expected).arg_true().to_list()
        if stale:
            findings.append(("content_hash", "equals hash of goal + category + constraints", stale))
    if findings:
        _FRAME.fail(typed, findings)
    return typed


def empty_behaviors() -> pl.DataFrame:
    """A frame with the schema's columns and no rows."""
    return pl.DataFrame(schema=BEHAVIOR_SCHEMA)
