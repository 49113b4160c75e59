"""E1 materializes end to end in a temporary instance: data lineage, checks, an eval partition, the report."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from secverify_dagster.assets.keys import eval_key
from secverify_dagster.definitions import defs
from secverify_dagster.partitions import add_model_partitions, models_partition_name


@pytest.fixture()
def outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path))
    return tmp_path


def test_e1_lineage_materializes_with_passing_checks(outputs: Path) -> None:
    with dg.instance_for_test() as instance:
        data = defs.resolve_job_def("e1_data_job").execute_in_process(instance=instance)
        assert data.success
        checks = [(e.asset_key.to_user_string(), e.check_name, e.passed) for e in data.get_asset_check_evaluations()]
        assert len(checks) == 6, checks
        assert all(passed for _, _, passed in checks), checks
        curated = outputs / "datasets" / "e1" / "curated"
        splits = {name: pl.read_parquet(curated / f"{name}.parquet") for name in ("train", "dev", "test")}
        assert (
            sum(frame.height for frame in splits.values())
            == pl.read_parquet(outputs / "datasets" / "e1" / "raw" / "embedded.parquet").height
        )
        provenance = json.loads((curated / "test.metadata.json").read_text())
        assert provenance["train_sources"] == ["embedded"] and provenance["seed"] == 42
        (synthetic,) = (outputs / "datasets" / "e1" / "synthetic").glob("*/synthetic.parquet")
        assert pl.read_parquet(synthetic)["generator"].null_count() == 0
        # Each data asset's data version is its content hash, so Dagster's staleness follows the items themselves.
        versions = {
            event.asset_key.to_user_string(): event.materialization.tags.get("dagster/data_version")
            for event in data.get_asset_materialization_events()
        }
        assert (
            versions["e1/raw_embedded"]
            == json.loads((outputs / "datasets" / "e1" / "raw" / "embedded.metadata.json").read_text())["hash"]
        )
        assert all(versions.values()) and len(set(versions.values())) == len(versions), versions

        # gpt-5 as its set holds it once its key was set (partitions stay when the key goes).
        add_model_partitions(instance, [("e1", "heuristic"), ("e1", "gpt-5")])
        evals = defs.resolve_implicit_global_asset_job_def()
        result = evals.execute_in_process(
            instance=instance, partition_key="heuristic", asset_selection=[eval_key("e1")]
        )
        assert result.success
        (materialization,) = result.get_asset_materialization_events()
        assert (materialization.asset_key, materialization.partition) == (eval_key("e1"), "heuristic")
        run_dir = Path(materialization.materialization.metadata["run_dir"].value)
        assert run_dir.is_relative_to(outputs / "evals" / "sv-env-network-logs--heuristic")
        assert (run_dir / "results.jsonl").read_text().count("\n") == materialization.materialization.metadata[
            "n"
        ].value
        # The run's trajectory page, linked from the materialization.
        assert Path(materialization.materialization.metadata["trajectories"].value) == run_dir / "trajectories.html"
        assert (run_dir / "trajectories.html").is_file()
        # Every feature-ablated view is run beside the full split, under evals/views/<view>/.
        view_rewards = materialization.materialization.metadata["view_reward_means"].value
        assert set(view_rewards) == {"no-bytes", "no-packets", "no-state", "no-service"}
        for view in view_rewards:
            assert (outputs / "evals" / "views" / view / "sv-env-network-logs--heuristic").is_dir()
        # The UI shows figures to 4 decimals; summary.json keeps the exact value.
        exact = json.loads((run_dir / "summary.json").read_text())["metrics"]["reward"]["mean"]
        assert materialization.materialization.metadata["reward_mean"].value == round(exact, 4)
        assert all(value == round(value, 4) for value in view_rewards.values())

        # A model without its key is skipped: the run succeeds and nothing is materialized or scored.
        skipped = evals.execute_in_process(instance=instance, partition_key="gpt-5", asset_selection=[eval_key("e1")])
        assert skipped.success
        assert not skipped.get_asset_materialization_events()
        assert not (outputs / "evals" / "sv-env-network-logs--gpt-5").exists()

        report = defs.resolve_job_def("e1_report_job").execute_in_process(instance=instance)
        assert report.success
        (made,) = report.asset_materializations_for_node("e1__report")
        report_path = Path(made.metadata["report"].value)
        text = report_path.read_text()
        assert "| heuristic |" in text
        assert "## Robustness to missing fields" in text and "no-state" in text
        assert (report_path.parent / "reliability.png").stat().st_size > 0
        assert (report_path.parent / "risk_coverage.png").stat().st_size > 0
        # The report's combined trajectory page, and the model's own page named in the triage section.
        assert (report_path.parent / "trajectories.html").is_file() and "heuristic in `" in text


def test_a_baseline_of_another_environment_is_skipped_with_its_reason(outputs: Path) -> None:
    with dg.instance_for_test() as instance:
        # Sets list only runnable pairs; one added by hand is still refused with its reason.
        instance.add_dynamic_partitions(models_partition_name("e6"), ["heuristic"])
        result = defs.resolve_implicit_global_asset_job_def().execute_in_process(
            instance=instance, partition_key="heuristic", asset_selection=[eval_key("e6")]
        )
        assert result.success and not result.get_asset_materialization_events()
        (observation,) = [
            event.asset_observation_data.asset_observation for event in result.get_asset_observation_events()
        ]
        assert observation.metadata["status"].value == "skipped"
        assert "rule baseline for e1" in observation.metadata["reason"].value


def test_missing_real_corpus_fails_with_a_pointer_to_its_config(outputs: Path) -> None:
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [
                asset
                for asset in defs.assets
                if isinstance(asset, dg.AssetsDefinition) and dg.AssetKey(["e1", "raw_cicids2017"]) in asset.keys
            ],
            instance=instance,
            resources=defs.resources,
            raise_on_error=False,
        )
        assert not result.success
        message = str(result.get_step_failure_events()[0].step_failure_data.error)
        assert "data.cicids2017.path" in message
