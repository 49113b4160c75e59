"""E3 loaders on small files in the corpora's real layouts (tests/fixtures/e3/), and their failure modes."""

from __future__ import annotations

import gzip
import json
from datetime import datetime
from pathlib import Path

import datasets
import polars as pl
import pytest

from sv_env_code_vulnerability import data
from sv_env_code_vulnerability.env import build
from sv_env_code_vulnerability.scanners import CodeScanners
from sv_env_code_vulnerability.verify import answer_json
from sv_shared.data.errors import CorpusUnavailableError, CorpusValidationError
from sv_shared.registry import load_env_config

FIXTURES = Path(__file__).parent / "fixtures" / "e3"
SCANNERS_READY = all(scanner.status().available for scanner in CodeScanners().scanners)


def test_devign_function_json() -> None:
    report = data.LoadReport("devign")
    frame = data.load_devign(FIXTURES / "devign" / "function.json", report=report)
    assert frame["vulnerable"].to_list() == [True, False]
    assert set(frame["task"]) == {"detect"} and frame["cwe"].null_count() == 2
    assert json.loads(frame["source_meta"][0])["commit_id"] == "973b1a6b9070e2bf17d17568cbaf4043ce931f51"
    assert report.dropped == {"empty func": 1} and report.rows_read == 3
    with pytest.raises(CorpusValidationError, match="empty func"):
        data.load_devign(FIXTURES / "devign" / "function.json", strict=True)


def test_codexglue_jsonl_and_hub_parquet_layouts(tmp_path: Path) -> None:
    report = data.LoadReport("codexglue")
    frame = data.load_codexglue(FIXTURES / "codexglue" / "test.jsonl", report=report)
    assert frame["vulnerable"].to_list() == [True, False]
    assert report.dropped == {"target": 1}  # target 3 is neither 0 nor 1
    # the hub export: id (int32), func, target (bool), project, commit_id
    hub = pl.DataFrame(
        {
            "id": [0, 1],
            "func": ["int f(void) { return g(); }", "int h(void) { return 1; }"],
            "target": [True, False],
            "project": ["qemu", "FFmpeg"],
            "commit_id": ["aa11", "bb22"],
        },
        schema_overrides={"id": pl.Int32},
    )
    hub.write_parquet(tmp_path / "test-00000-of-00001.parquet")
    loaded = data.load_codexglue(tmp_path)
    assert loaded["vulnerable"].to_list() == [True, False]
    assert json.loads(loaded["source_meta"][0])["idx"] == 0


def test_bigvul_csv() -> None:
    report = data.LoadReport("bigvul")
    frame = data.load_bigvul(FIXTURES / "bigvul" / "MSR_data_cleaned.csv", report=report)
    rows = frame.to_dicts()
    assert [(r["vulnerable"], r["cwe"], r["language"]) for r in rows] == [
        (True, "CWE-119", "c"),
        (False, None, "c"),
        (True, None, "cpp"),  # NVD-CWE-Other carries no CWE
    ]
    assert "+    if (len > (int)sizeof(tmp))" in rows[0]["reference_patch"]
    assert report.dropped == {"empty func_before": 1}
    paired = data.load_bigvul(FIXTURES / "bigvul" / "MSR_data_cleaned.csv", include_fixed=True)
    assert paired.height == 5 and paired.filter(~pl.col("vulnerable")).height == 3


def test_juliet_sections() -> None:
    frame = data.load_juliet(FIXTURES / "juliet" / "testcases")
    rows = {(r["module_path"], r["vulnerable"]): r for r in frame.to_dicts()}
    bad = rows[("CWE78_OS_Command_Injection__char_environment_system_01.c", True)]
    good = rows[("CWE78_OS_Command_Injection__char_environment_system_01.c", False)]
    assert bad["cwe"] == "CWE-78" and good["cwe"] is None
    bad_code = json.loads(bad["files"])[bad["module_path"]]
    good_code = json.loads(good["files"])[good["module_path"]]
    assert "_01_bad()" in bad_code and "goodG2B" not in bad_code
    assert "goodG2B" in good_code and "Calling good()" not in good_code  # main()'s copy is not the section
    assert rows[("CWE190_Integer_Overflow__int_max_add_01.cpp", True)]["language"] == "cpp"
    assert frame.height == 4  # testcasesupport/io.c is not a test case


def _stack_rows(tmp_path: Path) -> tuple[Path, Path]:
    """bigcode/the-stack-v2 rows (no content, as on the hub) and a Software Heritage blob mirror."""
    blobs = {
        "a" * 40: (
            "Python",
            "permissive",
            "import yaml\n\n\ndef load(text):\n    return yaml.load(text, Loader=yaml.Loader)\n",
        ),
        "b" * 40: ("Python", "permissive", "def add(a, b):\n    return a + b\n"),
        "c" * 40: ("Python", "no_license", "print('x')\n"),
        "d" * 40: ("JavaScript", "permissive", "eval(x)\n"),
        "e" * 40: ("Python", "permissive", None),
    }
    mirror = tmp_path / "blobs"
    mirror.mkdir()
    for blob, (_, _, content) in blobs.items():
        if content is not None:
            target = mirror / (f"{blob}.gz" if blob.startswith("a") else blob)
            target.write_bytes(gzip.compress(content.encode()) if blob.startswith("a") else content.encode())
    now = datetime(2023, 5, 1)
    rows = pl.DataFrame(
        {
            "blob_id": list(blobs),
            "directory_id": ["f" * 40] * 5,
            "path": ["/src/config.py", "/src/math.py", "/x.py", "/a.js", "/gone.py"],
            "content_id": ["0" * 40] * 5,
            "detected_licenses": [["mit"]] * 5,
            "license_type": [value[1] for value in blobs.values()],
            "repo_name": ["acme/tool"] * 5,
            "snapshot_id": ["1" * 40] * 5,
            "revision_id": ["2" * 40] * 5,
            "branch_name": ["refs/heads/main"] * 5,
            "visit_date": [now] * 5,
            "revision_date": [now] * 5,
            "committer_date": [now] * 5,
            "github_id": [1] * 5,
            "star_events_count": [3] * 5,
            "fork_events_count": [0] * 5,
            "gha_license_id": ["MIT"] * 5,
            "gha_event_created_at": [now] * 5,
            "gha_created_at": [now] * 5,
            "gha_language": ["Python"] * 5,
            "src_encoding": ["UTF-8"] * 5,
            "language": [value[0] for value in blobs.values()],
            "is_vendor": [False] * 5,
            "is_generated": [False] * 5,
            "length_bytes": [100] * 5,
            "extension": ["py", "py", "py", "js", "py"],
        }
    )
    path = tmp_path / "train-00000-of-00001.parquet"
    rows.write_parquet(path)
    return path, mirror


@pytest.mark.skipif(not SCANNERS_READY, reason="bandit/semgrep tools environment not built")
def test_stack_v2_slice_from_a_mirror(tmp_path: Path) -> None:
    path, mirror = _stack_rows(tmp_path)
    report = data.LoadReport("stack")
    frame = data.load_stack_v2(path, scanners=CodeScanners(), content_dir=mirror, report=report)
    rows = {r["module_path"]: r for r in frame.to_dicts()}
    assert set(rows) == {"config.py", "math.py"}
    assert rows["config.py"]["vulnerable"] and rows["config.py"]["cwe"] == "CWE-502"
    assert not rows["math.py"]["vulnerable"] and rows["math.py"]["cwe"] is None
    assert json.loads(rows["config.py"]["source_meta"])["label_source"] == "scanner"
    assert report.dropped["filter:license_type"] == 1 and report.dropped["filter:language"] == 1
    assert report.dropped["content not in the row or the mirror"] == 1
    sliced = data.load_stack_v2(
        path, scanners=CodeScanners(), content_dir=mirror, filters=data.StackFilters(revision_ids=("9" * 40,))
    )
    assert sliced.height == 0


def test_stack_v2_needs_content(tmp_path: Path) -> None:
    path, _ = _stack_rows(tmp_path)
    report = data.LoadReport("stack")
    frame = data.load_stack_v2(path, scanners=CodeScanners(), content_dir=None, report=report)
    assert frame.height == 0 and report.dropped["content not in the row or the mirror"] == 3


def test_hub_unreachable_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(*args: object, **kwargs: object) -> None:
        raise ConnectionError("Couldn't reach 'google/code_x_glue_cc_defect_detection' on the Hub")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(CorpusUnavailableError, match="local mirror"):
        data.load_codexglue(data.CODEXGLUE_HUB_ID)


def test_wrong_layouts_name_the_missing_columns(tmp_path: Path) -> None:
    (tmp_path / "rows.jsonl").write_text('{"code": "x", "label": 1}\n')
    with pytest.raises(CorpusValidationError, match=r"missing column\(s\) \['func', 'target'\]"):
        data.load_devign(tmp_path / "rows.jsonl")
    with pytest.raises(FileNotFoundError, match="neither an existing path nor a hub"):
        data.load_bigvul("no/such/file.csv/really")
    with pytest.raises(FileNotFoundError, match="no Juliet test case files"):
        data.load_juliet(tmp_path)


def test_detect_items_score_the_claim() -> None:
    env = build(load_env_config("e3"), scanners=CodeScanners(scanners=[]))
    bigvul = data.load_bigvul(FIXTURES / "bigvul" / "MSR_data_cleaned.csv").to_dicts()
    vulnerable = next(r for r in bigvul if r["cwe"] == "CWE-119")
    clean = next(r for r in bigvul if not r["vulnerable"])
    unlabelled = data.load_devign(FIXTURES / "devign" / "function.json").to_dicts()[0]
    cases = [
        (vulnerable, "CWE-119", 1.0),
        (vulnerable, "CWE-787", 0.6 + 0.3 * 0.5 + 0.1),  # same family as CWE-119
        (vulnerable, "none", 0.1),
        (clean, "none", 1.0),
        (clean, "CWE-119", 0.1),
        (unlabelled, "CWE-20", 1.0),  # Devign has no CWE: detecting the weakness is all there is
    ]
    scored = env.verifier.score_many([c[0] for c in cases], [answer_json("", c[1], "") for c in cases])
    assert [round(s.reward, 6) for s in scored] == [round(c[2], 6) for c in cases]
    items = {c[0]["item_id"]: c[0] for c in cases}
    metrics = env.verifier.aggregate([s.to_record() for s in scored], items)
    assert metrics["n_detect"] == 6 and metrics["detect_accuracy"] == pytest.approx(4 / 6)
    observation = env.episodes.observation(vulnerable)
    assert observation["task"] == "detect" and "memcpy" in observation["files"][vulnerable["module_path"]]
    assert "vulnerability" in env.episodes.messages(vulnerable)[0]["content"]
