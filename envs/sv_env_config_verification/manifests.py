"""Kubernetes manifests as E2's mutations, fixes and baselines edit them: the one canonical YAML style, the pod specs of
the workloads, their containers and the RBAC rules; and the unified diff a fix is written as."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any

import yaml

from sv_env_config_verification.pod_specs import pod_specs

Docs = list[Any]


def dump_yaml(documents: Docs) -> str:
    """The canonical YAML style every synthetic manifest (and the embedded corpus) is written in."""
    return yaml.safe_dump_all(documents, sort_keys=False, default_flow_style=False, width=120)


def workloads(documents: Docs) -> Iterator[tuple[str, dict[str, Any]]]:
    """("Kind/name", pod spec) of every pod spec in the documents, found by shape as the labels and the oracle find
    them (pod_specs.py, the one definition of where an object keeps its pods)."""
    for document in documents:
        if not isinstance(document, dict):
            continue
        name = (document.get("metadata") or {}).get("name", "?")
        for _, spec in pod_specs(document):
            yield f"{document.get('kind', '?')}/{name}", spec


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
