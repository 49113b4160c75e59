"""The human spot-check gate on an environment's synthetic batches: a blocking asset check on its latest batch."""

import dagster as dg

from secverify_dagster.assets.keys import synthetic_batch_key
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource
from sv_shared.data.review import ReviewError
from sv_shared.data.review_batches import batches_root, list_batches
from sv_shared.data.review_decisions import ReviewSettings, review_status
from sv_shared.data.review_report import REVIEW_REPORT_FILE

CHECK_NAME = "spot_check_reviewed"


def build_review_check(env_id: str, settings: ReviewSettings) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=synthetic_batch_key(env_id),
        name=CHECK_NAME,
        blocking=True,
        description=f"The latest synthetic batch's review sample ({settings.sample_share:.0%} of its kept examples) "
        f"is fully reviewed and at most {settings.max_rejection_rate:.0%} of it rejected "
        f"(`secverify review --env {env_id}`). Until then the SFT dataset leaves the batch out.",
    )
    def spot_check_reviewed(artifacts: ArtifactStoreResource) -> dg.AssetCheckResult:
        root = batches_root(artifacts.base() / "datasets", env_id)
        try:
            batches = list_batches(root)
            if not batches:
                return dg.AssetCheckResult(passed=False, metadata={"reason": f"no synthetic batch under {root}"})
            latest = batches[-1]
            status = review_status(latest.path, max_rejection_rate=settings.max_rejection_rate)
        except ReviewError as error:
            return dg.AssetCheckResult(passed=False, metadata={"reason": str(error)})
        report = latest.path / REVIEW_REPORT_FILE
        return dg.AssetCheckResult(
            passed=status.passed,
            severity=dg.AssetCheckSeverity.ERROR,
            metadata={
                "batch": latest.batch_id,
                "reason": status.reason,
                "sampled": status.sampled,
                "reviewed": status.reviewed,
                "accepted": status.accepted,
                "rejected": status.rejected,
                "rejection_rate": dg.MetadataValue.float(status.rejection_rate)
                if status.rejection_rate is not None
                else dg.MetadataValue.null(),
                "max_rejection_rate": settings.max_rejection_rate,
                "unreviewed_ids": dg.MetadataValue.json(list(status.unreviewed_ids)),
                **({"review_report": dg.MetadataValue.path(str(report))} if report.is_file() else {}),
            },
        )

    return spot_check_reviewed
