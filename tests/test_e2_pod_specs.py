"""E2 finds pods by shape, whatever the kind (issue 28, item 1).

Found on main: labels came from a list of nine workload kinds, so a privileged Argo Rollout with hostNetwork, an
OpenShift DeploymentConfig or a Knative Service got no label, and a model that reported the problem scored 0;
a pod whose `containers:` was a mapping was flagged as if its entries were containers. One discovery
(sv_env_config_verification.pod_specs) now feeds the Rego policies (the labels), the baseline's fixes, the
destructive-change check and patch validation."""

from __future__ import annotations

import pytest
import yaml

from sv_env_config_verification import pod_specs, validity
from sv_env_config_verification.adapters.opa import OpaAdapter
from sv_env_config_verification.baseline import remediate_kubernetes
from sv_env_config_verification.loading import parse_config
from sv_env_config_verification.patching import PatchErrorReason
from sv_env_config_verification.remediation import destructive_change
from sv_shared.execution.findings import Finding

ROLLOUT = """\
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: shop
spec:
  replicas: 2
  strategy:
    canary:
      steps:
      - setWeight: 20
  template:
    metadata:
      labels:
        app: shop
    spec:
      hostNetwork: true
      containers:
      - name: web
        image: shop:1.2
        securityContext:
          privileged: true
"""

DEPLOYMENT_CONFIG = """\
apiVersion: apps.openshift.io/v1
kind: DeploymentConfig
metadata:
  name: frontend
spec:
  replicas: 1
  selector:
    app: frontend
  template:
    metadata:
      labels:
        app: frontend
    spec:
      containers:
      - name: helloworld
        image: openshift/origin-ruby-sample:latest
        securityContext:
          allowPrivilegeEscalation: true
"""

KNATIVE_SERVICE = """\
apiVersion: serving.knative.dev/v1
kind: Service
metadata:
  name: hello
spec:
  template:
    spec:
      containers:
      - image: ghcr.io/knative/helloworld-go:latest
        env:
        - name: DB_PASSWORD
          value: hunter2-prod
"""

# A kind nobody has heard of, with two pod templates: one where CRDs usually keep it, one deeper.
TRAINING_JOB = """\
apiVersion: ml.example.com/v1
kind: TrainingJob
metadata:
  name: resnet
spec:
  template:
    spec:
      containers:
      - name: chief
        image: trainer:3.1
        securityContext:
          capabilities:
            add: [SYS_ADMIN]
  replicaSpecs:
    worker:
      template:
        spec:
          hostPID: true
          containers:
          - name: worker
            image: trainer:3.1
"""

CONTAINERS_MAPPING = """\
apiVersion: v1
kind: Pod
metadata:
  name: odd
spec:
  hostNetwork: true
  containers:
    name: web
    image: nginx:latest
    securityContext:
      privileged: true
"""

CONTAINER_IDS = {
    "K8S_PRIVILEGED",
    "K8S_RUN_AS_ROOT",
    "K8S_PRIV_ESCALATION",
    "K8S_NO_CPU_LIMIT",
    "K8S_NO_MEMORY_LIMIT",
    "K8S_WRITABLE_ROOT_FS",
    "K8S_DANGEROUS_CAPABILITIES",
    "K8S_LATEST_TAG",
    "K8S_SECRET_IN_ENV",
}


@pytest.fixture(scope="module")
def opa() -> OpaAdapter:
    return OpaAdapter()


def labels(opa: OpaAdapter, manifest: str) -> list[Finding]:
    return opa.scan({"manifest.yaml": manifest})["manifest.yaml"]


def found(findings: list[Finding], canonical_id: str) -> list[tuple[str | None, int | None]]:
    return sorted((f.resource, f.line) for f in findings if f.canonical_id == canonical_id)


def test_an_argo_rollout_that_runs_privileged_on_the_host_network_is_labelled(opa: OpaAdapter) -> None:
    findings = labels(opa, ROLLOUT)
    assert found(findings, "K8S_PRIVILEGED") == [("Rollout/shop", 21)]
    assert found(findings, "K8S_HOST_NAMESPACE") == [("Rollout/shop", 16)]
    [host] = [f for f in findings if f.canonical_id == "K8S_HOST_NAMESPACE"]
    assert "spec.template.spec.hostNetwork = true" in host.message


def test_an_openshift_deployment_config_is_labelled(opa: OpaAdapter) -> None:
    findings = labels(opa, DEPLOYMENT_CONFIG)
    assert found(findings, "K8S_PRIV_ESCALATION") == [("DeploymentConfig/frontend", 15)]
    assert found(findings, "K8S_LATEST_TAG") == [("DeploymentConfig/frontend", 16)]


def test_a_knative_service_is_labelled(opa: OpaAdapter) -> None:
    findings = labels(opa, KNATIVE_SERVICE)
    assert found(findings, "K8S_LATEST_TAG") == [("Service/hello", 9)]
    assert found(findings, "K8S_SECRET_IN_ENV") == [("Service/hello", 11)]


def test_every_pod_template_of_a_made_up_crd_is_labelled(opa: OpaAdapter) -> None:
    findings = labels(opa, TRAINING_JOB)
    assert found(findings, "K8S_DANGEROUS_CAPABILITIES") == [("TrainingJob/resnet", 13)]
    [host] = [f for f in findings if f.canonical_id == "K8S_HOST_NAMESPACE"]
    assert (host.resource, host.line) == ("TrainingJob/resnet", 18)
    assert "spec.replicaSpecs.worker.template.spec.hostPID" in host.message
    # Both containers, one per template, miss their limits.
    assert found(findings, "K8S_NO_CPU_LIMIT") == [("TrainingJob/resnet", 9), ("TrainingJob/resnet", 20)]


def test_containers_as_a_mapping_yield_no_container_findings(opa: OpaAdapter) -> None:
    """Decision: invalid input (the API server refuses it) that holds no containers; the pod's own hostNetwork is
    still the pod's."""
    findings = labels(opa, CONTAINERS_MAPPING)
    assert [(f.canonical_id, f.line) for f in findings] == [("K8S_HOST_NAMESPACE", 6)]
    [(path, spec)] = pod_specs.pod_specs(parse_config("kubernetes", CONTAINERS_MAPPING).resources[0].body)
    assert path == ("spec",)
    assert pod_specs.containers(spec) == []


def test_entries_that_are_not_mappings_are_not_containers(opa: OpaAdapter) -> None:
    manifest = CONTAINERS_MAPPING.replace(
        "  containers:\n    name: web\n    image: nginx:latest\n    securityContext:\n      privileged: true\n",
        "  containers:\n  - nginx:latest\n  - null\n",
    )
    assert [f.canonical_id for f in labels(opa, manifest)] == ["K8S_HOST_NAMESPACE"]


def test_the_policies_find_pods_exactly_where_pod_specs_does(opa: OpaAdapter) -> None:
    """The labels' paths are the Python discovery's: one definition, no mirror to drift."""
    documents = []
    for text in (ROLLOUT, DEPLOYMENT_CONFIG, KNATIVE_SERVICE, TRAINING_JOB, CONTAINERS_MAPPING):
        [document] = parse_config("kubernetes", text).documents
        for _, spec in pod_specs.pod_specs(document):
            spec["hostIPC"] = True
        documents.append(document)
    manifest = yaml.safe_dump_all(documents, sort_keys=False)
    expected = {
        (resource.name, ".".join((*path, "hostIPC")))
        for resource in parse_config("kubernetes", manifest).resources
        for path, _ in pod_specs.pod_specs(resource.body)
    }
    labelled = {
        (f.resource, f.message.split("(", 1)[1].split(" = ")[0])
        for f in labels(opa, manifest)
        if f.canonical_id == "K8S_HOST_NAMESPACE" and "hostIPC" in f.message
    }
    assert labelled == expected
    assert len(expected) == 6


def test_lists_status_metadata_and_depth_bound_the_search() -> None:
    policy = {
        "kind": "ClusterPolicy",
        "spec": {"rules": [{"validate": {"pattern": {"spec": {"containers": [{"image": "!*:latest"}]}}}}]},
    }
    assert pod_specs.pod_specs(policy) == []
    pod = {"containers": [{"name": "a"}]}
    assert pod_specs.pod_spec_paths({"status": {"spec": pod}, "metadata": {"spec": pod}}) == []
    deepest = ("spec",) + ("x",) * (pod_specs.MAX_POD_SPEC_DEPTH - 1)
    too_deep = (*deepest, "x")
    for path, paths in ((deepest, [deepest]), (too_deep, [])):
        obj: dict[str, object] = pod
        for key in reversed(path):
            obj = {key: obj}
        assert pod_specs.pod_spec_paths(obj) == paths
    # A pod spec is not searched further: pods do not nest.
    assert pod_specs.pod_spec_paths({"spec": {"containers": [], "template": {"spec": pod}}}) == [("spec",)]


def test_the_baseline_fixes_a_rollout_like_a_deployment(opa: OpaAdapter) -> None:
    findings = labels(opa, ROLLOUT)
    fixed = remediate_kubernetes(ROLLOUT, findings)
    left = {f.canonical_id for f in labels(opa, fixed)}
    assert not left & {"K8S_PRIVILEGED", "K8S_HOST_NAMESPACE", "K8S_PRIV_ESCALATION", "K8S_NO_CPU_LIMIT"}
    assert "K8S_LATEST_TAG" not in left  # shop:1.2 was pinned already


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (("  template:\n    metadata", "  podTemplate:\n    metadata"), "the pod at spec.template.spec"),
        (("      containers:\n", "      workers:\n"), "the pod at spec.template.spec"),
        (("      - name: web\n", "        web:\n"), "container(s) ['web'] removed"),
    ],
    ids=["template moved", "containers renamed", "containers made a mapping"],
)
def test_hiding_a_crd_pod_from_the_labels_is_destructive(edit: tuple[str, str], reason: str) -> None:
    patched = ROLLOUT.replace(*edit)
    assert patched != ROLLOUT
    why = destructive_change(parse_config("kubernetes", ROLLOUT), parse_config("kubernetes", patched))
    assert why is not None and reason in why


def test_a_crd_pod_spec_outside_the_usual_template_is_validated() -> None:
    original = validity.check_config(parse_config("kubernetes", TRAINING_JOB), TRAINING_JOB)
    assert original.problems == frozenset()
    broken = TRAINING_JOB.replace("          hostPID: true\n", "          hostPID: 'yes'\n")
    [problem] = validity.check_config(parse_config("kubernetes", broken), broken).problems
    assert (problem.code, problem.where) == (
        PatchErrorReason.INVALID_SCHEMA,
        "TrainingJob/resnet spec.replicaSpecs.worker.template.spec.hostPID",
    )
    assert problem.line == 18
