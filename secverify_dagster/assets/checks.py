"""Asset checks on every environment's datasets: schema, label balance, duplicates, split leakage."""

from collections.abc import Callable
from pathlib import Path

import dagster as dg
import polars as pl

from secverify_dagster.assets.corpora import SPLITS
from secverify_dagster.assets.keys import curated_key, synthetic_key
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource
from sv_shared.contracts import Environment
from sv_shared.data.datasets import read_dataset, value_counts


def _latest_synthetic(directory: Path) -> Path:
    candidates = sorted(directory.glob("*/synthetic.parquet"))
    if not candidates:
        raise FileNotFoundError(f"no synthetic set under {directory}")
    return candidates[-1]


def _schema_result(env: Environment, frames: dict[str, pl.DataFrame]) -> dg.AssetCheckResult:
    errors = {}
    for name, frame in frames.items():
        try:
            env.data.validate(frame)
        except Exception as error:  # the schema's own message is the finding
            errors[name] = str(error)[:2000]
    return dg.AssetCheckResult(passed=not errors, metadata={"errors": dg.MetadataValue.json(errors)})


def _balance_result(env: Environment, frames: dict[str, pl.DataFrame]) -> dg.AssetCheckResult:
    checks = env.config.checks
    minimum = checks.min_class_share
    if "synthetic" in frames and checks.synthetic_min_class_share is not None:
        # Some recipes are one-sided by design (E2 mutates secure configs into vulnerable twins).
        minimum = checks.synthetic_min_class_share
    shares = {}
    for name, frame in frames.items():
        counts = value_counts(frame, env.data.label_column)
        total = sum(counts.values())
        shares[name] = {label: round(count / total, 4) for label, count in counts.items()} if total else {}
    passed = minimum == 0 or all(len(share) >= 2 and min(share.values()) >= minimum for share in shares.values())
    return dg.AssetCheckResult(
        passed=passed,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"label_shares": dg.MetadataValue.json(shares), "min_class_share": minimum},
    )


def _duplicates_result(env: Environment, frames: dict[str, pl.DataFrame]) -> dg.AssetCheckResult:
    combined = pl.concat([frame.select(env.data.id_column, "content_hash") for frame in frames.values()])
    duplicate_hashes = combined.height - combined["content_hash"].n_unique()
    duplicate_ids = combined.height - combined[env.data.id_column].n_unique()
    return dg.AssetCheckResult(
        passed=duplicate_hashes == 0 and duplicate_ids == 0,
        metadata={
            "duplicate_content_hashes": duplicate_hashes,
            "duplicate_ids": duplicate_ids,
            "rows": combined.height,
        },
    )


CheckBody = Callable[[Environment, dict[str, pl.DataFrame]], dg.AssetCheckResult]
_CHECKS: dict[str, tuple[str, CheckBody]] = {
    "schema": ("Every row satisfies the environment's pandera schema.", _schema_result),
    "label_balance": ("Each label holds at least checks.min_class_share of every split.", _balance_result),
    "no_duplicates": ("No content hash or id occurs twice, within or across splits (no leakage).", _duplicates_result),
}


def _curated_frames(env: Environment, artifacts: ArtifactStoreResource) -> dict[str, pl.DataFrame]:
    directory = artifacts.datasets(env.env_id) / "curated"
    return {split: read_dataset(directory / f"{split}.parquet") for split in SPLITS}


def _synthetic_frames(env: Environment, artifacts: ArtifactStoreResource) -> dict[str, pl.DataFrame]:
    return {"synthetic": read_dataset(_latest_synthetic(artifacts.datasets(env.env_id) / "synthetic"))}


def _build_check(env: Environment, asset_key: dg.AssetKey, check_name: str, load) -> dg.AssetChecksDefinition:
    description, body = _CHECKS[check_name]

    @dg.asset_check(asset=asset_key, name=check_name, description=description)
    def check(artifacts: ArtifactStoreResource) -> dg.AssetCheckResult:
        return body(env, load(env, artifacts))

    return check


def build_dataset_checks(env: Environment) -> list[dg.AssetChecksDefinition]:
    return [
        _build_check(env, key, name, load)
        for key, load in ((curated_key(env.env_id), _curated_frames), (synthetic_key(env.env_id), _synthetic_frames))
        for name in _CHECKS
    ]
