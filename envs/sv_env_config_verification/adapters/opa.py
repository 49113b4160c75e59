"""The project's own Rego policies (policies/kubernetes, policies/terraform) as a scanner, evaluated in-process.

No `opa` binary can be installed here, so the policies run on regopy (rego-cpp's Python binding, rego.v1).
Policies are compiled once per process into one bundle per config kind; each file is then a set_input + one
bundle query (a few milliseconds; `OpaAdapter.timings` keeps the running cost). Configs are parsed by
`loading.py` first, so the policies only ever see bounded, JSON-safe input, and resource names are the loader's.

Two regopy 1.5.2 behaviours shape this module and the policies:
- its JSON output does not escape strings, so policies emit only constants, numbers and resource names the
  loader has made output-safe; messages are rendered here, from the finding's path into the parsed config;
- inline regex flags like (?i) are unsupported, so policies lower-case before matching.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from sv_env_config_verification.config_model import (
    DEFAULT_LIMITS,
    LOADER_VERSION,
    ConfigParseError,
    ConfigResource,
    LoadLimits,
    ParsedConfig,
)
from sv_env_config_verification.loading import detect_kind, parse_config
from sv_shared.data.hashing import sha256_hex
from sv_shared.execution.findings import SEVERITIES, Finding, ToolStatus

POLICY_DIR = Path(__file__).resolve().parent.parent / "policies"
POLICY_KINDS: tuple[str, ...] = ("kubernetes", "terraform")

# Bumped when this module changes what a finding looks like (message rendering, line lookup): part of
# ruleset_hash(), so the oracle's cache never serves findings rendered by older code.
ADAPTER_REVISION = "1"

_RULE_ENTRY = re.compile(r'"(SV-[A-Z0-9]+-\d+)":\s*\{[^{}]*?"canonical_id":\s*"([A-Z0-9_]+)"', re.DOTALL)


class PolicyEvaluationError(RuntimeError):
    """regopy failed to compile or evaluate the policies, or returned output that is not the expected shape."""


def policy_files(policy_dir: Path = POLICY_DIR) -> list[Path]:
    """Every .rego file of every kind, in a stable order."""
    return sorted(path for kind in POLICY_KINDS for path in (policy_dir / kind).glob("*.rego"))


def policies_hash(policy_dir: Path = POLICY_DIR) -> str:
    """Hash of the policy sources (relative path + content), the part of the ruleset that lives in .rego files."""
    parts = [
        f"{path.relative_to(policy_dir).as_posix()}\n{path.read_text(encoding='utf-8')}"
        for path in policy_files(policy_dir)
    ]
    return sha256_hex("\n\0".join(parts))


def _static_rule_map(policy_dir: Path = POLICY_DIR) -> dict[str, str]:
    """Rule id -> canonical id, read from the policies' `rules := {...}` tables without running regopy.

    Static so canonical.py can build its mapping table without compiling anything; a test checks it equals
    what the compiled policies report (OpaAdapter.rule_metadata).
    """
    table: dict[str, str] = {}
    for path in policy_files(policy_dir):
        for rule_id, canonical_id in _RULE_ENTRY.findall(path.read_text(encoding="utf-8")):
            table[rule_id] = canonical_id
    return table


RULE_MAP: dict[str, str] = _static_rule_map()


@dataclass
class OpaTimings:
    """Cumulative cost of this adapter's work, so benchmarks can say where the time goes."""

    files: int = 0
    parse_s: float = 0.0
    input_s: float = 0.0
    eval_s: float = 0.0

    def per_file_ms(self) -> dict[str, float]:
        count = max(self.files, 1)
        return {
            "parse_ms": 1000 * self.parse_s / count,
            "input_ms": 1000 * self.input_s / count,
            "eval_ms": 1000 * self.eval_s / count,
        }


@dataclass
class _Compiled:
    bundles: dict[str, Any]
    metadata: dict[str, dict[str, str]]
    interpreter: Any
    lock: threading.Lock = field(default_factory=threading.Lock)


def _regopy() -> Any:
    import regopy

    return regopy


@cache
def _compile(policy_dir: str, digest: str) -> _Compiled:
    """Compile every policy once per process (per policy directory and content hash): one bundle per kind.

    The digest argument is part of the cache key only, so edited policies are recompiled in a long-lived process.
    """
    regopy = _regopy()
    builder = regopy.Interpreter()
    root = Path(policy_dir)
    try:
        for path in policy_files(root):
            builder.add_module(path.relative_to(root).as_posix(), path.read_text(encoding="utf-8"))
        bundles = {
            kind: builder.build(f"findings := [d | some d in data.secverify.{kind}[_].deny]", [])
            for kind in POLICY_KINDS
        }
        metadata_out = builder.query(
            "rules := [[kind, rule_id, meta] | meta := data.secverify[kind][_].rules[rule_id]]"
        )
    except regopy.RegoError as exc:
        raise PolicyEvaluationError(f"the policies in {policy_dir} do not compile: {exc}") from exc
    metadata: dict[str, dict[str, str]] = {}
    for kind, rule_id, meta in _binding(str(metadata_out), "rules"):
        metadata[rule_id] = {"kind": kind, **meta}
    return _Compiled(bundles=bundles, metadata=metadata, interpreter=regopy.Interpreter())


def _binding(output: str, name: str) -> Any:
    """A variable's value from regopy's output text; any error or non-JSON output becomes PolicyEvaluationError."""
    try:
        parsed = json.loads(output)
    except ValueError:
        raise PolicyEvaluationError(f"regopy returned output that is not JSON: {output[:300]!r}") from None
    results = parsed if isinstance(parsed, list) else [parsed]
    if not results or not isinstance(results[0], dict) or name not in results[0].get("bindings", {}):
        raise PolicyEvaluationError(f"regopy returned no {name!r}: {output[:300]!r}")
    return results[0]["bindings"][name]


class OpaAdapter:
    """ScannerAdapter over the project's Rego policies (name "opa"): in-process, no subprocess; evaluations are
    serialized by a lock (one interpreter per compiled policy set), so sharing an adapter across threads is safe."""

    name = "opa"

    def __init__(self, policy_dir: Path | str | None = None, *, limits: LoadLimits = DEFAULT_LIMITS) -> None:
        self.policy_dir = Path(policy_dir) if policy_dir is not None else POLICY_DIR
        self.limits = limits
        self.timings = OpaTimings()
        self._digest: str | None = None

    def __repr__(self) -> str:
        return f"OpaAdapter({str(self.policy_dir)!r})"

    def status(self) -> ToolStatus:
        """Available when regopy imports and the policies compile; version is regopy's."""
        try:
            regopy = _regopy()
        except ImportError as exc:
            return ToolStatus(available=False, reason=f"regopy is not installed ({exc})")
        if not policy_files(self.policy_dir):
            return ToolStatus(available=False, reason=f"no .rego policies under {self.policy_dir}")
        try:
            self._compiled()
        except PolicyEvaluationError as exc:
            return ToolStatus(available=False, reason=str(exc)[:500], version=regopy.__version__)
        return ToolStatus(available=True, version=regopy.__version__)

    def ruleset_hash(self) -> str:
        """Policies + loader behaviour + this module's rendering: everything that decides the findings."""
        return sha256_hex(
            f"{self._policies_digest()}|loader {LOADER_VERSION}|{self.limits.fingerprint()}|adapter {ADAPTER_REVISION}"
        )

    def _policies_digest(self) -> str:
        """The policy sources' hash, read once per adapter: an adapter evaluates the policies it started with."""
        if self._digest is None:
            self._digest = policies_hash(self.policy_dir)
        return self._digest

    def _compiled(self) -> _Compiled:
        return _compile(str(self.policy_dir), self._policies_digest())

    def rule_metadata(self) -> dict[str, dict[str, str]]:
        """Rule id -> {kind, canonical_id, severity, title}, as the compiled policies declare them."""
        return {rule_id: dict(meta) for rule_id, meta in self._compiled().metadata.items()}

    def scan(self, files: Mapping[str, str]) -> dict[str, list[Finding]]:
        """Findings per file; the kind comes from the name's extension (else the content).

        Raises ConfigParseError (message prefixed with the file name) for a file the loader rejects: callers
        that must isolate bad files parse first (the oracle does) and call scan_parsed.
        """
        parsed: dict[str, ParsedConfig] = {}
        for name, content in files.items():
            started = time.perf_counter()
            try:
                parsed[name] = parse_config(detect_kind(name, content), content, limits=self.limits)
            except ConfigParseError as exc:
                raise ConfigParseError(exc.reason, f"{name}: {exc.detail}", line=exc.line) from None
            finally:
                self.timings.parse_s += time.perf_counter() - started
        return self.scan_parsed(parsed)

    def scan_parsed(self, configs: Mapping[str, ParsedConfig]) -> dict[str, list[Finding]]:
        """Findings per already-parsed config (the oracle's path: each config is parsed once for all scanners)."""
        return {name: self.evaluate(name, config) for name, config in configs.items()}

    def evaluate(self, name: str, config: ParsedConfig) -> list[Finding]:
        """Run the policies of the config's kind and turn each deny object into a Finding."""
        compiled = self._compiled()
        regopy = _regopy()
        from regopy.rego_shared import rego_bundle_query, rego_free_output, rego_output_ok, rego_output_string

        started = time.perf_counter()
        policy_input = regopy.Input(config.policy_input())
        converted = time.perf_counter()
        with compiled.lock:
            interpreter = compiled.interpreter
            try:
                interpreter.set_input(policy_input)
                # The raw C call: regopy's Output wrapper json-decodes eagerly and crashes on its own bad output.
                output_impl = rego_bundle_query(interpreter._impl, compiled.bundles[config.kind]._impl)
            except regopy.RegoError as exc:
                raise PolicyEvaluationError(f"{name}: policy evaluation failed: {exc}") from exc
            try:
                ok = rego_output_ok(output_impl)
                text = rego_output_string(output_impl)
            finally:
                rego_free_output(output_impl)  # what regopy's Output.__del__ would do
            finished = time.perf_counter()
            self.timings.files += 1
            self.timings.input_s += converted - started
            self.timings.eval_s += finished - converted
        if not ok:
            raise PolicyEvaluationError(f"{name}: policy evaluation failed: {text[:500]}")
        denies = _binding(text, "findings")
        if not isinstance(denies, list):
            raise PolicyEvaluationError(f"{name}: policies returned {type(denies).__name__}, not a list")
        resources = config.policy_names()
        findings = [self._finding(name, config, resources, deny) for deny in denies]
        return sorted(findings, key=lambda f: (f.line or 0, f.rule_id, f.resource or "", f.message))

    def _finding(self, name: str, config: ParsedConfig, resources: Mapping[str, ConfigResource], deny: Any) -> Finding:
        if not isinstance(deny, dict) or not {"rule_id", "canonical_id", "severity", "resource"} <= deny.keys():
            raise PolicyEvaluationError(f"{name}: malformed deny object {deny!r:.300}")
        severity = deny["severity"]
        if severity not in SEVERITIES:
            raise PolicyEvaluationError(f"{name}: rule {deny['rule_id']} has severity {severity!r}")
        resource = resources.get(deny["resource"])
        path = deny.get("path") if isinstance(deny.get("path"), list) else []
        if resource is None:
            return Finding(
                "opa",
                deny["rule_id"],
                deny["canonical_id"],
                severity,
                deny["resource"],
                name,
                None,
                str(deny.get("message", "")),
            )
        line = config.line_at(resource, path) if config.kind == "kubernetes" else resource.line
        return Finding(
            tool="opa",
            rule_id=deny["rule_id"],
            canonical_id=deny["canonical_id"],
            severity=severity,
            resource=resource.name,
            path=name,
            line=line,
            message=render_message(str(deny.get("message", "")), resource.body, path),
        )


def render_message(message: str, body: Mapping[str, Any], path: Sequence[Any]) -> str:
    """A policy's constant message made specific: the container it concerns, the field path and short value.

    E.g. 'container "web": runs privileged (spec.template.spec.containers[0].securityContext.privileged = true)'.
    Values come from the parsed config, not from regopy's output, so they are exact; secrets are never shown
    because the secret policy's path ends at the variable's name.
    """
    subject = ""
    node: Any = body
    for index, step in enumerate(path):
        node = _step(node, step)
        if (
            isinstance(step, int)
            and index > 0
            and path[index - 1] in {"containers", "initContainers", "ephemeralContainers"}
            and isinstance(node, dict)
        ):
            kind = "init container" if path[index - 1] == "initContainers" else "container"
            if path[index - 1] == "ephemeralContainers":
                kind = "ephemeral container"
            subject = f"{kind} {json.dumps(str(node.get('name', '?')))}: "
    where = _dotted(path)
    shown = ""
    if path and (isinstance(node, bool | int | float) or (isinstance(node, str) and len(node) <= 80)):
        shown = f" = {json.dumps(node)}"
    suffix = f" ({where}{shown})" if where else ""
    return f"{subject}{message}{suffix}"


def _step(node: Any, step: Any) -> Any:
    if isinstance(node, dict) and isinstance(step, str):
        return node.get(step)
    if isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
        return node[step]
    return None


def _dotted(path: Sequence[Any]) -> str:
    out = ""
    for step in path:
        if isinstance(step, int):
            out += f"[{step}]"
        else:
            out += f".{step}" if out else str(step)
    return out
