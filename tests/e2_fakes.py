"""A small, deterministic stand-in for the E2 oracle, so reward tests have hand-computable findings.

Rules (each finding on the object's "Kind/name" or "type.name", like the real oracle):
Kubernetes: a privileged container -> K8S_PRIVILEGED (high); runAsUser 0 -> K8S_RUN_AS_ROOT (medium);
an image ending in :latest -> K8S_LATEST_TAG (medium); a container without resources.limits ->
K8S_NO_MEMORY_LIMIT (low). Terraform: aws_ebs_volume with encrypted = false -> TF_EBS_UNENCRYPTED (medium);
0.0.0.0/0 in an aws_security_group -> TF_OPEN_INGRESS (high).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from sv_env_config_verification.config_model import ConfigParseError
from sv_env_config_verification.loading import detect_kind, parse_config
from sv_env_config_verification.pod_specs import pod_specs
from sv_env_config_verification.schema import findings_to_json, label_of, with_content_hash
from sv_shared.execution.findings import Finding

BUILT_IN_WORKLOADS = ("Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob")


@dataclass
class FakeResult:
    findings: list[Finding]
    error: str | None = None
    error_detail: str | None = None
    raw: dict[str, list[Finding]] = field(default_factory=dict)


def _finding(canonical_id: str, severity: str, resource: str, name: str) -> Finding:
    return Finding("fake", canonical_id.lower(), canonical_id, severity, resource, name, None, canonical_id)


class FakeOracle:
    """Scans like the oracle (one result per (name, content), parse errors as `error`), counting batches."""

    def __init__(self) -> None:
        self.batches: list[int] = []

    def versions(self) -> dict[str, str]:
        return {"fake": "1"}

    def scan_many(self, configs: Sequence[tuple[str, str]]) -> list[FakeResult]:
        self.batches.append(len(configs))
        return [self._scan(name, content) for name, content in configs]

    def _scan(self, name: str, content: str) -> FakeResult:
        kind = detect_kind(name, content)
        try:
            parsed = parse_config(kind, content)
        except ConfigParseError as error:
            return FakeResult([], error.reason, str(error))
        found: dict[tuple[str, str], Finding] = {}
        for resource in parsed.resources:
            body = resource.body
            if kind == "terraform":
                if resource.kind == "aws_ebs_volume" and body.get("encrypted") is False:
                    found[("TF_EBS_UNENCRYPTED", resource.name)] = _finding(
                        "TF_EBS_UNENCRYPTED", "medium", resource.name, name
                    )
                if resource.kind == "aws_security_group" and "0.0.0.0/0" in str(body):
                    found[("TF_OPEN_INGRESS", resource.name)] = _finding("TF_OPEN_INGRESS", "high", resource.name, name)
                continue
            # The fake's rules read the built-in workloads only (a custom resource's pods are the real oracle's).
            specs = [spec for _, spec in pod_specs(body)] if body.get("kind") in BUILT_IN_WORKLOADS else []
            for container in specs[0].get("containers") or [] if specs else []:
                context = container.get("securityContext") or {}
                rules = [
                    ("K8S_PRIVILEGED", "high", context.get("privileged") is True),
                    ("K8S_RUN_AS_ROOT", "medium", context.get("runAsUser") == 0),
                    ("K8S_LATEST_TAG", "medium", str(container.get("image", "")).endswith(":latest")),
                    ("K8S_NO_MEMORY_LIMIT", "low", not (container.get("resources") or {}).get("limits")),
                ]
                for canonical_id, severity, hit in rules:
                    if hit:
                        found[(canonical_id, resource.name)] = _finding(canonical_id, severity, resource.name, name)
        findings = list(found.values())
        return FakeResult(findings, raw={"fake": findings})


def make_item(oracle: Any, kind: str, filename: str, content: str, **provenance: Any) -> dict[str, Any]:
    """An item dict as the corpus would hold it, labelled by `oracle`."""
    [result] = oracle.scan_many([(filename, content)])
    assert result.error is None, result.error
    row = {
        "kind": kind,
        "filename": filename,
        "content": content,
        "label": label_of(result.findings),
        "oracle_findings": findings_to_json(result.findings),
        "source_corpus": provenance.get("source_corpus", "test"),
        "generator": provenance.get("generator"),
        "generator_params": provenance.get("generator_params"),
        "generator_seed": provenance.get("generator_seed"),
        "secure_variant_id": provenance.get("secure_variant_id"),
    }
    return with_content_hash(pl.DataFrame([row])).row(0, named=True)


PRIVILEGED_WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  template:
    spec:
      containers:
      - name: app
        image: nginx:1.27
        securityContext:
          privileged: true
"""
"""A Deployment whose one container is privileged (a manifest the fake oracle scans; E2 answer tests share it)."""
