"""The regression gate as a blocking check on every environment's evals, per model (partition).

It judges the run the partition's latest materialization wrote against that model's previous comparable run
(secverify_dagster.reports.regression_gate). Blocking: a regression fails the check, and in the same Dagster run nothing
downstream of the evals (the report) is materialized from them. Any run that materializes an eval includes the
check: a job or RunRequest selecting the eval asset selects its checks unless it names other ones.
"""

import warnings
from pathlib import Path
from typing import Any

import dagster as dg

from secverify_dagster.assets.keys import eval_key
from secverify_dagster.partitions import models_partitions
from secverify_dagster.reports.regression_gate import (
    CORE_METRIC,
    MAX_RELATIVE_DROP,
    Judgement,
    UnjudgeableRunError,
    judge,
)
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource
from sv_shared.contracts import Environment
from sv_shared.runs.folder import RunFolder
from sv_shared.runs.records import FinishedRun
from sv_shared.runs.schema import RunRecordError

CHECK_NAME = "no_regression"


def _materialized_run(context: dg.AssetCheckExecutionContext, asset_key: dg.AssetKey) -> FinishedRun | None:
    """The run folder the partition's latest materialization wrote (in a run that materialized it: this run's)."""
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=asset_key, asset_partitions=[context.partition_key]), limit=1
    ).records
    if not records or records[0].asset_materialization is None:
        return None
    run_dir = Path(str(records[0].asset_materialization.metadata["run_dir"].value))
    return FinishedRun(run_dir, RunFolder(run_dir).read_metadata())


def _metadata_value(value: Any) -> Any:
    return dg.MetadataValue.null() if value is None else value


def _verdict_metadata(judgement: Judgement) -> dict[str, Any]:
    fields = {name: _metadata_value(value) for name, value in judgement.verdict.as_dict().items()}
    previous = judgement.previous
    return fields | {
        "current_run_dir": dg.MetadataValue.path(str(judgement.current.run_dir)),
        "previous_run_dir": dg.MetadataValue.path(str(previous.run_dir)) if previous else dg.MetadataValue.null(),
    }


def build_regression_check(env: Environment) -> dg.AssetChecksDefinition:
    key = eval_key(env.env_id)
    # Partitioned asset checks are a preview feature of the pinned dagster 1.13.27; the gate's Dagster test pins
    # the behaviour relied on (the check runs with its partition's eval and blocks the report).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.PreviewWarning)

        @dg.asset_check(
            asset=key,
            name=CHECK_NAME,
            blocking=True,
            partitions_def=models_partitions(env.env_id),
            description=f"The model's {CORE_METRIC} on {env.env_id} did not drop by more than "
            f"{MAX_RELATIVE_DROP:.0%} (paired bootstrap CI below 0) against its previous comparable run.",
        )
        def no_regression(
            context: dg.AssetCheckExecutionContext, artifacts: ArtifactStoreResource
        ) -> dg.AssetCheckResult:
            model_id = context.partition_key
            try:
                run = _materialized_run(context, key)
                if run is None:
                    return dg.AssetCheckResult(
                        passed=True,
                        metadata={"reason": f"no eval of {model_id} on {env.env_id} materialized: nothing to judge"},
                    )
                judgement = judge(artifacts.evals(), run)
            except (UnjudgeableRunError, RunRecordError, FileNotFoundError) as error:
                # A run that cannot be judged is not passed: the check fails and names why.
                return dg.AssetCheckResult(passed=False, metadata={"reason": f"cannot be judged: {error}"})
            verdict = judgement.verdict
            context.log.info(f"{env.env_id} × {model_id}: {verdict.reason}")
            return dg.AssetCheckResult(passed=not verdict.regressed, metadata=_verdict_metadata(judgement))

    return no_regression
