"""semgrep with the project's local rules (rules/semgrep/*.yaml) over Kubernetes YAML and Terraform HCL.

Why this shape:
- One subprocess per batch: semgrep costs ≈ 2 s of start-up per call; all files of a batch go to one call.
- `--experimental` (osemgrep, the OCaml engine) is used by default: it gave results identical to the Python CLI on
  the fixtures and the bench corpus, and is ≈ 10× faster per call (measured in bench/bench_e2_scanners.py).
- Offline by construction: local rules only, `--disable-version-check` plus SEMGREP_ENABLE_VERSION_CHECK=0
  (without both it waits ≈ 100 s for the network), `--metrics=off`.

Severity mapping (semgrep's rule severities): ERROR -> high, WARNING -> medium, INFO -> low (newer spellings
CRITICAL/HIGH -> high, MEDIUM -> medium, LOW -> low).
"""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from sv_shared.data.hashing import sha256_hex, stable_json
from sv_shared.execution.findings import Finding, ToolStatus
from sv_shared.execution.toolenv import (
    ScannerError,
    canonical_lookup,
    config_kind,
    name_for_path,
    normalize_severity,
    resource_at_line,
    run_tool,
    screen_configs,
    stderr_tail,
    tool_binary,
    tool_package_version,
    write_configs,
)

logger = logging.getLogger(__name__)

TOOL = "semgrep"
RULES_DIR = Path(__file__).resolve().parent.parent / "rules" / "semgrep"
CANONICAL_MODULE = "sv_env_config_verification.canonical"

# semgrep rule id (rules/semgrep/*.yaml) -> canonical id.
RULE_MAP: dict[str, str] = {
    "sv.k8s.privileged-container": "K8S_PRIVILEGED",
    "sv.k8s.host-namespace": "K8S_HOST_NAMESPACE",
    "sv.k8s.run-as-root": "K8S_RUN_AS_ROOT",
    "sv.k8s.privilege-escalation": "K8S_PRIV_ESCALATION",
    "sv.k8s.writable-root-fs": "K8S_WRITABLE_ROOT_FS",
    "sv.k8s.dangerous-capabilities": "K8S_DANGEROUS_CAPABILITIES",
    "sv.k8s.latest-tag": "K8S_LATEST_TAG",
    "sv.k8s.hostpath": "K8S_HOSTPATH",
    "sv.k8s.rbac-wildcard": "K8S_RBAC_WILDCARD",
    "sv.k8s.secret-in-env": "K8S_SECRET_IN_ENV",
    "sv.tf.s3-public-acl": "TF_S3_PUBLIC",
    "sv.tf.s3-unencrypted": "TF_S3_UNENCRYPTED",
    "sv.tf.open-ingress": "TF_OPEN_INGRESS",
    "sv.tf.ebs-unencrypted": "TF_EBS_UNENCRYPTED",
    "sv.tf.rds-unencrypted": "TF_RDS_UNENCRYPTED",
    "sv.tf.rds-public": "TF_RDS_PUBLIC",
    "sv.tf.iam-wildcard-action": "TF_IAM_WILDCARD",
    "sv.tf.gcs-public": "TF_GCS_PUBLIC",
    "sv.tf.gcp-open-firewall": "TF_GCP_OPEN_FIREWALL",
}


class SemgrepAdapter:
    """semgrep over a batch of config files in one call; see the module docstring for the choices."""

    name = TOOL

    def __init__(
        self,
        rules_dir: Path = RULES_DIR,
        *,
        experimental: bool = True,
        timeout_s: float = 180.0,
        rule_timeout_s: int = 5,
    ) -> None:
        self.rules_dir = Path(rules_dir)
        self.experimental = experimental
        self.timeout_s = timeout_s
        self.rule_timeout_s = rule_timeout_s

    def status(self) -> ToolStatus:
        """Available when the tools environment has semgrep and the rules directory has rules."""
        binary = tool_binary("semgrep")
        if binary is None:
            return ToolStatus(False, "semgrep is not installed in the tools environment (run `make setup`)")
        if not self.rule_files():
            return ToolStatus(False, f"no semgrep rules in {self.rules_dir}")
        return ToolStatus(True, "", tool_package_version("semgrep") or "unknown")

    def rule_files(self) -> list[Path]:
        return sorted(self.rules_dir.glob("*.yaml")) + sorted(self.rules_dir.glob("*.yml"))

    @cached_property
    def rule_ids(self) -> tuple[str, ...]:
        """Rule ids as written in the rule files (semgrep prefixes them with the config path in its output)."""
        ids: list[str] = []
        for path in self.rule_files():
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            ids.extend(str(rule["id"]) for rule in data.get("rules", []) if isinstance(rule, dict) and "id" in rule)
        return tuple(sorted(ids, key=len, reverse=True))

    def ruleset_hash(self) -> str:
        """The rule files' content, the engine and the mappings: anything that changes what a scan reports."""
        rules = {path.name: sha256_hex(path.read_bytes()) for path in self.rule_files()}
        return sha256_hex(stable_json({"rules": rules, "experimental": self.experimental, "rule_map": RULE_MAP}))

    def _command(self, target: Path) -> list[str]:
        binary = tool_binary("semgrep")
        if binary is None:
            raise ScannerError(TOOL, "semgrep is not installed in the tools environment (run `make setup`)")
        command = [str(binary), "scan"]
        if self.experimental:
            command.append("--experimental")
        command += [
            "--config",
            str(self.rules_dir),
            "--json",
            "--quiet",
            "--disable-version-check",
            "--metrics=off",
            "--no-git-ignore",
            "--timeout",
            str(self.rule_timeout_s),
            "--max-target-bytes",
            "2000000",
            str(target),
        ]
        return command

    def scan(self, files: Mapping[str, str]) -> dict[str, list[Finding]]:
        """Findings per file; raises ScannerError when semgrep fails or a file cannot be scanned (rejected input)."""
        findings, errors = self.scan_detailed(files)
        hard = {name: reason for name, reason in errors.items() if not reason.startswith("parse error")}
        if hard:
            raise ScannerError(TOOL, "; ".join(f"{name}: {reason}" for name, reason in sorted(hard.items()))[:2000])
        return findings

    def scan_detailed(self, files: Mapping[str, str]) -> tuple[dict[str, list[Finding]], dict[str, str]]:
        """(findings per file, {file: error}) for one batch; per-file problems are reported, not raised.

        Errors are "parse error: ..." (semgrep could not parse the file: no opinion on it), a screening reason
        (hostile input never handed over) or "timeout: ..." (a rule ran past its per-file budget).
        """
        accepted, errors = screen_configs(files)
        results: dict[str, list[Finding]] = {name: [] for name in files}
        if not accepted:
            return results, errors
        with tempfile.TemporaryDirectory(prefix="sv-semgrep-") as tmp:
            root = Path(tmp)
            layout = write_configs(accepted, root / "t")
            completed = run_tool(self._command(root / "t"), timeout_s=self.timeout_s, cwd=root, tool=TOOL)
        report = _read_json(completed.stdout)
        if report is None or not isinstance(report.get("results"), list):
            raise ScannerError(
                TOOL, f"exit {completed.returncode} without a JSON report: {stderr_tail(completed.stderr)}"
            )
        for error in report.get("errors") or []:
            name = name_for_path(str(error.get("path") or ""), layout)
            if name is None:
                if error.get("level") == "error":
                    raise ScannerError(TOOL, f"{error.get('type')}: {str(error.get('message'))[:500]}")
                continue
            kind = "timeout" if "Timeout" in str(error.get("type")) else "parse error"
            errors.setdefault(name, f"{kind}: {error.get('type')}")
        for match in report["results"]:
            name = name_for_path(str(match.get("path") or ""), layout)
            if name is None:
                logger.warning("semgrep reported a file outside the batch: %s", match.get("path"))
                continue
            results[name].append(self._finding(match, name, accepted[name]))
        for name, reason in errors.items():
            if reason.startswith("parse error"):
                logger.info("semgrep could not parse %s (%s)", name, reason)
        return results, errors

    def _rule_id(self, check_id: str) -> str:
        for rule_id in self.rule_ids:
            if check_id == rule_id or check_id.endswith("." + rule_id):
                return rule_id
        return check_id

    def _finding(self, match: Mapping[str, Any], name: str, content: str) -> Finding:
        rule_id = self._rule_id(str(match.get("check_id", "")))
        extra = match.get("extra") or {}
        line = (match.get("start") or {}).get("line")
        line = int(line) if isinstance(line, int) and line > 0 else None
        return Finding(
            tool=TOOL,
            rule_id=rule_id,
            canonical_id=canonical_lookup(CANONICAL_MODULE, TOOL, rule_id, RULE_MAP),
            severity=normalize_severity(extra.get("severity")),
            resource=resource_at_line(content, line, config_kind(name, content)),
            path=name,
            line=line,
            message=str(extra.get("message") or rule_id).strip(),
        )


def _read_json(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
