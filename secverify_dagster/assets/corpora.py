"""Per-environment data assets: one raw asset per corpus, the curated splits, the synthetic set.

Built by a factory over the environment contract, so each environment gets the same lineage and checks.
"""

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import dagster as dg
import polars as pl

from secverify_dagster.assets.keys import curated_key, eval_run_writers, raw_key, synthetic_key
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource
from sv_shared.contracts import Environment
from sv_shared.data.datasets import read_dataset, value_counts, write_dataset
from sv_shared.data.hashing import frame_hash, sha256_hex, stable_json
from sv_shared.registry import ENV_NAMES
from sv_shared.runs.records import FinishedRun, latest_complete_runs

SPLITS = ("train", "dev", "test")


def _preview(frame: pl.DataFrame, rows: int = 5) -> dg.MetadataValue:
    with pl.Config(tbl_cols=-1, tbl_width_chars=400):
        return dg.MetadataValue.md(f"```\n{frame.head(rows)}\n```")


def _label_metadata(env: Environment, frame: pl.DataFrame) -> dict[str, dg.MetadataValue]:
    return {"label_counts": dg.MetadataValue.json(value_counts(frame, env.data.label_column))}


def build_raw_asset(env: Environment, source: str) -> dg.AssetsDefinition:
    @dg.asset(
        key=raw_key(env.env_id, source),
        group_name=env.env_id,
        kinds={"polars", "parquet"},
        description=f"{env.name}: the {source} corpus mapped into the environment's schema.",
        code_version=env.verifier.version,
    )
    def raw_corpus(context: dg.AssetExecutionContext, artifacts: ArtifactStoreResource) -> dg.MaterializeResult:
        try:
            frame = env.data.load_source(source)
        except (FileNotFoundError, ConnectionError, OSError) as error:
            raise dg.Failure(f"{env.name}: corpus {source!r} is not available here: {error}") from error
        path = artifacts.datasets(env.env_id) / "raw" / f"{source}.parquet"
        artifact = write_dataset(frame, path, {"env": env.env_id, "source": source, "kind": "raw"})
        context.log.info(f"{source}: {artifact.rows} rows → {path}")
        return dg.MaterializeResult(
            data_version=dg.DataVersion(artifact.hash),
            metadata={
                "path": dg.MetadataValue.path(str(path)),
                "rows": artifact.rows,
                "dataset_hash": artifact.hash,
                "source": source,
                **_label_metadata(env, frame),
                "preview": _preview(frame),
            },
        )

    return raw_corpus


class CurateConfig(dg.Config):
    """Which raw corpora the splits are built from (defaults: data.train_sources / ood_sources in the env config)."""

    train_sources: list[str] | None = None
    ood_sources: list[str] | None = None
    seed: int = 42


def build_curated_asset(env: Environment) -> dg.AssetsDefinition:
    data_config = env.config.data

    @dg.asset(
        key=curated_key(env.env_id),
        group_name=env.env_id,
        deps=[raw_key(env.env_id, source) for source in env.data.sources()],
        kinds={"polars", "parquet"},
        description=f"{env.name}: deduplicated, stratified train/dev/test splits (+ an OOD test set if configured).",
        code_version=env.verifier.version,
    )
    def curated_splits(
        context: dg.AssetExecutionContext, config: CurateConfig, artifacts: ArtifactStoreResource
    ) -> dg.MaterializeResult:
        train_sources = config.train_sources or list(data_config.train_sources)
        ood_sources = config.ood_sources if config.ood_sources is not None else list(data_config.ood_sources)
        raw_dir = artifacts.datasets(env.env_id) / "raw"
        frames = [read_dataset(raw_dir / f"{source}.parquet") for source in train_sources]
        splits = env.data.curate(frames, seed=config.seed)
        out_dir = artifacts.datasets(env.env_id) / "curated"
        provenance = {
            "env": env.env_id,
            "kind": "curated",
            "train_sources": train_sources,
            "seed": config.seed,
            "input_hashes": {s: frame_hash(f) for s, f in zip(train_sources, frames, strict=True)},
        }
        metadata: dict[str, dg.RawMetadataValue] = {
            "train_sources": dg.MetadataValue.json(train_sources),
            "ood_sources": dg.MetadataValue.json(ood_sources),
            "seed": config.seed,
        }
        for split in SPLITS:
            artifact = write_dataset(splits[split], out_dir / f"{split}.parquet", {**provenance, "split": split})
            metadata[f"{split}_rows"] = artifact.rows
            metadata[f"{split}_hash"] = artifact.hash
            metadata[f"{split}_labels"] = dg.MetadataValue.json(value_counts(splits[split], env.data.label_column))
        if ood_sources:
            ood = env.data.curate([read_dataset(raw_dir / f"{s}.parquet") for s in ood_sources], seed=config.seed)
            ood_frame = pl.concat([ood[split] for split in SPLITS])
            artifact = write_dataset(
                ood_frame, out_dir / "ood_test.parquet", {**provenance, "split": "ood_test", "ood_sources": ood_sources}
            )
            metadata["ood_test_rows"] = artifact.rows
            metadata["ood_test_hash"] = artifact.hash
        metadata["path"] = dg.MetadataValue.path(str(out_dir))
        context.log.info(
            f"curated splits from {train_sources}: " + ", ".join(f"{split}={splits[split].height}" for split in SPLITS)
        )
        # The splits' content hashes together: Dagster marks downstream evals stale exactly when an item changed.
        split_hashes = {key: value for key, value in metadata.items() if key.endswith("_hash")}
        return dg.MaterializeResult(
            metadata=metadata, data_version=dg.DataVersion(sha256_hex(stable_json(split_hashes)))
        )

    return curated_splits


class SynthesizeConfig(dg.Config):
    n: int | None = None
    seed: int | None = None


def _feedback_record(env_id: str, runs: Sequence[FinishedRun]) -> dict[str, Any]:
    """Which finished runs seeded a synthetic set: stored in its provenance and shown in the asset's metadata."""
    return {"env": env_id, "runs": [{"model": run.model_id, "run_id": run.run_id} for run in runs]}


def build_synthetic_asset(env: Environment) -> dg.AssetsDefinition:
    synth_config = env.config.synthetic
    feedback_env = env.data.feedback_env
    # A feedback-seeded recipe reads the other environment's latest finished runs: declared, so lineage shows it.
    feedback_deps = eval_run_writers(feedback_env) if feedback_env else []
    feedback_text = f", seeded by the latest finished {feedback_env} runs" if feedback_env else ""

    @dg.asset(
        key=synthetic_key(env.env_id),
        group_name=env.env_id,
        deps=[curated_key(env.env_id), *feedback_deps],
        kinds={"polars", "parquet"},
        description=f"{env.name}: synthetic items from the seed's recipe, perturbing the curated train split"
        f"{feedback_text}.",
        code_version=env.verifier.version,
    )
    def synthetic(
        context: dg.AssetExecutionContext, config: SynthesizeConfig, artifacts: ArtifactStoreResource
    ) -> dg.MaterializeResult:
        n = config.n or synth_config.n
        seed = config.seed if config.seed is not None else synth_config.seed
        base = read_dataset(artifacts.datasets(env.env_id) / "curated" / "train.parquet")
        runs = latest_complete_runs(artifacts.evals(), ENV_NAMES[feedback_env]) if feedback_env else []
        frame = env.data.synthesize(n, seed=seed, base=base, feedback=runs)
        provenance: dict[str, Any] = {
            "env": env.env_id,
            "kind": "synthetic",
            "n": n,
            "seed": seed,
            "base_hash": frame_hash(base),
            "verifier_version": env.verifier.version,
            "generators": value_counts(frame, "generator"),
        }
        if feedback_env:
            provenance["feedback"] = _feedback_record(feedback_env, runs)
        date = datetime.now(UTC).strftime("%Y-%m-%d")
        path = artifacts.datasets(env.env_id) / "synthetic" / date / "synthetic.parquet"
        artifact = write_dataset(frame, path, provenance)
        context.log.info(f"synthetic: {artifact.rows} rows → {path}")
        metadata: dict[str, dg.RawMetadataValue] = {
            "path": dg.MetadataValue.path(str(path)),
            "rows": artifact.rows,
            "dataset_hash": artifact.hash,
            "seed": seed,
            **_label_metadata(env, frame),
            "generators": dg.MetadataValue.json(value_counts(frame, "generator")),
        }
        if feedback_env:
            metadata["feedback_runs"] = dg.MetadataValue.json(provenance["feedback"])
        metadata["preview"] = _preview(frame)
        return dg.MaterializeResult(metadata=metadata, data_version=dg.DataVersion(artifact.hash))

    return synthetic


def build_corpus_assets(env: Environment) -> list[dg.AssetsDefinition]:
    return [
        *(build_raw_asset(env, source) for source in env.data.sources()),
        build_curated_asset(env),
        build_synthetic_asset(env),
    ]
