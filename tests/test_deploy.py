"""deploy/: the project runs for real on a PostgreSQL server started on loopback, and the Kubernetes deployment (its
instance config, manifests, vLLM endpoint and GPU step tags) is checked offline: no cluster is contacted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import dagster as dg
import kubernetes
import pytest
import yaml
from dagster._config import process_config
from dagster._core.instance.config import dagster_instance_config
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.storage.dagster_run import DagsterRun
from dagster._core.test_utils import (
    InProcessTestWorkspaceLoadTarget,
    create_test_daemon_workspace_context,
    freeze_time,
)
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._daemon.daemon import get_default_daemon_logger
from dagster._daemon.sensor import execute_sensor_iteration
from dagster._scheduler.scheduler import launch_scheduled_runs
from dagster._serdes.config_class import class_from_code_pointer
from dagster_k8s import K8sRunLauncher
from dagster_k8s.container_context import K8sContainerContext
from dagster_k8s.job import construct_dagster_k8s_job, get_user_defined_k8s_config
from postgres_server import PostgresServer, running_postgres

from secverify_dagster.assets.keys import checkpoint_key, curated_key, eval_key
from secverify_dagster.definitions import RECIPES, defs
from secverify_dagster.partitions import models_partition_name, registry_pairs
from secverify_dagster.resources.models import load_registry, reachability
from sv_shared.training.recipes import SftRecipe

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
INSTANCE_CONFIGS = [ROOT / "dagster.yaml", DEPLOY / "postgres" / "dagster.yaml", K8S / "dagster.yaml"]
POSTGRES_CONFIGS = INSTANCE_CONFIGS[1:]


def _read(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    with running_postgres() as server:
        yield server


def _postgres_home(home: Path, env: Mapping[str, str], monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Dagster home with deploy/postgres/dagster.yaml, its connection variables set for this test."""
    home.mkdir(parents=True)
    shutil.copyfile(DEPLOY / "postgres" / "dagster.yaml", home / "dagster.yaml")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    return home


def _rows(server: PostgresServer, database: str, query: str, *params: object) -> list[tuple[Any, ...]]:
    link = server.connect(database)
    try:
        with link.cursor() as cursor:
            cursor.execute(query, params)
            return cursor.fetchall()
    finally:
        link.close()


def _tick_sensors_and_weekly_sweep(instance: dg.DagsterInstance) -> None:
    """What the daemon does, in this process: one sensor iteration (the new-model sensor runs by default), then the
    weekly sweep's Monday 06:00 tick after the schedule was started the day before."""
    origin = LoadableTargetOrigin(
        executable_path=sys.executable,
        module_name="secverify_dagster.definitions",
        attribute="defs",
        working_directory=str(ROOT),
    )
    target = InProcessTestWorkspaceLoadTarget(InProcessCodeLocationOrigin(origin))
    with create_test_daemon_workspace_context(target, instance) as workspace:
        (entry,) = workspace.create_request_context().get_code_location_entries().values()
        assert entry.code_location is not None, entry.load_error
        (repository,) = entry.code_location.get_repositories().values()
        list(execute_sensor_iteration(workspace, get_default_daemon_logger("SensorDaemon"), None, None))
        with freeze_time(datetime(2026, 11, 29, 12, tzinfo=UTC)):
            instance.start_schedule(repository.get_schedule("weekly_sweep"))
        monday = datetime(2026, 11, 30, 6, 0, 5, tzinfo=UTC)
        with freeze_time(monday):
            list(launch_scheduled_runs(workspace, get_default_daemon_logger("SchedulerDaemon"), monday, {}))


@pytest.mark.slow
def test_the_project_runs_on_postgres(
    postgres: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from secverify_dagster.pipeline import run_main_job

    database = postgres.create_database("secverify_project")
    home = _postgres_home(tmp_path / "dagster_home", postgres.dagster_env(database), monkeypatch)
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path / "outputs"))
    instance = dg.DagsterInstance.get()  # creates the tables (storage migrations)
    assert [
        type(storage).__module__.split(".")[0]
        for storage in (instance.run_storage, instance.event_log_storage, instance.schedule_storage)
    ] == ["dagster_postgres"] * 3

    _tick_sensors_and_weekly_sweep(instance)
    # `secverify run` on E1 with the rule baseline: data lineage + checks, the eval partition, the report.
    assert run_main_job(env_id="e1", models=["heuristic"], n=None) == 0

    def rows(query: str, *params: object) -> list[tuple[Any, ...]]:
        return _rows(postgres, database, query, *params)

    statuses = dict(rows("SELECT status, count(*) FROM runs GROUP BY status"))
    assert statuses["SUCCESS"] == 3, statuses  # data job, eval partition, report
    weekly = rows(
        "SELECT r.status FROM runs r JOIN run_tags t ON t.run_id = r.run_id WHERE t.key = %s AND t.value = %s",
        "secverify/cadence",
        "weekly",
    )
    # The Monday tick queued its runs (QueuedRunCoordinator); no daemon here dequeues them.
    assert weekly and {status for (status,) in weekly} == {"QUEUED"}
    assert statuses["QUEUED"] == len(weekly)
    materialized = rows(
        "SELECT partition FROM event_logs WHERE dagster_event_type = 'ASSET_MATERIALIZATION' AND asset_key = %s",
        eval_key("e1").to_string(),
    )
    assert materialized == [("heuristic",)]
    checks = rows(
        "SELECT execution_status FROM asset_check_executions WHERE asset_key = %s", curated_key("e1").to_string()
    )
    assert checks and {status for (status,) in checks} == {"SUCCEEDED"}
    ticks = {(kind, status) for kind, status in rows("SELECT type, status FROM job_ticks")}
    assert {("SENSOR", "SUCCESS"), ("SCHEDULE", "SUCCESS")} <= ticks, ticks
    # The sensor's tick added each runnable pair's model to its environment's set and asked for its backfills.
    partitions = set(rows("SELECT partitions_def_name, partition FROM dynamic_partitions"))
    assert {(models_partition_name(env_id), model) for env_id, model in registry_pairs(load_registry())} <= partitions
    assert (models_partition_name("e2"), "heuristic") not in partitions  # E1's baseline is on E1's grid only
    backfills = rows("SELECT key FROM bulk_actions")
    tagged = rows(
        "SELECT backfill_id FROM backfill_tags WHERE key = %s AND value = %s", "secverify/trigger", "new-model"
    )
    assert backfills and sorted(tagged) == sorted(backfills)
    assert len(rows("SELECT version_num FROM alembic_version")) == 1
    # Nothing went to SQLite: Dagster's home holds only the config, the setup lock and step/tick log files.
    assert not [path for path in home.rglob("*") if path.suffix in {".db", ".sqlite"}]
    assert not (home / "history").exists() and not (home / "schedules").exists()


_OPEN_INSTANCE = """
import pathlib, sys, time
import dagster_postgres
from secverify_dagster.pipeline import prepare_instance
ready, go, model = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
ready.touch()
while not go.exists():
    time.sleep(0.005)
instance = prepare_instance([("e1", "heuristic"), ("e1", "smollm2-135m-instruct"), ("e4", model)])
print(type(instance.run_storage).__name__)
"""


def test_two_processes_opening_a_new_postgres_instance_at_once_both_succeed(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    """Two machines (two Dagster homes) open one new database at the same moment and seed the model partitions, the
    first thing `secverify run` does (pipeline.prepare_instance): both create and migrate the storage tables."""
    database = postgres.create_database("secverify_race")
    go = tmp_path / "go"
    children = []
    for index in range(2):
        home = tmp_path / f"home{index}"
        home.mkdir()
        shutil.copyfile(DEPLOY / "postgres" / "dagster.yaml", home / "dagster.yaml")
        env = {
            **os.environ,
            **postgres.dagster_env(database),
            "DAGSTER_HOME": str(home),
            "SECVERIFY_OUTPUTS": str(tmp_path / "outputs"),
        }
        command = [sys.executable, "-c", _OPEN_INSTANCE, str(tmp_path / f"ready{index}"), str(go), f"model-{index}"]
        children.append(
            subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        )
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"ready{index}").exists() for index in range(2)):
        assert time.monotonic() < deadline and all(child.poll() is None for child in children)
        time.sleep(0.05)
    go.touch()
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err[-3000:]
        assert out.strip() == "PostgresRunStorage"
    partitions = _rows(
        postgres, database, "SELECT partitions_def_name, partition FROM dynamic_partitions ORDER BY 1, 2"
    )
    assert [tuple(row) for row in partitions] == [
        ("e1_models", "heuristic"),
        ("e1_models", "smollm2-135m-instruct"),
        ("e4_models", "model-0"),
        ("e4_models", "model-1"),
    ]
    assert len(_rows(postgres, database, "SELECT version_num FROM alembic_version")) == 1


def _tag_limits(config: Mapping[str, Any]) -> list[str]:
    """The run tag limits of an instance config, wherever it sets them, as comparable strings."""
    coordinator = (config.get("run_coordinator") or {}).get("config") or {}
    queue = config.get("run_queue") or {}
    runs = (config.get("concurrency") or {}).get("runs") or {}
    limits = coordinator.get("tag_concurrency_limits") or queue.get("tag_concurrency_limits") or []
    limits = limits or runs.get("tag_concurrency_limits") or []
    return sorted(json.dumps(limit, sort_keys=True) for limit in limits)


def test_every_instance_config_applies_the_same_run_tag_limits() -> None:
    local = _read(ROOT / "dagster.yaml")
    limits = _tag_limits(local)
    assert (
        json.dumps({"key": "secverify/provider", "limit": 1, "value": "local_transformers"}, sort_keys=True) in limits
    )
    for path in INSTANCE_CONFIGS[1:]:
        assert _tag_limits(_read(path)) == limits, path
    # On one machine with PostgreSQL everything else about concurrency is the local instance's too.
    assert _read(DEPLOY / "postgres" / "dagster.yaml").get("concurrency") == local.get("concurrency")


@pytest.mark.parametrize("path", POSTGRES_CONFIGS, ids=lambda path: path.parent.name)
def test_postgres_connection_comes_only_from_the_environment(path: Path) -> None:
    connection = _read(path)["storage"]["postgres"]["postgres_db"]
    assert {field: value for field, value in connection.items() if field != "scheme"} == {
        "hostname": {"env": "DAGSTER_PG_HOST"},
        "port": {"env": "DAGSTER_PG_PORT"},
        "username": {"env": "DAGSTER_PG_USER"},
        "password": {"env": "DAGSTER_PG_PASSWORD"},
        "db_name": {"env": "DAGSTER_PG_DB"},
    }
    # SQLAlchemy 2.1's default PostgreSQL driver is psycopg 3, which is not installed.
    assert connection["scheme"] == "postgresql+psycopg2"


@pytest.fixture()
def pg_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Connection variables for config processing only: nothing connects with them."""
    for name in ("DAGSTER_PG_HOST", "DAGSTER_PG_USER", "DAGSTER_PG_PASSWORD", "DAGSTER_PG_DB"):
        monkeypatch.setenv(name, "unused")
    monkeypatch.setenv("DAGSTER_PG_PORT", "5432")


def _k8s_instance_config(tmp_path: Path) -> Mapping[str, Any]:
    shutil.copyfile(K8S / "dagster.yaml", tmp_path / "dagster.yaml")
    config, _ = dagster_instance_config(str(tmp_path))  # the whole file against Dagster's instance schema
    return config


def _launcher(tmp_path: Path) -> K8sRunLauncher:
    """The run launcher of deploy/k8s/dagster.yaml, built from a kubeconfig that names no reachable cluster: the
    launcher is configured but never calls the API."""
    config = process_config(K8sRunLauncher.config_type(), _k8s_instance_config(tmp_path)["run_launcher"]["config"])
    assert config.success, config.errors
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "none", "cluster": {"server": "https://127.0.0.1:9"}}],
                "users": [{"name": "none", "user": {}}],
                "contexts": [{"name": "none", "context": {"cluster": "none", "user": "none"}}],
                "current-context": "none",
            }
        ),
        encoding="utf-8",
    )
    return K8sRunLauncher(**{**config.value, "load_incluster_config": False, "kubeconfig_file": str(kubeconfig)})


@pytest.mark.usefixtures("pg_env")
def test_k8s_instance_config_is_valid_for_dagster_and_each_of_its_classes(tmp_path: Path) -> None:
    config = _k8s_instance_config(tmp_path)
    for section in ("run_launcher", "run_coordinator", "compute_logs", "local_artifact_storage"):
        klass = class_from_code_pointer(config[section]["module"], config[section]["class"])
        processed = process_config(klass.config_type(), config[section].get("config", {}))
        assert processed.success, (section, processed.errors)
    assert class_from_code_pointer(config["run_launcher"]["module"], config["run_launcher"]["class"]) is K8sRunLauncher
    assert config["run_coordinator"]["class"] == "QueuedRunCoordinator"
    assert "postgres" in config["storage"]


class _Response:
    """The shape kubernetes.client.ApiClient.deserialize reads: a JSON body."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self.data = json.dumps(document)


def _kustomization() -> dict[str, Any]:
    return _read(K8S / "kustomization.yaml")


def _manifests() -> list[dict[str, Any]]:
    return [doc for name in _kustomization()["resources"] for doc in _documents(K8S / name)]


def _manifest(kind: str, name: str) -> dict[str, Any]:
    (found,) = [doc for doc in _manifests() if doc["kind"] == kind and doc["metadata"]["name"] == name]
    return found


def test_k8s_manifests_are_complete_typed_kubernetes_objects() -> None:
    listed = set(_kustomization()["resources"])
    generated = {file for generator in _kustomization()["configMapGenerator"] for file in generator.get("files", [])}
    assert {path.name for path in K8S.glob("*.yaml")} == listed | generated | {"kustomization.yaml"}
    client = kubernetes.client.ApiClient()
    for document in _manifests():
        assert document["apiVersion"] and document["kind"] and document["metadata"]["name"], document
        version = document["apiVersion"].split("/")[-1]
        model = client.deserialize(_Response(document), f"{version.capitalize()}{document['kind']}")
        # Every field is one the Kubernetes API knows (a misspelt field would be dropped here, and refused by kubectl).
        assert client.sanitize_for_serialization(model) == document, document["metadata"]["name"]


def _pod_spec(kind: str, name: str) -> dict[str, Any]:
    return _manifest(kind, name)["spec"]["template"]["spec"]


def test_k8s_names_the_instance_and_pods_refer_to_exist_or_are_documented(tmp_path: Path) -> None:
    config = _read(K8S / "dagster.yaml")["run_launcher"]["config"]
    generated = {generator["name"] for generator in _kustomization()["configMapGenerator"]}
    assert config["instance_config_map"] in generated
    assert set(config["env_config_maps"]) <= generated
    assert config["job_namespace"] == _kustomization()["namespace"]
    _manifest("ServiceAccount", config["service_account_name"])
    for volume in config["volumes"]:
        _manifest("PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"])
    # The Secrets hold credentials, so they are not in the repository: the README says how to create each one.
    secrets = set(config["env_secrets"])
    for deployment in (doc for doc in _manifests() if doc["kind"] == "Deployment"):
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            secrets |= {source["secretRef"]["name"] for source in container.get("envFrom", []) if "secretRef" in source}
            secrets |= {
                variable["valueFrom"]["secretKeyRef"]["name"]
                for variable in container.get("env", [])
                if "secretKeyRef" in variable.get("valueFrom", {})
            }
    readme = (DEPLOY / "README.md").read_text(encoding="utf-8")
    assert secrets == {"secverify-postgres", "secverify-model-keys"}
    for secret in secrets:
        assert f"create secret generic {secret}" in readme, secret
    # The webserver and daemon load the code server the user-code Service exposes.
    (location,) = _read(K8S / "workspace.yaml")["load_from"]
    service = _manifest("Service", location["grpc_server"]["host"])
    assert [port["port"] for port in service["spec"]["ports"]] == [location["grpc_server"]["port"]]


def test_vllm_endpoint_serves_a_registry_model_where_the_registry_looks_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (literal,) = [
        generator["literals"]
        for generator in _kustomization()["configMapGenerator"]
        if generator["name"] == "secverify-model-endpoints"
    ]
    registry = load_registry(include_checkpoints=False)
    for variable, url in (entry.split("=", 1) for entry in literal):
        (spec,) = [spec for spec in registry.values() if spec.base_url_env == variable]
        address = urlsplit(url)
        assert address.path == "/v1"  # the OpenAI SDK appends /chat/completions to the base URL
        service = _manifest("Service", address.hostname)
        (port,) = service["spec"]["ports"]
        assert port["port"] == address.port
        deployment = _manifest("Deployment", address.hostname)
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert [p["containerPort"] for p in container["ports"] if p["name"] == port["targetPort"]] == [8000]
        assert container["args"][0] == spec.model  # vLLM's served name is what the registry sends as `model`
        assert "--port=8000" in container["args"]
        assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
        monkeypatch.setenv(variable, url)
        assert reachability(spec, "e1").ok


def _gpu_recipes() -> list[Any]:
    return [recipe for recipe in RECIPES if recipe.profile == "gpu"]


def test_there_is_a_gpu_training_recipe_to_deploy() -> None:
    assert _gpu_recipes()


@pytest.mark.usefixtures("pg_env")
@pytest.mark.parametrize("recipe", RECIPES, ids=lambda recipe: f"{recipe.stage}-{recipe.name}")
def test_a_training_step_pod_requests_gpus_only_for_a_gpu_recipe(recipe: Any, tmp_path: Path) -> None:
    """The step pod the k8s executor would create for the recipe's checkpoint, built by dagster-k8s itself from the
    launcher config and the step's op tags, as K8sStepHandler does."""
    launcher = _launcher(tmp_path)
    kind = "sft" if isinstance(recipe, SftRecipe) else "rlft"
    op_tags = defs.resolve_assets_def(checkpoint_key(kind, recipe.name)).op.tags
    context = K8sContainerContext.create_for_run(DagsterRun(job_name="train"), launcher, include_run_tags=False)
    context = context.merge(K8sContainerContext(run_k8s_config=get_user_defined_k8s_config(op_tags)))
    job = construct_dagster_k8s_job(
        context.get_k8s_job_config("secverify:0.1.0", launcher),
        args=["dagster", "api", "execute_step"],
        job_name="dagster-step-train",
        user_defined_k8s_config=context.run_k8s_config,
        component="step_worker",
    )
    pod = kubernetes.client.ApiClient().sanitize_for_serialization(job)["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    limits = container["resources"].get("limits", {})
    assert container["resources"]["requests"] == {"cpu": "1", "memory": "4Gi"}  # the launcher's, kept
    assert pod["volumes"] == [{"name": "outputs", "persistentVolumeClaim": {"claimName": "secverify-outputs"}}]
    if recipe.profile == "gpu":
        assert limits == {"nvidia.com/gpu": str(recipe.gpu_settings.devices)}
        assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    else:
        assert "nvidia.com/gpu" not in limits and not pod.get("tolerations")


def test_k8s_code_location_runs_each_step_in_its_own_pod_where_the_project_runs_steps_in_process() -> None:
    import runpy

    location = runpy.run_path(str(K8S / "code_location.py"))["defs"]
    assert location.resolve_asset_graph().get_all_asset_keys() == defs.resolve_asset_graph().get_all_asset_keys()
    # Locally every job (backfills' implicit asset job included) runs its steps in the run's process.
    assert {job.executor_def.name for job in defs.resolve_all_job_defs()} == {dg.in_process_executor.name}
    for job in defs.resolve_all_job_defs():
        # Every job (evals and training materialized from the UI included) runs its steps in pods.
        assert location.resolve_job_def(job.name).executor_def.name == "k8s"
    assert location.resolve_implicit_global_asset_job_def().executor_def.name == "k8s"
    (user_code,) = _pod_spec("Deployment", "secverify-user-code")["containers"]
    assert "deploy/k8s/code_location.py" in user_code["args"]


def test_kustomize_renders_and_run_pods_get_the_image_that_is_deployed(tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed (deploy/README.md); the other deploy tests check the manifests")
    overlay = tmp_path / "k8s"
    shutil.copytree(K8S, overlay)
    kustomization = _kustomization()
    kustomization["images"] = [{"name": "secverify", "newName": "registry.test/secverify", "newTag": "7"}]
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization), encoding="utf-8")
    # `kubectl kustomize` renders locally; it never talks to a cluster.
    rendered = subprocess.run([kubectl, "kustomize", str(overlay)], capture_output=True, text=True, timeout=60)
    assert rendered.returncode == 0, rendered.stderr
    documents = [doc for doc in yaml.safe_load_all(rendered.stdout) if doc]
    assert {doc["metadata"].get("namespace") for doc in documents if doc["kind"] != "Namespace"} == {"secverify"}
    images = set()
    for doc in documents:
        if doc["kind"] == "Deployment" and doc["metadata"]["name"] != "vllm-llama-3-1-8b":
            for container in doc["spec"]["template"]["spec"]["containers"]:
                images.add(container["image"])
                images |= {env["value"] for env in container.get("env", []) if env["name"] == "DAGSTER_CURRENT_IMAGE"}
    assert images == {"registry.test/secverify:7"}
    (instance,) = [
        doc for doc in documents if doc["kind"] == "ConfigMap" and doc["metadata"]["name"] == "dagster-instance"
    ]
    assert yaml.safe_load(instance["data"]["dagster.yaml"]) == _read(K8S / "dagster.yaml")
