"""Run records: one declared, versioned schema for a run folder's files, read back typed by every reader.

Folders written before the schema was versioned (version 0) are read, and resumed; a file of a newer version, or a
malformed one, is refused with a message naming the file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from secverify_dagster.cli.main import main
from secverify_dagster.reports.environment_report import build_report
from secverify_dagster.reports.runs import select_runs
from secverify_dagster.reports.scope import report_scope
from secverify_dagster.resources.models import load_registry
from secverify_dagster.runner.datasets import embedded_dataset
from secverify_dagster.runner.eval_runner import EvalRunner
from sv_shared.registry import get_environment
from sv_shared.runs.folder import RunFolder
from sv_shared.runs.records import latest_complete_runs
from sv_shared.runs.schema import (
    SCHEMA_VERSION,
    DatasetRef,
    ErrorRecord,
    ModelIdentity,
    ResultRecord,
    RunMetadata,
    RunRecordError,
    RunSummary,
    Session,
    Usage,
)

ENV = get_environment("e1")
HEURISTIC = load_registry()["heuristic"]

PROMPT = [
    {"role": "system", "content": "You are a network security analyst. Reply with JSON only."},
    {"role": "user", "content": "Flow:\nproto=udp service=- src=192.168.1.37:35890 dst=198.51.100.20:53"},
]

# A run folder exactly as the runner wrote it before records were versioned (an E1 run interrupted after two
# samples, one provider failure), its config and metrics shortened.
LEGACY_METADATA: dict[str, Any] = {
    "run_id": "seed42-n3-8eaa48c796",
    "env": "e1",
    "env_name": "sv-env-network-logs",
    "verifier_version": "e1-verifier-1",
    "verifier_provenance": {},
    "model": {
        "id": "heuristic",
        "provider": "baseline",
        "model": "heuristic",
        "params": {"temperature": 0, "seed": 42},
        "price": {"input_per_mtok": 0.0, "output_per_mtok": 0.0},
    },
    "generation": {"max_tokens": 40, "temperature": 0, "seed": 42},
    "config": {"env_id": "e1", "reward_weights": {"accuracy": 0.45, "calibration": 0.2}},
    "dataset": {"source": "embedded:test", "split": "test", "hash": "5f1c0ffee0ddba11", "rows": 90},
    "n_requested": 3,
    "n_items": 3,
    "seed": 42,
    "fingerprint_hash": "8eaa48c7968a2b0f",
    "code_version": "67036c7908e7bee6c1f15027af318b45b745d6b1-dirty",
    "created_at": "2026-11-24T01:48:01.239529+00:00",
    "sessions": [
        {
            "started_at": "2026-11-24T01:48:01.239529+00:00",
            "code_version": "67036c7908e7bee6c1f15027af318b45b745d6b1-dirty",
            "finished_at": "2026-11-24T01:48:01.254172+00:00",
            "wall_s": 0.0015,
            "client": {"requests": 3, "cache_hits": 0, "retries": 0, "errors": 1, "cost_usd": 0.0},
            "new_samples": 3,
        }
    ],
    "status": "incomplete",
    "timings": {"generate_s": 0.0003, "score_s": 0.0004, "write_s": 0.0006, "wall_s": 0.0015, "summary_s": 0.0021},
    "usage": {"prompt_tokens": 0, "completion_tokens": 0},
    "cost_usd": 0.0,
    "n_scored": 2,
    "n_provider_errors_this_session": 1,
}
LEGACY_RESULTS = [
    {
        "id": "c70cfe1a8511888a",
        "reward": 0.92,
        "components": {"accuracy": 1.0, "calibration": 0.6, "asymmetric_cost": 1.0, "format": 1.0},
        "parsed": {"label": "Malicious", "confidence": 0.6, "rationale": "unanswered connection attempt"},
        "error": None,
        "details": {},
        "model": "heuristic",
        "prompt": PROMPT,
        "completion": '{"label": "Malicious", "confidence": 0.6, "rationale": "unanswered connection attempt"}',
        "usage": {"prompt_tokens": 0, "completion_tokens": 0},
        "latency_s": 3.062600001157989e-05,
        "cost_usd": 0.0,
        "cached": False,
    },
    {
        "id": "ce0201c1e4d165d2",
        "reward": 0,
        "components": {"accuracy": 0, "calibration": 0, "asymmetric_cost": 0, "format": 0},
        "parsed": None,
        "error": "no_json_object",
        "details": {},
        "model": "heuristic",
        "prompt": PROMPT,
        "completion": "no idea — café",
        "usage": {"prompt_tokens": 0, "completion_tokens": 0},
        "latency_s": 2.1e-05,
        "cost_usd": 0.0,
        "cached": False,
    },
]
LEGACY_ERRORS = [
    {
        "id": "d1e2a3b4c5f60718",
        "kind": "server",
        "status": 503,
        "message": "HTTP 503 from upstream",
        "at": "2026-11-24T01:48:01.250000+00:00",
    }
]
LEGACY_SUMMARY: dict[str, Any] = {
    "env": "e1",
    "env_name": "sv-env-network-logs",
    "model": "heuristic",
    "run_id": "seed42-n3-8eaa48c796",
    "n_items": 3,
    "n_scored": 2,
    "metrics": {"n": 2, "accuracy": 0.5, "reward": {"mean": 0.46, "ci_low": 0.0, "ci_high": 0.92}},
}


def _write_legacy(run_dir: Path) -> RunFolder:
    """The four files as the pre-versioning runner wrote them (indent 2, ensure_ascii=False, one sample a line)."""
    run_dir.mkdir(parents=True)
    (run_dir / "metadata.json").write_text(json.dumps(LEGACY_METADATA, indent=2, ensure_ascii=False) + "\n")
    (run_dir / "summary.json").write_text(json.dumps(LEGACY_SUMMARY, indent=2, ensure_ascii=False) + "\n")
    for name, lines in (("results.jsonl", LEGACY_RESULTS), ("errors.jsonl", LEGACY_ERRORS)):
        (run_dir / name).write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    return RunFolder(run_dir)


def _strip_versions(run_dir: Path) -> None:
    """Turn a folder the current runner wrote into the one the runner wrote before versions (the only difference)."""
    for name in ("metadata.json", "summary.json"):
        path = run_dir / name
        if path.exists():
            data = json.loads(path.read_text())
            del data["schema_version"]
            path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    for name in ("results.jsonl", "errors.jsonl"):
        path = run_dir / name
        if path.exists():
            lines = [json.loads(line) for line in path.read_text().splitlines()]
            path.write_text("".join(json.dumps(_without_version(line), ensure_ascii=False) + "\n" for line in lines))


def _without_version(record: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in record.items() if key != "schema_version"}


def _rewrite(path: Path, **changes: Any) -> None:
    path.write_text(json.dumps(json.loads(path.read_text()) | changes, indent=2) + "\n")


@pytest.fixture(scope="module")
def dataset():
    return embedded_dataset(ENV, split="test", seed=42)


# The models and their files


def _metadata(**changes: Any) -> RunMetadata:
    fields: dict[str, Any] = {
        "run_id": "r1",
        "env": "e1",
        "env_name": "sv-env-network-logs",
        "verifier_version": "e1-verifier-1",
        "verifier_provenance": {"scanner": "1.2"},
        "model": ModelIdentity(id="m", provider="baseline", model="m", params={"temperature": 0}, price={}),
        "generation": {"max_tokens": 40},
        "config": {"env_id": "e1"},
        "dataset": DatasetRef(source="embedded:test", split="test", hash="abc", rows=9),
        "n_requested": 3,
        "n_items": 3,
        "seed": 42,
        "fingerprint_hash": "f" * 64,
        "code_version": "unknown",
        "created_at": "2026-01-01T00:00:00+00:00",
        "sessions": [Session(started_at="2026-01-01T00:00:00+00:00", code_version="unknown")],
        "status": "running",
    }
    return RunMetadata(**fields | changes)


def _result(**changes: Any) -> ResultRecord:
    fields: dict[str, Any] = {
        "id": "a",
        "reward": 1,
        "components": {"accuracy": 1, "format": 1.0},
        "parsed": {"label": "Benign"},
        "error": None,
        "details": {"note": "café ✓"},
        "model": "m",
        "prompt": PROMPT,
        "completion": '{"label": "Benign"}',
        "usage": Usage(prompt_tokens=3, completion_tokens=2),
        "latency_s": 0,
        "cost_usd": 0.0,
        "cached": False,
    }
    return ResultRecord(**fields | changes)


def test_every_record_round_trips_through_its_file(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    running = _metadata()
    folder.write_metadata(running)
    assert folder.read_metadata() == running
    finished = running.replace(
        status="complete",
        sessions=[running.sessions[0].replace(finished_at="2026-01-01T00:01:00+00:00", wall_s=60.0, new_samples=3)],
        timings={"generate_s": 1.5, "wall_s": 60.0},
        usage=Usage(prompt_tokens=9, completion_tokens=6),
        cost_usd=0.0,
        n_scored=3,
        n_provider_errors_this_session=0,
    )
    dialogue = finished.replace(
        counterparts={"target": finished.model}, judge="local", judge_validation={"judge": "local"}
    )
    for metadata in (finished, dialogue):
        folder.write_metadata(metadata)
        assert folder.read_metadata() == metadata
    summary = RunSummary(
        env="e1", env_name="sv-env-network-logs", model="m", run_id="r1", n_items=3, n_scored=3, metrics={"n": 3}
    )
    folder.write_summary(summary)
    assert folder.read_summary() == summary
    results = [_result(), _result(id="b", counterparts={"target": "m2"}), _result(id="c", turns=4)]
    folder.append_results(results[:1])
    folder.append_results(results[1:])
    assert folder.read_results() == results
    errors = [ErrorRecord(id="d", kind="timeout", status=None, message="timed out", at="2026-01-01T00:00:30+00:00")]
    folder.append_errors(errors)
    assert folder.read_errors() == errors


def test_files_keep_the_runners_layout_with_a_version_added(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    folder.append_results([_result()])
    line = folder.results_path.read_text(encoding="utf-8")
    # Numbers as written, non-ASCII kept, null where a sample has no value, mode-only fields left out.
    assert line.startswith('{"schema_version": 1, "id": "a", "reward": 1, "components": {"accuracy": 1, "format": 1.0}')
    assert '"error": null' in line and "café ✓" in line
    assert '"counterparts"' not in line and '"turns"' not in line
    folder.write_metadata(_metadata())
    metadata = json.loads(folder.metadata_path.read_text(encoding="utf-8"))
    assert list(metadata)[:3] == ["schema_version", "run_id", "env"]
    assert list(metadata)[-2:] == ["sessions", "status"]  # a session still running has no timings or usage yet
    assert metadata["sessions"] == [{"started_at": "2026-01-01T00:00:00+00:00", "code_version": "unknown"}]


def test_a_sessions_dirty_paths_are_kept_and_files_without_them_read_and_rewrite_unchanged(tmp_path: Path) -> None:
    dirty = Session(
        started_at="2026-01-01T00:00:00+00:00", code_version="abc-dirty", dirty_paths=["envs/a.py", "b c.yaml"]
    )
    folder = RunFolder(tmp_path / "run")
    folder.path.mkdir()
    folder.write_metadata(_metadata(code_version="abc-dirty", sessions=[dirty]))
    assert folder.read_metadata().sessions == [dirty]
    # A file from before the field (LEGACY_METADATA's dirty session has none): read as None, written back as it was.
    legacy = _write_legacy(tmp_path / "legacy")
    metadata = legacy.read_metadata()
    assert metadata.sessions[0].dirty_paths is None
    assert "dirty_paths" not in metadata.as_dict()["sessions"][0]
    assert metadata.as_dict() == {"schema_version": SCHEMA_VERSION, **LEGACY_METADATA}


def test_a_run_written_by_the_runner_reads_back_as_its_outcome(tmp_path: Path, dataset) -> None:
    outcome = EvalRunner(ENV, HEURISTIC, evals_root=tmp_path).run(dataset, n=6, seed=42)
    folder = RunFolder(outcome.run_dir)
    assert folder.read_metadata() == outcome.metadata and folder.read_summary() == outcome.summary
    assert outcome.metadata.schema_version == outcome.summary.schema_version == SCHEMA_VERSION
    assert all(record.schema_version == SCHEMA_VERSION for record in folder.read_results())


def test_any_text_round_trips_through_every_file_as_utf8(tmp_path: Path) -> None:
    """A lone surrogate (model text can hold one) used to raise UnicodeEncodeError mid-write."""
    folder = RunFolder(tmp_path)
    text = "exfil \ud800 beacon \udfff café"
    metadata = _metadata(generation={"stop": [text]})
    folder.write_metadata(metadata)
    results = [_result(completion=text, details={"quote": text, text: [text]})]
    assert folder.append_results(results) == []
    errors = [ErrorRecord(id="d", kind="bad_response", status=200, message=text, at="2026-01-01T00:00:30+00:00")]
    folder.append_errors(errors)
    summary = RunSummary(
        env="e1", env_name="n", model="m", run_id="r1", n_items=1, n_scored=1, metrics={"format_errors": {text: 1}}
    )
    folder.write_summary(summary)
    assert folder.read_metadata() == metadata and folder.read_results() == results
    assert folder.read_errors() == errors and folder.read_summary() == summary
    for path in tmp_path.iterdir():
        path.read_bytes().decode("utf-8")  # every file is valid UTF-8
    assert "café" in folder.results_path.read_text(encoding="utf-8")  # non-ASCII is kept as it is


def test_a_record_that_cannot_be_written_is_left_out_and_reported(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    deep: Any = "bottom"
    for _ in range(100_000):
        deep = [deep]
    records = [
        _result(id="ok"),
        _result(id="tuple-key", details={"x": {(1, 2): 3}}),
        _result(id="deep", parsed={"nested": deep}),
    ]
    unwritable = folder.append_results(records)
    assert [(record.id, why.split(":")[0]) for record, why in unwritable] == [
        ("tuple-key", "cannot be written as a JSON line"),
        ("deep", "cannot be written as a JSON line"),
    ]
    assert [record.id for record in folder.read_results()] == ["ok"]  # nothing half-written


# Files from before versioning


def test_a_folder_written_before_versioning_is_read(tmp_path: Path) -> None:
    folder = _write_legacy(tmp_path / "run")
    metadata = folder.read_metadata()
    assert metadata.schema_version == SCHEMA_VERSION
    assert metadata.run_id == LEGACY_METADATA["run_id"] and metadata.model.id == "heuristic"
    assert metadata.status == "incomplete" and metadata.n_scored == 2 and metadata.counterparts is None
    # Read back, a legacy file is what it was, with the version it is now read as.
    assert metadata.as_dict() == {"schema_version": SCHEMA_VERSION, **LEGACY_METADATA}
    assert folder.read_summary().as_dict() == {"schema_version": SCHEMA_VERSION, **LEGACY_SUMMARY}
    results = folder.read_results()
    assert [record.id for record in results] == ["c70cfe1a8511888a", "ce0201c1e4d165d2"]
    assert [record.as_dict() for record in results] == [
        {"schema_version": SCHEMA_VERSION, **record} for record in LEGACY_RESULTS
    ]
    assert [error.as_dict() for error in folder.read_errors()] == [
        {"schema_version": SCHEMA_VERSION, **error} for error in LEGACY_ERRORS
    ]


def test_legacy_metadata_without_verifier_provenance_is_migrated(tmp_path: Path) -> None:
    # Runs from before scanner provenance was recorded (its field came later than the others).
    legacy = {key: value for key, value in LEGACY_METADATA.items() if key != "verifier_provenance"}
    (tmp_path / "metadata.json").write_text(json.dumps(legacy, indent=2))
    assert RunFolder(tmp_path).read_metadata().verifier_provenance == {}


def test_an_interrupted_run_from_before_versioning_resumes(tmp_path: Path, dataset) -> None:
    runner = EvalRunner(ENV, HEURISTIC, evals_root=tmp_path)
    partial = runner.run(dataset, n=8, seed=42, max_samples=5)
    _strip_versions(partial.run_dir)
    old_lines = (partial.run_dir / "results.jsonl").read_text().splitlines()
    outcome = runner.run(dataset, n=8, seed=42)
    assert outcome.status == "complete" and outcome.run_dir == partial.run_dir
    lines = (outcome.run_dir / "results.jsonl").read_text().splitlines()
    # The old lines stay as they were; the samples added by this session say their version.
    assert lines[:5] == old_lines
    assert all(json.loads(line)["schema_version"] == SCHEMA_VERSION for line in lines[5:]) and len(lines) == 8
    metadata = json.loads((outcome.run_dir / "metadata.json").read_text())
    assert metadata["schema_version"] == SCHEMA_VERSION and len(metadata["sessions"]) == 2
    assert outcome.summary.n_scored == 8 and outcome.summary.metrics["n"] == 8


# Refusals


def test_a_file_from_a_newer_version_is_refused_with_an_upgrade_message(tmp_path: Path) -> None:
    folder = _write_legacy(tmp_path / "run")
    _rewrite(folder.metadata_path, schema_version=SCHEMA_VERSION + 1)
    with pytest.raises(RunRecordError, match=r"metadata\.json: written with run-record schema version 2") as error:
        folder.read_metadata()
    assert "upgrade secverify" in str(error.value) and "supported versions: 0, 1" in str(error.value)
    _rewrite(folder.summary_path, schema_version=7)
    with pytest.raises(RunRecordError, match=r"summary\.json: written with run-record schema version 7.*upgrade"):
        folder.read_summary()
    with folder.results_path.open("a") as handle:
        handle.write(json.dumps({**LEGACY_RESULTS[0], "id": "later", "schema_version": 2}) + "\n")
    with pytest.raises(RunRecordError, match=r"results\.jsonl line 3: written with run-record schema version 2"):
        folder.read_results()


def test_malformed_files_are_refused_naming_the_file_and_the_problem(tmp_path: Path) -> None:
    folder = _write_legacy(tmp_path / "run")
    _rewrite(folder.metadata_path, schema_version=SCHEMA_VERSION, status="paused")
    with pytest.raises(RunRecordError, match=r"metadata\.json: not a valid RunMetadata of schema version 1.*status"):
        folder.read_metadata()
    _rewrite(folder.metadata_path, schema_version="1")
    with pytest.raises(RunRecordError, match=r"schema_version '1' is not a version this secverify reads"):
        folder.read_metadata()
    folder.metadata_path.write_text('{"run_id": ')
    with pytest.raises(RunRecordError, match=r"metadata\.json: not valid JSON"):
        folder.read_metadata()

    # A legacy line that does not parse as the current version: the version it has, and the versions read.
    lines = [LEGACY_RESULTS[0], {**LEGACY_RESULTS[1], "reward": "1.0", "extra": True}]
    folder.results_path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(RunRecordError) as error:
        folder.read_results()
    message = str(error.value)
    assert "results.jsonl line 2: a file from before run records were versioned (version 0)" in message
    assert "supported versions: 0, 1" in message and "reward" in message and "extra" in message

    # Only the last line can have been cut off mid-write: a broken line before it is refused, not skipped.
    folder.results_path.write_text('{"id": "torn\n' + json.dumps(LEGACY_RESULTS[0]) + "\n")
    with pytest.raises(RunRecordError, match=r"results\.jsonl line 1: not valid JSON"):
        folder.read_results()


def test_a_torn_last_line_is_skipped_by_readers_and_cut_before_appending(tmp_path: Path) -> None:
    folder = _write_legacy(tmp_path / "run")
    with folder.results_path.open("a") as handle:
        handle.write('{"id": "half-written", "rew')
    size = folder.results_path.stat().st_size
    assert [record.id for record in folder.read_results()] == ["c70cfe1a8511888a", "ce0201c1e4d165d2"]
    assert folder.results_path.stat().st_size == size  # a reader never changes the file
    assert len(folder.resume_results()) == 2
    folder.append_results([_result(id="next")])
    assert [record.id for record in folder.read_results()] == ["c70cfe1a8511888a", "ce0201c1e4d165d2", "next"]


# Readers


def test_reports_and_feedback_read_runs_of_both_versions(tmp_path: Path, dataset) -> None:
    evals = tmp_path / "evals"
    current = EvalRunner(ENV, HEURISTIC, evals_root=evals).run(dataset, n=6, seed=42)
    # The same run as another model would have written it before versioning.
    legacy_dir = evals / "sv-env-network-logs--heuristic-v0" / current.run_dir.name
    shutil.copytree(current.run_dir, legacy_dir)
    _strip_versions(legacy_dir)
    for name in ("metadata.json", "summary.json"):
        data = json.loads((legacy_dir / name).read_text())
        data["model"] = {**data["model"], "id": "heuristic-v0"} if name == "metadata.json" else "heuristic-v0"
        (legacy_dir / name).write_text(json.dumps(data, indent=2))

    finished = latest_complete_runs(evals, ENV.name)
    assert [(run.model_id, run.run_id) for run in finished] == [
        ("heuristic", current.run_dir.name),
        ("heuristic-v0", current.run_dir.name),
    ]
    assert [record.id for record in finished[1].records()] == [record.id for record in finished[0].records()]
    selection = select_runs(evals, ENV, report_scope(ENV, "latest"))
    runs = selection.runs
    assert [run.model_id for run in runs] == ["heuristic", "heuristic-v0"] and selection.excluded == {}
    assert runs[1].summary.metrics == runs[0].summary.metrics

    report = build_report(ENV, evals, tmp_path / "report")
    assert report.models == ["heuristic", "heuristic-v0"] and report.dataset_hash == dataset.hash
    comparison = json.loads(report.json_path.read_text())["comparisons"][0]
    assert comparison["n_paired"] == 6 and comparison["delta"] == 0.0

    # A run this code cannot read stops the report with the file's name instead of silently leaving it out.
    _rewrite(legacy_dir / "metadata.json", schema_version=SCHEMA_VERSION + 1)
    with pytest.raises(RunRecordError, match=r"heuristic-v0/.*/metadata\.json: written with .* version 2"):
        build_report(ENV, evals, tmp_path / "report")


def test_the_report_command_explains_a_run_it_cannot_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path))
    folder = _write_legacy(tmp_path / "evals" / "sv-env-network-logs--heuristic" / "seed42-n3-8eaa48c796")
    _rewrite(folder.metadata_path, schema_version=SCHEMA_VERSION + 1)
    assert main(["report", "--env", "e1"]) == 2
    error = capsys.readouterr().err
    assert str(folder.metadata_path) in error and "upgrade secverify" in error


def test_a_second_report_never_overwrites_the_first(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from secverify_dagster.reports.environment_report import new_report_dir

    now = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)
    folders = [new_report_dir(tmp_path / "reports" / "e1", now) for _ in range(3)]
    assert [folder.name for folder in folders] == ["2026-11-24T090000Z", "2026-11-24T090000Z-2", "2026-11-24T090000Z-3"]
    assert all(folder.is_dir() for folder in folders)
