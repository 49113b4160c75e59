"""The `secverify` command: eval writes a run folder, score re-scores stored completions, models explains itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from secverify_dagster.cli import main
from secverify_dagster.runner import embedded_dataset
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
    assert [s.reward for s in scored] == pytest.approx([1.0, 0.0, 0.25 * 0.85 + 0.1])
    assert scored[1].error == "no_json_object" and scored[1].completion == "no idea"
    metrics = json.loads(summary.read_text())
    assert metrics["n"] == 3 and metrics["n_abstained"] == 1 and metrics["n_format_failures"] == 1


def test_score_rejects_completions_for_unknown_items(outputs: Path, tmp_path: Path, capsys) -> None:
    env = get_environment("e1")
    items_path = tmp_path / "items.parquet"
    embedded_dataset(env, split="test", seed=42).frame.head(2).write_parquet(items_path)
    completions = tmp_path / "completions.jsonl"
    completions.write_text(json.dumps({"id": "nope", "completion": "{}"}) + "\n")
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
                str(tmp_path / "o.jsonl"),
            ]
        )
        == 2
    )
    assert "not in the items file" in capsys.readouterr().err


def test_models_lists_the_registry_with_reasons(outputs: Path, capsys) -> None:
    assert main(["models", "--env", "e1"]) == 0
    printed = capsys.readouterr().out
    assert "gpt-5" in printed and "OPENAI_API_KEY is not set" in printed
    assert "heuristic" in printed and "claude-sonnet-4.5" in printed
