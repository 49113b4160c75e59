"""The shipped E3 corpus: schema, coverage, harness validation of every item, and both baselines on it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from sv_env_code_vulnerability import data
from sv_env_code_vulnerability.env import build
from sv_env_code_vulnerability.scanners import CodeScanners
from sv_shared.config import scanner_cache_path
from sv_shared.contracts import Environment
from sv_shared.data.errors import CorpusValidationError
from sv_shared.execution.cache import JsonCache
from sv_shared.execution.sandbox import sandbox_status
from sv_shared.registry import get_environment, load_env_config

STATUS = sandbox_status()
SCANNERS_READY = all(scanner.status().available for scanner in CodeScanners().scanners)
needs_sandbox = pytest.mark.skipif(not STATUS.available, reason=STATUS.describe())
needs_scanners = pytest.mark.skipif(not SCANNERS_READY, reason="bandit/semgrep tools environment not built")


@pytest.fixture(scope="module")
def corpus() -> pl.DataFrame:
    return data.load_embedded()


@pytest.fixture(scope="module")
def env() -> Environment:
    cache = JsonCache(scanner_cache_path())  # the session's shared scanner cache (conftest)
    return build(load_env_config("e3"), scanners=CodeScanners(cache=cache))


def test_corpus_size_and_coverage(corpus: pl.DataFrame) -> None:
    assert corpus.height >= 30
    cwes = Counter(corpus["cwe"].to_list())
    assert len(cwes) >= 10
    for cwe in (
        "CWE-89",
        "CWE-78",
        "CWE-22",
        "CWE-502",
        "CWE-798",
        "CWE-918",
        "CWE-611",
        "CWE-95",
        "CWE-862",
        "CWE-1333",
    ):
        assert cwes[cwe] >= 1, cwe
    assert cwes["CWE-327"] + cwes["CWE-328"] >= 1 and cwes["CWE-193"] + cwes["CWE-125"] >= 1
    assert set(corpus["task"]) == {"repair"} and corpus["reference_patch"].null_count() == 0
    assert (corpus["item_id"] == corpus["content_hash"]).all()


def test_the_registry_builds_e3() -> None:
    env = get_environment("e3")
    assert (env.env_id, env.name, env.data.id_column) == ("e3", "sv-env-code-vulnerability", "item_id")
    assert {"no-patch", "scanner-fix"} <= set(env.baselines)
    assert ("fix rate (ITT)", "fix_rate") in env.verifier.report_columns()


def test_observation_hides_exploit_tests_and_labels(corpus: pl.DataFrame, env: Environment) -> None:
    item = corpus.row(0, named=True)
    observation = env.episodes.observation(item)
    assert "tests/test_exploit.py" not in observation["files"] and "tests/test_functional.py" in observation["files"]
    assert next(iter(observation["files"])) == item["module_path"]
    text = json.dumps(env.episodes.messages(item))
    assert item["cwe"] not in text and "exploit" not in text.lower()


def test_validation_rejects_an_edited_row(corpus: pl.DataFrame) -> None:
    row = corpus.row(0, named=True)
    edited = {**row, "cwe": "CWE-1"}
    with pytest.raises(CorpusValidationError, match="content_hash"):
        data.validate_items(pl.DataFrame([edited], schema=data.ITEM_SCHEMA))
    broken = {**row, "functional_tests": json.dumps(["elsewhere.py::test_x"])}
    with pytest.raises(CorpusValidationError, match="not in a protected test file"):
        data.validate_items(pl.DataFrame([broken], schema=data.ITEM_SCHEMA), check_hashes=False)


def test_curate_is_deterministic(corpus: pl.DataFrame) -> None:
    first = data.curate([corpus], seed=7)
    second = data.curate([corpus.reverse()], seed=7)
    assert sum(part.height for part in first.values()) == corpus.height
    for name in first:
        assert first[name]["item_id"].to_list() == second[name]["item_id"].to_list()


@needs_sandbox
def test_every_hand_written_item_is_validated_by_the_harness(corpus: pl.DataFrame, env: Environment) -> None:
    """Functional tests pass and exploit tests fail on the vulnerable code; with the reference fix all pass."""
    hand_written = corpus.filter(pl.col("source_corpus") == data.EMBEDDED_CORPUS)
    assert hand_written.height == 36
    problems = env.verifier.check_items(hand_written.to_dicts())
    assert {item_id: found for item_id, found in problems.items() if found} == {}


@needs_sandbox
@needs_scanners
def test_baselines_on_the_corpus(corpus: pl.DataFrame, env: Environment) -> None:
    """no-patch scores 0 on every exploit test; scanner-fix writes real diffs and fully fixes some items."""
    hand_written = corpus.filter(pl.col("source_corpus") == data.EMBEDDED_CORPUS)
    items = [row for row in hand_written.to_dicts() if row["cwe"] != "CWE-1333"]  # ReDoS runs cost 1.5 s unpatched
    no_patch = env.baselines["no-patch"]
    sample = items[::3]
    scored = env.verifier.score_many(sample, [no_patch(env.episodes.observation(item)) for item in sample])
    assert all(sample.components["exploit"] == 0.0 for sample in scored)
    assert all(sample.reward == pytest.approx(0.05) for sample in scored)
    scanner_fix = env.baselines["scanner-fix"]
    completions = [scanner_fix(env.episodes.observation(item)) for item in items]
    diffs = [json.loads(completion)["diff"] for completion in completions]
    assert sum(bool(diff) for diff in diffs) >= 10
    fixed = env.verifier.score_many(items, completions)
    metrics = env.verifier.aggregate([s.to_record() for s in fixed], {item["item_id"]: item for item in items})
    assert metrics["fix_rate"] > 0.25 and metrics["patch_applies_rate"] == 1.0
    assert metrics["hostile_rate"] == 0.0


@pytest.mark.parametrize("path", [data.embedded_path(), data.synthetic_path()], ids=["hand-written", "synthetic"])
def test_shipped_files_are_sorted_json_lines(path: Path) -> None:
    lines = Path(path).read_text().splitlines()
    ids = [json.loads(line)["item_id"] for line in lines]
    assert ids == sorted(ids)
