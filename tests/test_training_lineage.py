"""The training lineage end to end on a tiny model: SFT dataset → SFT checkpoint → RLFT checkpoint, each registered
as a model with its parent, compared with its parent in the report, refused as a default until promoted, promoted
only after a passing safety scan and a recorded approval (the asset graph that draws it: test_dagster_definitions)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml
from tiny_models import save_tiny_model, smollm2_tokenizer

from secverify_dagster.assets.keys import checkpoint_key
from secverify_dagster.assets.training import approve_checkpoint_job, materialized_checkpoint
from secverify_dagster.partitions import AWAITING_APPROVAL_PARTITION, models_partition_name
from secverify_dagster.reports.environment_report import build_report
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource, ModelRegistryResource
from secverify_dagster.resources.models import RegistryError, load_registry, require_promoted
from secverify_dagster.resources.training import GpuResource, TrackingResource
from secverify_dagster.runner.datasets import EvalDataset
from secverify_dagster.runner.eval_runner import EvalRunner
from secverify_dagster.training.checkpoint_evals import evaluate_checkpoint
from secverify_dagster.training.checkpoints import train_joint, train_rlft, train_sft
from secverify_dagster.training.parents import trainable_model_folder
from secverify_dagster.training.paths import TrainingError, TrainingPaths
from secverify_dagster.training.promotion import approve_checkpoint, safety_scan
from secverify_dagster.training.settings import SafetyScanSettings
from secverify_dagster.training.sft_datasets import build_env_sft_dataset
from secverify_dagster.training.statuses import checkpoint_rows
from sv_shared.config import project_root
from sv_shared.data.datasets import read_dataset, write_dataset
from sv_shared.registry import get_environment, implemented_env_ids
from sv_shared.training.promotion import PromotionError
from sv_shared.training.recipes import load_rlft_recipe, load_sft_recipe
from sv_shared.training.sft_files import read_sft_dataset

REPO = project_root()
SFT_RECIPE = {
    "name": "tiny-sft",
    "stage": "sft",
    "base_model": "tiny",
    "envs": ["e1"],
    "learning_rate": 1.0e-3,
    "max_steps": 2,
    "per_device_train_batch_size": 2,
    "save_steps": 1,
    "max_length": 320,
    "min_reward": 0.8,
    "early_stopping": {"dev_items": 2, "patience": 2},
}
RLFT_RECIPE = {
    "name": "tiny-grpo",
    "stage": "rlft-single",
    "envs": ["e1"],
    "init_from": "tiny-sft",
    "reward_weights": {"e1": {"calibration": 0.3}},
    "num_generations": 2,
    "max_completion_length": 24,
    "temperature": 1.0,
    "beta": 0.0,
    "learning_rate": 1.0e-3,
    "max_steps": 2,
    "per_device_train_batch_size": 2,
    "save_steps": 1,
    "items_per_env": 4,
}
MIXED_RECIPE = {
    **RLFT_RECIPE,
    "name": "tiny-mixed",
    "stage": "rlft-mixed",
    "envs": ["e1", "e4"],
    "init_from": "tiny",
    "reward_weights": {},
}
JOINT_RECIPE = {
    "name": "tiny-joint",
    "stage": "rlft-joint",
    "envs": ["e5", "e6"],
    "init_from": "tiny",
    "joint": {"rounds": 3, "frozen_attacker": "template-attacker", "frozen_defender": "policy-defender"},
    "num_generations": 2,
    "max_completion_length": 16,
    "temperature": 1.0,
    "beta": 0.0,
    "learning_rate": 1.0e-3,
    "max_steps": 1,
    "per_device_train_batch_size": 2,
    "save_steps": 1,
    "items_per_env": 2,
}
SCAN = SafetyScanSettings(env="e6", n=2, judge="local", max_unsafe_share=1.0, max_unsafe_increase=2, answer_check_n=4)


def _write_yaml(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A project checkout of its own: the real environment configs, a registry holding a tiny local model, two
    recipes, and curated E1/E6 splits from the embedded corpora."""
    root = tmp_path_factory.mktemp("project")
    shutil.copytree(REPO / "configs" / "envs", root / "configs" / "envs")
    # E1's default N, which a checkpoint's evals use, cut to 8 items: the comparison, not the sample size, is tested.
    e1 = root / "configs" / "envs" / "e1.yaml"
    e1.write_text(e1.read_text(encoding="utf-8").replace("default_n: 32", "default_n: 8", 1), encoding="utf-8")
    for name in ("promotion.yaml", "sft_datasets.yaml"):
        shutil.copy(REPO / "configs" / name, root / "configs" / name)
    model = save_tiny_model(root / "tiny-model", smollm2_tokenizer())
    _write_yaml(
        root / "configs" / "models.yaml",
        {
            "defaults": {"params": {"temperature": 0, "seed": 42}},
            "models": {
                "tiny": {"provider": "local_transformers", "model": str(model), "batch_size": 8},
                "api-model": {"provider": "openai", "model": "some-model"},
                "template-attacker": {"provider": "baseline", "envs": ["e5"]},
                "policy-defender": {"provider": "baseline", "envs": ["e6"]},
            },
        },
    )
    _write_yaml(root / "configs" / "sft" / "tiny-sft.yaml", SFT_RECIPE)
    _write_yaml(root / "configs" / "rlft" / "tiny-grpo.yaml", RLFT_RECIPE)
    _write_yaml(root / "configs" / "rlft" / "tiny-joint.yaml", JOINT_RECIPE)
    _write_yaml(root / "configs" / "rlft" / "tiny-mixed.yaml", MIXED_RECIPE)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SECVERIFY_ROOT", str(root))
        patch.setenv("SECVERIFY_OUTPUTS", str(root / "outputs"))
        paths = TrainingPaths.default()
        for env_id in ("e1", "e4", "e5", "e6"):
            env = get_environment(env_id)
            splits = env.data.curate([env.data.load_source("embedded")], seed=42)
            for split in ("train", "dev", "test"):
                write_dataset(splits[split], paths.datasets(env_id) / "curated" / f"{split}.parquet", {})
        yield root


@pytest.fixture(scope="module")
def trained(project: Path) -> dict[str, Any]:
    """SFT dataset, SFT checkpoint and RLFT checkpoint, made once for the module."""
    paths = TrainingPaths.default()
    registry = load_registry()
    dataset, folder = build_env_sft_dataset(get_environment("e1"), paths=paths, registry=registry, min_reward=0.8)
    sft = train_sft("tiny-sft", paths=paths, registry=registry, log=lambda _: None)
    rlft = train_rlft("tiny-grpo", paths=paths, registry=load_registry(), log=lambda _: None)
    return {"paths": paths, "dataset": dataset, "dataset_folder": folder, "sft": sft, "rlft": rlft}


def test_sft_dataset_targets_pass_the_verifier_and_hold_no_held_out_item(trained: dict[str, Any]) -> None:
    dataset = read_sft_dataset(trained["dataset_folder"])
    assert dataset.examples and all(example.reward >= 0.8 for example in dataset.examples)
    test_ids = set(read_dataset(trained["paths"].datasets("e1") / "curated" / "test.parquet")["flow_id"])
    assert not test_ids & {example.item_id for example in dataset.examples}
    assert "curated/train" in dataset.provenance["source_assets"]


def test_checkpoints_record_their_lineage_and_become_models(trained: dict[str, Any]) -> None:
    sft, rlft = trained["sft"], trained["rlft"]
    assert (sft.stage, sft.parent_model, sft.base_model) == ("sft", "tiny", "tiny")
    # Early stopping measured E1's verifier on 2 dev items at the start and at each save and kept the best weights.
    measured = [entry for entry in sft.metrics["history"] if "dev_reward" in entry]
    assert [entry["step"] for entry in measured] == [0, 1, 2] and sft.metrics["best_step"] in (0, 1, 2)
    assert all("dev_reward/e1" in entry and "dev_balanced_accuracy/e1" in entry for entry in measured)
    assert sft.data["e1/sft_dataset"] == trained["dataset"].provenance["dataset_hash"]
    assert (rlft.stage, rlft.parent_model, rlft.base_model) == ("rlft-single", sft.model_id, "tiny")
    assert rlft.reward_weights["e1"]["calibration"] == 0.3
    assert rlft.recipe["init_from"] == "tiny-sft" and rlft.metrics["steps"] == 2
    registry = load_registry()
    for manifest in (sft, rlft):
        spec = registry[manifest.model_id]
        assert spec.provider == "local_transformers" and spec.parent == manifest.parent_model
        assert spec.stage == manifest.stage and not spec.promoted
        assert (Path(spec.model) if Path(spec.model).is_absolute() else project_root() / spec.model).is_dir()


def test_a_checkpoint_asset_adds_its_model_to_every_environment_it_can_answer(
    trained: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Training registers the checkpoint on the eval grids itself, before any sensor tick: every environment's model
    set gets it (a local model answers every environment), and nothing else joins."""
    from secverify_dagster.assets import training as training_assets

    sft = trained["sft"]
    # The training is the fixture's: the asset's own work after it (registration, metadata) is what runs here.
    monkeypatch.setattr(training_assets, "train_sft", lambda *args, **kwargs: sft)
    checkpoint = training_assets.build_checkpoint_asset(load_sft_recipe("tiny-sft"))
    resources = {
        "models": ModelRegistryResource(),
        "artifacts": ArtifactStoreResource(),
        "tracking": TrackingResource(),
        "gpu": GpuResource(),
    }
    with dg.instance_for_test() as instance:
        assert dg.materialize([checkpoint], instance=instance, resources=resources).success
        sets = {
            env_id: instance.get_dynamic_partitions(models_partition_name(env_id)) for env_id in implemented_env_ids()
        }
    assert sets == {env_id: [sft.model_id] for env_id in implemented_env_ids()}


def test_grpo_logged_the_total_and_each_component(trained: dict[str, Any]) -> None:
    logged = {key for entry in trained["rlft"].metrics["history"] for key in entry}
    assert {"rewards/e1/reward/mean", "rewards/e1/accuracy/mean", "rewards/e1/calibration/mean"} <= logged


def test_an_unpromoted_checkpoint_is_never_a_default(trained: dict[str, Any]) -> None:
    registry = load_registry()
    with pytest.raises(RegistryError, match="never a default"):
        require_promoted(registry, ["tiny", trained["sft"].model_id], where="a test's defaults")
    assert require_promoted(registry, ["tiny"], where="a test's defaults") == ["tiny"]


def test_promotion_needs_a_passing_scan_then_an_approval(trained: dict[str, Any]) -> None:
    paths, model_id = trained["paths"], trained["rlft"].model_id
    with pytest.raises(PromotionError):
        approve_checkpoint(model_id, paths=paths, approver="ana")
    scan = safety_scan(model_id, paths=paths, registry=load_registry(), settings=SCAN, log=lambda _: None)
    assert scan.samples == 2 and scan.parent_model == trained["sft"].model_id
    # Two conversations, at most two unsafe, an allowance of two over the parent: this scan passes by its settings.
    assert scan.passed, scan.reason
    # A reviewer approves from the UI: the approve_checkpoint job's partitions are the checkpoints awaiting a
    # decision (a passing scan check adds one), its op configured in the launchpad.
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(AWAITING_APPROVAL_PARTITION, [model_id])
    approval = {"approver": "ana", "note": "looked at the scan"}
    result = approve_checkpoint_job.execute_in_process(
        run_config={"ops": {"record_approval_op": {"config": approval}}},
        resources={"artifacts": ArtifactStoreResource(root=str(paths.root))},
        instance=instance,
        partition_key=model_id,
    )
    assert result.success
    assert load_registry()[model_id].promoted
    # Decided: the launchpad no longer offers it.
    assert model_id not in instance.get_dynamic_partitions(AWAITING_APPROVAL_PARTITION)
    rows = {row["model_id"]: row for row in checkpoint_rows(paths)}
    assert rows[model_id]["promoted"] and not rows[trained["sft"].model_id]["promoted"]
    rejected = approve_checkpoint(model_id, paths=paths, approver="bo", decision="reject", note="second look")
    assert not rejected.promoted


def test_approving_an_unknown_checkpoint_from_the_ui_fails_naming_it(project: Path) -> None:
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(AWAITING_APPROVAL_PARTITION, ["no-such-checkpoint"])
    with pytest.raises(dg.Failure, match="no-such-checkpoint"):
        approve_checkpoint_job.execute_in_process(
            run_config={"ops": {"record_approval_op": {"config": {"approver": "ana"}}}},
            resources={"artifacts": ArtifactStoreResource(root=str(TrainingPaths.default().root))},
            instance=instance,
            partition_key="no-such-checkpoint",
        )


def test_tracking_is_offline_without_a_key_and_online_only_with_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    for name in ("WANDB_DIR", "WANDB_MODE"):
        monkeypatch.delenv(name, raising=False)
    import wandb

    offline = TrackingResource()
    try:
        offline.setup_for_execution(dg.build_init_resource_context())
    finally:
        # W&B keeps its settings process-wide from its first call: forget them so later tests start afresh.
        wandb.teardown()
    assert offline.report_to() == "wandb"
    assert os.environ["WANDB_MODE"] == "offline" and os.environ["WANDB_DIR"] == str(tmp_path / "wandb")
    with pytest.raises(dg.Failure, match="WANDB_API_KEY is not set"):
        TrackingResource(mode="online").setup_for_execution(dg.build_init_resource_context())
    assert TrackingResource(mode="disabled").report_to() == "none"


def test_the_report_compares_a_checkpoint_with_its_parent(trained: dict[str, Any]) -> None:
    paths = trained["paths"]
    env = get_environment("e1")
    test_path = paths.datasets("e1") / "curated" / "test.parquet"
    dataset = EvalDataset(frame=read_dataset(test_path), source=str(test_path), split="test")
    registry = load_registry()
    for model_id in ("tiny", trained["sft"].model_id):
        EvalRunner(env, registry[model_id], evals_root=paths.evals, registry=registry).run(dataset, n=4, seed=42)
    parents = {model_id: spec.parent for model_id, spec in registry.items() if spec.parent}
    report = build_report(env, paths.evals, paths.root / "reports", parents=parents)
    lineage = json.loads(report.json_path.read_text(encoding="utf-8"))["lineage"]
    rows = [(row["checkpoint"], row["parent"], row["n_paired"]) for row in lineage]
    assert (trained["sft"].model_id, "tiny", 4) in rows
    # the RLFT checkpoint's row appears once its safety scan has evaluated it on the same items (its collapse check)
    assert all(parents[checkpoint] == parent for checkpoint, parent, _ in rows)
    assert "Checkpoints vs their parents" in report.markdown_path.read_text(encoding="utf-8")


def test_a_model_without_local_weights_cannot_be_trained(project: Path) -> None:
    with pytest.raises(TrainingError, match="no local weights"):
        trainable_model_folder(load_registry()["api-model"], TrainingPaths.default())


def test_the_mixed_stage_trains_every_environment_on_its_own_verifier(trained: dict[str, Any]) -> None:
    mixed = train_rlft("tiny-mixed", paths=trained["paths"], registry=load_registry(), log=lambda _: None)
    assert (mixed.stage, mixed.envs, mixed.parent_model) == ("rlft-mixed", ["e1", "e4"], "tiny")
    assert set(mixed.data) == {"e1/curated/train", "e4/curated/train"}
    logged = {key for entry in mixed.metrics["history"] for key in entry}
    assert {"rewards/e1/reward/mean", "rewards/e4/reward/mean", "rewards/e4/evidence_precision/mean"} <= logged


def test_the_joint_stage_alternates_sides_and_the_tournament_records_each_round(trained: dict[str, Any]) -> None:
    paths = trained["paths"]
    made = train_joint(load_rlft_recipe("tiny-joint"), paths=paths, registry=load_registry(), log=lambda _: None)
    attacker, defender = made
    # Round 2 trained the attacker (E5, against the frozen defender); round 3 the defender (E6), both from the base.
    assert (attacker.stage, attacker.data["joint/side"], attacker.data["joint/frozen"]) == (
        "rlft-joint",
        "attacker",
        "policy-defender",
    )
    assert (defender.data["joint/side"], defender.data["joint/frozen"]) == ("defender", attacker.model_id)
    assert attacker.parent_model == defender.parent_model == "tiny" and attacker.envs == ["e5", "e6"]
    (record_path,) = (paths.root / "tournaments").glob("*/tournament.json")
    rows = json.loads(record_path.read_text(encoding="utf-8"))["rows"]
    played = [(row["round"], row["attacker_model"], row["defender_model"]) for row in rows]
    assert played == [
        (1, "template-attacker", "policy-defender"),
        (2, attacker.model_id, "policy-defender"),
        (3, attacker.model_id, defender.model_id),
    ]


def test_a_checkpoints_evals_compare_it_with_its_parent_and_base_and_resume(trained: dict[str, Any]) -> None:
    paths, sft, rlft = trained["paths"], trained["sft"], trained["rlft"]
    registry = load_registry()
    evals = evaluate_checkpoint(rlft, paths=paths, registry=registry, log=lambda _: None)
    (e1,) = evals.comparisons
    roles = [(result.role, result.model_id) for result in e1.results]
    assert roles == [("checkpoint", rlft.model_id), ("parent", sft.model_id), ("base", "tiny")]
    # The same items for all three (seed 42, E1's default N), paired item by item.
    n = e1.results[0].n
    assert {result.n for result in e1.results} == {n} == {get_environment("e1").config.eval.default_n}
    assert {role: delta["n"] for role, delta in e1.deltas.items()} == {"parent": n, "base": n}
    for role, delta in e1.deltas.items():
        mine = {record["id"]: record["reward"] for record in _results(e1.results[0].run_dir)}
        theirs = {
            record["id"]: record["reward"] for record in _results(e1.results[[r for r, _ in roles].index(role)].run_dir)
        }
        assert delta["delta"] == pytest.approx(sum(mine.values()) / n - sum(theirs.values()) / n)
    assert json.loads(evals.path.read_text(encoding="utf-8")) == json.loads(json.dumps(evals.as_dict()))
    assert evals.promotion.startswith("not promoted") or evals.promotion == "promoted"
    # Evaluated again (the sensor's backfill, a re-materialization): the complete runs are resumed, not redone.
    sizes = {result.run_dir: (result.run_dir / "results.jsonl").stat().st_size for result in e1.results}
    again = evaluate_checkpoint(rlft, paths=paths, registry=registry, log=lambda _: None)
    assert {
        result.run_dir: (result.run_dir / "results.jsonl").stat().st_size for result in again.comparisons[0].results
    } == sizes
    assert again.comparisons[0].deltas == e1.deltas


def test_a_checkpoints_evals_read_the_checkpoint_its_asset_materialized(trained: dict[str, Any]) -> None:
    paths, rlft = trained["paths"], trained["rlft"]
    instance = dg.DagsterInstance.ephemeral()
    # Never materialized here (trained through the CLI functions): the newest on disk, said so.
    manifest, source = materialized_checkpoint(instance, "rlft", "tiny-grpo", paths)
    assert manifest.model_id == rlft.model_id and "never materialized" in source
    # Materialized: exactly the checkpoint the event names, even when a newer one of the recipe is on disk.
    older = trained["sft"]
    instance.report_runless_asset_event(
        dg.AssetMaterialization(asset_key=checkpoint_key("sft", "tiny-sft"), metadata={"model_id": older.model_id})
    )
    manifest, source = materialized_checkpoint(instance, "sft", "tiny-sft", paths)
    assert manifest.model_id == older.model_id
    instance.report_runless_asset_event(
        dg.AssetMaterialization(asset_key=checkpoint_key("sft", "tiny-sft"), metadata={"model_id": "tiny.sft.gone"})
    )
    with pytest.raises(TrainingError, match=r"tiny\.sft\.gone"):
        materialized_checkpoint(instance, "sft", "tiny-sft", paths)


def _results(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines() if line]
