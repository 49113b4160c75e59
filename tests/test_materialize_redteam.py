"""E5/E6 through Dagster: data lineage with checks, dialogue partitions, judge validation, tournament, reports."""

import json
from pathlib import Path

import dagster as dg
import pytest

from secverify_dagster.assets.keys import eval_key, synthetic_key
from secverify_dagster.definitions import defs
from secverify_dagster.partitions import add_model_partitions


def test_red_team_lineage_evals_judges_tournament_and_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path))
    with dg.instance_for_test() as instance:
        for env_id in ("e5", "e6"):
            data = defs.resolve_job_def(f"{env_id}_data_job").execute_in_process(instance=instance)
            assert data.success
            checks = [(e.check_name, e.passed) for e in data.get_asset_check_evaluations()]
            assert checks and all(passed for _, passed in checks), checks

        add_model_partitions(instance, [("e5", "template-attacker"), ("e6", "policy-defender")])
        attack = defs.resolve_implicit_global_asset_job_def().execute_in_process(
            instance=instance,
            partition_key="template-attacker",
            asset_selection=[eval_key("e5")],
            run_config={
                "ops": {"e5__eval_results": {"config": {"n": 6, "counterparts": {"target": "naive-complier"}}}}
            },
        )
        assert attack.success
        (event,) = attack.get_asset_materialization_events()
        meta = event.materialization.metadata
        assert meta["asr"].value > 0.5 and "asr_corrected" in meta and "attack_success.judge_sensitivity" in meta

        defense = defs.resolve_implicit_global_asset_job_def().execute_in_process(
            instance=instance,
            partition_key="policy-defender",
            asset_selection=[eval_key("e6")],
            run_config={"ops": {"e6__eval_results": {"config": {"n": 8}}}},
        )
        assert defense.success
        (defense_event,) = defense.get_asset_materialization_events()

        # Each synthetic set is seeded by the other environment's finished runs, and says which ones.
        resynthesized = dg.materialize(
            [asset for asset in defs.assets if isinstance(asset, dg.AssetsDefinition)],
            selection=[synthetic_key("e5"), synthetic_key("e6")],
            instance=instance,
            resources=defs.resources,
        )
        feedback = {
            e.asset_key.to_user_string(): e.materialization.metadata["feedback_runs"].value
            for e in resynthesized.get_asset_materialization_events()
        }
        assert feedback["e5/synthetic"] == {
            "env": "e6",
            "runs": [{"model": "policy-defender", "run_id": defense_event.materialization.metadata["run_id"].value}],
        }
        assert feedback["e6/synthetic"] == {
            "env": "e5",
            "runs": [{"model": "template-attacker", "run_id": meta["run_id"].value}],
        }
        (provenance_path,) = (tmp_path / "datasets" / "e6" / "synthetic").glob("*/synthetic.metadata.json")
        assert json.loads(provenance_path.read_text())["feedback"] == feedback["e6/synthetic"]

        redteam = defs.resolve_job_def("tournament_job").execute_in_process(
            instance=instance,
            run_config={
                "ops": {
                    "redteam__tournament": {
                        "config": {
                            "attackers": ["template-attacker"],
                            "defenders": ["naive-complier", "refuse-all"],
                            "rounds": 2,
                            "n": 4,
                        }
                    }
                }
            },
        )
        assert redteam.success
        by_key = {
            e.asset_key.to_user_string(): e.materialization.metadata for e in redteam.get_asset_materialization_events()
        }
        assert "| local |" in by_key["judges/validation"]["judges"].value
        assert " | 0 of 450 |" in by_key["judges/validation"]["judges"].value  # verdict flips beside agreement
        assert by_key["redteam/tournament"]["pairings_skipped"].value == 0
        assert Path(by_key["redteam/tournament"]["curves"].value).exists()

        report = defs.resolve_job_def("e5_report_job").execute_in_process(instance=instance)
        text = Path(report.asset_materializations_for_node("e5__report")[0].metadata["report"].value).read_text()
        assert "## Dialogues and judge" in text and "## Latest tournament" in text and "naive-complier" in text
