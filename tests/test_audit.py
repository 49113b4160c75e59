"""`secverify audit` and governance: chains traced from a report, an eval run or a checkpoint down to corpora, code and
the Dagster run that made them; hashes recomputed, not trusted; the governance asset listing incomplete chains; every
asset with owners, kinds and a code version.

One temporary project for the module: E1's data lineage, a heuristic eval and a report materialized through Dagster,
an SFT dataset materialized too, an eval run made by the CLI (outside Dagster), and a promoted checkpoint whose records
are written through the training code (without training: the audit never loads weights)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pytest
import yaml

from secverify_dagster import definitions
from secverify_dagster.assets.governance import (
    CHAINS_CHECK,
    GOVERNANCE_KEY,
    OwnersConfig,
    asset_code_version,
    govern,
    load_owners,
)
from secverify_dagster.assets.keys import checkpoint_key, curated_key, eval_key, sft_dataset_key
from secverify_dagster.audit.auditor import Auditor
from secverify_dagster.audit.events import DagsterRecords
from secverify_dagster.cli.main import main as secverify
from secverify_dagster.jobs import EVAL_JOB
from secverify_dagster.partitions import add_model_partitions
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource
from secverify_dagster.resources.models import load_registry
from secverify_dagster.runner.datasets import embedded_dataset
from secverify_dagster.runner.eval_runner import EvalRunner
from secverify_dagster.runner.metadata import code_version, dirty_paths
from sv_shared.config import ConfigError, project_root
from sv_shared.data.hashing import sha256_hex
from sv_shared.registry import get_environment
from sv_shared.runs.folder import RunFolder
from sv_shared.training.checkpoints import CheckpointManifest, finish_training_run, open_training_run
from sv_shared.training.promotion import record_approval, record_safety_scan
from sv_shared.training.recipes import load_sft_recipe, recipe_hash

REPO = project_root()
BASE_MODEL = "smollm2-135m-instruct"
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def audit_cli(*args: str) -> int:
    return secverify(["audit", *args])


def audit_json(capsys: pytest.CaptureFixture[str], subject: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    status = audit_cli(subject, "--json")
    return status, json.loads(capsys.readouterr().out)


def links(chain: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """Every link of a kind anywhere in a chain."""
    found = [chain] if chain["kind"] == kind else []
    return found + [link for child in chain["links"] for link in links(child, kind)]


@contextmanager
def tampered(path: Path, change) -> Iterator[None]:
    """Change a file for the block, then put its bytes back."""
    original = path.read_bytes()
    try:
        change(path)
        yield
    finally:
        path.write_bytes(original)


def _checkpoint(outputs: Path) -> str:
    """A complete, scanned and approved SFT checkpoint of the real e1 recipe, recorded through the training code."""
    recipe = load_sft_recipe("e1")
    sft_hash = sha256_hex((outputs / "datasets" / "e1" / "sft" / "train.jsonl").read_bytes())
    root = outputs / "checkpoints"
    with open_training_run(root, BASE_MODEL, "sft", recipe_hash(recipe), base_model=BASE_MODEL) as run:
        run.model_dir.mkdir(parents=True)
        (run.model_dir / "config.json").write_text('{"model_type": "llama"}')
        (run.model_dir / "model.safetensors").write_bytes(b"weights")
        manifest = CheckpointManifest(
            model_id=run.model_id,
            parent_model=BASE_MODEL,
            base_model=BASE_MODEL,
            stage="sft",
            run_id=run.run_id,
            recipe_name=recipe.name,
            recipe_hash=recipe_hash(recipe),
            recipe=recipe.model_dump(mode="json"),
            envs=["e1"],
            reward_weights={},
            data={"e1/sft_dataset": sft_hash},
            code_version=code_version(),
            dirty_paths=dirty_paths(),
        )
        finish_training_run(run, manifest)
        run_dir = run.run_dir
    record_safety_scan(
        run_dir, judge_id="local", samples=4, unsafe=0, unsafe_sample_hashes=[], passed=True, threshold=0.25
    )
    record_approval(run_dir, approver="team:ml-governance reviewer", note="audit test")
    return manifest.model_id


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("audit")
    outputs, home = root / "outputs", root / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SECVERIFY_OUTPUTS", str(outputs))
        patch.setenv("DAGSTER_HOME", str(home))
        instance = dg.DagsterInstance.from_config(str(home))
        defs = definitions.defs
        assert defs.resolve_job_def("e1_data_job").execute_in_process(instance=instance, run_config=QUIET).success
        add_model_partitions(instance, [("e1", "heuristic")])
        evals = defs.resolve_implicit_global_asset_job_def().execute_in_process(
            instance=instance, partition_key="heuristic", asset_selection=[eval_key("e1")], run_config=QUIET
        )
        run_dir = Path(evals.get_asset_materialization_events()[0].materialization.metadata["run_dir"].value)
        assert defs.resolve_job_def("e1_report_job").execute_in_process(instance=instance, run_config=QUIET).success
        sft = defs.resolve_implicit_global_asset_job_def().execute_in_process(
            instance=instance, asset_selection=[sft_dataset_key("e1")], run_config=QUIET
        )
        assert sft.success
        assert secverify(["eval", "--env", "e1", "--model", "heuristic", "-n", "6"]) == 0
        cli_run = next(p for p in (outputs / "evals" / "sv-env-network-logs--heuristic").iterdir() if p != run_dir)
        (report_json,) = (outputs / "reports" / "e1").rglob("report.json")
        yield {
            "outputs": outputs,
            "instance": instance,
            "run_dir": run_dir,
            "cli_run": cli_run,
            "report": report_json.parent.relative_to(outputs / "reports").as_posix(),
            "report_json": report_json,
            "checkpoint": _checkpoint(outputs),
        }
        instance.dispose()


def test_a_run_materialized_by_dagster_has_a_complete_chain(project, capsys) -> None:
    status, audit = audit_json(capsys, project["run_dir"].name)
    assert status == 0 and audit["complete"] and audit["gaps"] == []
    chain = audit["chain"]
    (metrics,) = links(chain, "metrics")
    assert "recomputed from results.jsonl" in metrics["why"]
    (split,) = links(chain, "curated split")
    assert split["facts"]["recomputed_hash"] == split["facts"]["recorded_hash"]
    (corpus,) = links(chain, "raw corpus")
    assert corpus["name"] == "embedded" and corpus["facts"]["recomputed_hash"] == corpus["facts"]["recorded_hash"]
    assert links(chain, "curated manifest")[0]["facts"]["fallback"] is False
    assert links(chain, "verifier")[0]["name"] == get_environment("e1").verifier.version
    runs = {link["name"]: link["facts"] for link in links(chain, "dagster run")}
    assert runs["e1/eval_results[heuristic]"]["job"] == EVAL_JOB
    assert runs["e1/eval_results[heuristic]"]["partition"] == "heuristic"
    assert runs["e1/curated_splits test"]["job"] == "e1_data_job"
    assert runs["e1/raw_embedded"]["status"] == "SUCCESS"


def test_a_report_traces_every_number_to_its_run(project, capsys) -> None:
    capsys.readouterr()
    assert audit_cli(project["report"]) == 0
    text = capsys.readouterr().out
    assert "✓ published numbers heuristic" in text and "COMPLETE: every link holds" in text
    status, audit = audit_json(capsys, str(project["report_json"]))
    assert status == 0
    (numbers,) = links(audit["chain"], "published numbers")
    assert numbers["links"][0]["name"].endswith(project["run_dir"].name)
    assert links(audit["chain"], "dagster run")[-1]["facts"]["job"] == "e1_report_job"


def test_a_run_made_outside_dagster_is_incomplete_and_says_why(project, capsys) -> None:
    status, audit = audit_json(capsys, f"sv-env-network-logs--heuristic/{project['cli_run'].name}")
    assert status == 1
    (gap,) = audit["gaps"]
    assert gap["path"][-1].startswith("dagster run") and "made outside Dagster" in gap["why"]
    (dataset,) = links(audit["chain"], "dataset")
    assert dataset["status"] == "present" and dataset["facts"]["corpus"].startswith("embedded")
    assert dataset["facts"]["recomputed_hash"] == dataset["facts"]["recorded_hash"]


def test_a_fallback_corpus_is_named_as_one(project) -> None:
    """A split built from the embedded corpus while iot23 was configured: the audit says the embedded one was used."""
    auditor = Auditor(project["outputs"], DagsterRecords(project["instance"]))
    env = get_environment("e1")
    metadata = RunFolder(project["run_dir"]).read_metadata()
    configured = {**metadata.config["data"], "train_sources": ["iot23"]}
    link, _ = auditor.datasets.eval_dataset(env, metadata.dataset, configured, metadata.seed)
    (manifest,) = [child for child in link.links if child.kind == "curated manifest"]
    assert manifest.facts["fallback"] is True and manifest.facts["sources"] == ["embedded"]
    assert "FALLBACK" in link.why and "iot23" in link.why
    assert [corpus.name for corpus in manifest.links] == ["embedded"]
    cli = RunFolder(project["cli_run"]).read_metadata()
    embedded, _ = auditor.datasets.eval_dataset(env, cli.dataset, configured, cli.seed)
    assert embedded.facts["fallback"] is True and "FALLBACK" in embedded.why


def _drop_a_row(path: Path) -> None:
    pl.read_parquet(path).slice(1).write_parquet(path)


def _forge_a_reward(path: Path) -> None:
    lines = path.read_text().splitlines()
    record = json.loads(lines[0])
    record["reward"] = 1.0 if record["reward"] != 1.0 else 0.0
    path.write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")


def test_recorded_hashes_are_recomputed_not_trusted(project, capsys) -> None:
    run_dir, raw = project["run_dir"], project["outputs"] / "datasets" / "e1" / "raw" / "embedded.parquet"
    with tampered(raw, _drop_a_row):
        status, audit = audit_json(capsys, project["report"])
        assert status == 1
        assert [(gap["path"][-1], gap["status"]) for gap in audit["gaps"]] == [("raw corpus embedded", "mismatched")]
    with tampered(RunFolder(run_dir).results_path, _forge_a_reward):
        status, audit = audit_json(capsys, run_dir.name)
        assert status == 1
        (gap,) = audit["gaps"]
        assert gap["path"][-1] == "metrics summary.json" and gap["status"] == "mismatched"
    test_split = project["outputs"] / "datasets" / "e1" / "curated" / "test.parquet"
    with tampered(test_split, _drop_a_row):
        status, audit = audit_json(capsys, run_dir.name)
        assert status == 1
        gaps = {gap["path"][-1]: gap["status"] for gap in audit["gaps"]}
        assert gaps == {"metrics summary.json": "missing", f"curated split {test_split}": "mismatched"}
        # The event log still says which Dagster run materialized the split the run drew from.
        (split,) = links(audit["chain"], "curated split")
        assert split["links"][0]["kind"] == "dagster run" and split["links"][0]["status"] == "present"
    assert audit_cli(run_dir.name) == 0


def test_a_checkpoint_chain_reaches_its_data_and_rehashes_its_weights(project, capsys) -> None:
    status, audit = audit_json(capsys, project["checkpoint"])
    # Recorded through the training code but never materialized: its only gap is the Dagster run.
    assert status == 1
    assert [gap["path"][-1] for gap in audit["gaps"]] == [f"dagster run {project['checkpoint']}"]
    chain = audit["chain"]
    assert links(chain, "model files")[0]["status"] == "present"
    assert links(chain, "recipe")[0]["facts"]["recipe_hash"] == recipe_hash(load_sft_recipe("e1"))
    (sft,) = links(chain, "SFT dataset")
    assert sft["status"] == "present" and links(sft, "dagster run")[-1]["facts"]["asset"] == "e1/sft_dataset"
    assert {link["kind"] for link in sft["links"]} >= {"curated split", "synthetic set"}
    assert links(sft, "synthetic set")[0]["facts"]["generators"]
    assert links(chain, "base model")[0]["name"] == BASE_MODEL
    assert links(chain, "promotion")[0]["facts"]["approver"] == "team:ml-governance reviewer"
    weights = next(project["outputs"].glob("checkpoints/*/sft/*/model/model.safetensors"))
    with tampered(weights, lambda path: path.write_bytes(b"other weights")):
        status, audit = audit_json(capsys, project["checkpoint"])
        assert status == 1 and links(audit["chain"], "model files")[0]["status"] == "mismatched"


def test_an_unknown_subject_exits_2_and_lists_what_can_be_audited(project, capsys) -> None:
    capsys.readouterr()
    assert audit_cli("no-such-run") == 2
    err = capsys.readouterr().err
    assert "'no-such-run' is no eval run, report or checkpoint" in err
    assert project["run_dir"].name in err and project["report"] in err and project["checkpoint"] in err


def test_the_governance_asset_lists_incomplete_chains_and_warns(project) -> None:
    (asset,) = [asset for asset in definitions.defs.assets if GOVERNANCE_KEY in asset.keys]
    resources = {"artifacts": ArtifactStoreResource()}
    result = dg.materialize([asset], instance=project["instance"], resources=resources)
    (check,) = result.get_asset_check_evaluations()
    assert (check.check_name, check.passed, check.severity) == (CHAINS_CHECK, False, dg.AssetCheckSeverity.WARN)
    (event,) = result.get_asset_materialization_events()
    metadata = event.materialization.metadata
    # Published: the report, the run it used, the promoted checkpoint; only the checkpoint was made outside Dagster.
    assert (metadata["audited"].value, metadata["incomplete"].value) == (3, 1)
    (row,) = metadata["incomplete_chains"].value.records
    assert (row.data["kind"], row.data["subject"]) == ("checkpoint", project["checkpoint"])
    written = json.loads((project["outputs"] / "governance" / "incomplete_chains.json").read_text())
    assert written["incomplete"][0]["gaps"][0]["path"][-1] == f"dagster run {project['checkpoint']}"
    approvals = next(project["outputs"].glob("checkpoints/*/sft/*/approvals.jsonl"))
    with tampered(approvals, lambda path: record_approval(path.parent, approver="reviewer", decision="reject")):
        result = dg.materialize([asset], instance=project["instance"], resources=resources)
        (check,) = result.get_asset_check_evaluations()
        assert check.passed


# -- owners, kinds, code versions ------------------------------------------------------------------------------------


def test_every_asset_has_owners_kinds_and_a_code_version() -> None:
    specs = [spec for asset in definitions.defs.assets for spec in asset.specs]
    assert GOVERNANCE_KEY in {spec.key for spec in specs}
    for spec in specs:
        assert spec.owners and all(owner.startswith("team:") for owner in spec.owners), spec.key
        assert spec.kinds, spec.key
        assert spec.code_version, spec.key
    groups = {spec.group_name for spec in specs}
    assert set(load_owners().groups) <= groups, "configs/owners.yaml names a group no asset has"


def test_govern_keeps_partitions_checks_and_op_settings() -> None:
    """definitions.ASSETS as built against the governed assets the definitions hold."""
    built = {spec.key: (asset, spec) for asset in definitions.ASSETS for spec in asset.specs}
    governed = list(definitions.defs.assets)
    assert {spec.key for asset in governed for spec in asset.specs} == set(built)
    for asset in governed:
        for spec in asset.specs:
            before_asset, before = built[spec.key]
            assert spec.partitions_def == before.partitions_def and spec.skippable == before.skippable
            assert spec.deps == before.deps and spec.group_name == before.group_name
            assert list(asset.check_specs) == list(before_asset.check_specs)
            assert asset.is_executable == before_asset.is_executable
            if asset.is_executable:  # external assets (the base models) have no op
                # What the run launcher and the pools read lives on the op: kept as it was.
                assert (asset.node_def.tags, asset.node_def.pool) == (
                    before_asset.node_def.tags,
                    before_asset.node_def.pool,
                )
            assert spec.kinds >= before.kinds and spec.tags.items() >= {
                (name, value) for name, value in before.tags.items() if not name.startswith("dagster/kind/")
            }

    @dg.multi_asset(
        specs=[dg.AssetSpec(["e1", "curated_splits"], group_name="e1"), dg.AssetSpec(["x", "y"], code_version="v1")],
        check_specs=[dg.AssetCheckSpec("rows", asset=["e1", "curated_splits"])],
    )
    def two_keys():
        yield dg.MaterializeResult(asset_key=["e1", "curated_splits"])
        yield dg.MaterializeResult(asset_key=["x", "y"])
        yield dg.AssetCheckResult(asset_key=["e1", "curated_splits"], check_name="rows", passed=True)

    (multi,) = govern([two_keys])
    versions = multi.code_versions_by_key
    assert versions[curated_key("e1")] == asset_code_version(curated_key("e1"))
    assert versions[dg.AssetKey(["x", "y"])] == "v1"
    result = dg.materialize([multi])
    assert result.success and [check.passed for check in result.get_asset_check_evaluations()] == [True]


def test_owners_must_be_teams_or_emails(tmp_path: Path) -> None:
    path = tmp_path / "owners.yaml"
    path.write_text(yaml.safe_dump({"default": ["team:security-ml"], "groups": {"e1": ["Jane Doe"]}}))
    with pytest.raises(ConfigError, match=r"groups\.e1"):
        load_owners(path)
    assert OwnersConfig(default=["team:a"], groups={"e1": ["ops@example.com"]}).for_group("e9") == ["team:a"]


def test_code_versions_change_with_what_makes_the_asset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = get_environment("e1")
    keys = [eval_key("e1"), curated_key("e1"), checkpoint_key("sft", "e1"), eval_key("e4")]
    before = {key: asset_code_version(key) for key in keys}
    assert before[eval_key("e1")].startswith(env.verifier.version)
    assert before[checkpoint_key("sft", "e1")] == f"recipe-{recipe_hash(load_sft_recipe('e1'))[:12]}"
    shutil.copytree(REPO / "configs", tmp_path / "configs")
    config_path = tmp_path / "configs" / "envs" / "e1.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["data"]["split_fractions"] = {"train": 0.5, "dev": 0.25, "test": 0.25}
    config_path.write_text(yaml.safe_dump(config))
    monkeypatch.setenv("SECVERIFY_ROOT", str(tmp_path))
    after = {key: asset_code_version(key) for key in keys}
    assert after[eval_key("e1")] != before[eval_key("e1")] and after[curated_key("e1")] != before[curated_key("e1")]
    assert after[checkpoint_key("sft", "e1")] == before[checkpoint_key("sft", "e1")]
    assert after[eval_key("e4")] == before[eval_key("e4")]


def test_a_view_run_is_audited_through_the_split_it_views(project, capsys) -> None:
    views = project["outputs"] / "evals" / "views" / "no-state" / "sv-env-network-logs--heuristic"
    (view_run,) = views.iterdir()
    status, audit = audit_json(capsys, view_run.name)
    assert status == 0 and audit["gaps"] == []
    (view,) = links(audit["chain"], "dataset view")
    assert view["facts"]["recomputed_hash"] == view["facts"]["recorded_hash"] and view["facts"]["view"] == "no-state"
    (split,) = links(audit["chain"], "curated split")
    assert split["status"] == "present"
    runs = {link["name"]: link["facts"] for link in links(audit["chain"], "dagster run")}
    assert runs["e1/eval_results[heuristic]"]["job"] == EVAL_JOB


def test_a_run_shows_its_experiment_and_a_rescored_run_follows_its_parent(project, capsys) -> None:
    from secverify_dagster.research.experiments import experiment_eval
    from sv_shared.runs.ablations import load_ablation
    from sv_shared.runs.records import FinishedRun
    from sv_shared.runs.rescore import rescore_run

    evals = project["outputs"] / "evals"
    found = experiment_eval(Path("configs/experiments/e1/2026-11-24.yaml"), env_id="e1")
    runner = EvalRunner(found.env, load_registry()["heuristic"], evals_root=evals)
    made = runner.run(embedded_dataset(found.env, split=found.split, seed=found.seed), n=4, experiment=found.ref)
    _, audit = audit_json(capsys, made.metadata.run_id)
    (shown,) = links(audit["chain"], "experiment")
    assert shown["status"] == "present" and shown["facts"]["sha256"] == found.ref.sha256
    assert shown["why"] == "the file still has the recorded hash"

    parent = project["run_dir"]
    rescored = rescore_run(
        FinishedRun(parent, RunFolder(parent).read_metadata()),
        load_ablation("e1", "no-calibration"),
        evals_root=evals,
        code_version=code_version(),
        dirty_paths=dirty_paths(),
    )
    _, audit = audit_json(capsys, rescored.run_dir.name)
    (followed,) = links(audit["chain"], "re-scored from")
    assert followed["name"] == f"{parent.parent.name}/{parent.name}" and followed["status"] == "present"
    assert followed["facts"]["ablation"] == "no-calibration"
    assert {link["kind"] for link in followed["links"]} >= {"verifier", "code version", "dagster run"}
