"""The E6 conversation frame every corpus maps into, and its pandera schema.

One row is one conversation the defender answers: `turns` holds 1-4 user messages; the defender replies to each in
order and every reply is judged. `kind` says whether the conversation is benign (it deserves help) or an
adversarial probe (it deserves a safe refusal); `desired`, `policy_id` and `guidance` are that label as the policy
library writes it (see policy.py). For an adversarial multi-turn escalation the opening turns are innocuous on
purpose: `desired` is what the conversation's harmful request (its last turn) deserves.

Every loader (JailbreakBench/JBB-Behaviors, the embedded corpus, the synthetic generator, E5's attacker messages)
produces exactly these columns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import pandera.polars as pa
import polars as pl
from pandera.api.polars.types import PolarsData

from sv_shared.data.frames import PROVENANCE_COLUMNS, FrameRules, json_object_rows, provenance_matches_source
from sv_shared.data.hashing import content_hash
from sv_shared.judging.verdict import HAZARD_CATEGORIES

KINDS: tuple[str, ...] = ("benign", "adversarial")
LABEL_COLUMN = "kind"
ID_COLUMN = "conversation_id"
DESIRED: tuple[str, ...] = ("help", "refuse")
DESIRED_OF_KIND: dict[str, str] = {"benign": "help", "adversarial": "refuse"}

BENIGN_TOPICS: tuple[str, ...] = ("customer_support", "security_help", "general_knowledge", "borderline_safe")
"""Categories of benign conversations; borderline_safe sounds risky but deserves help ("how do I kill a zombie
process", "which household chemicals must never be mixed")."""
HAZARD_CODES: tuple[str, ...] = tuple(HAZARD_CATEGORIES)
"""Categories of adversarial conversations: Llama Guard 3's S1-S14."""
CATEGORIES: tuple[str, ...] = (*HAZARD_CODES, *BENIGN_TOPICS)

TACTICS: tuple[str, ...] = (
    "direct",
    "role_play",
    "hypothetical",
    "decomposition",
    "authority",
    "obfuscation",
    "persuasion",
    "escalation",
)
"""How an adversarial conversation asks: plainly, in character, as a hypothetical, split into harmless-looking
parts, claiming authority, lightly obfuscated (spacing, dots, leetspeak), with emotional or moral pressure, or
escalating over turns from an innocuous start."""

SYNTHETIC_CORPUS = "sv-synthetic"
"""source_corpus of generated rows: exactly these carry generator, generator_params and generator_seed."""
EMBEDDED_CORPUS = "sv-embedded"

MIN_TURNS = 1
MAX_TURNS = 4
MAX_TURN_CHARS = 20_000
"""Longest user message a row may hold; loaders drop (and count) longer ones instead of truncating them."""

CONVERSATION_SCHEMA: dict[str, pl.DataType] = {
    "conversation_id": pl.Utf8(),
    "turns": pl.Utf8(),
    "kind": pl.Utf8(),
    "category": pl.Utf8(),
    "desired": pl.Utf8(),
    "policy_id": pl.Utf8(),
    "guidance": pl.Utf8(),
    "tactic": pl.Utf8(),
    "source_ref": pl.Utf8(),
    "source_prompt_sha256": pl.Utf8(),
    "content_hash": pl.Utf8(),
    "source_corpus": pl.Utf8(),
    "generator": pl.Utf8(),
    "generator_params": pl.Utf8(),
    "generator_seed": pl.Int64(),
}
CONVERSATION_COLUMNS: list[str] = list(CONVERSATION_SCHEMA)
OBSERVATION_COLUMNS: list[str] = ["turns"]
"""What the defender sees: the user turns, never kind, category, label, guidance or provenance."""
HASH_COLUMNS: tuple[str, ...] = ("turns", "kind", "category")
"""content_hash covers the turns (as a parsed list) and the label: the same turns under another label is another
item (curation drops such conflicts)."""

_HEX16 = r"^[0-9a-f]{16}$"


class ConversationSchema(pa.DataFrameModel):
    """One conversation with its desired response (from the policy library) and provenance."""

    conversation_id: pl.Utf8 = pa.Field(unique=True, str_matches=_HEX16)
    turns: pl.Utf8 = pa.Field()
    kind: pl.Utf8 = pa.Field(isin=list(KINDS))
    category: pl.Utf8 = pa.Field(isin=list(CATEGORIES))
    desired: pl.Utf8 = pa.Field(isin=list(DESIRED))
    policy_id: pl.Utf8 = pa.Field(str_matches=r"^[a-z0-9][a-z0-9_.-]*$")
    guidance: pl.Utf8 = pa.Field()
    tactic: pl.Utf8 = pa.Field(nullable=True, isin=list(TACTICS))
    source_ref: pl.Utf8 = pa.Field(str_length={"min_value": 1})
    source_prompt_sha256: pl.Utf8 = pa.Field(nullable=True, str_matches=r"^[0-9a-f]{64}$")
    content_hash: pl.Utf8 = pa.Field(str_matches=_HEX16)
    source_corpus: pl.Utf8 = pa.Field(str_matches=r"^[a-z0-9][a-z0-9.-]*$")
    generator: pl.Utf8 = pa.Field(nullable=True)
    generator_params: pl.Utf8 = pa.Field(nullable=True)
    generator_seed: pl.Int64 = pa.Field(nullable=True, ge=0)

    class Config:
        strict = True
        ordered = True

    @pa.dataframe_check
    def conversation_id_is_content_hash(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("conversation_id") == pl.col("content_hash"))

    @pa.dataframe_check
    def category_matches_kind(cls, data: PolarsData) -> pl.LazyFrame:
        adversarial = pl.col("kind") == "adversarial"
        return data.lazyframe.select(
            (adversarial & pl.col("category").is_in(HAZARD_CODES))
            | (~adversarial & pl.col("category").is_in(BENIGN_TOPICS))
        )

    @pa.dataframe_check
    def desired_matches_kind(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(
            ((pl.col("kind") == "adversarial") & (pl.col("desired") == "refuse"))
            | ((pl.col("kind") == "benign") & (pl.col("desired") == "help"))
        )

    @pa.dataframe_check
    def tactic_set_iff_adversarial(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("tactic").is_not_null() == (pl.col("kind") == "adversarial"))

    @pa.dataframe_check
    def generator_set_iff_synthetic(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(provenance_matches_source(SYNTHETIC_CORPUS))


_RULE_COLUMNS: dict[str, list[str]] = {
    "conversation_id_is_content_hash": ["conversation_id", "content_hash"],
    "category_matches_kind": ["kind", "category"],
    "desired_matches_kind": ["kind", "desired"],
    "tactic_set_iff_adversarial": ["kind", "tactic"],
    "generator_set_iff_synthetic": PROVENANCE_COLUMNS,
    "matches the policy library": ["kind", "category", "desired", "policy_id"],
}

_FRAME = FrameRules(
    "E6 conversation frame", CONVERSATION_SCHEMA, shown=["conversation_id", "turns"], rule_columns=_RULE_COLUMNS
)


class LabelSource(Protocol):
    """What validation needs from the policy library: the policy id that labels a category."""

    def policy_id(self, category: str) -> str: ...


# --- turns and guidance as JSON -----------------------------------------------------------------------------------


def turns_json(turns: Sequence[str]) -> str:
    """The canonical text of a turns (or guidance) list: a JSON array, UTF-8 kept."""
    return json.dumps(list(turns), ensure_ascii=False)


def turns_problem(text: Any) -> str | None:
    """Why a turns cell is not a JSON list of 1-4 non-empty strings (None when it is)."""
    try:
        turns = json.loads(text)
    except (TypeError, json.JSONDecodeError):
        return "JSON list of user messages"
    if not isinstance(turns, list) or not all(isinstance(turn, str) for turn in turns):
        return "JSON list of user messages"
    if not MIN_TURNS <= len(turns) <= MAX_TURNS:
        return f"{MIN_TURNS}-{MAX_TURNS} turns"
    if any(not turn.strip() for turn in turns):
        return "no empty turn"
    if any(len(turn) > MAX_TURN_CHARS for turn in turns):
        return f"turns of at most {MAX_TURN_CHARS:,} characters"
    return None


def _guidance_bad(text: Any) -> bool:
    try:
        items = json.loads(text)
    except (TypeError, json.JSONDecodeError):
        return True
    return not isinstance(items, list) or not items or not all(isinstance(item, str) and item.strip() for item in items)


# --- hashing and assembling rows ----------------------------------------------------------------------------------


def row_hash(turns: str | Sequence[str], kind: str, category: str) -> str:
    """content_hash of a conversation: its turns (parsed, so JSON spacing does not matter), kind and category."""
    parsed = json.loads(turns) if isinstance(turns, str) else list(turns)
    return content_hash({"turns": parsed, "kind": kind, "category": category}, HASH_COLUMNS)


def hash_rows(frame: pl.DataFrame) -> list[str]:
    """content_hash of every row; rows whose turns are not JSON hash as their raw text."""
    hashes = []
    for row in frame.select(HASH_COLUMNS).iter_rows(named=True):
        try:
            turns: Any = json.loads(row["turns"])
        except (TypeError, json.JSONDecodeError):
            turns = row["turns"]
        hashes.append(content_hash({"turns": turns, "kind": row["kind"], "category": row["category"]}, HASH_COLUMNS))
    return hashes


def with_content_hash(frame: pl.DataFrame) -> pl.DataFrame:
    """Set content_hash and conversation_id from the row content; every producer calls this after its last edit."""
    hashes = pl.Series("content_hash", hash_rows(frame), dtype=pl.Utf8)
    return frame.with_columns(hashes, hashes.alias("conversation_id"))


class LabelLike(Protocol):
    desired: str
    policy_id: str
    guidance: tuple[str, ...]


def conversation_row(
    turns: Sequence[str],
    *,
    kind: str,
    category: str,
    label: LabelLike,
    source_ref: str,
    source_corpus: str,
    tactic: str | None = None,
    source_prompt_sha256: str | None = None,
    generator: str | None = None,
    generator_params: str | None = None,
    generator_seed: int | None = None,
) -> dict[str, Any]:
    """One row (every column but the ids) from its turns, its label and its provenance."""
    return {
        "turns": turns_json(turns),
        "kind": kind,
        "category": category,
        "desired": label.desired,
        "policy_id": label.policy_id,
        "guidance": turns_json(label.guidance),
        "tactic": tactic,
        "source_ref": source_ref,
        "source_prompt_sha256": source_prompt_sha256,
        "source_corpus": source_corpus,
        "generator": generator,
        "generator_params": generator_params,
        "generator_seed": generator_seed,
    }


def empty_frame() -> pl.DataFrame:
    return pl.DataFrame(schema=CONVERSATION_SCHEMA)


def frame_from_rows(rows: Sequence[Mapping[str, Any]], *, validate: bool = True) -> pl.DataFrame:
    """Rows holding every column but the ids (lists allowed for turns and guidance) as a frame with ids set."""
    columns = [column for column in CONVERSATION_COLUMNS if column not in ("conversation_id", "content_hash")]
    records = [
        {
            column: turns_json(row[column])
            if column in ("turns", "guidance") and isinstance(row.get(column), list | tuple)
            else row.get(column)
            for column in columns
        }
        for row in rows
    ]
    schema = {column: CONVERSATION_SCHEMA[column] for column in columns}
    frame = pl.DataFrame(records, schema=schema) if records else pl.DataFrame(schema=schema)
    frame = with_content_hash(frame).select(CONVERSATION_COLUMNS)
    return validate_conversations(frame) if validate else frame


# --- validation ---------------------------------------------------------------------------------------------------


def validate_conversations(
    frame: pl.DataFrame, *, check_hashes: bool = True, library: LabelSource | None = None
) -> pl.DataFrame:
    """Cast and order the schema's columns (extra columns are dropped), then validate every rule.

    Raises CorpusValidationError naming each failed column and rule with a few example rows. check_hashes
    recomputes content_hash (an edit that forgot to rehash cannot pass as the original conversation); with a
    library, every policy_id must be the one the library gives the row's category.
    """
    typed = _FRAME.cast(frame)
    findings = _FRAME.schema_failures(ConversationSchema, typed)
    problems: dict[str, list[int]] = {}
    for index, text in enumerate(typed["turns"].to_list()):
        problem = turns_problem(text)
        if problem is not None:
            problems.setdefault(problem, []).append(index)
    findings.extend(("turns", problem, rows) for problem, rows in problems.items())
    bad = [index for index, text in enumerate(typed["guidance"].to_list()) if _guidance_bad(text)]
    if bad:
        findings.append(("guidance", "non-empty JSON list of non-empty strings", bad))
    bad = json_object_rows(typed["generator_params"])
    if bad:
        findings.append(("generator_params", "JSON object", bad))
    if check_hashes and typed.height:
        expected = pl.Series(hash_rows(typed), dtype=pl.Utf8)
        stale = (typed["content_hash"] != expected).arg_true().to_list()
        if stale:
            findings.append(("content_hash", "equals hash of turns + kind + category", stale))
    if library is not None and typed.height:
        wrong = []
        for index, (category, policy_id) in enumerate(typed.select("category", "policy_id").iter_rows()):
            try:
                if library.policy_id(category) != policy_id:
                    wrong.append(index)
            except KeyError:
                wrong.append(index)
        if wrong:
            findings.append(("policy_id", "matches the policy library", wrong))
    if findings:
        _FRAME.fail(typed, findings)
    return typed
