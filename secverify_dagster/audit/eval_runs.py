"""The chain behind an eval run: its numbers recomputed from results.jsonl, the model (a checkpoint: its whole training
chain), the items, the verifier and its tools' versions, the code version, dialogue counterparts and judge, an
experiment record or the run it re-scored, and the Dagster run (or tournament, or safety scan) that made it."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl

from secverify_dagster.assets.keys import TOURNAMENT, TOURNAMENT_ENV, checkpoint_key, eval_key
from secverify_dagster.audit.experiment import experiment_link
from secverify_dagster.audit.links import Link, mismatched, missing, present
from secverify_dagster.audit.subjects import Subjects, read_json, recipe_kind
from secverify_dagster.runner.datasets import select_items
from sv_shared.config import ConfigError
from sv_shared.contracts import Environment, Verifier
from sv_shared.data.hashing import sha256_hex, stable_json
from sv_shared.judging.measured import agreement_line
from sv_shared.registry import EnvironmentNotAvailable, get_environment
from sv_shared.runs.folder import RunFolder
from sv_shared.runs.schema import RunMetadata, RunRecordError, Session
from sv_shared.training.checkpoints import STAGES

_CHECKPOINT_ID = re.compile(r"\.(" + "|".join(re.escape(stage) for stage in STAGES) + r")\.")


class RunChains(Subjects):
    """The eval-run chains of an Auditor (a checkpoint's chain, for the model, comes from CheckpointChains)."""

    def run_chain(self, run_dir: Path) -> Link:
        key = run_dir.resolve()
        if key not in self._runs:
            self._runs[key] = self._run_chain(run_dir)
        return self._runs[key]

    def _run_chain(self, run_dir: Path) -> Link:
        name = f"{run_dir.parent.name}/{run_dir.name}"
        folder = RunFolder(run_dir)
        try:
            metadata = folder.read_metadata()
        except FileNotFoundError:
            return missing("eval run", name, f"no metadata.json in {run_dir}")
        except RunRecordError as error:
            return missing("eval run", name, f"metadata.json cannot be read: {error}")
        facts = {
            "run_dir": str(run_dir),
            "status": metadata.status,
            "created_at": metadata.created_at,
            "n_items": metadata.n_items,
            "seed": metadata.seed,
            "generation": metadata.generation,
            "config_hash": sha256_hex(stable_json(metadata.config))[:16],
        }
        try:
            env = get_environment(metadata.env)
        except (EnvironmentNotAvailable, ConfigError, FileNotFoundError) as error:
            return missing("eval run", name, f"environment {metadata.env} cannot be loaded here: {error}", facts=facts)
        data_config = metadata.config.get("data") or {}
        dataset, frame = self.datasets.eval_dataset(env, metadata.dataset, data_config, metadata.seed)
        links = [
            self._metrics(env, folder, metadata, frame),
            self._model(metadata),
            dataset,
            *self._verifier(env, metadata),
            self._code([session.code_version for session in metadata.sessions], _dirty_paths(metadata.sessions)),
            *self._dialogue(metadata),
            *self._experiment_links(metadata),
            self._run_dagster(run_dir, metadata),
        ]
        if metadata.status != "complete":
            return missing("eval run", name, f"the run is {metadata.status}", facts=facts, links=tuple(links))
        return present("eval run", name, facts=facts, links=tuple(links))

    def _experiment_links(self, metadata: RunMetadata) -> list[Link]:
        """The experiment the run was made from, and for a re-scored run the run whose completions it re-scored
        (whose own chain, experiment included, follows)."""
        links = [experiment_link(metadata.experiment)] if metadata.experiment is not None else []
        if metadata.rescored_from is not None:
            links.append(self._rescored_parent(metadata))
        return links

    def _rescored_parent(self, metadata: RunMetadata) -> Link:
        source = metadata.rescored_from
        folder = f"{metadata.env_name}--{metadata.model.id}"
        found = [path for path in self.eval_runs() if path.name == source.run_id and path.parent.name == folder]
        if not found:
            why = f"no run {folder}/{source.run_id} under {self.outputs / 'evals'}"
            return missing("re-scored from", source.run_id, why, facts={"ablation": source.ablation})
        parent = self.run_chain(found[0])
        facts = {**parent.facts, "ablation": source.ablation, "ablation_sha256": source.ablation_sha256}
        return Link("re-scored from", parent.name, parent.status, parent.why, facts, parent.links)

    def _metrics(self, env: Environment, folder: RunFolder, metadata: RunMetadata, frame: pl.DataFrame | None) -> Link:
        """summary.json's numbers, recomputed from results.jsonl and the items with the environment's verifier."""
        try:
            summary = folder.read_summary()
            records = folder.read_results()
        except FileNotFoundError:
            return missing("metrics", "summary.json", "no summary.json: the run never finished a session")
        except RunRecordError as error:
            return missing("metrics", "summary.json", f"cannot be read: {error}")
        facts = {
            "n_scored": summary.n_scored,
            "results": len(records),
            "reward_mean": summary.metrics["reward"]["mean"],
        }
        if len(records) != summary.n_scored:
            why = f"summary.json counts {summary.n_scored} scored samples, results.jsonl holds {len(records)}"
            return mismatched("metrics", "summary.json", why, facts=facts)
        if frame is None:
            return missing(
                "metrics", "summary.json", "cannot be recomputed: the items the run drew are gone", facts=facts
            )
        items = select_items(env, frame, metadata.n_requested, metadata.seed)
        by_id = {record.id: record for record in records}
        id_column = env.data.id_column
        strays = sorted(set(by_id) - {item[id_column] for item in items})
        if strays:
            why = f"results.jsonl holds samples that are not the run's items: {', '.join(strays[:5])}"
            return mismatched("metrics", "summary.json", why, facts=facts)
        ordered = [by_id[item[id_column]].as_dict() for item in items if item[id_column] in by_id]
        item_map = {item[id_column]: item for item in items if item[id_column] in by_id}
        try:
            recomputed = env.verifier.aggregate(ordered, item_map)
        except Exception as error:  # the verifier's own failure is the finding
            return missing("metrics", "summary.json", f"recomputing failed: {type(error).__name__}: {error}")
        if stable_json(recomputed) != stable_json(summary.metrics):
            changed = sorted(
                key
                for key in set(recomputed) | set(summary.metrics)
                if stable_json(recomputed.get(key)) != stable_json(summary.metrics.get(key))
            )
            why = f"summary.json differs from a recomputation over results.jsonl in {', '.join(changed[:8])}"
            return mismatched("metrics", "summary.json", why, facts=facts)
        return present("metrics", "summary.json", note="recomputed from results.jsonl: identical", facts=facts)

    def _model(self, metadata: RunMetadata) -> Link:
        identity = metadata.model
        facts = {"provider": identity.provider, "model": identity.model, "params": identity.params}
        note = self._registry_note(identity.id, identity.provider, identity.model, identity.params)
        if identity.id in self.manifests():
            return present("model", identity.id, note=note, facts=facts, links=(self.checkpoint_chain(identity.id),))
        if _CHECKPOINT_ID.search(identity.id) and identity.provider == "local_transformers":
            why = f"a checkpoint's id, but no complete manifest under {self.checkpoints_root}"
            return present(
                "model", identity.id, note=note, facts=facts, links=(missing("checkpoint", identity.id, why),)
            )
        return present("model", identity.id, note=note, facts=facts)

    def _registry_note(self, model_id: str, provider: str, model: str, params: Mapping[str, Any]) -> str:
        registry = self.registry()
        if registry is None:
            return f"the registry cannot be read now ({self._registry_error})"
        spec = registry.get(model_id)
        if spec is None:
            return "no longer in the model registry"
        if (spec.provider, spec.model, dict(spec.params)) != (provider, model, dict(params)):
            return f"the registry now names {spec.provider} {spec.model} with params {json.dumps(spec.params)}"
        return ""

    def _verifier(self, env: Environment, metadata: RunMetadata) -> list[Link]:
        current = env.verifier.version
        note = "" if current == metadata.verifier_version else f"the verifier is {current} now"
        links = [present("verifier", metadata.verifier_version, note=note)]
        # Only verifiers that run tools (scanners, a sandbox) declare provenance; the others depend on nothing else.
        if type(env.verifier).provenance is not Verifier.provenance:
            provenance = metadata.verifier_provenance
            if not provenance:
                links.append(missing("tool versions", env.env_id, "the run recorded none (written before they were)"))
            else:
                unavailable = provenance.get("unavailable") or {}
                note = f"unavailable during the run: {', '.join(unavailable)}" if unavailable else ""
                links.append(present("tool versions", env.env_id, note=note, facts=dict(provenance)))
        return links

    def _dialogue(self, metadata: RunMetadata) -> list[Link]:
        links = [
            present(
                "counterpart",
                f"{role} {identity.id}",
                facts={"provider": identity.provider, "model": identity.model, "params": identity.params},
            )
            for role, identity in (metadata.counterparts or {}).items()
        ]
        if metadata.judge is not None:
            validation = metadata.judge_validation
            if not validation:
                links.append(missing("judge", metadata.judge, "no validation recorded: its rates are uncorrected"))
            else:
                test = ((validation.get("splits") or {}).get("test") or {}).get("unsafe") or {}
                facts = {
                    "validation_set": validation.get("validation_set"),
                    "sensitivity": test.get("sensitivity"),
                    "specificity": test.get("specificity"),
                    # Which set the figures come from, and the refusal detector's κ on the same rows.
                    "agreement": agreement_line(dict(validation)),
                }
                links.append(present("judge", metadata.judge, facts=facts))
        return links

    def _run_dagster(self, run_dir: Path, metadata: RunMetadata) -> Link:
        what = f"{metadata.env}/eval_results[{metadata.model.id}]"
        link = self.events.materialization(
            what,
            eval_key(metadata.env),
            lambda meta: (
                (meta.get("run_id") == metadata.run_id and _same_path(meta.get("run_dir"), run_dir))
                or any(_same_path(folder, run_dir) for folder in (meta.get("view_run_dirs") or {}).values())
            ),
            partition=metadata.model.id,
            # The materialization that made the run; later ones of the same run id only resumed it.
            first=True,
        )
        if link is None and metadata.env == TOURNAMENT_ENV:
            tournament = self.tournament_runs().get(run_dir.resolve())
            if tournament is not None:
                link = self.events.materialization(
                    f"redteam/tournament {tournament}", TOURNAMENT, lambda meta: meta.get("tournament_id") == tournament
                )
        manifest = self.manifests().get(metadata.model.id)
        if link is None and manifest is not None:
            check = dg.AssetCheckKey(checkpoint_key(recipe_kind(manifest), manifest.recipe_name), "safety_scan")
            link = self.events.check_evaluation(
                f"safety scan of {manifest.model_id}", check, lambda meta: _same_path(meta.get("run_dir"), run_dir)
            )
        return link or self.events.not_found(what, "materialization, tournament or safety scan")

    def tournament_runs(self) -> dict[Path, str]:
        """Run folder → the tournament that played it (outputs/tournaments/<id>/tournament.json rows)."""
        if self._tournament_runs is None:
            self._tournament_runs = {}
            for record in sorted((self.outputs / "tournaments").glob("*/tournament.json")):
                data = read_json(record)
                for row in data.get("rows") or []:
                    if isinstance(row, Mapping) and row.get("run_dir"):
                        self._tournament_runs[Path(row["run_dir"]).resolve()] = str(data.get("tournament_id"))
        return self._tournament_runs


def _same_path(recorded: Any, path: Path) -> bool:
    return isinstance(recorded, str) and Path(recorded).resolve() == path.resolve()


def _dirty_paths(sessions: Sequence[Session]) -> list[str] | None:
    """The uncommitted paths the sessions recorded (None when no session records them)."""
    recorded = [getattr(session, "dirty_paths", None) for session in sessions]
    if all(paths is None for paths in recorded):
        return None
    return sorted({path for paths in recorded for path in paths or []})
