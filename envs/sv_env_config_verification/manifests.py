"""Kubernetes manifests as E2's mutations, fixes and baselines edit them: the one canonical YAML style, the pod spec of
a workload, its containers and the RBAC rules; and the unified diff a fix is written as."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any

import yaml

WORKLOAD_KINDS = ("Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob")

Docs = list[Any]


def dump_yaml(documents: Docs) -> str:
    """The canonical YAML style every synthetic manifest (and the embedded corpus) is written in."""
    return yaml.safe_dump_all(documents, sort_keys=False, default_flow_style=False, width=120)


def pod_spec_of(document: Any) -> dict[str, Any] | None:
    """The pod spec inside a workload object (Pod, Deployment, ..., CronJob), or None."""
    if not isinstance(document, dict) or document.get("kind") not in WORKLOAD_KINDS:
        return None
    spec = document.get("spec")
    path = {"Pod": (), "CronJob": ("jobTemplate", "spec", "template", "spec")}.get(
        document["kind"], ("template", "spec")
    )
    for key in path:
        spec = spec.get(key) if isinstance(spec, dict) else None
    return spec if isinstance(spec, dict) else None


def workloads(documents: Docs) -> Iterator[tuple[str, dict[str, Any]]]:
    """("Kind/name", pod spec) of every workload in the documents."""
    for document in documents:
        spec = pod_spec_of(document)
        if spec is not None:
            name = (document.get("metadata") or {}).get("name", "?")
            yield f"{document['kind']}/{name}", spec


def containers(documents: Docs) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(resource, pod spec, container) for every app container of every workload."""
    for resource, spec in workloads(documents):
        for container in spec.get("containers") or []:
            if isinstance(container, dict):
                yield resource, spec, container


def rbac_rules(documents: Docs) -> Iterator[tuple[str, dict[str, Any]]]:
    for document in documents:
        if isinstance(document, dict) and document.get("kind") in ("Role", "ClusterRole"):
            for rule in document.get("rules") or []:
                if isinstance(rule, dict) and ("resources" in rule or "verbs" in rule):
                    yield f"{document['kind']}/{(document.get('metadata') or {}).get('name', '?')}", rule


def unified_diff(before: str, after: str, filename: str) -> str:
    """A `diff -u` style patch from `before` to `after` with a/ b/ headers on the item's file name."""
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{filename}", f"b/{filename}"
        )
    )
