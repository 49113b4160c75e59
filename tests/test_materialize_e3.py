"""E3 materializes through Dagster: data lineage with checks, the scanner-fix partition, the report."""

from pathlib import Path

import dagster as dg
import pytest

from secverify_dagster.assets.keys import eval_key
from secverify_dagster.definitions import defs
from secverify_dagster.partitions import add_model_partitions


def test_e3_lineage_eval_and_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path))
    with dg.instance_for_test() as instance:
        data = defs.resolve_job_def("e3_data_job").execute_in_process(instance=instance)
        assert data.success
        checks = [(e.asset_key.to_user_string(), e.check_name, e.passed) for e in data.get_asset_check_evaluations()]
        assert len(checks) == 6 and all(passed for _, _, passed in checks), checks

        add_model_partitions(instance, [("e3", "scanner-fix")])
        result = defs.resolve_implicit_global_asset_job_def().execute_in_process(
            instance=instance, partition_key="scanner-fix", asset_selection=[eval_key("e3")]
        )
        assert result.success
        (event,) = result.get_asset_materialization_events()
        assert event.materialization.metadata["n"].value > 0

        report = defs.resolve_job_def("e3_report_job").execute_in_process(instance=instance)
        assert report.success
        text = Path(report.asset_materializations_for_node("e3__report")[0].metadata["report"].value).read_text()
        assert "| scanner-fix |" in text and "exploit" in text
