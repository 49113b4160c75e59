"""The Dagster graph loads with per-environment lineage, and the sensor and schedules plan the seed's cadences."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml
from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._core.execution.build_resources import wrap_resources_for_execution

from secverify_dagster.assets.keys import (
    JUDGE_VALIDATION,
    TOURNAMENT,
    ablations_key,
    checkpoint_evals_key,
    checkpoint_key,
    curated_key,
    eval_key,
    recipes_trained_on,
    report_key,
    sft_dataset_key,
    synthetic_batch_key,
    synthetic_key,
)
from secverify_dagster.concurrency import PROVIDER_TAG, provider_tags
from secverify_dagster.definitions import RECIPES, defs
from secverify_dagster.jobs import ENV_TAG, EVAL_JOB
from secverify_dagster.partitions import (
    AWAITING_APPROVAL_PARTITION,
    add_model_partitions,
    models_partition_name,
    registry_pairs,
)
from secverify_dagster.resources.dagster_resources import ModelRegistryResource
from secverify_dagster.resources.models import ModelSpec, default_registry_path, load_registry, reachability
from secverify_dagster.resources.vllm import VllmResource
from secverify_dagster.schedules.sweeps import nightly_regression, weekly_sweep
from secverify_dagster.sensors.new_models import new_model_sensor
from sv_shared.config import read_yaml
from sv_shared.registry import ENV_IDS, get_environment, implemented_env_ids
from sv_shared.training.recipes import RlftRecipe, SftRecipe

GRAPH = defs.resolve_asset_graph()


def _env_of(key: dg.AssetKey) -> str | None:
    return key.path[0] if key.path[0] in ENV_IDS else None


def _upstream(key: dg.AssetKey) -> set[dg.AssetKey]:
    return set(dg.AssetSelection.assets(key).upstream().resolve(GRAPH)) - {key}


def test_definitions_load_and_validate() -> None:
    dg.Definitions.validate_loadable(defs)
    keys = {key.to_user_string() for key in GRAPH.get_all_asset_keys()}
    assert {
        "e1/raw_embedded",
        "e1/raw_iot23",
        "e1/raw_cicids2017",
        "e1/raw_unswnb15",
        "e1/curated_splits",
        "e1/synthetic",
        "e1/eval_results",
        "e1/report",
    } <= keys
    assert "eval_results" not in keys
    for env_id in implemented_env_ids():
        node = GRAPH.get(eval_key(env_id))
        assert node.parent_keys == {curated_key(env_id)}
        assert node.group_name == env_id
        # Each environment's own model set: its grid lists only the models that can run there.
        assert node.partitions_def == dg.DynamicPartitionsDefinition(name=f"{env_id}_models")
    checks = {key.name for key in GRAPH.asset_check_keys}
    assert {"schema", "label_balance", "no_duplicates"} <= checks
    for job in ("e1_data_job", EVAL_JOB, "e1_report_job", "reports_job"):
        assert defs.resolve_job_def(job) is not None
    assert {eval_key(env_id) for env_id in implemented_env_ids()} <= set(
        defs.resolve_job_def(EVAL_JOB).asset_layer.executable_asset_keys
    )


def _checkpoints_reading(env_id: str) -> set[dg.AssetKey]:
    """Checkpoint assets whose recipe trains on env_id, and those that continue one of them."""
    direct = {
        checkpoint_key("sft" if isinstance(recipe, SftRecipe) else "rlft", recipe.name)
        for recipe in RECIPES
        if env_id in recipe.envs
    }
    downstream = dg.AssetSelection.assets(*direct).downstream().resolve(GRAPH) if direct else set()
    return {key for key in downstream if key.path[0] == "training"}


def _recipe_of(key: dg.AssetKey) -> SftRecipe | RlftRecipe:
    return next(
        recipe
        for recipe in RECIPES
        if key.path[1:3] == ["sft" if isinstance(recipe, SftRecipe) else "rlft", recipe.name]
    )


def test_evals_and_reports_read_only_their_own_environment() -> None:
    for env_id in implemented_env_ids():
        assert {_env_of(key) for key in _upstream(eval_key(env_id))} == {env_id}
    for env_id in ("e1", "e2", "e3", "e4"):
        checkpoint_evals = {checkpoint_evals_key(kind, name) for kind, name in recipes_trained_on(env_id)}
        assert checkpoint_evals, env_id
        # A report reads its environment's runs: the swept evals and the evals of checkpoints trained on it ...
        assert GRAPH.get(report_key(env_id)).parent_keys == {eval_key(env_id), ablations_key(env_id), *checkpoint_evals}
        assert GRAPH.get(ablations_key(env_id)).parent_keys == {eval_key(env_id), *checkpoint_evals}
        # ... and other environments' data only through those checkpoints' training (a mixed recipe's).
        through_training = set(dg.AssetSelection.assets(*checkpoint_evals).upstream().resolve(GRAPH))
        assert {_env_of(key) for key in _upstream(report_key(env_id)) - through_training} == {env_id}
        # Re-curating one of them reaches its own synthetic set, evals and report ...
        downstream = dg.AssetSelection.assets(curated_key(env_id)).downstream().resolve(GRAPH)
        own = {
            curated_key(env_id),
            synthetic_key(env_id),
            eval_key(env_id),
            report_key(env_id),
            synthetic_batch_key(env_id),
            ablations_key(env_id),
            sft_dataset_key(env_id),
        }
        # ... the checkpoints trained on its data (or continuing one that was), their evals, and the reports of the
        # environments those checkpoints are evaluated on; beyond that, governance, the benchmark sheet and the weekly
        # memo (each reads every environment).
        trained_on = _checkpoints_reading(env_id)
        envs_of_checkpoints = {e for key in trained_on for e in _recipe_of(key).envs}
        reports_of_checkpoints = {k(e) for e in envs_of_checkpoints for k in (report_key, ablations_key)}
        others = ("training", "governance", "benchmark_sheet", "reports")
        assert {key for key in downstream if key.path[0] not in others} == {
            *own,
            *reports_of_checkpoints,
        }
        assert {key for key in downstream if key.path[0] == "training"} == trained_on | {
            checkpoint_evals_key(*key.path[1:3]) for key in trained_on
        }
    # Dialogue reports also show the latest tournament (its rounds are E5 dialogues).
    for env_id in ("e5", "e6"):
        checkpoint_evals = {checkpoint_evals_key(kind, name) for kind, name in recipes_trained_on(env_id)}
        assert GRAPH.get(report_key(env_id)).parent_keys == {
            eval_key(env_id),
            ablations_key(env_id),
            TOURNAMENT,
            *checkpoint_evals,
        }


def test_the_only_edges_between_environments_are_the_declared_red_team_feedback() -> None:
    crossing = {
        (parent.to_user_string(), key.to_user_string())
        for key in GRAPH.get_all_asset_keys()
        for parent in GRAPH.get(key).parent_keys
        if _env_of(key) and _env_of(parent) and _env_of(key) != _env_of(parent)
    }
    assert crossing == {("e6/eval_results", "e5/synthetic"), ("e5/eval_results", "e6/synthetic")}
    # The tournament's rounds are stored as E5 eval runs, which E6's synthetic set reads with the others.
    # So do the evals of checkpoints trained on E5.
    e5_checkpoint_evals = {checkpoint_evals_key(kind, name) for kind, name in recipes_trained_on("e5")}
    assert GRAPH.get(synthetic_key("e6")).parent_keys == {
        curated_key("e6"),
        eval_key("e5"),
        TOURNAMENT,
        *e5_checkpoint_evals,
    }
    e6_checkpoint_evals = {checkpoint_evals_key(kind, name) for kind, name in recipes_trained_on("e6")}
    assert GRAPH.get(synthetic_key("e5")).parent_keys == {curated_key("e5"), eval_key("e6"), *e6_checkpoint_evals}


def _stale_status(instance: dg.DagsterInstance) -> CachingStaleStatusResolver:
    """Dagster's own staleness resolver (the one behind the UI's "stale" badges)."""
    view = AssetGraphView(
        temporal_context=TemporalContext(effective_dt=datetime.now(UTC), last_event_id=None),
        instance=instance,
        asset_graph=GRAPH,
    )
    return CachingStaleStatusResolver(instance=instance, asset_graph=GRAPH, loading_context=view)


def test_recurating_e1_leaves_e4_evals_and_report_fresh() -> None:
    models = ["heuristic", "phish-rules"]
    with dg.instance_for_test() as instance:
        for env_id in ("e1", "e4"):
            instance.add_dynamic_partitions(models_partition_name(env_id), models)

        def materialized(key: dg.AssetKey, partition: str | None = None) -> None:
            instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=key, partition=partition))

        for env_id in ("e1", "e4"):
            materialized(curated_key(env_id))
            for model_id in models:
                materialized(eval_key(env_id), model_id)
            for kind, name in recipes_trained_on(env_id):
                materialized(checkpoint_evals_key(kind, name))
            materialized(ablations_key(env_id))
            materialized(report_key(env_id))
        before = _stale_status(instance)
        assert before.get_status(eval_key("e4"), "phish-rules") == StaleStatus.FRESH
        assert before.get_status(eval_key("e1"), "heuristic") == StaleStatus.FRESH

        materialized(curated_key("e1"))
        after = _stale_status(instance)
        assert {after.get_status(eval_key("e1"), model_id) for model_id in models} == {StaleStatus.STALE}
        (cause,) = after.get_stale_causes(eval_key("e1"), "heuristic")
        assert cause.dependency.asset_key == curated_key("e1")
        assert {after.get_status(eval_key("e4"), model_id) for model_id in models} == {StaleStatus.FRESH}
        assert after.get_status(report_key("e4")) == StaleStatus.FRESH


def _sensor_tick(instance: dg.DagsterInstance, cursor: str | None, registry_path: Path | None = None) -> Any:
    resources = {
        "models": ModelRegistryResource(registry_path=str(registry_path) if registry_path else None),
        "vllm": VllmResource(),
    }
    with dg.build_sensor_context(instance=instance, cursor=cursor, resources=resources, definitions=defs) as context:
        return new_model_sensor(context)


def _backfilled(result: Any, registry: dict[str, ModelSpec]) -> set[tuple[str, str]]:
    """The (environment, model) pairs of a tick's backfills, each backfill holding one provider's models only."""
    pairs: set[tuple[str, str]] = set()
    for request in result.run_requests:
        subset = request.asset_graph_subset
        assert subset is not None and request.tags["secverify/trigger"] == "new-model"
        backfill = {(key.asset_key.path[0], key.partition_key) for key in subset.iterate_asset_partitions()}
        assert {
            tag: value for _, model in backfill for tag, value in provider_tags(registry[model]).items()
        }.items() <= request.tags.items()
        assert {registry[model].provider for _, model in backfill} == {request.tags[PROVIDER_TAG]}
        pairs |= backfill
    return pairs


def test_new_model_sensor_backfills_what_can_run_once_in_one_backfill_per_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    registry = load_registry()
    with dg.instance_for_test() as instance:
        # What `secverify run` does on a fresh instance: every runnable pair a partition. It must not steal the
        # backfill.
        add_model_partitions(instance, registry_pairs(registry))
        first = _sensor_tick(instance, None)
        pairs = _backfilled(first, registry)
        expected = {
            (env_id, model_id)
            for env_id in implemented_env_ids()
            for model_id, spec in registry.items()
            if reachability(spec, env_id, available_baselines=get_environment(env_id).baselines).ok
        }
        assert pairs == expected
        # One backfill per provider among them (the run queue limits runs by these tags), not one per pair.
        providers = {registry[model].provider for _, model in expected}
        assert sorted(request.tags[PROVIDER_TAG] for request in first.run_requests) == sorted(providers)
        # Bounded: no pair that could only log "skipped" (baselines off their environment, API models without keys).
        assert ("e1", "tool-oracle") not in pairs and not any(model == "gpt-5" for _, model in pairs)
        assert len(pairs) < len(registry) * len(implemented_env_ids())
        again = _sensor_tick(instance, first.cursor)
        backfilled = sorted({model for _, model in expected})
        assert not again.run_requests and json.loads(again.cursor) == backfilled
        # An instance whose sets predate the models (upgraded from one shared model set): the next tick fills every
        # environment's set with its runnable pairs and asks for no backfill of models already backfilled.
        with dg.instance_for_test() as upgraded:
            filled = _sensor_tick(upgraded, again.cursor)
            assert not filled.run_requests
            assert {
                (models_partition_name(env_id), model_id)
                for request in filled.dynamic_partitions_requests
                for model_id in request.partition_keys
                for env_id in implemented_env_ids()
                if request.partitions_def_name == models_partition_name(env_id)
            } == {(models_partition_name(env_id), model_id) for env_id, model_id in expected}
        # Issue 27: a model added before its key is set is backfilled once the key is there, not forgotten.
        assert "gpt-5" not in backfilled
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
        keyed = _sensor_tick(instance, again.cursor)
        assert {model for _, model in _backfilled(keyed, registry)} >= {"gpt-5"}
        assert "gpt-5" in json.loads(keyed.cursor)
        # ... and it joins every environment's model set then, not before (its grid cells appear with its key).
        assert {
            request.partitions_def_name
            for request in keyed.dynamic_partitions_requests
            if "gpt-5" in request.partition_keys
        } == {models_partition_name(env_id) for env_id in implemented_env_ids()}
        monkeypatch.delenv("OPENAI_API_KEY")

        # A model added to the registry is backfilled on its own; one removed is retired, not asked for again.
        file = read_yaml(default_registry_path())
        file["models"]["smollm2-copy"] = file["models"]["smollm2-135m-instruct"]
        del file["models"]["heuristic"]
        changed = tmp_path / "models.yaml"
        changed.write_text(yaml.safe_dump(file), encoding="utf-8")
        third = _sensor_tick(instance, keyed.cursor, changed)
        assert {model for _, model in _backfilled(third, load_registry(changed))} == {"smollm2-copy"}
        (request,) = third.run_requests
        assert request.tags[PROVIDER_TAG] == "local_transformers"
        assert {
            (request.partitions_def_name, tuple(request.partition_keys))
            for request in third.dynamic_partitions_requests
        } == {(models_partition_name(env_id), ("smollm2-copy",)) for env_id in implemented_env_ids()}
        assert "heuristic" not in json.loads(third.cursor)


def _tick(schedule: dg.ScheduleDefinition, instance: dg.DagsterInstance, when: datetime) -> Any:
    # As a context manager, so the resources it opened are closed (and the instance's context released) after.
    # Resources only for a schedule that takes them: resolving them reopens the instance from its ref (≈ 0.1 s).
    resources = {"models": ModelRegistryResource(), "vllm": VllmResource()}
    with dg.build_schedule_context(
        instance=instance,
        scheduled_execution_time=when,
        resources={key: resources[key] for key in schedule.required_resource_keys},
    ) as context:
        return schedule(context)


class _OpenInstanceContext(dg.ScheduleEvaluationContext):
    """A schedule context over an instance already open: the daemon's context reopens the instance from its ref for
    the resources on every tick (≈ 0.7 s here, alembic's revision check), which a walk over hundreds of ticks need
    not repeat; what a tick decides is the same. _tick keeps the daemon's path for every other test."""

    def __init__(self, instance: dg.DagsterInstance, when: datetime, resources: dict[str, Any]) -> None:
        super().__init__(
            instance_ref=instance.get_ref(),
            scheduled_execution_time=when,
            resources=wrap_resources_for_execution(resources),
        )
        self._instance = instance  # what `instance` would open from the ref, already open (and not closed on exit)


def _walk_tick(schedule: dg.ScheduleDefinition, instance: dg.DagsterInstance, when: datetime) -> Any:
    resources = {"models": ModelRegistryResource(), "vllm": VllmResource()}
    with _OpenInstanceContext(instance, when, {key: resources[key] for key in schedule.required_resource_keys}) as ctx:
        return schedule(ctx)


def _pairs(requests: list[dg.RunRequest]) -> set[tuple[str, str]]:
    return {(key.path[0], request.partition_key) for request in requests for key in request.asset_selection or []}


def test_weekly_sweep_requests_one_n_10_run_per_pair_that_can_answer() -> None:
    with dg.instance_for_test() as instance:
        # Sets that hold more than can run (added by hand, or before a key was unset): tool-oracle is E2's baseline
        # (not E1's); gpt-5 has no key here; old-model left the registry.
        for env_id in ("e1", "e2", "e3", "e4"):
            instance.add_dynamic_partitions(
                models_partition_name(env_id),
                ["heuristic", "smollm2-135m-instruct", "tool-oracle", "gpt-5", "old-model"],
            )
        monday = datetime(2026, 11, 23, 6, tzinfo=UTC)
        requests = _tick(weekly_sweep, instance, monday)
        weekly = set(implemented_env_ids()) & {"e1", "e2", "e3", "e4"}
        assert _pairs(requests) == {(env_id, "smollm2-135m-instruct") for env_id in weekly} | {
            ("e1", "heuristic"),
            ("e2", "tool-oracle"),
        }
        # One run per pair (an eval asset's own model set), tagged with its model's provider and its environment.
        assert len(requests) == len(_pairs(requests)) and all(len(r.asset_selection or []) == 1 for r in requests)
        assert {r.partition_key: r.tags[PROVIDER_TAG] for r in requests} == {
            "heuristic": "baseline",
            "smollm2-135m-instruct": "local_transformers",
            "tool-oracle": "baseline",
        }
        assert all(r.tags[ENV_TAG] == (r.asset_selection or [])[0].path[0] for r in requests)
        assert len({r.run_key for r in requests}) == len(requests)
        assert all(r.tags["secverify/cadence"] == "weekly" for r in requests)
        # N=10 on the full split only: the weekly trend does not pay for E1's ablated views, and says so.
        assert all(
            r.run_config["ops"][f"{key.path[0]}__eval_results"]["config"] == {"seed": 42, "n": 10, "views": []}
            for r in requests
            for key in r.asset_selection or []
        )
        assert {r.tags["secverify/views"] for r in requests} == {"none"}
        eval_job = defs.resolve_job_def(EVAL_JOB)
        for request in requests:  # what the daemon launches: the job narrowed to the request's assets, its config
            dg.validate_run_config(
                eval_job.get_subset(asset_selection=set(request.asset_selection or [])), request.run_config
            )


def test_nightly_regression_watches_only_unmodified_open_models() -> None:
    with dg.instance_for_test() as instance:
        add_model_partitions(
            instance,
            [
                (env_id, model)
                for env_id in ("e1", "e2", "e3", "e4")
                for model in ("heuristic", "smollm2-135m-instruct", "gpt-5")
            ],
        )
        requests = _tick(nightly_regression, instance, datetime(2026, 11, 24, 3, tzinfo=UTC))
        assert {r.partition_key for r in requests} == {"smollm2-135m-instruct"}
        assert {r.tags["secverify/cadence"] for r in requests} == {"nightly"}
        assert {r.tags[PROVIDER_TAG] for r in requests} == {"local_transformers"}


def _ticks(schedule: dg.ScheduleDefinition, start: datetime, end: datetime) -> list[datetime]:
    # The daemon's own cron iterator (what it would evaluate), over [start, end).
    from dagster._utils.schedules import cron_string_iterator

    ticks = []
    for tick in cron_string_iterator(start.timestamp(), schedule.cron_schedule, "UTC"):
        if tick >= end:
            return ticks
        ticks.append(tick)
    return ticks


def test_every_cadence_over_two_years_and_across_year_ends() -> None:
    """Every tick of every schedule from 2026-01-01 to 2028-01-01: weekly every 7 days, bi-weekly every 14 (also
    across 2026's 53rd ISO week into 2027), nightly every day, monthly on the 1st."""
    start, end = datetime(2026, 1, 1, tzinfo=UTC), datetime(2028, 1, 1, tzinfo=UTC)
    by_name = {schedule.name: schedule for schedule in defs.schedules}
    assert set(by_name) == {
        "weekly_sweep",
        "biweekly_full_eval",
        "biweekly_tournament",
        "nightly_regression",
        "monthly_report",
        "weekly_report",
        "biweekly_report",
        "biweekly_benchmark_sheet",
    }
    with dg.instance_for_test() as instance:
        add_model_partitions(
            instance, [("e1", "heuristic")] + [(env_id, "smollm2-135m-instruct") for env_id in implemented_env_ids()]
        )
        ran: dict[str, list[datetime]] = {}
        for name in (
            "weekly_sweep",
            "biweekly_full_eval",
            "biweekly_tournament",
            "weekly_report",
            "biweekly_report",
            "biweekly_benchmark_sheet",
        ):
            ran[name] = [
                tick
                for tick in _ticks(by_name[name], start, end)
                if not isinstance(_walk_tick(by_name[name], instance, tick), dg.SkipReason)
            ]
    gaps = {name: {(b - a).days for a, b in pairwise(ticks)} for name, ticks in ran.items()}
    assert gaps == {
        "weekly_sweep": {7},
        "biweekly_full_eval": {14},
        "biweekly_tournament": {14},
        "weekly_report": {7},
        "biweekly_report": {14},
        "biweekly_benchmark_sheet": {14},
    }
    # The benchmark sheet follows each bi-weekly report (2 hours later), so it reads that period's full runs.
    assert [tick - timedelta(hours=2) for tick in ran["biweekly_benchmark_sheet"]] == ran["biweekly_report"]
    # Each bi-weekly report follows its period's full eval and tournament (the same week's Wednesday, 12:00).
    assert [tick - timedelta(hours=10) for tick in ran["biweekly_report"]] == ran["biweekly_tournament"]
    assert datetime(2026, 12, 21, 8, tzinfo=UTC) in ran["biweekly_full_eval"]
    assert datetime(2027, 1, 4, 8, tzinfo=UTC) in ran["biweekly_full_eval"]  # 14 days on, across the year end
    assert all(tick.weekday() == 0 for tick in ran["biweekly_full_eval"])
    assert all(tick.weekday() == 2 for tick in ran["biweekly_tournament"])
    # Each tournament falls in a full-eval week (the Monday two days before it).
    assert {tick.date() - timedelta(days=2) for tick in ran["biweekly_tournament"]} == {
        tick.date() for tick in ran["biweekly_full_eval"]
    }
    nightly = _ticks(by_name["nightly_regression"], start, end)
    assert len(nightly) == 730 and {(b - a).days for a, b in pairwise(nightly)} == {1}
    monthly = _ticks(by_name["monthly_report"], start, end)
    assert [tick.date() for tick in monthly] == [
        date(year, month, 1) for year in (2026, 2027) for month in range(1, 13)
    ]


def test_every_schedule_and_sensor_explains_itself_in_the_ui() -> None:
    """Issue 27: the UI showed cron strings alone, and a bi-weekly schedule's reads "every Monday"."""
    repository = defs.get_repository_def()
    assert len(repository.schedule_defs) == 8
    for schedule in repository.schedule_defs:
        assert schedule.description and "UTC" in schedule.description, schedule.name
        if schedule.name.startswith("biweekly"):
            assert "every 14 days" in schedule.description and "skipped" in schedule.description, schedule.name
    assert {sensor.name for sensor in repository.sensor_defs} == {"new_model_sensor", "run_failure_recorder"}
    for sensor in repository.sensor_defs:
        assert sensor.description and len(sensor.description) > 60, sensor.name


def test_red_team_assets_jobs_and_tournament_schedule() -> None:
    from secverify_dagster.schedules.sweeps import biweekly_tournament

    keys = {key.to_user_string() for key in GRAPH.get_all_asset_keys()}
    assert {"e5/raw_jbb", "e5/raw_harmbench", "e5/curated_splits", "e6/raw_jbb", "e6/synthetic"} <= keys
    assert {"judges/validation", "redteam/tournament", "e5/report", "e6/report"} <= keys
    # It plays its own E5 dialogues: it reads E5's curated split and the judges' measured error, no eval asset.
    # ... and the checkpoints of the recipes that train attackers (E5) or defenders (E6): its advancing entrants.
    redteam_checkpoints = {checkpoint_key(kind, name) for e in ("e5", "e6") for kind, name in recipes_trained_on(e)}
    assert GRAPH.get(TOURNAMENT).parent_keys == {JUDGE_VALIDATION, curated_key("e5"), *redteam_checkpoints}
    # Its entrants include the local model: its runs queue with the local model's eval runs (dagster.yaml).
    assert defs.resolve_job_def("tournament_job").tags[PROVIDER_TAG] == "local_transformers"
    with dg.instance_for_test() as instance:
        even = datetime(2026, 11, 25, 2, tzinfo=UTC)  # the Wednesday of a bi-weekly week
        request = biweekly_tournament(dg.build_schedule_context(instance=instance, scheduled_execution_time=even))
        assert isinstance(request, dg.RunRequest) and request.run_key == "tournament:2026-11-25"
        odd = datetime(2026, 12, 2, 2, tzinfo=UTC)
        skipped = biweekly_tournament(dg.build_schedule_context(instance=instance, scheduled_execution_time=odd))
        assert isinstance(skipped, dg.SkipReason)


def test_the_asset_graph_draws_the_training_lineage() -> None:
    graph = defs.resolve_asset_graph()
    sft, rlft = dg.AssetKey(["training", "sft", "e1"]), dg.AssetKey(["training", "rlft", "e1"])
    assert graph.get(sft).parent_keys == {
        dg.AssetKey(["e1", "sft_dataset"]),
        dg.AssetKey(["models", "smollm2-135m-instruct"]),
    }
    assert graph.get(rlft).parent_keys == {sft, dg.AssetKey(["e1", "curated_splits"])}
    assert graph.get(dg.AssetKey(["e1", "sft_dataset"])).parent_keys == {
        dg.AssetKey(["e1", "curated_splits"]),
        dg.AssetKey(["e1", "synthetic"]),
        dg.AssetKey(["e1", "synthetic_batch"]),
    }
    for checkpoint in (sft, rlft):
        assert graph.get_check_spec(dg.AssetCheckKey(checkpoint, "safety_scan")).blocking
        # base model → SFT checkpoint → RLFT checkpoint → its evals → the report: retraining makes them stale.
        evals = checkpoint_evals_key(*checkpoint.path[1:3])
        assert graph.get(evals).parent_keys == {checkpoint, curated_key("e1")}
        assert evals in graph.get(report_key("e1")).parent_keys
    assert graph.get(dg.AssetKey(["models", "smollm2-135m-instruct"])).is_external
    approval = defs.resolve_job_def("approve_checkpoint_job")
    assert approval.partitions_def == dg.DynamicPartitionsDefinition(name=AWAITING_APPROVAL_PARTITION)
