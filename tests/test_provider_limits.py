"""The project's dagster.yaml limits what runs at once, on the tags and pools the code really sets: the real queued run
coordinator launches one local model run at a time beside API runs, and a pool admits one step at a time."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml
from dagster._core.events import DagsterEvent, DagsterEventType
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.storage.dagster_run import IN_PROGRESS_RUN_STATUSES, DagsterRun, DagsterRunStatus, RunsFilter
from dagster._core.test_utils import InProcessTestWorkspaceLoadTarget, create_test_daemon_workspace_context, freeze_time
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._daemon.daemon import get_default_daemon_logger
from dagster._daemon.run_coordinator.queued_run_coordinator_daemon import QueuedRunCoordinatorDaemon
from dagster._scheduler.scheduler import launch_scheduled_runs

from secverify_dagster.assets.keys import TOURNAMENT, checkpoint_key
from secverify_dagster.concurrency import GPU_POOL, LOCAL_MODEL_POOL, PROVIDER_TAG, SERVED_MODEL_TAG
from secverify_dagster.definitions import RECIPES, defs
from secverify_dagster.partitions import add_model_partitions, registry_pairs
from secverify_dagster.resources.models import PROVIDERS, load_registry
from sv_shared.config import project_root
from sv_shared.training.recipes import SftRecipe

PROJECT_CONFIG = project_root() / "dagster.yaml"
MODELS = ["smollm2-135m-instruct", "gpt-5", "gpt-5-mini", "heuristic"]


def _project_instance_config() -> dict[str, Any]:
    """The project's dagster.yaml, launching runs with Dagster's test launcher: it records a launch instead of
    starting a process, so the test decides when each run finishes. The coordinator and its limits are the file's."""
    config = yaml.safe_load(PROJECT_CONFIG.read_text(encoding="utf-8"))
    return config | {"run_launcher": {"module": "dagster._core.test_utils", "class": "MockedRunLauncher"}}


@pytest.fixture()
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[WorkspaceProcessContext]:
    """The project's instance config and code location, loaded in this process as the daemon loads them."""
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path / "outputs"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-never-sent")  # the gpt-5 models are reachable: nothing is called
    origin = LoadableTargetOrigin(
        executable_path=sys.executable,
        module_name="secverify_dagster.definitions",
        attribute="defs",
        working_directory=str(project_root()),
    )
    with dg.instance_for_test(overrides=_project_instance_config()) as instance:
        registry = load_registry()
        add_model_partitions(instance, registry_pairs({model: registry[model] for model in MODELS}))
        target = InProcessTestWorkspaceLoadTarget(InProcessCodeLocationOrigin(origin))
        with create_test_daemon_workspace_context(target, instance) as context:
            yield context


def _schedule_monday_sweeps(workspace: WorkspaceProcessContext) -> None:
    """The scheduler daemon's Monday 06:00 ticks: the nightly regression's and the weekly sweep's runs are created
    and submitted to the queue (started the day before)."""
    (entry,) = workspace.create_request_context().get_code_location_entries().values()
    assert entry.code_location is not None, entry.load_error
    (repository,) = entry.code_location.get_repositories().values()
    with freeze_time(datetime(2026, 11, 29, 12, tzinfo=UTC)):
        for name in ("nightly_regression", "weekly_sweep"):
            workspace.instance.start_schedule(repository.get_schedule(name))
    monday = datetime(2026, 11, 30, 6, 0, 5, tzinfo=UTC)
    with freeze_time(monday):
        list(launch_scheduled_runs(workspace, get_default_daemon_logger("SchedulerDaemon"), monday, {}))


def _runs(instance: dg.DagsterInstance, statuses: list[DagsterRunStatus]) -> list[DagsterRun]:
    return list(instance.get_runs(RunsFilter(statuses=statuses)))


def _finish(instance: dg.DagsterInstance, run: DagsterRun) -> None:
    instance.report_dagster_event(
        DagsterEvent(DagsterEventType.RUN_SUCCESS.value, job_name=run.job_name, message="finished"), run.run_id
    )


def test_the_run_queue_launches_one_local_model_run_at_a_time_beside_api_runs(
    workspace: WorkspaceProcessContext,
) -> None:
    instance = workspace.instance
    _schedule_monday_sweeps(workspace)
    queued = _runs(instance, [DagsterRunStatus.QUEUED])
    by_provider = sorted(run.tags[PROVIDER_TAG] for run in queued)
    # One run per (environment, model): nightly and weekly both ask for the local model on E1–E4; the weekly sweep
    # for both OpenAI models on E1–E4 and for the E1 baseline on E1 alone.
    assert by_provider == ["baseline"] + ["local_transformers"] * 8 + ["openai"] * 8

    daemon = QueuedRunCoordinatorDaemon(interval_seconds=1)
    seen: list[list[str]] = []
    blocked_by_tag = False
    for _ in range(3 * len(queued)):
        list(daemon.run_iteration(workspace))
        active = _runs(instance, list(IN_PROGRESS_RUN_STATUSES))
        providers = sorted(run.tags[PROVIDER_TAG] for run in active)
        seen.append(providers)
        assert providers.count("local_transformers") <= 1 and providers.count("openai") <= 2 and len(active) <= 2
        waiting = [run.tags[PROVIDER_TAG] for run in _runs(instance, [DagsterRunStatus.QUEUED])]
        # A free slot left empty while a local run waits: the tag limit, not max_concurrent_runs, holds it back.
        blocked_by_tag |= providers == ["local_transformers"] and waiting == ["local_transformers"]
        if not active:
            break
        # The local model is the slow one: API and baseline runs finish first, as they would.
        _finish(instance, next((run for run in active if run.tags[PROVIDER_TAG] != "local_transformers"), active[0]))
    assert ["local_transformers", "openai"] in seen  # an API run goes on beside the local one
    assert blocked_by_tag
    assert not _runs(instance, [DagsterRunStatus.QUEUED])
    assert len(_runs(instance, [DagsterRunStatus.SUCCESS])) == len(queued)


def test_every_api_provider_and_served_model_has_its_own_run_limit() -> None:
    limits = yaml.safe_load(PROJECT_CONFIG.read_text(encoding="utf-8"))["concurrency"]["runs"]["tag_concurrency_limits"]
    by_value = {limit["value"]: limit["limit"] for limit in limits if limit["key"] == PROVIDER_TAG}
    assert by_value["local_transformers"] == 1
    assert {"openai", "anthropic"} <= set(by_value) <= set(PROVIDERS)
    (served,) = [limit for limit in limits if limit["key"] == SERVED_MODEL_TAG]
    assert served["value"] == {"applyLimitPerUniqueValue": True}


def test_steps_that_hold_a_model_are_in_its_pool() -> None:
    assert defs.resolve_assets_def(TOURNAMENT).op.pool == LOCAL_MODEL_POOL
    checks = {key: checks_def for checks_def in defs.asset_checks or [] for key in checks_def.check_keys}
    for recipe in RECIPES:
        key = checkpoint_key("sft" if isinstance(recipe, SftRecipe) else "rlft", recipe.name)
        pool = GPU_POOL if recipe.profile == "gpu" else LOCAL_MODEL_POOL
        assert defs.resolve_assets_def(key).op.pool == pool
        assert checks[dg.AssetCheckKey(key, "safety_scan")].node_def.pool == pool


def test_the_local_model_pool_admits_one_step_at_a_time() -> None:
    """Its pool holds one slot on the project's instance: a second step in it (in another run, or in-process in
    `secverify train`) waits until the first frees its slot."""
    config = yaml.safe_load(PROJECT_CONFIG.read_text(encoding="utf-8"))
    with dg.instance_for_test(overrides=config) as instance:
        storage = instance.event_log_storage
        assert storage.initialize_concurrency_limit_to_default(LOCAL_MODEL_POOL)
        first = storage.claim_concurrency_slot(LOCAL_MODEL_POOL, "run-a", "redteam__tournament")
        second = storage.claim_concurrency_slot(LOCAL_MODEL_POOL, "run-b", "training__sft__e1")
        assert first.is_claimed and not second.is_claimed
        storage.free_concurrency_slots_for_run("run-a")
        assert storage.claim_concurrency_slot(LOCAL_MODEL_POOL, "run-b", "training__sft__e1").is_claimed
