"""Experiment records (configs/experiments/<env>/<date>.yaml): validated with named errors; a run or checkpoint made
from one carries its path and hash; `secverify audit` shows it and notices when the file changed since.

Each test works in a temporary project root (a copy of configs/, SECVERIFY_ROOT) with its own outputs folder, so the
records it writes and edits never touch the checkout's."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

from secverify_dagster.audit.auditor import Auditor
from secverify_dagster.audit.events import DagsterRecords
from secverify_dagster.research.experiments import experiment_eval, training_inputs
from secverify_dagster.resources.models import load_registry
from secverify_dagster.runner.datasets import embedded_dataset, select_items
from secverify_dagster.runner.eval_runner import EvalRunner
from secverify_dagster.training import checkpoints
from secverify_dagster.training.inputs import ExperimentInputs, sft_examples
from secverify_dagster.training.parents import Parent
from secverify_dagster.training.paths import TrainingError, TrainingPaths
from sv_shared.config import ConfigError, project_root
from sv_shared.config.experiments import DataSlices, ExperimentError, experiment_recipe, load_experiment
from sv_shared.registry import get_environment
from sv_shared.training.checkpoints import CheckpointManifest, checkpoint_dir, read_manifest
from sv_shared.training.sft_files import SftDataset, SftExample, write_sft_dataset
from sv_shared.training.trainers import TrainingResult

REPO = project_root()
SHIPPED = "configs/experiments/e1/2026-11-24.yaml"
ABLATIONS = {
    "ablations": {
        "no-calibration": {"description": "calibration weight 0", "overrides": {"reward_weights.calibration": 0.0}},
        "strict-costs": {"description": "a cost, not a weight", "overrides": {"costs.miss": 2.0}},
    }
}
BASE: dict[str, Any] = {
    "name": "e1-test",
    "env": "e1",
    "date": "2026-11-24",
    "hypothesis": "calibration drives the gap",
    "owner": "security-ml",
    "eval": {"n": 4, "seed": 42, "split": "test"},
}


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = tmp_path / "project"
    shutil.copytree(REPO / "configs", project / "configs")
    (project / "configs" / "experiments").mkdir(exist_ok=True)
    (project / "configs" / "ablations" / "e1.yaml").write_text(yaml.safe_dump(ABLATIONS))
    monkeypatch.setenv("SECVERIFY_ROOT", str(project))
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path / "outputs"))
    return project


def write(root: Path, record: dict[str, Any], name: str = "2026-11-24.yaml", env: str = "e1") -> Path:
    path = root / "configs" / "experiments" / env / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(record))
    return path


def test_the_shipped_e1_experiment_is_valid() -> None:
    experiment, ref = load_experiment(Path(SHIPPED), REPO)
    assert (ref.path, experiment.env, experiment.eval.n) == (SHIPPED, "e1", 10)
    assert ref.sha256 == hashlib.sha256((REPO / SHIPPED).read_bytes()).hexdigest()
    assert experiment_recipe(experiment, REPO).name == experiment.training.recipe_name


@pytest.mark.parametrize(
    ("change", "name", "message"),
    [
        ({"learning_rate": 0.1}, "2026-11-24.yaml", "learning_rate: unknown key"),
        ({"date": "2026-11-23"}, "2026-11-24.yaml", "is not the file's date 2026-11-24"),
        ({}, "nov-24.yaml", "must be named <date>.yaml"),
        ({"env": "e2"}, "2026-11-24.yaml", "but the file is under e1/"),
        ({"hypothesis": ""}, "2026-11-24.yaml", "hypothesis"),
        ({"training": {"recipe": "rlft/nope"}}, "2026-11-24.yaml", "no rlft recipe 'nope'"),
        ({"training": {"recipe": "e1"}}, "2026-11-24.yaml", "sft/<name> or rlft/<name>"),
        ({"training": {"recipe": "rlft/e1", "overrides": {"name": "x"}}}, "2026-11-24.yaml", "cannot be overridden"),
        ({"training": {"recipe": "rlft/e1", "overrides": {"max_steps": "ten"}}}, "2026-11-24.yaml", "max_steps"),
        ({"training": {"recipe": "rlft/e1", "overrides": {"max_stepz": 3}}}, "2026-11-24.yaml", "max_stepz"),
        ({"reward": {"ablation": "nope"}}, "2026-11-24.yaml", "no ablation 'nope' for e1"),
        ({"reward": {"ablation": "no-calibration", "reward_weights": {"format": 1.0}}}, "2026-11-24.yaml", "not both"),
        ({"reward": {"reward_weights": {"elegance": 1.0}}}, "2026-11-24.yaml", "unknown component(s) ['elegance']"),
        ({"data": {"splits": ["test"]}}, "2026-11-24.yaml", "data.splits.0"),
        (
            {"training": {"recipe": "sft/e1"}, "data": {"labels": ["Malicious"]}},
            "2026-11-24.yaml",
            "an SFT recipe trains on its SFT datasets",
        ),
        (
            {"training": {"recipe": "rlft/e1"}, "reward": {"ablation": "strict-costs"}},
            "2026-11-24.yaml",
            "may only change reward weights",
        ),
        ({"eval": {"n": 0}}, "2026-11-24.yaml", "eval.n"),
    ],
)
def test_a_bad_record_fails_naming_the_file_and_the_field(
    root: Path, change: dict[str, Any], name: str, message: str
) -> None:
    path = write(root, BASE | change, name)
    with pytest.raises(ConfigError) as raised:
        load_experiment(path)
    assert message in str(raised.value)
    assert f"configs/experiments/e1/{name}" in str(raised.value)


def test_a_record_outside_the_project_or_missing_is_refused(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "e1" / "2026-11-24.yaml"
    outside.parent.mkdir(parents=True)
    outside.write_text(yaml.safe_dump(BASE))
    with pytest.raises(ExperimentError, match="must live under"):
        load_experiment(outside)
    with pytest.raises(ExperimentError, match="no such experiment record"):
        load_experiment(Path("configs/experiments/e1/2026-01-01.yaml"))
    (root / "configs" / "experiments" / "e1").mkdir(parents=True, exist_ok=True)
    (root / "configs" / "experiments" / "e1" / "2026-11-25.yaml").write_text("- a list\n")
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_experiment(Path("configs/experiments/e1/2026-11-25.yaml"))


def _heuristic_run(root: Path, path: Path, **asked: Any):
    found = experiment_eval(path, env_id="e1", **asked)
    runner = EvalRunner(found.env, load_registry()["heuristic"], evals_root=root.parent / "outputs" / "evals")
    dataset = embedded_dataset(found.env, split=found.split, seed=found.seed)
    return found, runner.run(dataset, n=found.n, seed=found.seed, experiment=found.ref)


def test_an_eval_made_from_an_experiment_records_its_path_and_hash(root: Path) -> None:
    path = write(root, BASE)
    found, outcome = _heuristic_run(root, path)
    assert outcome.status == "complete" and outcome.metadata.n_items == 4
    recorded = outcome.metadata.experiment
    assert (recorded.name, recorded.path) == ("e1-test", "configs/experiments/e1/2026-11-24.yaml")
    assert recorded.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert '"experiment"' in (outcome.run_dir / "metadata.json").read_text()

    # The same eval without the record, or with an edited record, is another run (the hash is in the fingerprint).
    runner = EvalRunner(found.env, load_registry()["heuristic"], evals_root=root.parent / "outputs" / "evals")
    plain = runner.run(embedded_dataset(found.env, split="test", seed=42), n=4, seed=42)
    assert plain.metadata.experiment is None and plain.run_dir != outcome.run_dir
    path.write_text(path.read_text() + "# refined\n")
    _, edited = _heuristic_run(root, path)
    assert edited.run_dir != outcome.run_dir and edited.metadata.experiment.sha256 != recorded.sha256


def test_an_eval_takes_n_seed_split_and_reward_from_the_experiment(root: Path) -> None:
    path = write(root, BASE | {"reward": {"ablation": "no-calibration"}, "eval": {"n": 4, "seed": 7, "split": "dev"}})
    found, outcome = _heuristic_run(root, path)
    assert (found.n, found.seed, found.split) == (4, 7, "dev")
    assert outcome.metadata.config["reward_weights"]["calibration"] == 0.0
    assert outcome.metadata.dataset.split == "dev" and outcome.metadata.seed == 7
    with pytest.raises(ExperimentError, match=r"n 10 \(it says 4\)"):
        experiment_eval(path, env_id="e1", n=10)
    with pytest.raises(ExperimentError, match="not e2"):
        experiment_eval(path, env_id="e2")
    with pytest.raises(ExperimentError, match="not --dataset"):
        experiment_eval(path, env_id="e1", dataset="flows.parquet")


def _experiment_link(outputs: Path, run_dir: Path) -> dict[str, Any]:
    chain = Auditor(outputs, DagsterRecords(None, unavailable="no instance in this test")).run_chain(run_dir)
    (link,) = [link for link in chain.walk() if link.kind == "experiment"]
    return {"status": link.status, "why": link.why, **link.facts}


def test_audit_shows_the_experiment_and_notices_a_changed_or_removed_file(root: Path) -> None:
    path = write(root, BASE)
    _, outcome = _heuristic_run(root, path)
    outputs = root.parent / "outputs"
    shown = _experiment_link(outputs, outcome.run_dir)
    assert shown["status"] == "present" and shown["path"] == "configs/experiments/e1/2026-11-24.yaml"
    assert shown["sha256"] == outcome.metadata.experiment.sha256 and "still has the recorded hash" in shown["why"]
    path.write_text(path.read_text().replace("calibration drives", "format drives"))
    assert "changed since" in _experiment_link(outputs, outcome.run_dir)["why"]
    path.unlink()
    gone = _experiment_link(outputs, outcome.run_dir)
    assert gone["status"] == "missing" and "no longer exists" in gone["why"]


def _curated_splits(root: Path) -> None:
    env = get_environment("e1")
    folder = root.parent / "outputs" / "datasets" / "e1" / "curated"
    folder.mkdir(parents=True)
    for split, frame in env.data.curate([env.data.load_source("embedded")], seed=42).items():
        frame.write_parquet(folder / f"{split}.parquet")


def _train_without_training(root: Path, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Train with the trainer replaced by one that writes a model folder, recording the rows it was given."""
    given: list[dict[str, Any]] = []

    def fake_grpo(recipe, *, base_model_dir, rows, output_dir, **_: Any) -> TrainingResult:
        given.extend(rows)
        model = output_dir / "model"
        model.mkdir(parents=True, exist_ok=True)
        (model / "config.json").write_text("{}")
        return TrainingResult(output_dir, model, recipe.max_steps, recipe.max_steps, 1.0, 1.0, 1.0, "max_rss")

    parent = Parent("smollm2-135m-instruct", "smollm2-135m-instruct", root)
    monkeypatch.setattr(checkpoints, "run_grpo", fake_grpo)
    monkeypatch.setattr(checkpoints, "resolve_parent", lambda *args, **kwargs: parent)
    return given


def test_a_checkpoint_trained_from_an_experiment_records_it_and_its_recipe(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _curated_splits(root)
    record = BASE | {
        "training": {"recipe": "rlft/e1", "overrides": {"max_steps": 2, "items_per_env": 8}},
        "data": {"splits": ["train", "dev"], "labels": ["Malicious"]},
        "reward": {"ablation": "no-calibration"},
    }
    path = write(root, record)
    kind, inputs = training_inputs(path)
    assert kind == "rlft" and inputs.recipe.max_steps == 2
    assert inputs.recipe.ablation == "no-calibration" and inputs.recipe.reward_weights == {"e1": {"calibration": 0.0}}
    given = _train_without_training(root, monkeypatch)
    paths = TrainingPaths(root.parent / "outputs")
    manifest = checkpoints.train_rlft("e1", paths=paths, registry={}, log=lambda _: None, experiment=inputs)

    assert manifest.experiment == inputs.ref
    assert manifest.recipe["ablation"] == "no-calibration" and manifest.recipe["max_steps"] == 2
    assert manifest.reward_weights["e1"]["calibration"] == 0.0
    assert set(manifest.data) == {"e1/curated/train", "e1/curated/dev"}
    # The data slices chose the prompts: train and dev items, malicious only.
    env = get_environment("e1")
    curated = paths.datasets("e1") / "curated"
    pool = pl.concat([pl.read_parquet(curated / "train.parquet"), pl.read_parquet(curated / "dev.parquet")])
    malicious = pool.filter(pl.col(env.data.label_column) == "Malicious")
    expected = [item[env.data.id_column] for item in select_items(env, malicious, 8, 42)]
    assert [row["item_id"] for row in given] == expected
    written = read_manifest(checkpoint_dir(paths.checkpoints, manifest))
    assert written.experiment == inputs.ref

    chain = Auditor(paths.root, DagsterRecords(None, unavailable="no instance in this test")).checkpoint_chain(
        manifest.model_id
    )
    (shown,) = [link for link in chain.walk() if link.kind == "experiment"]
    assert shown.status == "present" and shown.facts["sha256"] == inputs.ref.sha256


def test_a_manifest_without_an_experiment_keeps_its_content_hash() -> None:
    fields = {
        "model_id": "m.sft.r",
        "parent_model": "m",
        "base_model": "m",
        "stage": "sft",
        "run_id": "r",
        "recipe_name": "e1",
        "recipe_hash": "0" * 64,
        "recipe": {},
        "envs": ["e1"],
        "reward_weights": {},
        "data": {},
        "code_version": "abc",
        "created_at": "2026-11-24T00:00:00+00:00",
    }
    manifest = CheckpointManifest(**fields)
    assert "experiment" not in manifest.as_dict()
    assert manifest.content_hash() == CheckpointManifest.model_validate(manifest.as_dict()).content_hash()


def test_data_slices_default_to_the_train_split() -> None:
    assert DataSlices().splits == ["train"] and DataSlices().is_default


def test_an_rlft_recipe_naming_an_ablation_trains_under_its_weights(root: Path) -> None:
    from sv_shared.training.recipes import effective_reward_weights, load_rlft_recipe, recipe_hash

    source = yaml.safe_load((root / "configs" / "rlft" / "e1.yaml").read_text())
    (root / "configs" / "rlft" / "e1-no-cal.yaml").write_text(
        yaml.safe_dump(source | {"name": "e1-no-cal", "ablation": "no-calibration", "reward_weights": {}})
    )
    (root / "configs" / "rlft" / "e1-no-cal-fmt.yaml").write_text(
        yaml.safe_dump(
            source | {"name": "e1-no-cal-fmt", "ablation": "no-calibration", "reward_weights": {"e1": {"format": 0.3}}}
        )
    )
    plain, ablated = load_rlft_recipe("e1"), load_rlft_recipe("e1-no-cal")
    assert ablated.ablation == "no-calibration" and ablated.reward_weights == {"e1": {"calibration": 0.0}}
    assert effective_reward_weights(ablated)["e1"]["calibration"] == 0.0
    assert effective_reward_weights(plain)["e1"]["calibration"] > 0
    # The recipe's own weights join the ablation's; the recipe hash covers both (a changed ablation is a new run).
    mixed = load_rlft_recipe("e1-no-cal-fmt")
    assert mixed.reward_weights == {"e1": {"calibration": 0.0, "format": 0.3}}
    assert len({recipe_hash(plain), recipe_hash(ablated), recipe_hash(mixed)}) == 3
    (root / "configs" / "rlft" / "e1-bad.yaml").write_text(
        yaml.safe_dump(source | {"name": "e1-bad", "ablation": "strict-costs"})
    )
    with pytest.raises(ConfigError, match="may only change reward weights"):
        load_rlft_recipe("e1-bad")


def _sft_example(source: str, item: str) -> SftExample:
    return SftExample(
        messages=[{"role": "user", "content": f"flow {item}"}, {"role": "assistant", "content": "{}"}],
        env_id="e1",
        item_id=item,
        source=source,
        reward=1.0,
    )


def test_an_sft_experiment_keeps_only_the_synthetic_batches_it_names(root: Path, tmp_path: Path) -> None:
    examples = (
        _sft_example("reference", "a"),
        _sft_example("synthetic:2026-11-24-b1", "b"),
        _sft_example("synthetic:2026-11-24-b2", "c"),
    )
    paths = TrainingPaths(tmp_path / "outputs")
    dataset = SftDataset(examples=examples)
    digest = hashlib.sha256(dataset.train_bytes()).hexdigest()
    write_sft_dataset(paths.sft_dataset("e1"), dataset.model_copy(update={"provenance": {"dataset_hash": digest}}))

    def inputs(batches: list[str]) -> ExperimentInputs:
        path = write(root, BASE | {"training": {"recipe": "sft/e1"}, "data": {"synthetic_batches": batches}})
        return training_inputs(path)[1]

    recipe = inputs([]).recipe
    assert [e.item_id for e in sft_examples(recipe, paths)[0]] == ["a", "b", "c"]  # no experiment: all
    assert [e.item_id for e in sft_examples(recipe, paths, inputs([]))[0]] == ["a"]
    assert [e.item_id for e in sft_examples(recipe, paths, inputs(["2026-11-24-b2"]))[0]] == ["a", "c"]
    # A named batch the dataset does not hold (its spot-check had not passed when it was built) stops the run.
    with pytest.raises(TrainingError, match="no example of synthetic:2026-11-24-b3"):
        sft_examples(recipe, paths, inputs(["2026-11-24-b3"]))
    with pytest.raises(ExperimentError, match="takes only synthetic_batches"):
        inputs_with_splits = BASE | {"training": {"recipe": "sft/e1"}, "data": {"splits": ["dev"]}}
        training_inputs(write(root, inputs_with_splits))


def test_secverify_eval_takes_the_environment_from_the_experiment(root: Path, capsys: pytest.CaptureFixture) -> None:
    from secverify_dagster.cli.main import main

    path = write(root, BASE)
    assert main(["eval", "--experiment", str(path), "--model", "heuristic"]) == 0
    assert "sv-env-network-logs × heuristic (n=4, seed=42" in capsys.readouterr().out
    assert main(["eval", "--model", "heuristic"]) == 2
    assert "give --env (or --experiment" in capsys.readouterr().err


def test_secverify_train_with_an_experiment_trains_through_the_checkpoint_asset(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dagster as dg

    import secverify_dagster.pipeline as pipeline
    from secverify_dagster.assets.training import _experiment_inputs
    from secverify_dagster.cli.main import main

    path = write(root, BASE | {"training": {"recipe": "sft/e1", "overrides": {"max_steps": 3}}})
    asked: list[tuple[Any, ...]] = []
    monkeypatch.setattr(pipeline, "run_training", lambda *args, **kwargs: asked.append((*args, kwargs)) or 0)
    assert main(["train", "--experiment", str(path)]) == 0
    assert asked == [("sft", "e1", {"experiment": path})]
    # The asset takes the record's recipe (its overrides applied) and refuses a record of another recipe.
    assert _experiment_inputs(str(path), "sft", "e1").recipe.max_steps == 3
    with pytest.raises(dg.Failure, match="trains sft/e1, not rlft/e1"):
        _experiment_inputs(str(path), "rlft", "e1")
