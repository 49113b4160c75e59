"""Where a Kubernetes object keeps its pods: found by shape, not by a list of kinds.

Workloads are not only the built-in kinds: an Argo Rollout, an OpenShift DeploymentConfig, a Knative Service, a
KEDA ScaledJob or any operator's CRD runs pods from a pod template of the same shape. So a pod spec is wherever an
object holds one:

    a mapping that holds containers, initContainers or ephemeralContainers (fields only a pod spec has),
    reached from the object through mapping keys only -- never through a list item --, at most
    MAX_POD_SPEC_DEPTH keys deep, outside the object's metadata and status.

That finds a bare Pod's `spec`, a PodTemplate's `template.spec`, `spec.template.spec` of Deployments, StatefulSets,
DaemonSets, ReplicaSets, ReplicationControllers, Jobs, Rollouts, DeploymentConfigs and Knative Services, a
CronJob's `spec.jobTemplate.spec.template.spec` (5 keys) and a Kubeflow job's
`spec.<replica specs>.<role>.template.spec` (5). Lists are not entered because pod-shaped mappings in lists are
policy patterns (Kyverno's `spec.rules[].validate.pattern`), not pods; a pod template kept in a list (a RayCluster's
`workerGroupSpecs[]`) is therefore not found. A pod spec is not searched further: pods do not nest.

A container is a mapping entry of a container field that is a list. A container field holding anything else (a
mapping under `containers:`) is invalid input the API server refuses: it holds no containers, so it yields no
container findings, while the pod's own fields (hostNetwork, volumes) are still its own.

This module is the one definition: the loader passes these paths to the Rego policies (the labels), and the
baseline's remediations, the verifier's destructive-change check and the patch validity check read pod specs
through it, so labels, oracle, baseline and tools agree on what is a pod.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

MAX_POD_SPEC_DEPTH = 8
"""Keys from the object to a pod spec; the deepest known layouts take 5."""

CONTAINER_FIELDS: tuple[str, ...] = ("initContainers", "containers", "ephemeralContainers")
# Top-level fields that describe the object rather than hold its desired state.
_NOT_STATE: frozenset[str] = frozenset({"apiVersion", "kind", "metadata", "status"})

PodSpecPath = tuple[str, ...]


def is_pod_spec(value: Any) -> bool:
    """Whether a value has a pod spec's shape (a mapping holding a container field)."""
    return isinstance(value, Mapping) and any(field in value for field in CONTAINER_FIELDS)


def pod_specs(obj: Mapping[str, Any]) -> list[tuple[PodSpecPath, dict[str, Any]]]:
    """(path from the object, pod spec) for every pod spec in a Kubernetes object, in document order."""
    return list(_walk(obj, ()))


def pod_spec_paths(obj: Mapping[str, Any]) -> list[PodSpecPath]:
    """The paths of pod_specs(obj): what the policy input carries per resource."""
    return [path for path, _ in _walk(obj, ())]


def _walk(node: Mapping[str, Any], path: PodSpecPath) -> Iterator[tuple[PodSpecPath, dict[str, Any]]]:
    for key, value in node.items():
        if not isinstance(value, dict) or (not path and key in _NOT_STATE):
            continue
        here = (*path, key)
        if is_pod_spec(value):
            yield here, value
        elif len(here) < MAX_POD_SPEC_DEPTH:
            yield from _walk(value, here)


def containers(spec: Mapping[str, Any]) -> list[tuple[str, int, dict[str, Any]]]:
    """(field, index, container) for every container of a pod spec: mapping entries of the fields that are lists."""
    found: list[tuple[str, int, dict[str, Any]]] = []
    for field in CONTAINER_FIELDS:
        entries = spec.get(field)
        if isinstance(entries, list):
            found.extend((field, index, entry) for index, entry in enumerate(entries) if isinstance(entry, dict))
    return found
