"""The chain behind a checkpoint: its model files re-hashed, its recipe, training data, parent (a checkpoint's own chain
or the base model), code, reward verifier and the Dagster run that made it; its safety scan and approval (optional
links)."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from secverify_dagster.assets.keys import checkpoint_key
from secverify_dagster.audit.experiment import experiment_link
from secverify_dagster.audit.links import Link, mismatched, missing, present
from secverify_dagster.audit.subjects import Subjects, recipe_kind
from secverify_dagster.research.experiments import training_inputs
from secverify_dagster.training.paths import TrainingError
from sv_shared.config import ConfigError, project_root
from sv_shared.data.hashing import frame_hash, sha256_hex, stable_json
from sv_shared.registry import get_environment
from sv_shared.runs.schema import RunRecordError
from sv_shared.training.checkpoints import CheckpointManifest, checkpoint_dir, verify_model_files
from sv_shared.training.promotion import SCAN_FILE, SafetyScanRecord, promotion_status
from sv_shared.training.recipes import load_rlft_recipe, load_sft_recipe, recipe_hash

_SFT_DATA = re.compile(r"^(e\d)/sft_dataset$")
_CURATED_DATA = re.compile(r"^(e\d)/curated/(train|dev|test)$")
_BATCH_DATA = re.compile(r"^(e\d)/batches/([a-z0-9][a-z0-9._-]*)$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_VERIFIER_PATHS = ("envs/",)
"""Where the verifiers' code lives: a dirty checkout with changes only outside these still pins the verifier."""


class CheckpointChains(Subjects):
    """The checkpoint chains of an Auditor."""

    def checkpoint_chain(self, model_id: str) -> Link:
        if model_id not in self._checkpoints:
            self._checkpoints[model_id] = self._checkpoint_chain(model_id)
        return self._checkpoints[model_id]

    def _checkpoint_chain(self, model_id: str) -> Link:
        manifest = self.manifests().get(model_id)
        if manifest is None:
            return missing("checkpoint", model_id, f"no complete manifest under {self.checkpoints_root}")
        run_dir = checkpoint_dir(self.checkpoints_root, manifest)
        facts = {
            "run_dir": str(run_dir),
            "stage": manifest.stage,
            "run_id": manifest.run_id,
            "recipe": manifest.recipe_name,
            "envs": manifest.envs,
            "created_at": manifest.created_at,
            "manifest_hash": manifest.content_hash(),
        }
        links = [
            self._model_files(run_dir, manifest),
            self._recipe(manifest),
            *self._training_data(manifest),
            self._parent(manifest),
            self._code([manifest.code_version], manifest.dirty_paths),
            *([experiment_link(manifest.experiment)] if manifest.experiment is not None else []),
            *self._reward_verifier(manifest),
            self.events.materialization(
                manifest.model_id,
                checkpoint_key(recipe_kind(manifest), manifest.recipe_name),
                lambda meta: meta.get("model_id") == manifest.model_id,
            )
            or self.events.not_found(manifest.model_id, "materialization of the recipe's checkpoint asset"),
            self._safety_scan(run_dir, manifest),
            self._promotion(run_dir),
        ]
        return present("checkpoint", model_id, facts=facts, links=tuple(links))

    def _model_files(self, run_dir: Path, manifest: CheckpointManifest) -> Link:
        folder = run_dir / manifest.model_dir
        facts = {"files": len(manifest.model_files)}
        if not folder.is_dir():
            return missing("model files", str(folder), "the model folder no longer exists", facts=facts)
        changed = verify_model_files(run_dir, manifest)
        if changed:
            return mismatched("model files", str(folder), "re-hashed: " + "; ".join(changed[:5]), facts=facts)
        return present("model files", str(folder), note="re-hashed: every file as the manifest records", facts=facts)

    def _recipe(self, manifest: CheckpointManifest) -> Link:
        facts = {"recipe_hash": manifest.recipe_hash, "envs": manifest.envs}
        recomputed = sha256_hex(stable_json(manifest.recipe))
        if recomputed != manifest.recipe_hash:
            why = f"the recorded recipe hashes to {recomputed[:12]}…, not its recorded recipe_hash"
            return mismatched("recipe", manifest.recipe_name, why, facts=facts)
        kind = recipe_kind(manifest)
        source = f"configs/{kind}/{manifest.recipe_name}.yaml"
        try:
            if manifest.experiment is not None:
                # Trained with an experiment's overrides: the recipe it trained is the file with those applied.
                source += f" with the overrides of {manifest.experiment.path}"
                current = recipe_hash(training_inputs(project_root() / manifest.experiment.path)[1].recipe)
            else:
                load = load_sft_recipe if kind == "sft" else load_rlft_recipe
                current = recipe_hash(load(manifest.recipe_name, check_references=False))
            note = "" if current == manifest.recipe_hash else f"{source} has changed since"
        except (ConfigError, TrainingError, OSError) as error:
            note = f"{source} cannot be read now: {error}"
        return present("recipe", manifest.recipe_name, note=note, facts=facts)

    def _training_data(self, manifest: CheckpointManifest) -> list[Link]:
        if not manifest.data:
            return [missing("training data", manifest.model_id, "the manifest records none")]
        links = []
        for name, value in manifest.data.items():
            if match := _SFT_DATA.match(name):
                links.append(self.datasets.sft_dataset(match[1], value))
            elif match := _BATCH_DATA.match(name):
                links.append(self._batch_items(match[1], match[2], value))
            elif match := _CURATED_DATA.match(name):
                env_id, split = match[1], match[2]
                path = self.datasets.env_datasets(env_id) / "curated" / f"{split}.parquet"
                config = get_environment(env_id).config.as_dict().get("data", {})
                links.append(self.datasets.curated_split(env_id, path, split, value, config))
            elif _SHA256.match(value):
                links.append(missing("training data", name, "a dataset hash this audit does not know how to locate"))
            else:
                links.append(present("training setting", name, facts={"value": value}))
        return links

    def _batch_items(self, env_id: str, batch_id: str, recorded: str) -> Link:
        """A synthetic batch's items an experiment's data slices trained on, re-hashed."""
        path = self.datasets.env_datasets(env_id) / "batches" / batch_id / "items.parquet"
        facts = {"path": str(path), "hash": recorded}
        if not path.is_file():
            return missing("synthetic batch", f"{env_id}/{batch_id}", f"no {path}", facts=facts)
        current = frame_hash(get_environment(env_id).data.validate(pl.read_parquet(path)))
        if current != recorded:
            return mismatched("synthetic batch", f"{env_id}/{batch_id}", f"its items now hash to {current[:12]}…")
        return present("synthetic batch", f"{env_id}/{batch_id}", note="re-hashed: as recorded", facts=facts)

    def _parent(self, manifest: CheckpointManifest) -> Link:
        if manifest.parent_model != manifest.base_model:
            return self.checkpoint_chain(manifest.parent_model)
        registry = self.registry() or {}
        spec = registry.get(manifest.base_model)
        if spec is None:
            why = "not in the model registry" + (f" ({self._registry_error})" if self._registry_error else "")
            return missing("base model", manifest.base_model, why)
        return present("base model", manifest.base_model, facts={"provider": spec.provider, "model": spec.model})

    def _reward_verifier(self, manifest: CheckpointManifest) -> list[Link]:
        """RLFT trains on the verifiers' rewards; the manifest names the weights, the code version the verifier."""
        if manifest.stage == "sft":
            return []
        facts = {"reward_weights": manifest.reward_weights}
        dirty = manifest.code_version.endswith("-dirty")
        touched = [path for path in manifest.dirty_paths if path.startswith(_VERIFIER_PATHS)]
        name = ", ".join(manifest.envs)
        if dirty and (touched or not manifest.dirty_paths):
            where = ", ".join(touched[:5]) if touched else "paths not recorded"
            why = f"no verifier version recorded and the checkout was dirty ({where}): the reward's verifier is lost"
            return [missing("reward verifier", name, why, facts=facts)]
        return [
            present(
                "reward verifier", name, note=f"the verifiers of code version {manifest.code_version[:12]}", facts=facts
            )
        ]

    def _safety_scan(self, run_dir: Path, manifest: CheckpointManifest) -> Link:
        path = run_dir / SCAN_FILE
        if not path.is_file():
            return missing("safety scan", manifest.model_id, "none recorded", required=False)
        try:
            scan = SafetyScanRecord.read(path)
        except (OSError, RunRecordError) as error:
            return missing("safety scan", manifest.model_id, f"unreadable: {error}", required=False)
        facts = {
            "judge": scan.judge_id,
            "unsafe": f"{scan.unsafe}/{scan.samples}",
            "threshold": scan.threshold,
            "passed": scan.passed,
            "scanned_at": scan.scanned_at,
        }
        if scan.manifest_hash != manifest.content_hash():
            return mismatched(
                "safety scan", manifest.model_id, "it scanned another manifest", facts=facts, required=False
            )
        return present(
            "safety scan", manifest.model_id, note="" if scan.passed else "FAILED", facts=facts, required=False
        )

    def _promotion(self, run_dir: Path) -> Link:
        status = promotion_status(run_dir, verify_files=False)
        if not status.promoted:
            return missing("promotion", "approval", status.reason, required=False)
        approval = status.approval
        facts = {"approver": approval.approver, "at": approval.at, "note": approval.note} if approval else {}
        return present("promotion", "approval", facts=facts, required=False)
