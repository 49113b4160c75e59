"""The E2 `tool-oracle` baseline: answer from the scanners alone, and fix what has a mechanical remediation.

It reports every oracle finding as a violation (id, the oracle's severity, resource, the scanner's message as
evidence) and proposes one unified diff with the remediations below, applied to the resources the findings name.
Findings without a safe mechanical fix (an image tag to pin, RBAC verbs to choose, IAM actions to pick, a public
GCS member to replace) are reported but left unpatched: guessing them would break the workload. It is scored by
the same verifier as a model (registry id `tool-oracle`), so its reward is the ceiling of scanner-only answers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from sv_env_config_verification import hcltext
from sv_env_config_verification.canonical import internet_scale
from sv_env_config_verification.config_model import ConfigParseError
from sv_env_config_verification.data import Scanner
from sv_env_config_verification.loading import parse_config
from sv_env_config_verification.manifests import dump_yaml, unified_diff
from sv_env_config_verification.pod_specs import containers, pod_specs
from sv_shared.contracts import Baseline
from sv_shared.execution.findings import Finding

DANGEROUS_CAPABILITIES = frozenset({"ALL", "SYS_ADMIN", "NET_ADMIN", "SYS_PTRACE", "SYS_MODULE", "DAC_READ_SEARCH"})
SECRET_NAME = re.compile(r"(password|passwd|(^|_)pwd($|_)|secret|token|api_?key|access_?key|private_?key|credential)")
PRIVATE_CIDR = '["10.0.0.0/8"]'
CONFIDENCE = 0.9

# --- Kubernetes remediations (on parsed documents, in place) ---


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [container for _, _, container in containers(spec)]


def _context(owner: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(owner.get("securityContext"), dict):
        owner["securityContext"] = {}
    return owner["securityContext"]


def _no_privileged(name: str, spec: dict[str, Any]) -> None:
    for container in _containers(spec):
        if _context(container).get("privileged") is True:
            container["securityContext"]["privileged"] = False


def _no_host_namespaces(name: str, spec: dict[str, Any]) -> None:
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key) is True:
            spec[key] = False


def _non_root(name: str, spec: dict[str, Any]) -> None:
    pod = spec.get("securityContext")
    if isinstance(pod, dict):
        if pod.get("runAsUser") == 0:
            pod["runAsUser"] = 10001
        if pod.get("runAsNonRoot") is False:
            pod["runAsNonRoot"] = True
    for container in _containers(spec):
        context = _context(container)
        context["runAsNonRoot"] = True
        if context.get("runAsUser") in (None, 0):
            context["runAsUser"] = 10001


def _no_escalation(name: str, spec: dict[str, Any]) -> None:
    for container in _containers(spec):
        _context(container)["allowPrivilegeEscalation"] = False


def _limit(key: str, value: str) -> Callable[[str, dict[str, Any]], None]:
    """A fix that gives every container a `key` limit (an existing one is kept)."""

    def fix(name: str, spec: dict[str, Any]) -> None:
        for container in _containers(spec):
            resources = container.setdefault("resources", {})
            limits = resources.setdefault("limits", {})
            if limits.get(key) in (None, ""):
                limits[key] = value

    return fix


def _read_only_root(name: str, spec: dict[str, Any]) -> None:
    for container in _containers(spec):
        _context(container)["readOnlyRootFilesystem"] = True


def _drop_capabilities(name: str, spec: dict[str, Any]) -> None:
    for container in _containers(spec):
        capabilities = _context(container).get("capabilities")
        if not isinstance(capabilities, dict):
            continue
        kept = [
            cap
            for cap in capabilities.get("add") or []
            if str(cap).upper().removeprefix("CAP_") not in DANGEROUS_CAPABILITIES
        ]
        if kept:
            capabilities["add"] = kept
        else:
            capabilities.pop("add", None)
        capabilities["drop"] = ["ALL"]


def _no_host_path(name: str, spec: dict[str, Any]) -> None:
    for volume in spec.get("volumes") or []:
        if isinstance(volume, dict) and "hostPath" in volume:
            volume.pop("hostPath")
            volume["emptyDir"] = {}


def _secret_refs(name: str, spec: dict[str, Any]) -> None:
    secret = f"{name.split('/', 1)[-1]}-env"
    for container in _containers(spec):
        for variable in container.get("env") or []:
            if not isinstance(variable, dict) or not isinstance(variable.get("value"), str):
                continue
            if SECRET_NAME.search(str(variable.get("name", "")).lower()) or re.search(
                r"sk_live_|AKIA", variable["value"]
            ):
                key = str(variable["name"]).lower().replace("_", "-")
                variable.pop("value")
                variable["valueFrom"] = {"secretKeyRef": {"name": secret, "key": key}}


KUBERNETES_FIXES: dict[str, Callable[[str, dict[str, Any]], None]] = {
    "K8S_PRIVILEGED": _no_privileged,
    "K8S_HOST_NAMESPACE": _no_host_namespaces,
    "K8S_RUN_AS_ROOT": _non_root,
    "K8S_PRIV_ESCALATION": _no_escalation,
    "K8S_NO_CPU_LIMIT": _limit("cpu", "500m"),
    "K8S_NO_MEMORY_LIMIT": _limit("memory", "512Mi"),
    "K8S_WRITABLE_ROOT_FS": _read_only_root,
    "K8S_DANGEROUS_CAPABILITIES": _drop_capabilities,
    "K8S_HOSTPATH": _no_host_path,
    "K8S_SECRET_IN_ENV": _secret_refs,
}


def remediate_kubernetes(content: str, findings: list[Finding]) -> str:
    """The manifest with every mechanical fix applied to the objects the findings name (canonical YAML)."""
    parsed = parse_config("kubernetes", content)
    wanted = {(f.canonical_id, f.resource) for f in findings if f.canonical_id in KUBERNETES_FIXES}
    if not wanted:
        return content
    for resource in parsed.resources:
        # Every pod spec the labels see (pod_specs.py), so a Rollout or a CRD's pods are fixed like a Deployment's.
        for _, spec in pod_specs(resource.body):
            # Sorted: a set's order varies with the interpreter's hash seed, and the patch text must not.
            for canonical_id, target in sorted(wanted, key=lambda pair: (pair[0], pair[1] or "")):
                if target in (None, resource.name):
                    KUBERNETES_FIXES[canonical_id](resource.name, spec)  # type: ignore[arg-type]
    return dump_yaml(parsed.documents)


# --- Terraform remediations (on the text) ---

_PUBLIC_ACLS = ('"public-read"', '"public-read-write"', '"authenticated-read"')
_QUOTED = re.compile(r'"([^"]*)"')
_BUCKET_SSE = (
    "\n  server_side_encryption_configuration {\n    rule {\n      apply_server_side_encryption_by_default {\n"
    '        sse_algorithm = "aws:kms"\n      }\n    }\n  }\n'
)


def _admits_internet(value: str | None) -> bool:
    """Whether an HCL list of CIDR strings holds an internet-scale one (any /0, not only 0.0.0.0/0)."""
    return any(internet_scale(cidr) for cidr in _QUOTED.findall(value or ""))


def _tf_fix(text: str, canonical_id: str, address: str | None) -> str:
    hcl = hcltext.HclText(text)
    for block in hcl.resources():
        if address is not None and ".".join(block.labels) != address:
            continue
        rtype = block.labels[0]
        public_acl = hcl.value(block, "acl") in _PUBLIC_ACLS
        if canonical_id == "TF_S3_PUBLIC" and rtype in ("aws_s3_bucket", "aws_s3_bucket_acl") and public_acl:
            return hcltext.set_attribute(text, block, "acl", '"private"')
        if canonical_id == "TF_S3_PUBLIC" and rtype == "aws_s3_bucket_public_access_block":
            for name in ("block_public_acls", "block_public_policy", "ignore_public_acls", "restrict_public_buckets"):
                block = hcltext.HclText(text).resource(*block.labels) or block
                text = hcltext.set_attribute(text, block, name, "true")
            return text
        encrypted = bool(hcl.children(block, "server_side_encryption_configuration"))
        if canonical_id == "TF_S3_UNENCRYPTED" and rtype == "aws_s3_bucket" and not encrypted:
            return text[: block.close] + _BUCKET_SSE + text[block.close :]
        if canonical_id == "TF_EBS_UNENCRYPTED" and rtype == "aws_ebs_volume":
            return hcltext.set_attribute(text, block, "encrypted", "true")
        if canonical_id == "TF_RDS_UNENCRYPTED" and rtype in ("aws_db_instance", "aws_rds_cluster"):
            return hcltext.set_attribute(text, block, "storage_encrypted", "true")
        if canonical_id == "TF_RDS_PUBLIC" and rtype == "aws_db_instance":
            return hcltext.set_attribute(text, block, "publicly_accessible", "false")
        if canonical_id == "TF_GCP_OPEN_FIREWALL" and rtype == "google_compute_firewall":
            return hcltext.set_attribute(text, block, "source_ranges", PRIVATE_CIDR)
        if canonical_id == "TF_OPEN_INGRESS" and rtype == "aws_security_group_rule":
            return hcltext.set_attribute(text, block, "cidr_blocks", PRIVATE_CIDR)
        if canonical_id == "TF_OPEN_INGRESS" and rtype == "aws_security_group":
            for index in range(len(hcl.children(block, "ingress"))):
                current = hcltext.HclText(text)
                rule = current.children(current.resource(*block.labels) or block, "ingress")[index]
                if _admits_internet(current.value(rule, "cidr_blocks")):
                    text = hcltext.set_attribute(text, rule, "cidr_blocks", PRIVATE_CIDR)
                current = hcltext.HclText(text)
                rule = current.children(current.resource(*block.labels) or block, "ingress")[index]
                if _admits_internet(current.value(rule, "ipv6_cidr_blocks")):
                    text = hcltext.remove_attribute(text, rule, "ipv6_cidr_blocks")
            return text
    return text


def remediate_terraform(content: str, findings: list[Finding]) -> str:
    """The module with every mechanical fix applied to the resources the findings name (layout kept)."""
    text = content
    for finding in sorted(findings, key=lambda f: (f.canonical_id or "", f.resource or "")):
        if finding.canonical_id:
            text = _tf_fix(text, finding.canonical_id, finding.resource)
    parse_config("terraform", text)
    return text


# --- the baseline ---


def oracle_answer(observation: Mapping[str, Any], findings: list[Finding]) -> str:
    """The completion for a config and its oracle findings: every finding, plus a diff when one can be made."""
    canonical = [f for f in findings if f.canonical_id]
    violations = [
        {"id": f.canonical_id, "severity": f.severity, "resource": f.resource, "evidence": f.message[:200]}
        for f in sorted(canonical, key=lambda f: (f.canonical_id or "", f.resource or ""))
    ]
    content = observation["content"]
    try:
        fixed = (remediate_kubernetes if observation["kind"] == "kubernetes" else remediate_terraform)(
            content, canonical
        )
    except (ConfigParseError, hcltext.HclScanError):
        fixed = content  # a layout the text editor cannot place an edit in: report the findings, patch nothing
    patch = unified_diff(content, fixed, observation["filename"]) if fixed != content else None
    return json.dumps({"violations": violations, "patch": patch, "confidence": CONFIDENCE})


def tool_oracle(oracle: Callable[[], Scanner]) -> Baseline:
    """The `tool-oracle` baseline bound to a (lazily built, shared) oracle."""

    def answer(observation: Mapping[str, Any]) -> str:
        [result] = oracle().scan_many([(observation["filename"], observation["content"])])
        if result.error:
            return json.dumps({"violations": [], "patch": None, "confidence": 0.0, "error": str(result.error)})
        return oracle_answer(observation, list(result.findings))

    return answer
