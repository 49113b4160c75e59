"""The corpus-loading helpers the six environments share (sv_shared.data.loading)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import datasets
import polars as pl
import pytest

from sv_shared.data.embedded import build_main, check_or_write, jsonl_text, stale_files
from sv_shared.data.errors import CorpusUnavailableError, CorpusValidationError
from sv_shared.data.loading import (
    MAX_EXAMPLES,
    LoadReport,
    dedupe,
    fallback_strata,
    is_hub_id,
    load_from_hub,
    min_stratum_rows,
    read_table,
)

FRACTIONS = {"train": 0.7, "dev": 0.15, "test": 0.15}


def test_drop_counts_reasons_and_keeps_the_first_examples() -> None:
    report = LoadReport("corpus.csv")
    for row in range(MAX_EXAMPLES + 2):
        report.drop("empty text", f"row {row}", strict=False)
    report.drop("label", "row 9", strict=False)
    assert report.rows_dropped == MAX_EXAMPLES + 3
    assert report.dropped == {"empty text": MAX_EXAMPLES + 2, "label": 1}
    assert report.examples == [f"row {row} (empty text)" for row in range(MAX_EXAMPLES)]


def test_strict_drop_raises_with_the_source_location_and_reason() -> None:
    report = LoadReport("corpus.csv")
    with pytest.raises(CorpusValidationError) as error:
        report.drop("empty Goal", "harmful row 7 (Index 8)", strict=True)
    assert str(error.value) == "corpus.csv: untrusted row with strict=True: harmful row 7 (Index 8): empty Goal"


def test_discard_counts_a_filtered_row_without_an_example() -> None:
    report = LoadReport("stack")
    report.discard("filter:language")
    assert report.rows_dropped == 1 and report.dropped == {"filter:language": 1} and report.examples == []


def test_summary_text() -> None:
    report = LoadReport("src", rows_read=4, rows_loaded=2, duplicates=1)
    assert report.summary() == "src: read 4 rows, loaded 2, dropped 0 (none), 1 duplicates removed"
    report.drop("b", "row 3", strict=False)
    report.drop("a", "row 1", strict=False)
    assert report.summary() == (
        "src: read 4 rows, loaded 2, dropped 2 (a: 1, b: 1), 1 duplicates removed; e.g. row 3 (b); row 1 (a)"
    )


def test_a_subclass_adds_counters_to_the_summary_before_the_examples() -> None:
    @dataclass
    class FileReport(LoadReport):
        unit = "files"
        relabelled: int = 0

        def _summary_extras(self) -> str:
            return f", {self.relabelled} relabelled"

    report = FileReport("dir", rows_read=3, relabelled=2)
    report.drop("not_utf8", "a.yaml", strict=False)
    assert report.summary() == (
        "dir: read 3 files, loaded 0, dropped 1 (not_utf8: 1), 0 duplicates removed, 2 relabelled; "
        "e.g. a.yaml (not_utf8)"
    )


def test_record_load_counts_duplicates_and_logs_a_warning_only_after_drops(caplog: pytest.LogCaptureFixture) -> None:
    frame = pl.DataFrame({"content_hash": ["a", "b", "a"], "n": [1, 2, 3]})
    log = logging.getLogger("test_loading")
    report = LoadReport("x", rows_read=3)
    with caplog.at_level(logging.INFO, logger="test_loading"):
        report.record_load(frame, dedupe(frame), log)
        report.drop("label", "row 4", strict=False)
        report.record_load(frame.head(1), frame.head(1), log)
    assert (report.duplicates, report.rows_loaded) == (1, 1)
    assert [record.levelno for record in caplog.records] == [logging.INFO, logging.WARNING]
    assert caplog.records[0].getMessage() == "x: read 3 rows, loaded 2, dropped 0 (none), 1 duplicates removed"


def test_dedupe_keeps_the_first_row_of_each_content_hash() -> None:
    frame = pl.DataFrame({"content_hash": ["b", "a", "b", "a"], "n": [1, 2, 3, 4]})
    assert dedupe(frame)["n"].to_list() == [1, 2]


def test_hub_ids() -> None:
    assert is_hub_id("JailbreakBench/JBB-Behaviors") and is_hub_id("19kmunz/iot-23-preprocessed")
    assert not is_hub_id("/data/corpus.csv") and not is_hub_id("corpus") and not is_hub_id(None)


def test_load_from_hub_passes_the_config_only_when_given(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = pl.DataFrame({"Goal": ["a", "b", "c"]})
    calls: list[tuple[object, ...]] = []

    def fake_load_dataset(name: str, *config: str, split: str) -> datasets.Dataset:
        calls.append((name, *config, split))
        return datasets.Dataset.from_polars(rows)

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    assert load_from_hub("owner/name", split="train", limit=2, mirror_hint="m").height == 2
    assert load_from_hub("owner/name", config="behaviors", split="harmful", mirror_hint="m").height == 3
    assert calls == [("owner/name", "train"), ("owner/name", "behaviors", "harmful")]


@pytest.mark.parametrize(
    ("config", "where"), [(None, "(split 'train')"), ("contextual", "(config 'contextual', split 'train')")]
)
def test_offline_hub_names_the_id_and_the_mirror(
    monkeypatch: pytest.MonkeyPatch, config: str | None, where: str
) -> None:
    def offline(name: str, *args: object, **kwargs: object) -> None:
        raise ConnectionError(f"Couldn't reach '{name}' on the Hub (OfflineModeIsEnabled)")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    hint = "load_harmbench(path='/data/harmbench.csv')"
    with pytest.raises(CorpusUnavailableError, match="local mirror") as error:
        load_from_hub("walledai/HarmBench", config=config, split="train", mirror_hint=hint)
    message = str(error.value)
    assert message.startswith(f"cannot load 'walledai/HarmBench' {where} from the Hugging Face hub: Couldn't reach")
    assert message.endswith(f"e.g. {hint}.")
    assert isinstance(error.value, ConnectionError) and isinstance(error.value.__cause__, ConnectionError)


def test_a_missing_cache_file_is_unavailable_too(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(*args: object, **kwargs: object) -> None:
        raise FileNotFoundError("no cached copy")

    monkeypatch.setattr(datasets, "load_dataset", missing)
    with pytest.raises(CorpusUnavailableError, match=r"'owner/name'.*no cached copy.*e\.g\. hint"):
        load_from_hub("owner/name", split="train", mirror_hint="hint")


def test_min_stratum_rows() -> None:
    assert min_stratum_rows(FRACTIONS) == 7  # 1 / 0.15 = 6.67
    assert min_stratum_rows({"train": 0.8, "test": 1 - 0.8, "unused": 0.0}) == 5  # 1 / 0.19999999999999996, not 6


def test_fallback_strata_pool_small_cells_level_by_level() -> None:
    frame = pl.DataFrame(
        {
            "label": ["A"] * 7 + ["A"] * 4 + ["A"] * 3 + ["B"],
            "language": ["en"] * 7 + ["de"] * 4 + ["de"] * 3 + ["en"],
            "scenario": ["x"] * 7 + ["y"] * 4 + ["z"] * 3 + ["x"],
        }
    )
    strata = fallback_strata(frame, ["label", "language", "scenario"], FRACTIONS).to_list()
    assert strata == ["A/en/x"] * 7 + ["A/de/*"] * 7 + ["B/*/*"]
    assert fallback_strata(frame, ["label", "scenario"], FRACTIONS).to_list() == ["A/x"] * 7 + ["A/*"] * 7 + ["B/*"]


def test_fallback_strata_without_keep_first_pool_into_one_stratum_and_nulls_read_none() -> None:
    frame = pl.DataFrame({"task": ["detect"] * 9, "cwe": [None] * 7 + ["CWE-79", "CWE-89"]})
    assert fallback_strata(frame, ["task", "cwe"], FRACTIONS).to_list() == ["detect/none"] * 7 + ["detect/*"] * 2
    assert fallback_strata(frame, ["cwe"], FRACTIONS, keep_first=False).to_list() == ["none"] * 7 + ["*"] * 2


# --- read_table -----------------------------------------------------------------------------------------------------

RECORDS = [{"Goal": "a", "Index": 1}, {"Goal": "b", "Index": 2}, {"Goal": "c", "Index": 3}]


def _write_formats(folder: Path) -> dict[str, Path]:
    """The same three records as parquet, JSON lines (.jsonl and .ndjson), a JSON array, JSON lines named .json,
    and CSV."""
    frame = pl.DataFrame(RECORDS)
    paths = {
        name: folder / name
        for name in ("t.parquet", "t.jsonl", "t.ndjson", "array.json", "lines.json", "t.csv", "UPPER.CSV")
    }
    frame.write_parquet(paths["t.parquet"])
    lines = "".join(json.dumps(record) + "\n" for record in RECORDS)
    for name in ("t.jsonl", "t.ndjson", "lines.json"):
        paths[name].write_text(lines, encoding="utf-8")
    paths["array.json"].write_text("  " + json.dumps(RECORDS, indent=1), encoding="utf-8")
    frame.write_csv(paths["t.csv"])
    frame.write_csv(paths["UPPER.CSV"])
    return paths


def test_read_table_reads_every_format_and_keeps_types_except_csv(tmp_path: Path) -> None:
    for name, path in _write_formats(tmp_path).items():
        table = read_table(path)
        assert table["Goal"].to_list() == ["a", "b", "c"], name
        # CSV cells stay text (each loader parses its columns); the other formats keep their types.
        expected = ["1", "2", "3"] if name.lower().endswith(".csv") else [1, 2, 3]
        assert table["Index"].to_list() == expected, name
        assert read_table(path, limit=2).height == 2, name


def test_read_table_refuses_formats_the_loader_does_not_take(tmp_path: Path) -> None:
    paths = _write_formats(tmp_path)
    assert read_table(paths["t.csv"], formats=(".csv",)).height == 3
    with pytest.raises(CorpusValidationError) as error:
        read_table(paths["array.json"], formats=(".csv", ".parquet"))
    assert str(error.value) == f"{paths['array.json']}: unsupported file type '.json'; expected one of .csv, .parquet"
    (tmp_path / "notes.txt").write_text("Goal\na\n", encoding="utf-8")
    with pytest.raises(CorpusValidationError, match=r"unsupported file type '\.txt'"):
        read_table(tmp_path / "notes.txt", formats=(".txt", ".csv"))  # a format read_table does not know
    (tmp_path / "README").write_text("x", encoding="utf-8")
    with pytest.raises(CorpusValidationError, match=r"unsupported file type '\(none\)'"):
        read_table(tmp_path / "README")


@pytest.mark.parametrize("text", ['{"Goal": "a"}', '{\n  "rows": [{"Goal": "a"}]\n}', '["a", "b"]'])
def test_read_table_json_must_be_an_array_of_objects_or_json_lines(tmp_path: Path, text: str) -> None:
    path = tmp_path / "corpus.json"
    path.write_text(text, encoding="utf-8")
    if text.startswith('{"Goal"'):  # one line holding one object is JSON lines of one record
        assert read_table(path)["Goal"].to_list() == ["a"]
        return
    with pytest.raises(CorpusValidationError) as error:
        read_table(path)
    assert str(error.value) == f"{path}: expected a JSON array of objects or JSON lines"


def test_read_table_empty_json_array_is_an_empty_frame(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text("[]", encoding="utf-8")
    assert read_table(path).shape == (0, 0)


def test_read_table_csv_encoding_columns_and_ragged_rows(tmp_path: Path) -> None:
    path = tmp_path / "cp1252.csv"
    path.write_bytes("Label,Note\nWeb Attack \u2013 Brute Force,x\n".encode("cp1252"))
    assert read_table(path)["Label"].to_list() == ["Web Attack \ufffd Brute Force"]  # replaced, not failed
    with pytest.raises(pl.exceptions.ComputeError):
        read_table(path, encoding="utf8")  # a loader that must not coerce bytes refuses the file
    wide = tmp_path / "wide.csv"
    wide.write_text("a,b,c\n1,2,3\n", encoding="utf-8")
    assert read_table(wide, columns=["c", "a", "missing"]).columns == ["c", "a"]
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("a,b\n1,2\n3,4,5\n", encoding="utf-8")
    with pytest.raises(pl.exceptions.ComputeError):
        read_table(ragged)
    assert read_table(ragged, ragged=True).rows() == [("1", "2"), ("3", "4")]


# --- the embedded-corpus writer -------------------------------------------------------------------------------------


def test_jsonl_text_is_deterministic_sorted_and_keeps_non_ascii() -> None:
    text = jsonl_text([{"b": 1, "a": "Grüße"}, {"a": None}])
    assert text == '{"a": "Grüße", "b": 1}\n{"a": null}\n'
    assert jsonl_text(iter([{"a": None, "b": 1}])) == jsonl_text([{"b": 1, "a": None}])
    assert jsonl_text([]) == ""


def test_check_or_write_writes_stale_files_and_check_compares_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = tmp_path / "data" / "a.jsonl", tmp_path / "data" / "nested" / "b.json"
    files = {first: jsonl_text([{"x": "é"}]), second: "{}\n"}
    assert stale_files(files) == [first, second]
    assert check_or_write(files, check=True, script="scripts/build.py") == 1
    assert not first.exists()  # --check writes nothing
    assert f"out of date: {first}, {second}; run python scripts/build.py" in capsys.readouterr().err

    assert check_or_write(files, check=False, script="scripts/build.py") == 0
    assert first.read_bytes() == '{"x": "é"}\n'.encode() and second.read_bytes() == b"{}\n"
    assert check_or_write(files, check=True, script="scripts/build.py") == 0

    second.write_bytes(b"{}\r\n")  # equal as text read with universal newlines, not as bytes
    assert stale_files(files) == [second]
    assert check_or_write(files, check=True, script="scripts/build.py") == 1
    written = first.stat().st_mtime_ns
    assert check_or_write(files, check=False, script="scripts/build.py") == 0
    assert second.read_bytes() == b"{}\n" and first.stat().st_mtime_ns == written  # only the stale file rewritten


def test_build_main_renders_after_parsing_and_checks_or_writes(tmp_path: Path) -> None:
    target = tmp_path / "rows.jsonl"
    rendered: list[int] = []

    def render() -> dict[Path, str]:
        rendered.append(1)
        return {target: jsonl_text([{"id": 1}])}

    with pytest.raises(SystemExit):
        build_main("doc", render, script="s.py", argv=["--help"])
    assert not rendered  # --help answers without building
    assert build_main("doc", render, script="s.py", argv=["--check"]) == 1
    assert build_main("doc", render, script="s.py", argv=[]) == 0
    assert build_main("doc", render, script="s.py", argv=["--check"]) == 0
    assert target.read_text(encoding="utf-8") == '{"id": 1}\n'
