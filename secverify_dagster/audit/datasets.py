"""The data side of an audit: an eval's items, or a checkpoint's training data, traced down to the raw corpora.

Every hash a record names is recomputed from the file that still holds it (a dataset frame's `frame_hash`, an SFT
dataset's sha256 of train.jsonl): a record that no longer matches its file is reported as mismatched, never trusted.
The manifests the assets write beside their files (`<name>.metadata.json`, the SFT `manifest.json`) say what each
file was built from; a split built from other corpora than the configured ones (a fallback) is said so.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl

from secverify_dagster.assets.keys import curated_key, raw_key, sft_dataset_key, synthetic_key
from secverify_dagster.audit.events import DagsterRecords, MetadataMatch
from secverify_dagster.audit.links import Link, mismatched, missing, present
from secverify_dagster.runner.datasets import embedded_dataset
from sv_shared.contracts import Environment
from sv_shared.data.datasets import read_dataset, value_counts
from sv_shared.data.hashing import frame_hash
from sv_shared.registry import ENV_NAMES, PACKAGES, get_environment
from sv_shared.runs.schema import DatasetRef
from sv_shared.training.sft_files import MANIFEST_FILE as SFT_MANIFEST_FILE
from sv_shared.training.sft_files import TRAIN_FILE as SFT_TRAIN_FILE

EMBEDDED = "embedded"
EMBEDDED_SOURCE_PREFIX = "embedded:"
"""The dataset source `secverify eval` records when it curated the embedded corpus in memory."""


def _short(digest: str | None) -> str:
    return f"{digest[:12]}…" if digest else "none"


def read_manifest(path: Path) -> dict[str, Any] | None:
    """A dataset's `<name>.metadata.json` (None when absent or not a JSON object)."""
    manifest = path.with_suffix(".metadata.json")
    try:
        value = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


class UnreadableDatasetError(ValueError):
    """A dataset file that exists but cannot be read as one: the link is broken, the audit goes on."""


def file_sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


class DatasetAuditor:
    """Builds the data links of chains, re-hashing each file once per audit."""

    def __init__(self, outputs: Path, events: DagsterRecords) -> None:
        self.outputs = outputs
        self.events = events
        self._frames: dict[Path, pl.DataFrame] = {}

    def frame(self, path: Path) -> pl.DataFrame:
        if path not in self._frames:
            try:
                self._frames[path] = read_dataset(path)
            except (OSError, ValueError, pl.exceptions.PolarsError) as error:
                raise UnreadableDatasetError(f"cannot be read: {type(error).__name__}: {error}") from None
        return self._frames[path]

    def env_datasets(self, env_id: str) -> Path:
        return self.outputs / "datasets" / env_id

    # -- what an eval run drew its items from ------------------------------------------------------------------------

    def eval_dataset(
        self, env: Environment, ref: DatasetRef, data_config: Mapping[str, Any], seed: int
    ) -> tuple[Link, pl.DataFrame | None]:
        """The link of a run's dataset, and its frame when the file still holds the items the run drew from."""
        base_source, _, view = ref.source.rpartition(":")
        if base_source and view in env.data.views:
            return self._view(env, ref, base_source, view, data_config, seed)
        if ref.source.startswith(EMBEDDED_SOURCE_PREFIX):
            return self._embedded(env, ref, data_config, seed)
        path = Path(ref.source)
        kind = (read_manifest(path) or {}).get("kind")
        if kind == "synthetic":
            link = self.synthetic_set(env.env_id, path, ref.hash)
        elif kind == "curated" or path.parent.name == "curated":
            link = self.curated_split(env.env_id, path, ref.split, ref.hash, data_config)
        else:
            link = self._items_file(env, path, ref)
        return link, (self.frame(path) if link.status == "present" else None)

    def _view(
        self, env: Environment, ref: DatasetRef, base_source: str, view: str, data_config: Mapping[str, Any], seed: int
    ) -> tuple[Link, pl.DataFrame | None]:
        """A feature-ablated view: the base dataset's own chain, and the view recomputed from the base's items."""
        name = f"{view} view of {base_source}"
        if base_source.startswith(EMBEDDED_SOURCE_PREFIX):
            try:
                base_frame: pl.DataFrame | None = embedded_dataset(env, split=ref.split, seed=seed).frame
            except (KeyError, ValueError, OSError):
                base_frame = None
        else:
            try:
                base_frame = self.frame(Path(base_source)) if Path(base_source).is_file() else None
            except UnreadableDatasetError:
                base_frame = None
        if base_frame is None:
            return missing("dataset view", name, "its base dataset cannot be read here"), None
        base_ref = DatasetRef(source=base_source, split=ref.split, hash=frame_hash(base_frame), rows=base_frame.height)
        base_link, _ = self.eval_dataset(env, base_ref, data_config, seed)
        viewed = env.data.view(base_frame, view)
        facts = {"view": view, "recorded_hash": ref.hash, "recomputed_hash": frame_hash(viewed), "rows": ref.rows}
        if facts["recomputed_hash"] != ref.hash:
            recomputed = _short(facts["recomputed_hash"])
            why = f"the view of the base hashes to {recomputed}, not the recorded {_short(ref.hash)}"
            return mismatched("dataset view", name, why, facts=facts, links=(base_link,)), None
        if base_link.status != "present":
            return base_link, None
        return present("dataset view", name, facts=facts, links=(base_link,)), viewed

    def _embedded(
        self, env: Environment, ref: DatasetRef, data_config: Mapping[str, Any], seed: int
    ) -> tuple[Link, pl.DataFrame | None]:
        """`secverify eval` without --dataset: the shipped corpus, curated in memory; recomputed the same way."""
        name = f"{EMBEDDED}:{ref.split} (seed {seed})"
        try:
            dataset = embedded_dataset(env, split=ref.split, seed=seed)
        except (KeyError, ValueError, OSError) as error:
            return missing("dataset", name, f"the embedded corpus cannot be curated here: {error}"), None
        configured = list(data_config.get("train_sources") or [])
        facts: dict[str, Any] = {
            "split": ref.split,
            "rows": ref.rows,
            "recorded_hash": ref.hash,
            "recomputed_hash": dataset.hash,
            "corpus": f"{EMBEDDED} (shipped with {PACKAGES.get(env.env_id, env.env_id)})",
            "configured_sources": configured,
        }
        fallback = configured != [EMBEDDED]
        note = f"FALLBACK: the embedded corpus, not the configured {configured}" if fallback else ""
        facts["fallback"] = fallback
        corpus = present(
            "raw corpus",
            EMBEDDED,
            note="shipped with the package; curated in memory by `secverify eval` (no file, no materialization)",
        )
        if dataset.hash != ref.hash:
            why = f"the shipped corpus curates to {_short(dataset.hash)} now, not the recorded {_short(ref.hash)}"
            return mismatched("dataset", name, why, facts=facts, links=(corpus,)), None
        links = (corpus, *self._synthetic_items(dataset.frame))
        return present("dataset", name, note=note, facts=facts, links=links), dataset.frame

    def _items_file(self, env: Environment, path: Path, ref: DatasetRef) -> Link:
        """A file handed to `secverify eval --dataset`: its content is checked, its origin is not recorded."""
        facts: dict[str, Any] = {"split": ref.split, "rows": ref.rows, "recorded_hash": ref.hash}
        origin = missing(
            "raw corpus",
            "origin",
            "an items file given to `secverify eval --dataset`: no manifest records where its rows came from",
        )
        if not path.is_file():
            return missing("dataset", str(path), "the file no longer exists", facts=facts, links=(origin,))
        # The runner hashed the validated frame (file_dataset), so the recomputation validates too.
        try:
            frame = self.frame(path)
            current = frame_hash(env.data.validate(frame))
        except Exception as error:  # unreadable, or no longer valid: the reader's or schema's message is the finding
            return missing("dataset", str(path), f"{type(error).__name__}: {error}", facts=facts, links=(origin,))
        facts["recomputed_hash"] = current
        if current != ref.hash:
            why = f"the file hashes to {_short(current)} now, not the recorded {_short(ref.hash)}"
            return mismatched("dataset", str(path), why, facts=facts, links=(origin,))
        return present("dataset", str(path), facts=facts, links=(origin, *self._synthetic_items(frame)))

    # -- curated splits and raw corpora ------------------------------------------------------------------------------

    def curated_split(
        self, env_id: str, path: Path, split: str, recorded_hash: str, data_config: Mapping[str, Any]
    ) -> Link:
        """A curated split file, its manifest and the raw corpora it was built from; data_config is the
        environment's `data` config where the record was made (what was configured), to tell a fallback."""
        facts: dict[str, Any] = {"split": split, "recorded_hash": recorded_hash}
        dagster = self._dagster(
            f"{env_id}/curated_splits {split}",
            curated_key(env_id),
            lambda meta: meta.get(f"{split}_hash") == recorded_hash,
        )
        if not path.is_file():
            return missing("curated split", str(path), "the file no longer exists", facts=facts, links=(dagster,))
        try:
            frame = self.frame(path)
        except UnreadableDatasetError as error:
            return missing("curated split", str(path), str(error), facts=facts, links=(dagster,))
        current = frame_hash(frame)
        facts |= {"recomputed_hash": current, "rows": frame.height}
        if current != recorded_hash:
            why = (
                f"the file hashes to {_short(current)} now, not the recorded {_short(recorded_hash)}: the split was "
                "re-materialized since, and the one recorded is gone"
            )
            return mismatched("curated split", str(path), why, facts=facts, links=(dagster,))
        manifest = self._curated_manifest(env_id, path, current, data_config)
        return present(
            "curated split",
            str(path),
            note=manifest.why if manifest.facts.get("fallback") else "",
            facts=facts,
            links=(manifest, *self._synthetic_items(frame), dagster),
        )

    def _curated_manifest(self, env_id: str, path: Path, current: str, data_config: Mapping[str, Any]) -> Link:
        name = str(path.with_suffix(".metadata.json"))
        manifest = read_manifest(path)
        if manifest is None:
            return missing("curated manifest", name, "no readable manifest beside the split")
        if manifest.get("hash") != current:
            why = f"it describes content hashing to {_short(manifest.get('hash'))}, not this file's {_short(current)}"
            return mismatched("curated manifest", name, why)
        is_ood = manifest.get("split") == "ood_test"
        used = manifest.get("ood_sources" if is_ood else "train_sources")
        if not isinstance(used, list) or not used:
            return missing("curated manifest", name, "it names no source corpora (written outside the curated asset)")
        configured = list(data_config.get("ood_sources" if is_ood else "train_sources") or [])
        fallback = used != configured
        facts = {"sources": used, "configured_sources": configured, "seed": manifest.get("seed"), "fallback": fallback}
        input_hashes = manifest.get("input_hashes") if not is_ood else {}
        raw = tuple(
            self.raw_corpus(env_id, path.parent.parent / "raw", source, (input_hashes or {}).get(source), data_config)
            for source in used
        )
        note = f"FALLBACK: built from {used}, not the configured {configured}" if fallback else ""
        return present("curated manifest", name, note=note, facts=facts, links=raw)

    def raw_corpus(
        self, env_id: str, raw_dir: Path, source: str, recorded_hash: str | None, data_config: Mapping[str, Any]
    ) -> Link:
        path = raw_dir / f"{source}.parquet"
        origin = (
            f"shipped with {PACKAGES.get(env_id, env_id)} (the embedded sample)"
            if source == EMBEDDED
            else data_config.get(source, "not in the environment's config")
        )
        facts: dict[str, Any] = {"path": str(path), "origin": origin, "recorded_hash": recorded_hash}
        if not path.is_file():
            return missing("raw corpus", source, "the file no longer exists", facts=facts)
        try:
            frame = self.frame(path)
        except UnreadableDatasetError as error:
            return missing("raw corpus", source, str(error), facts=facts)
        current = frame_hash(frame)
        facts |= {"recomputed_hash": current, "rows": frame.height}
        # The materialization of the corpus the split was built from (of this file, when nothing recorded one).
        expected = recorded_hash or current
        dagster = self._dagster(
            f"{env_id}/raw_{source}", raw_key(env_id, source), lambda meta: meta.get("dataset_hash") == expected
        )
        if recorded_hash is not None and current != recorded_hash:
            why = f"hashes to {_short(current)} now, not the {_short(recorded_hash)} the split was built from"
            return mismatched("raw corpus", source, why, facts=facts, links=(dagster,))
        recorded_here = (read_manifest(path) or {}).get("hash")
        if recorded_here != current:
            why = f"its metadata.json records {_short(recorded_here)}, the file hashes to {_short(current)}"
            return mismatched("raw corpus", source, why, facts=facts, links=(dagster,))
        return present("raw corpus", source, facts=facts, links=(dagster,))

    # -- synthetic data ----------------------------------------------------------------------------------------------

    def _synthetic_items(self, frame: pl.DataFrame) -> tuple[Link, ...]:
        """The generators behind the frame's synthetic rows (each row names its generator, params and seed)."""
        if "generator" not in frame.columns:
            return ()
        generated = frame.filter(pl.col("generator").is_not_null())
        if generated.height == 0:
            return ()
        facts: dict[str, Any] = {"rows": generated.height, "generators": value_counts(generated, "generator")}
        if "generator_seed" in generated.columns:
            facts["seeds"] = sorted({str(seed) for seed in generated["generator_seed"].to_list()})[:20]
        return (present("synthetic generators", f"{generated.height} synthetic rows", facts=facts),)

    def synthetic_set(self, env_id: str, path: Path, recorded_hash: str) -> Link:
        """A synthetic set: its generators, the curated train split it perturbed, and the runs that seeded it."""
        facts: dict[str, Any] = {"recorded_hash": recorded_hash}
        dagster = self._dagster(
            f"{env_id}/synthetic", synthetic_key(env_id), lambda meta: meta.get("dataset_hash") == recorded_hash
        )
        if not path.is_file():
            return missing("synthetic set", str(path), "the file no longer exists", facts=facts, links=(dagster,))
        try:
            frame = self.frame(path)
        except UnreadableDatasetError as error:
            return missing("synthetic set", str(path), str(error), facts=facts, links=(dagster,))
        current = frame_hash(frame)
        facts["recomputed_hash"] = current
        if current != recorded_hash:
            why = f"the file hashes to {_short(current)} now, not the recorded {_short(recorded_hash)}"
            return mismatched("synthetic set", str(path), why, facts=facts, links=(dagster,))
        manifest = read_manifest(path)
        if manifest is None or manifest.get("hash") != current:
            return present(
                "synthetic set",
                str(path),
                facts=facts,
                links=(
                    missing("synthetic manifest", str(path.with_suffix(".metadata.json")), "absent or stale"),
                    *self._synthetic_items(frame),
                    dagster,
                ),
            )
        facts |= {key: manifest.get(key) for key in ("n", "seed", "verifier_version", "generators")}
        links: list[Link] = []
        base_hash = manifest.get("base_hash")
        if isinstance(base_hash, str):
            train = self.env_datasets(env_id) / "curated" / "train.parquet"
            links.append(self.curated_split(env_id, train, "train", base_hash, self._current_data_config(env_id)))
        feedback = manifest.get("feedback")
        if isinstance(feedback, Mapping):
            links += self._feedback_runs(feedback)
        return present("synthetic set", str(path), facts=facts, links=(*links, dagster))

    def _feedback_runs(self, feedback: Mapping[str, Any]) -> list[Link]:
        """The other environment's finished runs that seeded the synthesis (E5 ↔ E6): each must still exist."""
        env_name = ENV_NAMES.get(str(feedback.get("env")), str(feedback.get("env")))
        links = []
        for run in feedback.get("runs") or []:
            folder = self.outputs / "evals" / f"{env_name}--{run.get('model')}" / str(run.get("run_id"))
            if (folder / "metadata.json").is_file():
                links.append(present("feedback run", str(folder)))
            else:
                links.append(missing("feedback run", str(folder), "the run folder no longer exists"))
        return links

    # -- SFT datasets ------------------------------------------------------------------------------------------------

    def sft_dataset(self, env_id: str, recorded_hash: str) -> Link:
        """An environment's SFT dataset as a checkpoint recorded it, and the curated and synthetic sets it came from."""
        folder = self.env_datasets(env_id) / "sft"
        train = folder / SFT_TRAIN_FILE
        facts: dict[str, Any] = {"recorded_hash": recorded_hash}
        dagster = self._dagster(
            f"{env_id}/sft_dataset", sft_dataset_key(env_id), lambda meta: meta.get("dataset_hash") == recorded_hash
        )
        if not train.is_file():
            return missing("SFT dataset", str(folder), "train.jsonl no longer exists", facts=facts, links=(dagster,))
        current = file_sha256(train)
        facts["recomputed_hash"] = current
        if current != recorded_hash:
            why = (
                f"train.jsonl hashes to {_short(current)} now, not the recorded {_short(recorded_hash)}: the SFT "
                "dataset was rebuilt since, and the examples this checkpoint trained on are gone"
            )
            return mismatched("SFT dataset", str(folder), why, facts=facts, links=(dagster,))
        try:
            manifest = json.loads((folder / SFT_MANIFEST_FILE).read_text(encoding="utf-8"))
            provenance = manifest["provenance"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            why = f"its manifest.json cannot be read ({error})"
            return missing("SFT dataset", str(folder), why, facts=facts, links=(dagster,))
        facts |= {
            "examples": manifest.get("n_examples"),
            "min_reward": provenance.get("min_reward"),
            "verifier": provenance.get("verifier"),
            "teacher": (provenance.get("teacher") or {}).get("id"),
        }
        sources = provenance.get("source_assets")
        if not isinstance(sources, Mapping) or not sources:
            source_links: Sequence[Link] = (missing("SFT sources", "source_assets", "the manifest names none"),)
        else:
            source_links = [self._sft_source(env_id, name, entry) for name, entry in sources.items()]
        return present("SFT dataset", str(folder), facts=facts, links=(*source_links, dagster))

    def _sft_source(self, env_id: str, name: str, entry: Any) -> Link:
        recorded = entry.get("hash") if isinstance(entry, Mapping) else None
        if not isinstance(recorded, str):
            return missing("SFT source", name, "no hash recorded")
        if name == "curated/train":
            train = self.env_datasets(env_id) / "curated" / "train.parquet"
            return self.curated_split(env_id, train, "train", recorded, self._current_data_config(env_id))
        if name.startswith("synthetic/"):
            path = self.env_datasets(env_id) / name / "synthetic.parquet"
            return self.synthetic_set(env_id, path, recorded)
        return missing("SFT source", name, "not a dataset this audit knows how to locate")

    # -- helpers -----------------------------------------------------------------------------------------------------

    def _current_data_config(self, env_id: str) -> dict[str, Any]:
        """Records that keep no config (checkpoints, SFT datasets) are compared with the current one."""
        return get_environment(env_id).config.as_dict().get("data", {})

    def _dagster(self, what: str, key: dg.AssetKey, match: MetadataMatch) -> Link:
        return self.events.materialization(what, key, match) or self.events.not_found(
            what, f"materialization of {key.to_user_string()}"
        )
