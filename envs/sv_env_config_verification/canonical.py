"""The canonical vocabulary of E2 findings, and the table that maps every scanner's rule ids onto it.

Scanners name the same problem differently (checkov CKV_K8S_16, a Rego policy's SV-K8S-001, a semgrep rule id):
the oracle, the reward and the model's answer format all speak canonical ids instead, so one privileged container
found by three tools is one finding, and a model is never asked to guess a tool's private rule id.

Severities here are the reference the project's own policies use; the oracle keeps the highest severity any tool
reports for a finding, so other tools' severities can raise but never silently lower a label.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Literal

RuleKind = Literal["kubernetes", "terraform"]


@dataclass(frozen=True)
class CanonicalRule:
    """One kind of misconfiguration: what a model must name (id), how bad it is, and how it is fixed."""

    id: str
    kind: RuleKind
    severity: str
    title: str
    remediation: str


def _rule(id: str, kind: RuleKind, severity: str, title: str, remediation: str) -> CanonicalRule:
    return CanonicalRule(id=id, kind=kind, severity=severity, title=title, remediation=remediation)


CANONICAL: dict[str, CanonicalRule] = {
    rule.id: rule
    for rule in (
        _rule(
            "K8S_PRIVILEGED",
            "kubernetes",
            "high",
            "Container runs privileged",
            "Remove securityContext.privileged or set it to false.",
        ),
        _rule(
            "K8S_HOST_NAMESPACE",
            "kubernetes",
            "high",
            "Pod shares a host namespace (hostNetwork, hostPID or hostIPC)",
            "Remove hostNetwork/hostPID/hostIPC or set them to false.",
        ),
        _rule(
            "K8S_RUN_AS_ROOT",
            "kubernetes",
            "medium",
            "Container may run as root (runAsUser 0 or runAsNonRoot not set)",
            "Set securityContext.runAsNonRoot: true and a non-zero runAsUser.",
        ),
        _rule(
            "K8S_PRIV_ESCALATION",
            "kubernetes",
            "medium",
            "Container allows privilege escalation",
            "Set securityContext.allowPrivilegeEscalation: false.",
        ),
        _rule(
            "K8S_NO_RESOURCE_LIMITS",
            "kubernetes",
            "low",
            "Container has no CPU or memory limit",
            "Set resources.limits.cpu and resources.limits.memory.",
        ),
        _rule(
            "K8S_WRITABLE_ROOT_FS",
            "kubernetes",
            "low",
            "Container root filesystem is writable",
            "Set securityContext.readOnlyRootFilesystem: true (mount emptyDir volumes where writes are needed).",
        ),
        _rule(
            "K8S_DANGEROUS_CAPABILITIES",
            "kubernetes",
            "high",
            "Container adds dangerous Linux capabilities (ALL, SYS_ADMIN, NET_ADMIN, ...)",
            "Remove the capability from securityContext.capabilities.add; drop ALL and add back only what is needed.",
        ),
        _rule(
            "K8S_LATEST_TAG",
            "kubernetes",
            "medium",
            "Container image is untagged or uses :latest",
            "Pin the image to a version tag or, better, a digest (@sha256:...).",
        ),
        _rule(
            "K8S_HOSTPATH",
            "kubernetes",
            "high",
            "Pod mounts a hostPath volume",
            "Replace the hostPath volume with emptyDir, a ConfigMap/Secret or a PersistentVolumeClaim.",
        ),
        _rule(
            "K8S_RBAC_WILDCARD",
            "kubernetes",
            "high",
            "RBAC rule grants wildcard verbs or resources",
            "List the exact verbs and resources the subject needs instead of '*'.",
        ),
        _rule(
            "K8S_SECRET_IN_ENV",
            "kubernetes",
            "high",
            "Secret value written literally in a container environment variable",
            "Move the value into a Secret and reference it with valueFrom.secretKeyRef.",
        ),
        _rule(
            "TF_S3_PUBLIC",
            "terraform",
            "high",
            "S3 bucket is publicly readable or writable (public ACL or public access block disabled)",
            "Use a private ACL and enable all four settings of aws_s3_bucket_public_access_block.",
        ),
        _rule(
            "TF_S3_UNENCRYPTED",
            "terraform",
            "medium",
            "S3 bucket has no server-side encryption configuration",
            "Add aws_s3_bucket_server_side_encryption_configuration (aws:kms or AES256) for the bucket.",
        ),
        _rule(
            "TF_OPEN_INGRESS",
            "terraform",
            "high",
            "Security group allows ingress from anywhere (0.0.0.0/0 or ::/0)",
            "Restrict ingress cidr_blocks/ipv6_cidr_blocks to the networks that need access.",
        ),
        _rule(
            "TF_EBS_UNENCRYPTED",
            "terraform",
            "medium",
            "EBS volume is not encrypted",
            "Set encrypted = true (and kms_key_id for a customer-managed key).",
        ),
        _rule(
            "TF_RDS_UNENCRYPTED",
            "terraform",
            "medium",
            "RDS storage is not encrypted",
            "Set storage_encrypted = true.",
        ),
        _rule(
            "TF_RDS_PUBLIC",
            "terraform",
            "high",
            "RDS instance is publicly accessible",
            "Set publicly_accessible = false and reach the database through private subnets.",
        ),
        _rule(
            "TF_IAM_WILDCARD",
            "terraform",
            "high",
            'IAM policy allows Action "*"',
            "Grant the specific actions (and resources) needed instead of '*'.",
        ),
        _rule(
            "TF_GCS_PUBLIC",
            "terraform",
            "high",
            "GCS bucket grants access to allUsers or allAuthenticatedUsers",
            "Remove allUsers/allAuthenticatedUsers members; grant named principals.",
        ),
        _rule(
            "TF_GCP_OPEN_FIREWALL",
            "terraform",
            "high",
            "GCP firewall allows ingress from 0.0.0.0/0",
            "Restrict source_ranges to the networks that need access.",
        ),
    )
}

# Scanner name (ScannerAdapter.name) -> module under sv_env_config_verification.adapters that holds its RULE_MAP.
ADAPTER_MODULES: dict[str, str] = {
    "opa": "opa",
    "semgrep": "semgrep",
    "checkov": "checkov",
    "trivy": "trivy",
    "kube-linter": "kubelinter",
}


def rules_for(kind: RuleKind | str) -> dict[str, CanonicalRule]:
    """The canonical rules of one config kind ("kubernetes" or "terraform")."""
    return {rule_id: rule for rule_id, rule in CANONICAL.items() if rule.kind == kind}


def _rule_map(tool: str) -> Mapping[str, str]:
    """A tool's RULE_MAP, importing its adapter module only when first asked (checkov's import alone takes ~1.4 s)."""
    module = importlib.import_module(f"sv_env_config_verification.adapters.{ADAPTER_MODULES[tool]}")
    return module.RULE_MAP


@cache
def mapping_table() -> dict[tuple[str, str], str]:
    """(tool, rule id) -> canonical id for every adapter; built once per process.

    Raises ValueError when a RULE_MAP names an id outside CANONICAL: a typo there would silently split one
    problem into two findings, which is exactly what this table exists to prevent.
    """
    table: dict[tuple[str, str], str] = {}
    for tool in ADAPTER_MODULES:
        for rule_id, canonical_id in _rule_map(tool).items():
            if canonical_id not in CANONICAL:
                raise ValueError(f"{tool} maps {rule_id!r} to unknown canonical id {canonical_id!r}")
            table[(tool, rule_id)] = canonical_id
    return table


def canonical_id_for(tool: str, rule_id: str) -> str | None:
    """The canonical id a tool's rule maps to, or None when the rule is outside the vocabulary (or the tool unknown)."""
    if tool not in ADAPTER_MODULES:
        return None
    return mapping_table().get((tool, rule_id))
