"""`secverify score`: stored completions re-scored offline against an items file, each bad line a named error."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from sv_shared.contracts import CompletionVerifier, Environment, Item
from sv_shared.runs.folder import UnwritableRecordError, jsonl_line
from sv_shared.runs.schema import CompletionError, ScoredCompletion
from sv_shared.runs.unscored import not_scored_record, silent_answer


@dataclass(frozen=True)
class ScoredFile:
    """What `secverify score` made of a completions file: the scored lines, the lines it could not score (named),
    and the metrics over every line that answers an item: a line whose scoring failed counts as not scored
    (sv_shared.runs.unscored). None when no line answers an item."""

    records: list[ScoredCompletion]
    errors: list[CompletionError]
    metrics: dict[str, Any] | None


def score_completions(env: Environment, items: pl.DataFrame, lines: Sequence[tuple[int, Any]]) -> ScoredFile:
    """Re-score stored completions offline: each (line number, JSON value) should be {"id", "completion"} with an
    id of the items file and a string completion. A line that is not, or whose scoring fails, becomes a named
    CompletionError; every other line is scored. The metrics count a line of a known item whose scoring failed as a
    failure, so an answer that crashes the scorer cannot leave the metrics."""
    verifier = env.verifier
    if not isinstance(verifier, CompletionVerifier):
        raise ValueError(
            f"{env.name} scores whole dialogues, not single completions: run `secverify eval --env {env.env_id}` "
            "so every turn meets its counterpart and the judge"
        )
    by_id = {item[env.data.id_column]: item for item in env.data.validate(items).to_dicts()}
    records: list[ScoredCompletion] = []
    errors: list[CompletionError] = []
    counted: list[dict[str, Any]] = []
    for number, entry in lines:
        item_id = entry.get("id") if isinstance(entry, dict) else None
        named = item_id if isinstance(item_id, str) else None
        problem = _completion_problem(entry, by_id)
        if problem is not None:
            errors.append(CompletionError(line=number, id=named, kind=problem[0], message=problem[1]))
            continue
        text = entry["completion"]
        try:
            record = ScoredCompletion(**verifier.score(by_id[item_id], text).to_record(), completion=text)
            jsonl_line(record)
        except UnwritableRecordError as error:
            errors.append(CompletionError(line=number, id=named, kind="unwritable", message=str(error)))
            counted.append(not_scored_record(item_id, silent_answer(verifier, by_id[item_id], item_id)))
            continue
        except Exception as error:  # the verifier raised, or its verdict is not a valid record
            errors.append(
                CompletionError(line=number, id=named, kind="scoring", message=f"{type(error).__name__}: {error}")
            )
            counted.append(not_scored_record(item_id, silent_answer(verifier, by_id[item_id], item_id)))
            continue
        records.append(record)
        counted.append(record.as_dict())
    if not counted:
        return ScoredFile(records, errors, None)
    answered = {record["id"]: by_id[record["id"]] for record in counted}
    return ScoredFile(records, errors, verifier.aggregate(counted, answered))


def _completion_problem(entry: Any, by_id: Mapping[str, Item]) -> tuple[str, str] | None:
    """(kind, message) of what makes a completions line unscorable, or None."""
    if not isinstance(entry, dict):
        return "not_an_object", f'expected {{"id": ..., "completion": ...}}, found {type(entry).__name__}'
    missing = [field for field in ("id", "completion") if field not in entry]
    if missing:
        return "missing_field", f"no {' or '.join(repr(field) for field in missing)} field"
    item_id, text = entry["id"], entry["completion"]
    if not isinstance(item_id, str):
        return "id_not_a_string", f"id must be a string, got {type(item_id).__name__}"
    if item_id not in by_id:
        return "unknown_id", f"id {item_id!r} is not in the items file"
    if not isinstance(text, str):
        return "completion_not_a_string", f"completion for {item_id!r} must be a string, got {_json_type(text)}"
    return None


def _json_type(value: Any) -> str:
    return "null" if value is None else type(value).__name__
