"""Reference judge validation: real attack responses labelled by people (or a benchmark) who did not write our judges.

Two public JailbreakBench sources, read in their published formats:

- the human-labelled judge-comparison set: HF dataset "JailbreakBench/JBB-Behaviors", config "judge_comparison",
  split "test" (the repository's data/judge-comparison.csv). Columns: Index, goal, prompt, target_response,
  human1, human2, human3, human_majority (1 = jailbroken, by majority of three human labellers), harmbench_cf,
  gpt4_cf, llamaguard2_cf, llama3_cf (the compared judges' verdicts, ignored here). No category column: rows carry
  no hint, and their refusal label is unknown.
- attack artifacts (the JailbreakBench/artifacts repository, `jailbreakbench.read_artifact`):
  attack-artifacts/<method>/<white_box|black_box|transfer|manual>/<model>.json, each {"parameters": {...},
  "jailbreaks": [{"index", "goal", "behavior", "category", "prompt", "response", "number_of_queries",
  "queries_to_jailbreak", "prompt_tokens", "response_tokens", "jailbroken", ...}]}, `jailbroken` being the
  benchmark's own judge's verdict ("behavior" is missing from some methods' files); a behaviour the attack never broke
  has null prompt and response and is left out. Beside them: attack-info.json per method (models -> attack types)
  and, for some methods, a submission's evaluation.json / submission.json (the same responses again): skipped, with
  the reason, as is the repository's own "test-artifact" fixture.

Where they are found: a path in SECVERIFY_JBB_JUDGE_COMPARISON (a CSV, JSONL or parquet mirror, or a folder
holding judge-comparison.csv), SECVERIFY_JBB_ARTIFACTS (the artifacts repository or its attack-artifacts folder), or
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
ATTACK_ARTIFACTS_DIR = "attack-artifacts"
ATTACK_INFO_FILE = "attack-info.json"
ATTACK_TYPES = ("white_box", "black_box", "transfer", "manual")
"""JailbreakBench's attack types (`jailbreakbench.config.AttackType`): the folder names between method and model."""
FIXTURE_METHODS = frozenset({"test-artifact"})
"""Method folders of the artifacts repository that hold its own test files, not attacks."""


class ReferenceFormatError(ValueError):
    """A reference file is not in the published format it claims (the message names the file and what is wrong)."""


@dataclass(frozen=True)
class ReferenceSet:
    """Labelled rows from one reference source; `source` names the corpus and the path or cache it came from."""

    name: str
    source: str
    labelled_by: str
    rows: tuple[ValidationRow, ...]
    skipped: tuple[tuple[str, str], ...] = ()
    """(path, reason) of each file the loader found and did not read as labelled responses."""


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


def artifact_rows(artifact: Mapping[str, Any], where: str, tag: str) -> tuple[list[ValidationRow], int]:
    """Rows of one JBB artifact and how many of its behaviours were left out: every behaviour with a prompt and a
    response, labelled by `jailbroken`, with the id "jbb-artifact/<tag>/<index>" (tag: method/attack type/model, from
    the file's place in the folder, since `parameters` does not always name them as the folder does). A behaviour the
    attack never broke has null prompt and response in the published files: left out and counted."""
    jailbreaks = artifact.get("jailbreaks")
    if not isinstance(jailbreaks, list):
        raise ReferenceFormatError(f"{where}: no 'jailbreaks' list")
    rows = []
    left_out = 0
    for position, entry in enumerate(jailbreaks):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("jailbroken"), bool):
            raise ReferenceFormatError(f"{where} jailbreak {position}: 'jailbroken' must be a boolean")
        if not entry.get("prompt") or entry.get("response") is None:
            left_out += 1
            continue
        category = jbb_hazard(str(entry.get("category")), str(entry.get("behavior") or "")) or UNSPECIFIED_CATEGORY
        row_id = f"jbb-artifact/{tag}/{entry.get('index', position)}"
        rows.append(_reference_row(row_id, str(entry["prompt"]), str(entry["response"]), category, entry["jailbroken"]))
    return rows, left_out


def _skip_reason(path: Path) -> str | None:
    """Why a JSON file under an artifacts folder is not an attack artifact, or None when it sits where one does."""
    if path.name == ATTACK_INFO_FILE:
        return "attack-info: the method's index of models and attack types, no responses"
    if path.parent.name not in ATTACK_TYPES:
        return f"not at <method>/<{'|'.join(ATTACK_TYPES)}>/<model>.json (JailbreakBench's artifact layout)"
    if path.parent.parent.name in FIXTURE_METHODS:
        return "JailbreakBench's own test fixture (placeholder prompts and responses)"
    return None


def _artifact_root(folder: Path) -> Path:
    """The published repository's root holds its artifacts under attack-artifacts/ (and an older artifacts/ tree of
    test files beside it): given the root, read attack-artifacts/ only."""
    nested = folder / ATTACK_ARTIFACTS_DIR
    return nested if nested.is_dir() else folder


def load_artifacts(folder: str | Path) -> ReferenceSet:
    """Every attack artifact under folder, as JailbreakBench publishes them (its artifacts repository, or the
    `jailbreakbench` package's cache): attack-artifacts/<method>/<attack type>/<model>.json, in path order. Other JSON
    files there (each method's attack-info.json, a submission's evaluation.json and submission.json, the fixtures of
    the method "test-artifact") are skipped and listed in `skipped` with the reason."""
    root = _artifact_root(Path(folder))
    paths = sorted(root.rglob("*.json"))
    rows: list[ValidationRow] = []
    skipped: list[tuple[str, str]] = []
    read = 0
    left_out = 0
    for path in paths:
        reason = _skip_reason(path)
        if reason is not None:
            skipped.append((str(path.relative_to(root)), reason))
            continue
        try:
            artifact = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ReferenceFormatError(f"{path}: not JSON ({exc})") from exc
        if not isinstance(artifact, Mapping):
            raise ReferenceFormatError(f"{path}: expected a JSON object")
        tag = f"{path.parent.parent.name}/{path.parent.name}/{path.stem}"
        found, missing = artifact_rows(artifact, str(path), tag)
        rows.extend(found)
        left_out += missing
        read += 1
    if not read:
        raise FileNotFoundError(f"no attack artifact under {root} ({len(skipped)} other JSON file(s) skipped)")
    ids = [row.id for row in rows]
    if len(set(ids)) != len(ids):
        raise ReferenceFormatError(f"{root}: two jailbreaks of one artifact share a behaviour index")
    source = (
        f"JailbreakBench artifacts, {read} artifact file(s) under {root}, {len(rows)} responses "
        f"({left_out} behaviour(s) without a prompt or response left out, {len(skipped)} other JSON file(s) skipped)"
    )
    return ReferenceSet(
        "jbb-artifacts",
        source,
        "JailbreakBench's own judge (the artifacts' 'jailbroken')",
        tuple(rows),
        skipped=tuple(skipped),
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
