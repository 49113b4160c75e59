"""The main job behind `make run`: one environment's whole lineage on the embedded default, in-process.

It runs on the persistent instance in $DAGSTER_HOME (default outputs/dagster_home), so the runs, materializations and
checks appear in the UI (`make dev`) exactly as if they had been launched there. The instance is made here on first
use, also on a fresh outputs folder: the folder, the project's dagster.yaml (copied atomically, never over one the
user edited) and Dagster's SQLite storages are created, and the model partitions seeded, under a lock in the folder,
so two `secverify run` starting at once do not race; the second waits for the first's few seconds of setup.

Every run carries this process as a tag (run_processes.py): each start marks the runs a killed process left STARTED
as FAILURE, and a run interrupted by SIGTERM or Ctrl-C (recorded FAILURE by Dagster as it stops) ends the sequence:
nothing after it starts, and the command exits with INTERRUPTED.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import dagster as dg

from secverify_dagster.assets.evals import eval_run_config
from secverify_dagster.assets.keys import eval_key, report_key
from secverify_dagster.definitions import defs
from secverify_dagster.partitions import add_model_partitions, registry_pairs
from secverify_dagster.resources.models import load_registry, reachability
from secverify_dagster.run_processes import fail_abandoned_runs, process_tags, was_interrupted
from sv_shared.config import outputs_dir, project_root
from sv_shared.data.files import exclusive, write_bytes_atomic
from sv_shared.registry import get_environment

_QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}

SETUP_WAIT_S = 120.0
"""How long a process waits for another one setting up the same Dagster home (seconds of work)."""

STORAGE_RACE_TRIES = 5
"""How many times a machine opens a new shared database that another machine is creating at the same moment."""

INTERRUPTED = 130
"""The exit status after a run was interrupted (SIGTERM, Ctrl-C): the shell's status for an interrupted command."""


class Interrupted(Exception):
    """A run of the sequence was interrupted: the rest of the sequence must not start."""


def dagster_home() -> Path:
    """$DAGSTER_HOME, defaulting it to outputs/dagster_home (for this process and the Dagster code it runs)."""
    return Path(os.environ.setdefault("DAGSTER_HOME", str(outputs_dir() / "dagster_home")))


def prepare_instance(pairs: Iterable[tuple[str, str]] = ()) -> dg.DagsterInstance:
    """The persistent instance, its home made ready first, with each (environment, model) pair's model added to that
    environment's model set (partitions.py)."""
    home = dagster_home()
    home.mkdir(parents=True, exist_ok=True)
    with exclusive(home / ".secverify-setup.lock", wait_s=SETUP_WAIT_S, what=f"Dagster home {home}"):
        config = home / "dagster.yaml"
        if not config.exists():
            write_bytes_atomic(config, (project_root() / "dagster.yaml").read_bytes())
        # Opening the instance creates and migrates its SQLite storages: done by one process at a time.
        instance = _open_seeded_instance(list(dict.fromkeys(pairs)))
        for run_id in fail_abandoned_runs(instance):
            print(f"run {run_id} was left unfinished by a process that has ended: marked failed", flush=True)
    return instance


def _open_seeded_instance(pairs: Sequence[tuple[str, str]]) -> dg.DagsterInstance:
    """The instance, with `pairs` in the model sets (the registry's runnable pairs seed them, as the new-model sensor
    does in a running deployment). The home's lock orders this machine's processes only: two machines opening one new
    Postgres database at once race to create its tables and to insert the same partitions, and the loser's "already
    exists" / duplicate key means the winner made them, so it opens again."""
    from sqlalchemy.exc import IntegrityError, ProgrammingError

    for attempt in range(STORAGE_RACE_TRIES - 1):
        try:
            return _open_and_seed(pairs)
        except (IntegrityError, ProgrammingError) as error:
            if not _lost_a_creation_race(error):
                raise
            time.sleep(0.2 * (attempt + 1))
    return _open_and_seed(pairs)


def _open_and_seed(pairs: Sequence[tuple[str, str]]) -> dg.DagsterInstance:
    instance = dg.DagsterInstance.get()
    add_model_partitions(instance, pairs)
    return instance


def _lost_a_creation_race(error: Exception) -> bool:
    text = str(error)
    return "already exists" in text or "duplicate key" in text


def _execute(job: dg.JobDefinition, instance: dg.DagsterInstance, **options: Any) -> dg.ExecuteInProcessResult:
    """One run of the sequence in this process, tagged with it; Interrupted when a signal stopped it."""
    result = job.execute_in_process(instance=instance, tags=process_tags(), raise_on_error=False, **options)
    if was_interrupted(instance, result.run_id):
        print(f"      interrupted: run {result.run_id} recorded as failed; nothing after it starts", flush=True)
        raise Interrupted(result.run_id)
    return result


def _step(number: int, total: int, text: str) -> float:
    print(f"[{number}/{total}] {text}", flush=True)
    return time.perf_counter()


def _done(started: float, result: dg.ExecuteInProcessResult, detail: str = "") -> None:
    state = "ok" if result.success else "FAILED"
    print(f"      {state} in {time.perf_counter() - started:.1f}s{' · ' + detail if detail else ''}", flush=True)


def run_main_job(*, env_id: str, models: Sequence[str], n: int | None) -> int:
    try:
        return _run_main_job(env_id=env_id, models=models, n=n)
    except Interrupted:
        return INTERRUPTED


def _run_main_job(*, env_id: str, models: Sequence[str], n: int | None) -> int:
    env = get_environment(env_id)
    registry = load_registry()
    unknown = [m for m in models if m not in registry]
    if unknown:
        print(f"unknown model ids: {', '.join(unknown)} (see `secverify models`)")
        return 2
    instance = prepare_instance(registry_pairs(registry))

    total = 2 + len(models)
    started = _step(1, total, f"{env.name}: raw corpora → curated splits → synthetic set (+ checks)")
    data = _execute(defs.resolve_job_def(f"{env_id}_data_job"), instance, run_config=_QUIET)
    _done(started, data)
    if not data.success:
        return 1

    eval_job = defs.resolve_implicit_global_asset_job_def()
    failures = 0
    for index, model_id in enumerate(models, start=2):
        status = reachability(registry[model_id], env_id, available_baselines=env.baselines.keys())
        started = _step(index, total, f"{env_id}/eval_results[{model_id}]")
        if not status.ok:
            print(f"      skipped: {status.reason}", flush=True)
            continue
        result = _execute(
            eval_job,
            instance,
            partition_key=model_id,
            asset_selection=[eval_key(env_id)],
            run_config={**_QUIET, **eval_run_config(env_id, {"n": n} if n else {})},
        )
        detail = ""
        for event in result.get_asset_materialization_events():
            meta = event.materialization.metadata
            detail = f"reward {meta['reward_mean'].value:.3f} · run {meta['run_dir'].value}"
        _done(started, result, detail)
        failures += not result.success

    started = _step(total, total, f"{env_id}/report")
    report = _execute(defs.resolve_job_def(f"{env_id}_report_job"), instance, run_config=_QUIET)
    _done(started, report)
    report_path = ""
    for made in report.asset_materializations_for_node(report_key(env_id).to_python_identifier()):
        report_path = made.metadata["report"].value
    print()
    print(f"eval runs:  {outputs_dir() / 'evals'}")
    print(f"datasets:   {outputs_dir() / 'datasets' / env_id}")
    print(f"report:     {report_path}")
    print(f"Dagster UI: make dev → http://127.0.0.1:3000 (instance {instance.root_directory})")
    return 0 if report.success and not failures else 1


SCAN_FAILED = 3
"""`secverify train`'s exit status when the checkpoint was made but its safety scan failed (it cannot be promoted)."""


def run_training(kind: str, recipe_name: str, experiment: Path | None = None) -> int:
    """Train one recipe through the asset graph (so the checkpoint and its lineage show in the UI): each of its
    environments' data lineage where its curated splits are missing, their SFT datasets (SFT recipes), the
    checkpoint, its learning curve and its blocking safety scan. `experiment`: a record naming this recipe, whose
    overrides, data slices and reward change the checkpoint is trained with (and whose ref its manifest carries)."""
    try:
        return _run_training(kind, recipe_name, experiment)
    except Interrupted:
        return INTERRUPTED


def _run_training(kind: str, recipe_name: str, experiment: Path | None = None) -> int:
    from secverify_dagster.assets.keys import checkpoint_key, curated_key, learning_curve_key, sft_dataset_key
    from secverify_dagster.training.settings import load_promotion_config
    from sv_shared.training.recipes import load_rlft_recipe, load_sft_recipe

    recipe = load_sft_recipe(recipe_name) if kind == "sft" else load_rlft_recipe(recipe_name)
    run_config = dict(_QUIET)
    if experiment is not None:
        op = checkpoint_key(kind, recipe.name).to_python_identifier()
        run_config["ops"] = {op: {"config": {"experiment": str(experiment)}}}
    instance = prepare_instance()
    # The recipe's environments, and the one the safety scan plays.
    for env_id in dict.fromkeys([*recipe.envs, load_promotion_config().safety_scan.env]):
        if (outputs_dir() / "datasets" / env_id / "curated" / "test.parquet").is_file():
            continue
        started = _step(1, 2, f"{env_id}: data lineage (no {curated_key(env_id).to_user_string()} yet)")
        data = _execute(defs.resolve_job_def(f"{env_id}_data_job"), instance, run_config=_QUIET)
        _done(started, data)
        if not data.success:
            return 1
    selection = [checkpoint_key(kind, recipe.name), learning_curve_key(kind, recipe.name)]
    if kind == "sft":
        selection = [*(sft_dataset_key(env_id) for env_id in recipe.envs), *selection]
    started = _step(2, 2, " → ".join(key.to_user_string() for key in selection) + " (+ safety scan)")
    job = defs.resolve_implicit_global_asset_job_def()
    result = _execute(job, instance, asset_selection=selection, run_config=run_config)
    detail, trained = "", False
    for event in result.get_asset_materialization_events():
        meta = event.materialization.metadata
        if "model_id" in meta and "run_dir" in meta:  # the checkpoint's (its learning curve names the model too)
            trained = True
            detail = f"checkpoint {meta['model_id'].value} · {meta['run_dir'].value}"
    _done(started, result, detail)
    scan_failed = False
    for evaluation in result.get_asset_check_evaluations():
        scan_failed |= not evaluation.passed
        reason = evaluation.metadata.get("reason")
        print(f"      safety scan {'passed' if evaluation.passed else 'FAILED'}: {reason.value if reason else ''}")
    if not trained:
        return 1
    if scan_failed:
        _draw_blocked_learning_curve(job, instance, learning_curve_key(kind, recipe.name), result)
    return SCAN_FAILED if scan_failed else 0


def _draw_blocked_learning_curve(
    job: dg.JobDefinition, instance: dg.DagsterInstance, key: dg.AssetKey, result: dg.ExecuteInProcessResult
) -> None:
    """A failed safety scan is a blocking check, so it skips the checkpoint's learning curve in the same run; the
    curve is what a reviewer reads to see why, so it is drawn in a run of its own (it only reads the checkpoint)."""
    if any(event.asset_key == key for event in result.get_asset_materialization_events()):
        return
    started = _step(2, 2, f"{key.to_user_string()} (the failed scan skipped it; drawn in a run of its own)")
    _done(started, _execute(job, instance, asset_selection=[key], run_config=dict(_QUIET)))
