"""`secverify audit`: the chain behind an eval run, a report or a checkpoint, checked link by link.

For an eval run: its numbers recomputed from results.jsonl; the model (a checkpoint: its whole training chain); the
items (curated split → manifest → raw corpora, synthetic generators; a fallback corpus named as one); the verifier and
its tools' versions; the code version; dialogue counterparts and judge; the Dagster run that materialized it. For a
report: each number it publishes against its run's summary, and each run's chain. For a checkpoint: model files,
recipe, training data, parent, code, the Dagster run; its safety scan and approval (optional links). Every hash that
can be recomputed is (see audit.datasets); a record is never taken on its word.

The audit reads files and the Dagster event log and writes nothing. The governance asset and the CLI both use it.
"""

from __future__ import annotations

import json
import re
import subprocess
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl

from secverify_dagster.assets.keys import TOURNAMENT, TOURNAMENT_ENV, checkpoint_key, eval_key, report_key
from secverify_dagster.audit.datasets import DatasetAuditor
from secverify_dagster.audit.events import DagsterRecords
from secverify_dagster.audit.experiment import experiment_link
from secverify_dagster.audit.links import Audit, Link, SubjectKind, mismatched, missing, present
from secverify_dagster.resources.models import ModelSpec, load_registry
from secverify_dagster.runner import select_items
from sv_shared.config import ConfigError, project_root
from sv_shared.contracts import Environment, Verifier
from sv_shared.data.hashing import frame_hash, sha256_hex, stable_json
from sv_shared.registry import EnvironmentNotAvailable, get_environment
from sv_shared.runs.folder import RunFolder
from sv_shared.runs.schema import RunMetadata, RunRecordError, Session
from sv_shared.training.checkpoints import (
    STAGES,
    CheckpointManifest,
    checkpoint_dir,
    list_checkpoints,
    verify_model_files,
)
from sv_shared.training.promotion import SCAN_FILE, SafetyScanRecord, promotion_status
from sv_shared.training.recipes import load_rlft_recipe, load_sft_recipe, recipe_hash

_CHECKPOINT_ID = re.compile(r"\.(" + "|".join(re.escape(stage) for stage in STAGES) + r")\.")
_SFT_DATA = re.compile(r"^(e\d)/sft_dataset$")
_CURATED_DATA = re.compile(r"^(e\d)/curated/(train|dev|test)$")
_BATCH_DATA = re.compile(r"^(e\d)/batches/([a-z0-9][a-z0-9._-]*)$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_VERIFIER_PATHS = ("envs/",)
"""Where the verifiers' code lives: a dirty checkout with changes only outside these still pins the verifier."""


class UnknownSubjectError(LookupError):
    """What was asked to be audited is no eval run, report or checkpoint here; the message lists what is."""


@dataclass(frozen=True)
class Subject:
    kind: SubjectKind
    name: str
    path: Path
    """The run folder, the report's report.json, or the checkpoint's run folder."""


class Auditor:
    """Audits subjects under one outputs folder against one Dagster event log; each chain is built once."""

    def __init__(self, outputs: Path, events: DagsterRecords) -> None:
        self.outputs = outputs
        self.events = events
        self.datasets = DatasetAuditor(outputs, events)
        self._runs: dict[Path, Link] = {}
        self._checkpoints: dict[str, Link] = {}
        self._registry: dict[str, ModelSpec] | None = None
        self._registry_error = ""
        self._manifests: dict[str, CheckpointManifest] | None = None
        self._commits: dict[str, bool | None] = {}
        self._tournament_runs: dict[Path, str] | None = None

    # -- what can be audited -----------------------------------------------------------------------------------------

    @property
    def checkpoints_root(self) -> Path:
        return self.outputs / "checkpoints"

    def eval_runs(self) -> list[Path]:
        """Every eval run folder: the feature-ablated view runs under evals/views/<view>/<env>--<model>/<run id>/
        (whose numbers E1's reports publish too), the re-scored runs under evals/ablations/<ablation>/…, then the
        runs on whole splits, evals/<env>--<model>/<run id>/ (last, so listings that show the newest few show those)."""
        evals = self.outputs / "evals"
        views = sorted(path.parent for path in evals.glob("views/*/*/*/metadata.json"))
        rescored = sorted(path.parent for path in evals.glob("ablations/*/*/*/metadata.json"))
        return views + rescored + sorted(path.parent for path in evals.glob("*/*/metadata.json"))

    def reports(self) -> list[Path]:
        return sorted((self.outputs / "reports").rglob("report.json"))

    def manifests(self) -> dict[str, CheckpointManifest]:
        if self._manifests is None:
            with warnings.catch_warnings():
                # An unreadable manifest is no checkpoint: its id shows up below as one without a manifest.
                warnings.simplefilter("ignore")
                self._manifests = {m.model_id: m for m in list_checkpoints(self.checkpoints_root)}
        return self._manifests

    def resolve(self, text: str) -> Subject:
        """An eval run (its id, `<env name>--<model>/<run id>` or folder), a report (its folder relative to
        outputs/reports, its folder or report.json) or a checkpoint (its model id or folder)."""
        path = Path(text).resolve() if Path(text).exists() else Path(text)
        if path.is_dir() and (path / "metadata.json").is_file():
            return Subject("eval run", f"{path.parent.name}/{path.name}", path)
        report = path if path.name == "report.json" else (path.parent if path.is_file() else path) / "report.json"
        if report.is_file():
            return Subject("report", self._report_name(report), report)
        if path.is_dir() and (path / "manifest.json").is_file():
            for model_id, manifest in self.manifests().items():
                if checkpoint_dir(self.checkpoints_root, manifest).resolve() == path.resolve():
                    return Subject("checkpoint", model_id, path)
        if text in self.manifests():
            return Subject("checkpoint", text, checkpoint_dir(self.checkpoints_root, self.manifests()[text]))
        runs = [run for run in self.eval_runs() if text in (run.name, f"{run.parent.name}/{run.name}")]
        if len(runs) > 1:
            raise UnknownSubjectError(
                f"{text!r} names {len(runs)} eval runs; name one as <env name>--<model>/<run id>: "
                + ", ".join(f"{run.parent.name}/{run.name}" for run in runs)
            )
        if runs:
            return Subject("eval run", f"{runs[0].parent.name}/{runs[0].name}", runs[0])
        reports = [report for report in self.reports() if text in (report.parent.name, self._report_name(report))]
        if len(reports) == 1:
            return Subject("report", self._report_name(reports[0]), reports[0])
        raise UnknownSubjectError(self._unknown(text))

    def _report_name(self, report_json: Path) -> str:
        folder = report_json.parent
        try:
            return folder.relative_to(self.outputs / "reports").as_posix()
        except ValueError:
            return str(folder)

    def _unknown(self, text: str, shown: int = 5) -> str:
        runs = [f"{run.parent.name}/{run.name}" for run in self.eval_runs()]
        reports = [self._report_name(report) for report in self.reports()]
        checkpoints = list(self.manifests())
        lines = [f"{text!r} is no eval run, report or checkpoint under {self.outputs}. It can audit:"]
        for what, names, form in (
            ("eval runs", runs, "<run id> or <env name>--<model>/<run id>"),
            ("reports", reports, "<env>/<report folder> under outputs/reports, or a report.json"),
            ("checkpoints", checkpoints, "<model id>"),
        ):
            listed = ", ".join(names[-shown:]) if names else "none yet"
            more = f" (and {len(names) - shown} more)" if len(names) > shown else ""
            lines.append(f"  {len(names)} {what} ({form}): {listed}{more}")
        return "\n".join(lines)

    def audit(self, subject: Subject) -> Audit:
        if subject.kind == "eval run":
            return Audit("eval run", subject.name, self.run_chain(subject.path))
        if subject.kind == "report":
            return Audit("report", subject.name, self.report_chain(subject.path))
        return Audit("checkpoint", subject.name, self.checkpoint_chain(subject.name))

    def published(self) -> list[Audit]:
        """Every published number's chain: each report, each eval run a report used, each promoted checkpoint."""
        audits: list[Audit] = []
        used: dict[Path, str] = {}
        for report in self.reports():
            audits.append(self.audit(Subject("report", self._report_name(report), report)))
            for _, run_dir in _run_entries(_read_json(report).get("runs")):
                used.setdefault(Path(run_dir).resolve(), f"{Path(run_dir).parent.name}/{Path(run_dir).name}")
        audits += [Audit("eval run", name, self.run_chain(path)) for path, name in sorted(used.items())]
        for model_id, manifest in self.manifests().items():
            if promotion_status(checkpoint_dir(self.checkpoints_root, manifest)).promoted:
                audits.append(Audit("checkpoint", model_id, self.checkpoint_chain(model_id)))
        return audits

    # -- eval runs ---------------------------------------------------------------------------------------------------

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

    def registry(self) -> dict[str, ModelSpec] | None:
        if self._registry is None and not self._registry_error:
            try:
                self._registry = load_registry(checkpoints_root=self.checkpoints_root)
            except (ConfigError, OSError) as error:
                self._registry_error = str(error)
        return self._registry

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

    def _code(self, versions: Sequence[str], dirty_paths: Sequence[str] | None) -> Link:
        unique = list(dict.fromkeys(versions))
        facts: dict[str, Any] = {"versions": unique}
        name = unique[0][:12] if unique else "none"
        if not unique or "unknown" in unique:
            return missing("code version", name, "not recorded (the checkout was no git repository)", facts=facts)
        commits = list(dict.fromkeys(version.removesuffix("-dirty") for version in unique))
        lost = [commit for commit in commits if self._commit_known(commit) is False]
        if lost:
            why = f"commit {', '.join(c[:12] for c in lost)} is not in the repository at {project_root()}"
            return missing("code version", name, why, facts=facts)
        notes = []
        if any(version.endswith("-dirty") for version in unique):
            facts["dirty_paths"] = list(dirty_paths) if dirty_paths is not None else "not recorded"
            notes.append("uncommitted changes: the commit alone does not reproduce it")
        if len(unique) > 1:
            notes.append("its sessions ran different code versions")
        return present("code version", name, note="; ".join(notes), facts=facts)

    def _commit_known(self, commit: str) -> bool | None:
        """Whether the checkout's repository holds the commit (None: no repository to ask)."""
        if commit not in self._commits:
            try:
                result = subprocess.run(
                    ["git", "cat-file", "-e", f"{commit}^{{commit}}"],
                    cwd=project_root(),
                    capture_output=True,
                    timeout=10,
                    check=False,
                )
                inside = subprocess.run(
                    ["git", "rev-parse", "--is-inside-work-tree"],
                    cwd=project_root(),
                    capture_output=True,
                    timeout=10,
                    check=False,
                )
                self._commits[commit] = (result.returncode == 0) if inside.returncode == 0 else None
            except (OSError, subprocess.SubprocessError):
                self._commits[commit] = None
        return self._commits[commit]

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
        )
        if link is None and metadata.env == TOURNAMENT_ENV:
            tournament = self.tournament_runs().get(run_dir.resolve())
            if tournament is not None:
                link = self.events.materialization(
                    f"redteam/tournament {tournament}", TOURNAMENT, lambda meta: meta.get("tournament_id") == tournament
                )
        manifest = self.manifests().get(metadata.model.id)
        if link is None and manifest is not None:
            check = dg.AssetCheckKey(checkpoint_key(_kind(manifest), manifest.recipe_name), "safety_scan")
            link = self.events.check_evaluation(
                f"safety scan of {manifest.model_id}", check, lambda meta: _same_path(meta.get("run_dir"), run_dir)
            )
        return link or self.events.not_found(what, "materialization, tournament or safety scan")

    def tournament_runs(self) -> dict[Path, str]:
        """Run folder → the tournament that played it (outputs/tournaments/<id>/tournament.json rows)."""
        if self._tournament_runs is None:
            self._tournament_runs = {}
            for record in sorted((self.outputs / "tournaments").glob("*/tournament.json")):
                data = _read_json(record)
                for row in data.get("rows") or []:
                    if isinstance(row, Mapping) and row.get("run_dir"):
                        self._tournament_runs[Path(row["run_dir"]).resolve()] = str(data.get("tournament_id"))
        return self._tournament_runs

    # -- checkpoints -------------------------------------------------------------------------------------------------

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
                checkpoint_key(_kind(manifest), manifest.recipe_name),
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
        kind = _kind(manifest)
        try:
            load = load_sft_recipe if kind == "sft" else load_rlft_recipe
            current = recipe_hash(load(manifest.recipe_name, check_references=False))
            note = (
                ""
                if current == manifest.recipe_hash
                else f"configs/{kind}/{manifest.recipe_name}.yaml has changed since"
            )
        except (ConfigError, OSError) as error:
            note = f"the recipe file cannot be read now: {error}"
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

    # -- reports -----------------------------------------------------------------------------------------------------

    def report_chain(self, report_json: Path) -> Link:
        name = self._report_name(report_json)
        data = _read_json(report_json)
        if not data:
            return missing("report", name, f"{report_json} cannot be read as a JSON object")
        env_id = data.get("env")
        facts = {"path": str(report_json.parent), "env": env_id}
        links: list[Link] = []
        markdown = report_json.parent / "report.md"
        if not markdown.is_file():
            links.append(missing("report file", str(markdown), "report.md is gone"))
        metrics = data.get("metrics") if isinstance(data.get("metrics"), Mapping) else {}
        dataset = data.get("dataset") if isinstance(data.get("dataset"), Mapping) else {}
        entries = list(_run_entries(data.get("runs")))
        links += [self._published(label, Path(run_dir), metrics.get(label), dataset) for label, run_dir in entries]
        links.append(self._report_dagster(report_json, env_id))
        note = "" if entries else "it names no eval runs: it publishes no numbers"
        return present("report", name, note=note, facts=facts, links=tuple(links))

    def _published(self, label: str, run_dir: Path, numbers: Any, dataset: Mapping[str, Any]) -> Link:
        """A model's numbers in a report, against the summary.json of the run they came from."""
        chain = self.run_chain(run_dir)
        facts = {"run_dir": str(run_dir)}
        try:
            summary = RunFolder(run_dir).read_summary()
            metadata = RunFolder(run_dir).read_metadata()
        except (FileNotFoundError, RunRecordError) as error:
            return missing("published numbers", label, f"the run cannot be read: {error}", facts=facts, links=(chain,))
        if isinstance(numbers, Mapping) and stable_json(numbers) != stable_json(summary.metrics):
            why = "the report's numbers differ from the run's summary.json"
            return mismatched("published numbers", label, why, facts=facts, links=(chain,))
        if dataset.get("hash") not in (None, metadata.dataset.hash):
            recorded = str(dataset.get("hash"))[:12]
            why = f"the report names dataset {recorded}…, the run drew from {metadata.dataset.hash[:12]}…"
            return mismatched("published numbers", label, why, facts=facts, links=(chain,))
        note = "" if isinstance(numbers, Mapping) else "the report holds no numbers of its own for this run to compare"
        return present("published numbers", label, note=note, facts=facts, links=(chain,))

    def _report_dagster(self, report_json: Path, env_id: Any) -> Link:
        """The materialization whose metadata names this report's folder or one of its files."""
        names = {str(report_json), str(report_json.parent), str(report_json.parent / "report.md")}
        keys = [report_key(env_id)] if isinstance(env_id, str) else []
        keys += [key for key in self.events.asset_keys() if key not in keys and any("report" in p for p in key.path)]
        for key in keys:
            link = self.events.materialization(
                self._report_name(report_json), key, lambda meta: any(str(value) in names for value in meta.values())
            )
            if link is not None:
                return link
        return self.events.not_found(self._report_name(report_json), "materialization of a report asset")


def governance_record(audits: Sequence[Audit]) -> dict[str, Any]:
    """What the governance asset publishes: how many chains were audited, and each incomplete one with its gaps."""
    incomplete = [audit for audit in audits if not audit.complete]
    return {
        "audited": len(audits),
        "complete": len(audits) - len(incomplete),
        "incomplete": [
            {
                "kind": audit.kind,
                "subject": audit.subject,
                "gaps": [gap.as_dict() | {"describe": gap.describe()} for gap in audit.gaps],
            }
            for audit in incomplete
        ],
    }


def _same_path(recorded: Any, path: Path) -> bool:
    return isinstance(recorded, str) and Path(recorded).resolve() == path.resolve()


def _kind(manifest: CheckpointManifest) -> str:
    return "sft" if manifest.stage == "sft" else "rlft"


def _dirty_paths(sessions: Sequence[Session]) -> list[str] | None:
    """The uncommitted paths the sessions recorded (None when no session records them)."""
    recorded = [getattr(session, "dirty_paths", None) for session in sessions]
    if all(paths is None for paths in recorded):
        return None
    return sorted({path for paths in recorded for path in paths or []})


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _run_entries(runs: Any, label: str = "") -> Iterator[tuple[str, str]]:
    """(label, run folder) of every run a report names: `runs` maps a model to its folder, or to an object with a
    run_dir, possibly nested (per environment); labels are the keys on the way down."""
    if isinstance(runs, str):
        yield label, runs
    elif isinstance(runs, Mapping):
        if isinstance(runs.get("run_dir"), str):
            yield label, runs["run_dir"]
            return
        for key, value in runs.items():
            yield from _run_entries(value, f"{label}/{key}" if label else str(key))
    elif isinstance(runs, list):
        for index, value in enumerate(runs):
            yield from _run_entries(value, f"{label}[{index}]")
