"""The `secverify` command: eval writes a run folder, score re-scores stored completions, models explains itself."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest

from secverify_dagster.cli.main import build_parser, main
from secverify_dagster.runner.datasets import embedded_dataset
from sv_shared.registry import get_environment
from sv_shared.runs.folder import RunFolder
from sv_shared.runs.schema import ScoredCompletion


@pytest.fixture()
def outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return tmp_path


def test_eval_writes_the_run_and_skips_unreachable_models(outputs: Path, capsys) -> None:
    assert main(["eval", "--env", "e1", "--models", "heuristic gpt-5", "-n", "10", "--seed", "42"]) == 0
    printed = capsys.readouterr().out
    assert "skipped: OPENAI_API_KEY is not set" in printed
    (run_dir,) = (outputs / "evals" / "sv-env-network-logs--heuristic").iterdir()
    assert str(run_dir) in printed
    assert len(RunFolder(run_dir).read_results()) == 10
    # Its trajectory page, as the eval asset writes it.
    assert f"trajectories {run_dir / 'trajectories.html'}" in printed and (run_dir / "trajectories.html").is_file()
    # The same command again resumes the same (complete) run: nothing new is generated.
    assert main(["eval", "--env", "e1", "--model", "heuristic", "-n", "10"]) == 0
    assert len(list((outputs / "evals" / "sv-env-network-logs--heuristic").iterdir())) == 1


def test_unknown_models_and_misplaced_options_are_clear_errors(outputs: Path, capsys) -> None:
    assert main(["eval", "--env", "e1", "--model", "no-such-model"]) == 2
    assert "unknown model ids: no-such-model" in capsys.readouterr().out
    assert main(["eval", "--env", "e6", "--model", "heuristic", "-n", "2"]) == 0
    assert "skipped: heuristic is a rule baseline for e1" in capsys.readouterr().out
    assert main(["eval", "--env", "e1", "--model", "heuristic", "--target", "refuse-all"]) == 2
    assert "has no counterparts" in capsys.readouterr().err
    assert main(["eval", "--env", "e5", "--model", "template-attacker", "--counterpart", "judge=refuse-all"]) == 2
    assert "no counterpart role 'judge'" in capsys.readouterr().err


def test_red_team_eval_judges_and_tournament_from_the_command_line(outputs: Path, capsys) -> None:
    args = ["eval", "--env", "e5", "--model", "template-attacker", "--target", "naive-complier", "-n", "4"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "target naive-complier, judge local" in out and "ASR (corrected)" in out
    assert main(["judges"]) == 0
    out = capsys.readouterr().out
    assert "local" in out and "refusal-detector" in out and "test" in out
    tournament = ["tournament", "--attackers", "template-attacker", "--defenders", "refuse-all", "--rounds", "2"]
    assert main([*tournament, "-n", "3"]) == 0
    assert "| 2 | attacker | template-attacker | refuse-all |" in capsys.readouterr().out


def test_score_rescores_stored_completions(outputs: Path, tmp_path: Path, capsys) -> None:
    env = get_environment("e1")
    items = embedded_dataset(env, split="test", seed=42).frame.head(3)
    items_path = tmp_path / "items.parquet"
    items.write_parquet(items_path)
    ids = items["flow_id"].to_list()
    labels = items["label"].to_list()
    completions = tmp_path / "completions.jsonl"
    completions.write_text(
        "\n".join(
            json.dumps(line)
            for line in [
                {"id": ids[0], "completion": json.dumps({"label": labels[0], "confidence": 1.0})},
                {"id": ids[1], "completion": "no idea"},
                {"id": ids[2], "completion": '```json\n{"label": "Abstain", "confidence": 0.5}\n```'},
            ]
        )
        + "\n"
    )
    out = tmp_path / "scored.jsonl"
    summary = tmp_path / "summary.json"
    assert (
        main(
            [
                "score",
                "--env",
                "e1",
                "--items",
                str(items_path),
                "--completions",
                str(completions),
                "--out",
                str(out),
                "--summary",
                str(summary),
            ]
        )
        == 0
    )
    scored = [ScoredCompletion.parse(json.loads(line), str(out)) for line in out.read_text().splitlines()]
    assert [s.id for s in scored] == ids
    # Right at 1.0; unparseable: E1's floor; abstaining: format, less the 0.7 penalty on the abstention cost 0.15.
    assert [s.reward for s in scored] == pytest.approx([1.0, -0.7, 0.1 - 0.7 * 0.15])
    assert scored[1].error == "no_json_object" and scored[1].completion == "no idea"
    metrics = json.loads(summary.read_text())
    assert metrics["n"] == 3 and metrics["n_abstained"] == 1 and metrics["n_format_failures"] == 1


def test_score_scores_every_good_line_and_names_each_bad_one(outputs: Path, tmp_path: Path, capsys) -> None:
    """Before: one null completion (or one unknown id) made it reject the whole file, and a lone surrogate in a
    completion aborted the write of the scored file."""
    env = get_environment("e1")
    items = embedded_dataset(env, split="test", seed=42).frame.head(3)
    items_path = tmp_path / "items.parquet"
    items.write_parquet(items_path)
    ids = items["flow_id"].to_list()
    surrogate = '{"label": "Malicious", "confidence": 0.8, "rationale": "\ud800"}'
    lines = [
        json.dumps({"id": ids[0], "completion": json.dumps({"label": "Benign", "confidence": 0.7})}),
        json.dumps({"id": ids[1], "completion": None}),
        json.dumps({"id": "nope", "completion": "{}"}),
        '{"id": "torn',
        "",
        json.dumps(["not", "an", "object"]),
        json.dumps({"id": ids[2]}),
        json.dumps({"id": 7, "completion": "{}"}),
        json.dumps({"id": ids[2], "completion": surrogate}),
    ]
    completions = tmp_path / "completions.jsonl"
    completions.write_text("\n".join(lines) + "\n")
    out = tmp_path / "scored.jsonl"
    args = ["score", "--env", "e1", "--items", str(items_path), "--completions", str(completions), "--out", str(out)]
    assert main([*args, "--summary", str(tmp_path / "summary.json")]) == 1
    scored = [ScoredCompletion.parse(json.loads(line), str(out)) for line in out.read_text().splitlines()]
    assert [s.id for s in scored] == [ids[0], ids[2]]
    assert scored[1].completion == surrogate and scored[1].parsed["rationale"] == "\ud800"
    errors = [json.loads(line) for line in (tmp_path / "scored.errors.jsonl").read_text().splitlines()]
    assert [(e["line"], e["id"], e["kind"]) for e in errors] == [
        (2, ids[1], "completion_not_a_string"),
        (3, "nope", "unknown_id"),
        (4, None, "not_json"),
        (6, None, "not_an_object"),
        (7, ids[2], "missing_field"),
        (8, None, "id_not_a_string"),
    ]
    assert errors[0]["message"] == f"completion for {ids[1]!r} must be a string, got null"
    assert json.loads((tmp_path / "summary.json").read_text())["n"] == 2
    err = capsys.readouterr().err
    assert "6 lines of" in err and "1 completion ids are not in the items file" in err and "scored.errors.jsonl" in err
    # A clean file scores with exit 0 and leaves no stale errors file behind.
    completions.write_text(lines[0] + "\n")
    assert main(args) == 0
    assert not (tmp_path / "scored.errors.jsonl").exists()


def test_score_refuses_a_completions_source_that_is_not_a_file(outputs: Path, tmp_path: Path, capsys) -> None:
    env = get_environment("e1")
    items_path = tmp_path / "items.parquet"
    embedded_dataset(env, split="test", seed=42).frame.head(2).write_parquet(items_path)
    args = ["score", "--env", "e1", "--items", str(items_path), "--completions", "/dev/zero", "--out", "o.jsonl"]
    assert main(args) == 2
    assert "completions file /dev/zero is not a regular file" in capsys.readouterr().err


def test_scan_checks_each_file_before_reading_it(tmp_path: Path, capsys) -> None:
    """Before: `secverify scan /dev/zero` read the device whole, until memory ran out."""
    big = tmp_path / "big.yaml"
    with big.open("wb") as handle:
        handle.truncate(50_000_000)  # sparse: its size is over the limit, and it is never read
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)  # opening it to read would block for ever
    files = ["/dev/zero", str(big), str(fifo), str(tmp_path / "missing.yaml"), str(tmp_path)]
    assert main(["scan", *files]) == 1
    results = json.loads(capsys.readouterr().out)["results"]
    assert [(r["name"], r["error"]) for r in results] == [
        ("/dev/zero", "not_a_file"),
        (str(big), "too_large"),
        (str(fifo), "not_a_file"),
        (str(tmp_path / "missing.yaml"), "unreadable"),
        (str(tmp_path), "not_a_file"),
    ]
    assert "50000000 bytes, over the limit of 1000000" in results[1]["error_detail"]


def test_models_lists_the_registry_with_reasons(outputs: Path, capsys) -> None:
    assert main(["models", "--env", "e1"]) == 0
    printed = capsys.readouterr().out
    assert "gpt-5" in printed and "OPENAI_API_KEY is not set" in printed
    assert "heuristic" in printed and "claude-sonnet-4.5" in printed


def test_help_renders_for_the_command_and_every_sub_command(capsys) -> None:
    # argparse expands `%` in help strings only when help is printed, so a stray one breaks `--help` alone.
    parser = build_parser()
    parser.format_help()
    (sub_commands,) = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    for name, sub_parser in sub_commands.choices.items():
        assert name in sub_parser.format_help()
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    assert "check" in capsys.readouterr().out
