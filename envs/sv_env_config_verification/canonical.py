"""The canonical vocabulary of E2 findings: what each id means exactly, and the table that maps every scanner's
rule ids onto it.

Scanners name the same problem differently (checkov CKV_K8S_16, a Rego policy's SV-K8S-001, a semgrep rule id):
the oracle, the reward and the model's answer format all speak canonical ids instead, so one privileged container
found by three tools is one finding, and a model is never asked to guess a tool's private rule id.

Each rule's `definition` is the exact condition under which a config has the problem. The project's Rego policies
(policies/, run by adapters/opa.py) are the reference implementation of these definitions, and the oracle's labels
are the reference's findings with the severities below: a canonical id means the same thing whichever scanners are
installed. Every other tool's rules map onto the same ids (their RULE_MAPs, gathered in mapping_table()); where a
tool's rule is broader or narrower than the definition, its extra or missing findings are disagreements that the
oracle reports and agreement.py counts, never labels. TOOL_SEMANTICS records the known differences.

"Container" below means every mapping entry of the containers, initContainers and ephemeralContainers lists of a pod
spec, and a pod spec is wherever an object of any kind holds one (pod_specs.py: found by shape, so Argo Rollouts,
OpenShift DeploymentConfigs, Knative Services and CRDs count like Deployments); a container's "effective" value is
Kubernetes' precedence: its own securityContext value, else the pod's.
An "internet-scale" CIDR is an IPv4 prefix shorter than /8 or an IPv6 prefix shorter than /32 outside fc00::/7,
whatever its address bits: 127.0.0.0/0, 10.1.2.3/0, 1::/0 and 0.0.0.0/1 are; 10.0.0.0/8 and 2001:db8::/32 are not.
"""

from __future__ import annotations

import importlib
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Literal

RuleKind = Literal["kubernetes", "terraform"]


@dataclass(frozen=True)
class CanonicalRule:
    """One kind of misconfiguration: what a model must name (id), how bad it is, how it is fixed, and exactly when a
    config has it (definition, implemented by the reference Rego policy)."""

    id: str
    kind: RuleKind
    severity: str
    title: str
    remediation: str
    definition: str


def _rule(id: str, kind: RuleKind, severity: str, title: str, remediation: str, definition: str) -> CanonicalRule:
    return CanonicalRule(
        id=id, kind=kind, severity=severity, title=title, remediation=remediation, definition=definition
    )


CANONICAL: dict[str, CanonicalRule] = {
    rule.id: rule
    for rule in (
        _rule(
            "K8S_PRIVILEGED",
            "kubernetes",
            "high",
            "Container runs privileged",
            "Remove securityContext.privileged or set it to false.",
            "A container's securityContext.privileged is true.",
        ),
        _rule(
            "K8S_HOST_NAMESPACE",
            "kubernetes",
            "high",
            "Pod shares a host namespace (hostNetwork, hostPID or hostIPC)",
            "Remove hostNetwork/hostPID/hostIPC or set them to false.",
            "A pod spec sets hostNetwork, hostPID or hostIPC to true.",
        ),
        _rule(
            "K8S_RUN_AS_ROOT",
            "kubernetes",
            "medium",
            "Container may run as root (effective runAsUser 0, or neither a UID nor runAsNonRoot: true)",
            "Set securityContext.runAsNonRoot: true and a non-zero runAsUser.",
            "A container's effective runAsUser is 0, or its effective runAsUser is not a positive integer (unset, "
            "or a string) and its effective runAsNonRoot is not true. So runAsUser: 1000 without runAsNonRoot is "
            "not root, and a container's runAsNonRoot: true overrides the pod's runAsNonRoot: false.",
        ),
        _rule(
            "K8S_PRIV_ESCALATION",
            "kubernetes",
            "medium",
            "Container allows privilege escalation",
            "Set securityContext.allowPrivilegeEscalation: false.",
            "A container's securityContext.allowPrivilegeEscalation is not false (unset counts).",
        ),
        _rule(
            "K8S_NO_CPU_LIMIT",
            "kubernetes",
            "low",
            "Container has no CPU limit",
            "Set resources.limits.cpu.",
            "A container's resources.limits.cpu is missing, null or empty.",
        ),
        _rule(
            "K8S_NO_MEMORY_LIMIT",
            "kubernetes",
            "low",
            "Container has no memory limit",
            "Set resources.limits.memory.",
            "A container's resources.limits.memory is missing, null or empty.",
        ),
        _rule(
            "K8S_WRITABLE_ROOT_FS",
            "kubernetes",
            "low",
            "Container root filesystem is writable",
            "Set securityContext.readOnlyRootFilesystem: true (mount emptyDir volumes where writes are needed).",
            "A container's securityContext.readOnlyRootFilesystem is not true (unset counts).",
        ),
        _rule(
            "K8S_DANGEROUS_CAPABILITIES",
            "kubernetes",
            "high",
            "Container adds dangerous Linux capabilities (ALL, SYS_ADMIN, NET_ADMIN, ...)",
            "Remove the capability from securityContext.capabilities.add; drop ALL and add back only what is needed.",
            "A container's securityContext.capabilities.add holds, case-insensitively and without a CAP_ prefix, "
            "one of ALL, SYS_ADMIN, NET_ADMIN, SYS_PTRACE, SYS_MODULE, SYS_RAWIO, SYS_BOOT, SYS_TIME, "
            "DAC_READ_SEARCH, DAC_OVERRIDE, BPF, PERFMON, NET_RAW, MKNOD, SETUID, SETGID, SYS_CHROOT, "
            "LINUX_IMMUTABLE, MAC_ADMIN, MAC_OVERRIDE, SYSLOG.",
        ),
        _rule(
            "K8S_LATEST_TAG",
            "kubernetes",
            "medium",
            "Container image is untagged or uses :latest",
            "Pin the image to a version tag or, better, a digest (@sha256:...).",
            "A container's image has no digest (@) and the tag of its last path segment is missing or 'latest' "
            "(the port of registry:5000/app is not a tag).",
        ),
        _rule(
            "K8S_HOSTPATH",
            "kubernetes",
            "high",
            "Pod mounts a hostPath volume",
            "Replace the hostPath volume with emptyDir, a ConfigMap/Secret or a PersistentVolumeClaim.",
            "A pod spec has a volume with a hostPath source.",
        ),
        _rule(
            "K8S_RBAC_WILDCARD",
            "kubernetes",
            "high",
            "RBAC rule grants wildcard verbs or resources",
            "List the exact verbs and resources the subject needs instead of '*'.",
            "A rule of a Role or ClusterRole lists '*' in its verbs or in its resources.",
        ),
        _rule(
            "K8S_SECRET_IN_ENV",
            "kubernetes",
            "high",
            "Secret value written literally in a container environment variable",
            "Move the value into a Secret and reference it with valueFrom.secretKeyRef.",
            "A container env entry has a non-empty literal value, and either its lower-cased name contains "
            "password, passwd, pwd, secret, token, api key, access key, private key or credential without a "
            "reference suffix (_file, _path, _dir, _url, _uri, _ttl, _timeout, _expiry, _expires, _length, _len, "
            "_size, _name, _id) and the value is not a number, boolean, absolute path or $(VAR), or the value has "
            "a known credential format (AKIA..., a PEM private key, gh?_..., xox?-..., sk_live_...).",
        ),
        _rule(
            "TF_S3_PUBLIC",
            "terraform",
            "high",
            "S3 bucket is publicly readable or writable (public ACL or public access block disabled)",
            "Use a private ACL and enable all four settings of aws_s3_bucket_public_access_block.",
            "An aws_s3_bucket or aws_s3_bucket_acl sets acl public-read, public-read-write or website, or an "
            "aws_s3_bucket_acl grants the AllUsers or AuthenticatedUsers group, or an "
            "aws_s3_bucket_public_access_block leaves any of its four settings not true.",
        ),
        _rule(
            "TF_S3_UNENCRYPTED",
            "terraform",
            "medium",
            "S3 bucket has no server-side encryption configuration",
            "Add aws_s3_bucket_server_side_encryption_configuration (aws:kms or AES256) for the bucket.",
            "An aws_s3_bucket has no inline server_side_encryption_configuration and no "
            "aws_s3_bucket_server_side_encryption_configuration refers to it (by reference or by bucket name).",
        ),
        _rule(
            "TF_OPEN_INGRESS",
            "terraform",
            "high",
            "Security group allows ingress from an internet-scale range (0.0.0.0/0, any /0, or wider than /8)",
            "Restrict ingress cidr_blocks/ipv6_cidr_blocks to the networks that need access.",
            "An ingress block of an aws_security_group, an aws_security_group_rule of type ingress, or an "
            "aws_vpc_security_group_ingress_rule admits an internet-scale source CIDR.",
        ),
        _rule(
            "TF_EBS_UNENCRYPTED",
            "terraform",
            "medium",
            "EBS volume is not encrypted",
            "Set encrypted = true (and kms_key_id for a customer-managed key).",
            "An aws_ebs_volume, or a root_block_device / ebs_block_device of an aws_instance, does not set "
            "encrypted to true.",
        ),
        _rule(
            "TF_RDS_UNENCRYPTED",
            "terraform",
            "medium",
            "RDS storage is not encrypted",
            "Set storage_encrypted = true.",
            "An aws_db_instance or aws_rds_cluster that is not a read replica (no replicate_source_db) does not "
            "set storage_encrypted to true.",
        ),
        _rule(
            "TF_RDS_PUBLIC",
            "terraform",
            "high",
            "RDS instance is publicly accessible",
            "Set publicly_accessible = false and reach the database through private subnets.",
            "An aws_db_instance or aws_rds_cluster_instance sets publicly_accessible to true.",
        ),
        _rule(
            "TF_IAM_WILDCARD",
            "terraform",
            "high",
            'IAM policy allows Action "*"',
            "Grant the specific actions (and resources) needed instead of '*'.",
            "An Allow statement of an aws_iam_policy / aws_iam_role_policy / aws_iam_user_policy / "
            "aws_iam_group_policy, of an aws_iam_role inline_policy, or of an aws_iam_policy_document data source "
            "has '*' among its actions.",
        ),
        _rule(
            "TF_GCS_PUBLIC",
            "terraform",
            "high",
            "GCS bucket grants access to allUsers or allAuthenticatedUsers",
            "Remove allUsers/allAuthenticatedUsers members; grant named principals.",
            "A google_storage_bucket_iam_member or _iam_binding names allUsers or allAuthenticatedUsers, or a "
            "bucket or object ACL / access control grants an entity ending in one of them.",
        ),
        _rule(
            "TF_GCP_OPEN_FIREWALL",
            "terraform",
            "high",
            "GCP firewall allows ingress from an internet-scale range (0.0.0.0/0, any /0, or wider than /8)",
            "Restrict source_ranges to the networks that need access.",
            "A google_compute_firewall of direction INGRESS, not disabled, with allow blocks lists an "
            "internet-scale source range.",
        ),
    )
}

# Known ways a tool's rules differ from a definition above, (tool, canonical id) -> how; printed next to the
# measured agreement (bench/bench_e2_agreement.py), so a disagreement there can be read without the tool's docs.
TOOL_SEMANTICS: dict[tuple[str, str], str] = {
    ("semgrep", "K8S_RUN_AS_ROOT"): (
        "text patterns: runAsUser: 0, or runAsNonRoot: false with no UID beside it or on the pod; an unset "
        "runAsNonRoot is invisible to it, and a pod-level setting is excused only when the pod's single container "
        "overrides it"
    ),
    ("semgrep", "K8S_PRIV_ESCALATION"): "only an explicit allowPrivilegeEscalation: true, not an unset field",
    ("semgrep", "K8S_WRITABLE_ROOT_FS"): "only an explicit readOnlyRootFilesystem: false, not an unset field",
    ("semgrep", "K8S_DANGEROUS_CAPABILITIES"): "only ALL, SYS_ADMIN and NET_ADMIN",
    ("semgrep", "K8S_SECRET_IN_ENV"): "variable names only (no value formats, no harmless-value exceptions)",
    ("trivy", "K8S_RUN_AS_ROOT"): "KSV-0012 wants runAsNonRoot: true even beside a non-zero runAsUser",
    ("checkov", "TF_OPEN_INGRESS"): (
        "CKV_AWS_24/25/260/277: only 0.0.0.0/0 or ::/0, and only on ports 22, 3389, 80 or all ports"
    ),
    ("kube-linter", "K8S_NO_CPU_LIMIT"): "unset-cpu-requirements also reports a missing CPU request",
    ("kube-linter", "K8S_NO_MEMORY_LIMIT"): "unset-memory-requirements also reports a missing memory request",
}

_UNIQUE_LOCAL = ipaddress.ip_network("fc00::/7")


def internet_scale(cidr: str) -> bool:
    """Whether a source CIDR is internet-scale (module docstring), for code that must act on one (remediation);
    policies/terraform/network.rego implements the same rule for the labels, and a test holds the two equal.

    Parsed with ipaddress, strict=False, so host bits do not matter (10.1.2.3/0 is /0); what is not a CIDR is not.
    """
    try:
        network = ipaddress.ip_network(cidr.strip(), strict=False)
    except ValueError:
        return False
    if network.version == 4:
        return network.prefixlen < 8
    return network.prefixlen < 32 and not network.subnet_of(_UNIQUE_LOCAL)


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
