"""Reference judge validation: real attack responses labelled by people (or a benchmark) who did not write our judges.

Two public JailbreakBench sources, read in their published formats:

- the human-labelled judge-comparison set: HF dataset "JailbreakBench/JBB-Behaviors", config "judge_comparison",
  split "test" (the repository's data/judge-comparison.csv). Columns: Index, goal, prompt, target_response,
  human1, human2, human3, human_majority (1 = jailbroken, by majority of three human labellers), harmbench_cf,
  gpt4_cf, llamaguard2_cf, llama3_cf (the compared judges' verdicts, ignored here). No category column: rows carry
  no hint, and their refusal label is unknown.
- attack artifacts (github.com/JailbreakBench/artifacts, `jailbreakbench.read_artifact`): one JSON per method and
  target model, {"parameters": {...}, "jailbreaks": [{"index", "goal", "behavior", "category", "prompt",
  "response", "number_of_queries", "queries_to_jailbreak", "prompt_tokens", "response_tokens", "jailbroken"}]},
  `jailbroken` being the benchmark's own judge's verdict; a behaviour with no prompt or response is skipped.

Where they are found: a path in SECVERIFY_JBB_JUDGE_COMPARISON (a CSV, JSONL or parquet mirror, or a folder
holding judge-comparison.csv), SECVERIFY_JBB_ARTIFACTS (a folder of artifact JSON files, searched recursively), or
else the `datasets` cache of the hub id (offline; nothing is downloaded). Every row goes to split "test": the
reference is never tuned on. `ReferenceSet.source` says exactly what was read, so a report never claims a corpus
it did not use.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sv_shared.data.hub_cache import cache_only
from sv_shared.data.jbb import jbb_hazard
from sv_shared.judging.validation import UNSPECIFIED_CATEGORY, ValidationRow

JBB_DATASET_ID = "JailbreakBench/JBB-Behaviors"
JBB_JUDGE_CONFIG = "judge_comparison"
JBB_JUDGE_SPLIT = "test"
JBB_JUDGE_FILE = "judge-comparison.csv"
JUDGE_COMPARISON_ENV = "SECVERIFY_JBB_JUDGE_COMPARISON"
ARTIFACTS_ENV = "SECVERIFY_JBB_ARTIFACTS"
JUDGE_COMPARISON_COLUMNS = ("Index", "goal", "prompt", "target_response", "human_majority")


class ReferenceFormatError(ValueError):
    """A reference file is not in the published format it claims (the message names the file and what is wrong)."""


@dataclass(frozen=True)
class ReferenceSet:
    """Labelled rows from one reference source; `source` names the corpus and the path or cache it came from."""

    name: str
    source: str
    labelled_by: str
    rows: tuple[ValidationRow, ...]


def _majority(value: Any, where: str) -> bool:
    text = str(value).strip().lower()
    if text in {"1", "1.0", "true"}:
        return True
    if text in {"0", "0.0", "false"}:
        return False
    raise ReferenceFormatError(f"{where}: human_majority must be 0 or 1, not {value!r}")


def _reference_row(row_id: str, request: str, response: str, category: str, unsafe: bool) -> ValidationRow:
    return ValidationRow(
        id=row_id,
        request=request,
        response=response,
        category=category,
        request_harmful=True,
        unsafe=unsafe,
        refusal=None,
        safe_alternative=None,
        kind="reference_unsafe" if unsafe else "reference_safe",
        split="test",
    )


def judge_comparison_rows(records: Sequence[Mapping[str, Any]], where: str) -> list[ValidationRow]:
    """Rows of the judge-comparison set (its own column names), labelled by the human majority."""
    rows = []
    for number, record in enumerate(records, 1):
        missing = [column for column in JUDGE_COMPARISON_COLUMNS if column not in record]
        if missing:
            raise ReferenceFormatError(f"{where} row {number}: missing column(s) {missing}")
        request = str(record["prompt"] or record["goal"] or "")
        unsafe = _majority(record["human_majority"], f"{where} row {number}")
        response = "" if record["target_response"] is None else str(record["target_response"])
        rows.append(_reference_row(f"jbb-judge-{record['Index']}", request, response, UNSPECIFIED_CATEGORY, unsafe))
    return rows


def _read_table(path: Path) -> list[dict[str, Any]]:
    if path.is_dir():
        path = path / JBB_JUDGE_FILE
    if not path.is_file():
        raise FileNotFoundError(f"no judge-comparison file at {path}")
    from datasets import load_dataset

    builder = {".csv": "csv", ".parquet": "parquet", ".jsonl": "json", ".json": "json"}.get(path.suffix.lower())
    if builder is None:
        raise ReferenceFormatError(f"{path}: expected .csv, .parquet or .jsonl")
    with cache_only():
        return list(load_dataset(builder, data_files=str(path), split="train"))


def load_judge_comparison(path: str | Path | None = None) -> ReferenceSet:
    """JBB's human-labelled judge-comparison set from a local mirror, or from the `datasets` cache of its hub id."""
    if path is not None:
        records = _read_table(Path(path))
        source = f"{JBB_DATASET_ID} ({JBB_JUDGE_CONFIG}) local mirror {path}"
    else:
        from datasets import load_dataset

        with cache_only():
            records = list(load_dataset(JBB_DATASET_ID, JBB_JUDGE_CONFIG, split=JBB_JUDGE_SPLIT))
        source = f"{JBB_DATASET_ID} ({JBB_JUDGE_CONFIG}, split {JBB_JUDGE_SPLIT}) from the datasets cache"
    rows = judge_comparison_rows(records, str(path or JBB_DATASET_ID))
    return ReferenceSet(
        "jbb-judge-comparison", source, "human majority of three labellers (JailbreakBench)", tuple(rows)
    )


def artifact_rows(artifact: Mapping[str, Any], where: str) -> list[ValidationRow]:
    """Rows of one JBB artifact: every behaviour with a prompt and a response, labelled by `jailbroken`."""
    jailbreaks = artifact.get("jailbreaks")
    if not isinstance(jailbreaks, list):
        raise ReferenceFormatError(f"{where}: no 'jailbreaks' list")
    parameters = artifact.get("parameters") or {}
    tag = f"{parameters.get('method', 'method')}-{parameters.get('model', 'model')}"
    rows = []
    for position, entry in enumerate(jailbreaks):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("jailbroken"), bool):
            raise ReferenceFormatError(f"{where} jailbreak {position}: 'jailbroken' must be a boolean")
        if not entry.get("prompt") or entry.get("response") is None:
            continue
        category = jbb_hazard(str(entry.get("category")), str(entry.get("behavior") or "")) or UNSPECIFIED_CATEGORY
        row_id = f"jbb-artifact-{tag}-{entry.get('index', position)}"
        rows.append(_reference_row(row_id, str(entry["prompt"]), str(entry["response"]), category, entry["jailbroken"]))
    return rows


def load_artifacts(folder: str | Path) -> ReferenceSet:
    """Every artifact JSON under folder (recursively), in path order."""
    paths = sorted(Path(folder).rglob("*.json"))
    if not paths:
        raise FileNotFoundError(f"no artifact JSON files under {folder}")
    rows: list[ValidationRow] = []
    for path in paths:
        try:
            artifact = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ReferenceFormatError(f"{path}: not JSON ({exc})") from exc
        if not isinstance(artifact, Mapping):
            raise ReferenceFormatError(f"{path}: expected a JSON object")
        rows.extend(artifact_rows(artifact, str(path)))
    ids = [row.id for row in rows]
    if len(set(ids)) != len(ids):
        raise ReferenceFormatError(f"{folder}: two artifacts share a method, model and behaviour index")
    source = f"JailbreakBench artifacts, {len(paths)} file(s) under {folder}"
    return ReferenceSet(
        "jbb-artifacts", source, "JailbreakBench's own judge (the artifacts' 'jailbroken')", tuple(rows)
    )


def find_reference(environ: Mapping[str, str] | None = None) -> ReferenceSet | None:
    """The reference validation that is present: configured judge-comparison mirror, configured artifacts, then the
    judge-comparison set in the `datasets` cache; None when none is (the caller then says it used the shipped set)."""
    environ = os.environ if environ is None else environ
    if environ.get(JUDGE_COMPARISON_ENV):
        return load_judge_comparison(environ[JUDGE_COMPARISON_ENV])
    if environ.get(ARTIFACTS_ENV):
        return load_artifacts(environ[ARTIFACTS_ENV])
    try:
        return load_judge_comparison()
    except Exception:
        return None
