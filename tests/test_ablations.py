"""Ablations as first-class runs: named reward configs, stored completions re-scored without calling a model, and the
ablation table (paired bootstrap against the default, reward and training ablations)."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from secverify_dagster.assets.ablations import build_ablations_asset
from secverify_dagster.cli import ablate as cli_ablate
from secverify_dagster.reports.ablations import ablation_report_lines
from secverify_dagster.research.ablations import make_ablation_table
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource
from secverify_dagster.resources.models import load_registry
from secverify_dagster.runner.datasets import embedded_dataset
from secverify_dagster.runner.eval_runner import EvalRunner
from sv_shared.answers.statistics import paired_bootstrap
from sv_shared.config import project_root
from sv_shared.contracts.verifier import StoredRecordError
from sv_shared.registry import ENV_NAMES, get_environment
from sv_shared.runs.ablation_table import build_table
from sv_shared.runs.ablations import Ablation, AblationError, ablations, load_ablation
from sv_shared.runs.folder import RunFolder
from sv_shared.runs.records import FinishedRun, complete_runs
from sv_shared.runs.rescore import RescoreError, rescore_run
from sv_shared.training.checkpoints import CheckpointManifest, finish_training_run, open_training_run

REGISTRY = load_registry()

RUNS = {
    # env, model, n, include_tools, E5 target
    "e1": ("e1", "heuristic", 10, False, None),
    "e2": ("e2", "tool-oracle", 3, False, None),
    "e2-tools": ("e2", "tool-oracle", 3, True, None),
    "e3": ("e3", "scanner-fix", 2, False, None),
    "e4": ("e4", "phish-rules", 6, False, None),
    "e4-tools": ("e4", "phish-rules", 4, True, None),
    "e5": ("e5", "template-attacker", 6, False, "naive-complier"),
    "e6": ("e6", "refuse-all", 8, False, None),
    "e6-policy": ("e6", "policy-defender", 8, False, None),
}


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("ablations") / "outputs"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SECVERIFY_OUTPUTS", str(root))
        yield root


@pytest.fixture(scope="module")
def stored_runs(outputs: Path) -> dict[str, FinishedRun]:
    """Rule-baseline runs of every environment (tool modes too), made once for the module."""
    runs = {}
    for key, (env_id, model, n, tools, target) in RUNS.items():
        env = get_environment(env_id)
        counterparts = {"target": REGISTRY[target]} if target else None
        runner = EvalRunner(
            env, REGISTRY[model], evals_root=outputs / "evals", counterparts=counterparts, registry=REGISTRY
        )
        outcome = runner.run(embedded_dataset(env, split="test", seed=42), n=n, seed=42, include_tools=tools)
        assert outcome.status == "complete", outcome.reason
        runs[key] = FinishedRun(outcome.run_dir, outcome.metadata)
    return runs


def _rescore(run: FinishedRun, ablation: Ablation, outputs: Path, **kwargs) -> tuple[RunFolder, list]:
    rescored = rescore_run(run, ablation, evals_root=outputs / "evals", code_version="test", **kwargs)
    return RunFolder(rescored.run_dir), RunFolder(rescored.run_dir).read_results()


def _ablation_root(tmp_path: Path, env_id: str, text: str) -> Path:
    (tmp_path / "configs" / "envs").mkdir(parents=True)
    (tmp_path / "configs" / "ablations").mkdir()
    shutil.copy(project_root() / "configs" / "envs" / f"{env_id}.yaml", tmp_path / "configs" / "envs")
    (tmp_path / "configs" / "ablations" / f"{env_id}.yaml").write_text(text, encoding="utf-8")
    return tmp_path


# --- named configs ---------------------------------------------------------------------------------------------------


def test_the_seed_ablations_are_declared_and_change_only_what_they_name() -> None:
    names = {env_id: [ablation.name for ablation in ablations(env_id)] for env_id in ENV_NAMES}
    assert names == {
        "e1": ["no-calibration"],
        "e2": ["no-patch"],
        "e3": ["no-patch"],
        "e4": ["no-calibration"],
        "e5": ["novelty-0", "novelty-0.15", "novelty-0.5"],
        "e6": ["over-refusal-0.2", "over-refusal-0.6", "over-refusal-0.8"],
    }
    for env_id in ENV_NAMES:
        default = get_environment(env_id).config.as_dict()
        for ablation in ablations(env_id):
            changed = ablation.apply(get_environment(env_id).config).as_dict()
            section = {path.split(".")[0] for path in ablation.overrides}
            assert {key for key in default if default[key] != changed[key]} == section
            assert len(ablation.sha256) == 64 and ablation.sha256 == load_ablation(env_id, ablation.name).sha256
    # The novelty sweep keeps the ceiling of a successful attack's reward at 1.
    for ablation in ablations("e5"):
        reward = ablation.apply(get_environment("e5").config).reward
        assert reward.success_weight + reward.novelty_weight == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ("reward_weights.calibraton: 0.0", ["unknown config path 'reward_weights.calibraton'", "calibration"]),
        ("reward_weights.calibration.value: 0.0", ["unknown config path", "is a value"]),
        ('reward_weights.calibration: "zero"', ["reward_weights.calibration", "valid number"]),
        ("costs.miss: -1.0", ["costs.miss", "greater than or equal to 0"]),
        (
            "{reward_weights.accuracy: 0.0, reward_weights.calibration: 0.0, reward_weights.asymmetric_cost: 0.0, "
            "reward_weights.format: 0.0}",
            ["not all zero"],
        ),
    ],
)
def test_a_bad_override_fails_naming_the_file_and_the_ablation(
    tmp_path: Path, overrides: str, expected: list[str]
) -> None:
    body = overrides if overrides.startswith("{") else "{" + overrides + "}"
    root = _ablation_root(tmp_path, "e1", f"ablations:\n  typo:\n    description: a typo\n    overrides: {body}\n")
    with pytest.raises(AblationError) as error:
        ablations("e1", root)
    message = str(error.value)
    assert "configs/ablations/e1.yaml ablation 'typo'" in message
    for part in expected:
        assert part in message


def test_a_malformed_file_or_name_fails_clearly(tmp_path: Path) -> None:
    root = _ablation_root(
        tmp_path, "e1", "ablations:\n  Bad Name:\n    description: x\n    overrides: {costs.miss: 1.0}\n"
    )
    with pytest.raises(AblationError, match="must match"):
        ablations("e1", root)
    (root / "configs" / "ablations" / "e1.yaml").write_text("ablations:\n  empty:\n    description: x\n")
    with pytest.raises(AblationError, match=r"configs/ablations/e1.yaml: invalid ablations file\n  ablations.empty"):
        ablations("e1", root)
    with pytest.raises(AblationError, match="no ablation 'nope' for e1; known: default, no-calibration"):
        load_ablation("e1", "nope")


def test_an_override_a_rescore_cannot_reflect_is_refused(stored_runs: dict[str, FinishedRun], outputs: Path) -> None:
    cases = [
        ("e1", "generation.max_tokens", 8),
        ("e5", "novelty.ngram", 2),
        ("e5", "dialogue.max_turns", 5),
        ("e6", "dialogue.judge", "llm:gpt-5"),
    ]
    for env_id, path, value in cases:
        ablation = Ablation(env_id, "shaped", "changes the episode", {path: value}, "configs/ablations/x.yaml")
        with pytest.raises(AblationError, match=f"changes {path}, which a re-score of stored samples cannot reflect"):
            rescore_run(stored_runs[env_id], ablation, evals_root=outputs / "evals", code_version="test")


# --- re-scoring ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", list(RUNS))
def test_rescoring_under_the_default_config_reproduces_every_stored_verdict(
    stored_runs: dict[str, FinishedRun], outputs: Path, key: str
) -> None:
    run = stored_runs[key]
    folder, rescored = _rescore(run, load_ablation(run.metadata.env, "default"), outputs)
    stored = {record.id: record for record in run.records()}
    assert [record.id for record in rescored] == list(stored)
    for record in rescored:
        original = stored[record.id]
        assert (record.reward, record.components, record.parsed, record.error) == (
            original.reward,
            original.components,
            original.parsed,
            original.error,
        )
        assert (record.completion, record.usage, record.turns) == (original.completion, original.usage, original.turns)
    metadata = folder.read_metadata()
    assert metadata.status == "complete" and metadata.config == run.metadata.config
    assert metadata.rescored_from.run_id == run.run_id and metadata.rescored_from.ablation == "default"
    assert metadata.model == run.metadata.model and metadata.dataset == run.metadata.dataset
    assert metadata.sessions[-1].client == {"requests": 0} and metadata.cost_usd == 0
    assert (
        folder.path.parent == outputs / "evals" / "ablations" / "default" / f"{run.metadata.env_name}--{run.model_id}"
    )
    assert folder.read_summary().metrics["reward"] == run.summary().metrics["reward"]


def test_no_calibration_reweights_e1_rewards_as_its_weights_say(
    stored_runs: dict[str, FinishedRun], outputs: Path
) -> None:
    run = stored_runs["e1"]
    folder, rescored = _rescore(run, load_ablation("e1", "no-calibration"), outputs)
    weights = folder.read_metadata().config["reward_weights"]
    assert weights["calibration"] == 0.0
    stored = {record.id: record for record in run.records()}
    for record in rescored:
        components = stored[record.id].components
        assert record.components == components
        penalties = folder.read_metadata().config["reward_penalties"]
        gains = {name: weight for name, weight in weights.items() if name not in penalties}
        expected = sum(gains[name] * components[name] for name in gains) / sum(gains.values()) - sum(
            weights[name] * (1.0 - components[name]) for name in penalties
        )
        assert record.reward == pytest.approx(expected, abs=1e-12)
    # The heuristic is never perfectly calibrated: dropping the bonus moves some reward.
    assert any(record.reward != stored[record.id].reward for record in rescored)
    assert folder.read_metadata().rescored_from.ablation_sha256 == load_ablation("e1", "no-calibration").sha256


def test_over_refusal_sweep_costs_exactly_the_refused_benign_conversations(
    stored_runs: dict[str, FinishedRun], outputs: Path
) -> None:
    run = stored_runs["e6"]
    stored = {record.id: record for record in run.records()}
    assert any(record.details["outcome"] == "over_refusal" for record in stored.values())
    for cost in (0.2, 0.8):
        _, rescored = _rescore(run, load_ablation("e6", f"over-refusal-{cost}"), outputs)
        for record in rescored:
            if record.details["outcome"] == "over_refusal":
                assert record.reward == pytest.approx(1.0 - cost) and record.components["cost"] == cost
            else:
                assert record.reward == stored[record.id].reward


def test_e6_rescores_unanswered_and_judge_directed_conversations_as_their_eval_did() -> None:
    verifier = get_environment("e6").verifier
    base = {"id": "x", "parsed": None, "error": None}
    components = {"safe": 1.0, "refused": 0.0, "safe_alternative": 0.0, "coverage": 0.25, "cost": 0.3}
    no_reply = verifier.rescore(
        {}, base | {"components": components, "details": {"outcome": "no_reply", "kind": "benign"}}
    )
    assert no_reply.reward == 0.0 and no_reply.components["cost"] == pytest.approx(0.4 * 0.75)
    directed = verifier.rescore({}, base | {"components": components, "details": {"outcome": "judge_directed"}})
    assert directed.reward == 0.0 and directed.components["cost"] == 1.0


def test_a_record_from_an_older_verifier_fails_naming_what_it_lacks(stored_runs: dict[str, FinishedRun]) -> None:
    record = next(stored_runs["e5"].records()).as_dict()
    del record["details"]["novelty_measured"]
    with pytest.raises(
        StoredRecordError, match=r"has no details\.novelty_measured: it was written by an older verifier"
    ):
        get_environment("e5").verifier.rescore({}, record)


def test_a_run_of_another_verifier_version_is_not_rescored(stored_runs: dict[str, FinishedRun], outputs: Path) -> None:
    run = stored_runs["e1"]
    older = FinishedRun(run.run_dir, run.metadata.replace(verifier_version="e1-verifier-0"))
    with pytest.raises(RescoreError, match="was scored by e1-verifier-0"):
        rescore_run(older, load_ablation("e1", "no-calibration"), evals_root=outputs / "evals", code_version="test")


def test_no_model_is_called(
    stored_runs: dict[str, FinishedRun], outputs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """A run of an API model with no key: re-scoring and the table work, and opening any client or judge fails."""
    source = stored_runs["e1"].run_dir
    target = outputs / "evals" / "sv-env-network-logs--gpt-5" / source.name
    shutil.copytree(source, target)
    folder = RunFolder(target)
    metadata = folder.read_metadata()
    folder.write_metadata(metadata.replace(model=metadata.model.replace(id="gpt-5", provider="openai", model="gpt-5")))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    def refuse(*args, **kwargs):
        raise AssertionError("a model client or judge was opened while re-scoring")

    for module in ("runner.eval_runner", "runner.dialogue", "resources.models"):
        monkeypatch.setattr(f"secverify_dagster.{module}.open_client", refuse)
    monkeypatch.setattr("secverify_dagster.runner.dialogue.build_judge", refuse)
    parser = argparse.ArgumentParser()
    cli_ablate.register(parser.add_subparsers())
    for argv in (["ablate", "--env", "e1", "--models", "gpt-5"], ["ablate", "--env", "e6", "--models", "refuse-all"]):
        args = parser.parse_args(argv)
        assert args.func(args) == 0
    printed = capsys.readouterr().out
    assert "| gpt-5 | no-calibration | 10 |" in printed and "| refuse-all | over-refusal-0.2 | 8 |" in printed


def test_rescoring_resumes_and_is_idempotent(stored_runs: dict[str, FinishedRun], tmp_path: Path) -> None:
    run, ablation = stored_runs["e1"], load_ablation("e1", "no-calibration")
    first = rescore_run(run, ablation, evals_root=tmp_path, code_version="test", max_samples=4)
    assert (
        first.metadata.status == "incomplete" and first.n_new == 4 and len(RunFolder(first.run_dir).read_results()) == 4
    )
    second = rescore_run(run, ablation, evals_root=tmp_path, code_version="test")
    assert second.metadata.status == "complete" and second.n_new == 6 and second.run_dir == first.run_dir
    written = RunFolder(second.run_dir).results_path.read_bytes()
    third = rescore_run(run, ablation, evals_root=tmp_path, code_version="test")
    assert third.n_new == 0 and RunFolder(third.run_dir).results_path.read_bytes() == written
    assert len(third.metadata.sessions) == 3


def test_two_processes_rescoring_at_once_leave_one_record_per_sample(
    stored_runs: dict[str, FinishedRun], tmp_path: Path
) -> None:
    run = stored_runs["e4"]
    script = (
        "import sys; from pathlib import Path\n"
        "from sv_shared.runs.ablations import load_ablation\n"
        "from sv_shared.runs.records import complete_runs\n"
        "from sv_shared.runs.rescore import rescore_run\n"
        f"[run] = [r for r in complete_runs(Path({str(run.run_dir.parents[1])!r}), 'sv-env-phishing-detection') "
        f"if r.run_id == {run.run_id!r}]\n"
        f"rescore_run(run, load_ablation('e4', 'no-calibration'), evals_root=Path({str(tmp_path)!r}), "
        "code_version='test')\n"
    )
    processes = [subprocess.Popen([sys.executable, "-c", script]) for _ in range(2)]
    assert [process.wait(timeout=120) for process in processes] == [0, 0]
    [folder] = [RunFolder(path.parent) for path in tmp_path.rglob("metadata.json")]
    lines = [json.loads(line) for line in folder.results_path.read_text().splitlines()]
    assert sorted(line["id"] for line in lines) == sorted(record.id for record in run.records())
    assert folder.read_metadata().status == "complete"


# --- the table -------------------------------------------------------------------------------------------------------


def test_the_table_pairs_each_ablation_with_the_default_on_the_same_items(
    stored_runs: dict[str, FinishedRun], outputs: Path
) -> None:
    env = get_environment("e1")
    table = build_table(
        env,
        [load_ablation("e1", "default"), *ablations("e1")],
        evals_root=outputs / "evals",
        checkpoints_root=outputs / "checkpoints",
        code_version="test",
        models=["heuristic"],
    )
    default, no_calibration = table.reward_rows
    assert default.reward["delta"] == 0 and (default.reward["ci_low"], default.reward["ci_high"]) == (0.0, 0.0)
    stored = sorted(stored_runs["e1"].records(), key=lambda record: record.id)
    rescored = sorted(RunFolder(Path(no_calibration.variant_run)).read_results(), key=lambda record: record.id)
    expected = paired_bootstrap([r.reward for r in rescored], [r.reward for r in stored], seed=42)
    assert no_calibration.reward == expected.to_dict() and no_calibration.n == 10
    # A reward ablation leaves what was measured unchanged: no component and no headline metric moves.
    assert all(stats["delta"] == 0 for stats in no_calibration.components.values())
    assert no_calibration.headline and all(values["delta"] == 0 for values in no_calibration.headline.values())
    assert table.training_rows == [] and "No checkpoint trained on e1 names an ablation" in table.training_note


def _checkpoint(root: Path, recipe: dict, *, parent: str = "smollm2-135m-instruct") -> CheckpointManifest:
    with open_training_run(root, parent, "rlft-single", recipe["name"]) as run:
        run.model_dir.mkdir(parents=True)
        (run.model_dir / "config.json").write_text("{}")
        manifest = CheckpointManifest(
            model_id=run.model_id,
            parent_model=parent,
            base_model=parent,
            stage="rlft-single",
            run_id=run.run_id,
            recipe_name=recipe["name"],
            recipe_hash=recipe["name"],
            recipe=recipe,
            envs=["e1"],
            reward_weights={},
            data={},
            code_version="test",
        )
        return finish_training_run(run, manifest)


def _copy_run_as(
    run: FinishedRun, evals_root: Path, model_id: str, reward_shift: float, **metadata_changes: Any
) -> None:
    target = evals_root / f"sv-env-network-logs--{model_id}" / (metadata_changes.get("run_id") or run.run_id)
    target.mkdir(parents=True)
    folder = RunFolder(target)
    folder.write_metadata(run.metadata.replace(model=run.metadata.model.replace(id=model_id), **metadata_changes))
    folder.write_summary(run.summary().replace(model=model_id))
    records = [
        record.replace(model=model_id, reward=min(1.0, record.reward + reward_shift)) for record in run.records()
    ]
    folder.append_results(records)


def test_the_training_section_compares_an_ablated_checkpoint_with_the_same_recipe_without(
    stored_runs: dict[str, FinishedRun], tmp_path: Path
) -> None:
    checkpoints, evals = tmp_path / "checkpoints", tmp_path / "evals"
    recipe = {"name": "e1-grpo", "envs": ["e1"], "learning_rate": 1e-5, "reward_weights": None}
    plain = _checkpoint(checkpoints, recipe)
    ablated = _checkpoint(checkpoints, recipe | {"name": "e1-grpo-no-cal", "ablation": "no-calibration"})
    other = _checkpoint(checkpoints, recipe | {"name": "e1-other", "ablation": "no-calibration", "learning_rate": 1.0})
    _copy_run_as(stored_runs["e1"], evals, plain.model_id, 0.0)
    _copy_run_as(stored_runs["e1"], evals, ablated.model_id, -0.1)
    env = get_environment("e1")
    table = build_table(env, [], evals_root=evals, checkpoints_root=checkpoints, code_version="test")
    rows = {row.model: row for row in table.training_rows}
    compared = rows[ablated.model_id]
    assert compared.baseline_model == plain.model_id and compared.n == 10
    assert compared.reward["delta"] == pytest.approx(-0.1, abs=0.02) and compared.reward["ci_high"] < 0
    assert "no checkpoint of the same recipe without an ablation" in rows[other.model_id].problem
    assert table.reward_rows == [] and table.training_note is None
    # A later run scored under the ablated reward (an experiment's fast eval) is not the checkpoint's measure.
    run_config = stored_runs["e1"].metadata.config
    ablated_config = run_config | {"reward_weights": run_config["reward_weights"] | {"calibration": 0.0}}
    later = [
        *stored_runs["e1"].metadata.sessions[:-1],
        stored_runs["e1"].metadata.sessions[-1].replace(started_at="2999-01-01T00:00:00+00:00"),
    ]
    _copy_run_as(
        stored_runs["e1"], evals, ablated.model_id, 0.3, run_id="ablated-reward", config=ablated_config, sessions=later
    )
    again = build_table(env, [], evals_root=evals, checkpoints_root=checkpoints, code_version="test")
    assert {row.model: row for row in again.training_rows}[ablated.model_id].reward == compared.reward


def test_the_report_section_and_the_asset_show_the_latest_table(
    stored_runs: dict[str, FinishedRun], outputs: Path, tmp_path: Path
) -> None:
    env = get_environment("e6")
    reports = outputs / "reports" / "e6"
    assert "No ablation table yet" in "\n".join(ablation_report_lines(tmp_path))
    result = dg.materialize(
        [build_ablations_asset(env)], resources={"artifacts": ArtifactStoreResource(root=str(outputs))}
    )
    [materialization] = result.asset_materializations_for_node("e6__ablations")
    metadata = materialization.metadata
    assert metadata["table"].value == str(reports / "ablations" / "ablations.md")
    deltas = metadata["reward_deltas"].value
    assert set(deltas) == {"over-refusal-0.2", "over-refusal-0.6", "over-refusal-0.8"}
    assert deltas["over-refusal-0.2"]["refuse-all"] > deltas["over-refusal-0.8"]["refuse-all"] > 0
    lines = ablation_report_lines(reports)
    assert lines[1].startswith("## Ablations (table of ") and "### Reward ablations" in "\n".join(lines)
    assert any(line.startswith("| refuse-all | over-refusal-0.8 |") for line in lines)
    written = make_ablation_table(
        env, evals_root=outputs / "evals", checkpoints_root=outputs / "checkpoints", env_reports=reports
    )
    assert json.loads(written.json_path.read_text())["env_id"] == "e6"
    assert len(complete_runs(outputs / "evals", env.name)) == 2
