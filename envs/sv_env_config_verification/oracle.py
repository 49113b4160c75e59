"""The E2 oracle: every available scanner over a batch of configs, merged into one deduplicated label set.

What it guarantees, and why:
- Each config is parsed once by `loading.py` before any scanner sees it. A config the loader rejects (YAML
  bomb, oversized, not UTF-8, invalid YAML/HCL) gets `error` = the reason and no findings, and never reaches a
  scanner -- semgrep or checkov fed a billion-laughs document is exactly the failure this prevents -- while
  the rest of the batch goes on. A scanner that fails on one config marks only that config.
- The label is the reference's (REFERENCE_TOOL, the project's Rego policies, which implement the definitions in
  canonical.py): a canonical id means the same thing whichever scanners are installed. Other tools corroborate:
  findings are deduplicated by (canonical id, resource), so one privileged container reported by OPA, checkov and
  semgrep is one label whose `details` list every agreeing tool; a finding no reference finding matches is a
  disagreement, kept in `disagreements` (and counted by agreement.py), never a label. Without the reference the
  oracle labels nothing: each result says `reference_unavailable` (an explicit `reference=None` merges every
  tool instead, for comparisons). Resource names are the loader's ("Kind/name", "type.name"): a tool's name that
  is not one of the config's resources is replaced by the resource at the finding's line, so naming quirks of
  one tool cannot split a finding in two. Findings whose rule maps to no canonical id stay in `raw` only: no
  model could name them.
- Scanner output is cached per (content sha256, config kind, tool, tool version, ruleset hash) in the JsonCache
  namespace "scanner", so unchanged content is a lookup; cache misses are batched into one scan() call per tool.
  Validity (the loader's verdict) is cached the same way, so a warm re-scan parses nothing.
- Scanners that cannot run here are skipped and listed with the reason in tool_status(); never a crash.
"""

from __future__ import annotations

import importlib
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from sv_env_config_verification.canonical import CANONICAL, canonical_id_for
from sv_env_config_verification.config_model import (
    DEFAULT_LIMITS,
    LOADER_VERSION,
    ConfigParseError,
    LoadLimits,
    ParsedConfig,
    decode_config,
)
from sv_env_config_verification.loading import detect_kind, parse_config
from sv_shared.data.hashing import sha256_hex
from sv_shared.execution.cache import JsonCache
from sv_shared.execution.findings import SEVERITIES, Finding, ScannerAdapter, ToolStatus

CACHE_NAMESPACE = "scanner"
SCANNER_ERROR = "scanner_error"
REFERENCE_UNAVAILABLE = "reference_unavailable"
# The tool whose findings are the labels: the project's Rego policies (adapters/opa.py).
REFERENCE_TOOL = "opa"
# Bumped when the oracle changes what it stores per tool (e.g. resource naming): part of every tool cache key.
ORACLE_REVISION = "1"

# Optional scanners: tool name -> (module under sv_env_config_verification.adapters, adapter class name).
OPTIONAL_ADAPTERS: dict[str, tuple[str, str]] = {
    "semgrep": ("semgrep", "SemgrepAdapter"),
    "checkov": ("checkov", "CheckovAdapter"),
    "trivy": ("trivy", "TrivyAdapter"),
    "kube-linter": ("kubelinter", "KubeLinterAdapter"),
}

_SEVERITY_RANK = {severity: rank for rank, severity in enumerate(SEVERITIES)}
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
_KIND_SUFFIX = {"kubernetes": ".yaml", "terraform": ".tf"}


@dataclass(frozen=True)
class OracleResult:
    """The oracle's verdict on one config.

    findings: the labels, deduplicated canonical findings (path = the config's name); details: one dict per
    finding, same order, with the tools that agreed, their rule ids and severities; disagreements: the same dicts
    for canonical findings only other tools made (not labels); raw: every finding of every tool, canonical ids
    filled in; error: a ConfigParseError reason, "scanner_error" or "reference_unavailable" (then findings is
    empty and error_detail says why); tool_versions: the version of every scanner that ran; reference: the tool
    whose findings are the labels (None: the union of every tool).
    """

    name: str
    kind: str | None
    content_sha256: str
    findings: list[Finding]
    details: list[dict[str, Any]]
    raw: dict[str, list[Finding]]
    error: str | None
    error_detail: str | None
    tool_versions: dict[str, str]
    cached: dict[str, bool] = field(default_factory=dict)
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    reference: str | None = REFERENCE_TOOL

    @property
    def ok(self) -> bool:
        return self.error is None

    def canonical_ids(self) -> list[str]:
        return sorted({f.canonical_id for f in self.findings if f.canonical_id})

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "content_sha256": self.content_sha256,
            "findings": [f.to_dict() for f in self.findings],
            "details": self.details,
            "disagreements": self.disagreements,
            "reference": self.reference,
            "raw": {tool: [f.to_dict() for f in findings] for tool, findings in self.raw.items()},
            "error": self.error,
            "error_detail": self.error_detail,
            "tool_versions": self.tool_versions,
        }


@dataclass
class OracleStats:
    """Where the oracle's time went: cache traffic, scan() calls and seconds per tool."""

    configs: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    parses: int = 0
    parse_s: float = 0.0
    scan_calls: dict[str, int] = field(default_factory=dict)
    scan_s: dict[str, float] = field(default_factory=dict)


@dataclass
class _Tool:
    adapter: ScannerAdapter
    version: str
    ruleset: str


@dataclass
class _Item:
    index: int
    name: str
    content: str | bytes
    sha: str
    kind: str | None = None
    text: str | None = None
    parsed: ParsedConfig | None = None
    error: str | None = None
    error_detail: str | None = None
    raw: dict[str, list[Finding]] = field(default_factory=dict)
    cached: dict[str, bool] = field(default_factory=dict)


def _opa_factory() -> ScannerAdapter:
    from sv_env_config_verification.adapters.opa import OpaAdapter

    return OpaAdapter()


def _optional_factory(tool: str) -> Callable[[], ScannerAdapter]:
    module_name, class_name = OPTIONAL_ADAPTERS[tool]

    def build() -> ScannerAdapter:
        module = importlib.import_module(f"sv_env_config_verification.adapters.{module_name}")
        return getattr(module, class_name)()

    return build


def default_adapter_factories() -> dict[str, Callable[[], ScannerAdapter]]:
    """OPA plus every optional scanner, each built lazily (checkov's import alone costs ~1.4 s)."""
    return {"opa": _opa_factory, **{tool: _optional_factory(tool) for tool in OPTIONAL_ADAPTERS}}


class Oracle:
    """Runs scanners over configs with validation, batching, caching and canonical deduplication."""

    def __init__(
        self,
        adapters: Sequence[ScannerAdapter] | None = None,
        cache: JsonCache | None = None,
        *,
        limits: LoadLimits = DEFAULT_LIMITS,
        reference: str | None = REFERENCE_TOOL,
    ) -> None:
        self.cache = cache
        self.limits = limits
        self.reference = reference
        self.stats = OracleStats()
        self._memory: dict[str, dict[str, Any]] = {}
        self._status: dict[str, ToolStatus] = {}
        self._tools: list[_Tool] = []
        if adapters is None:
            for tool, factory in default_adapter_factories().items():
                try:
                    adapter = factory()
                except Exception as exc:  # a scanner that cannot even be constructed is unavailable, not fatal
                    self._status[tool] = ToolStatus(available=False, reason=f"{type(exc).__name__}: {exc}")
                    continue
                self._register(adapter)
        else:
            for adapter in adapters:
                self._register(adapter)

    def _register(self, adapter: ScannerAdapter) -> None:
        name = getattr(adapter, "name", type(adapter).__name__)
        try:
            status = adapter.status()
            ruleset = adapter.ruleset_hash() if status.available else ""
        except Exception as exc:  # status() of a broken install may raise anything; report it, skip the tool
            self._status[name] = ToolStatus(available=False, reason=f"{type(exc).__name__}: {exc}")
            return
        self._status[name] = status
        if status.available:
            self._tools.append(_Tool(adapter=adapter, version=status.version or "unknown", ruleset=ruleset))

    # ----------------------------------------------------------------------------------------------------------
    # Provenance
    # ----------------------------------------------------------------------------------------------------------

    def tool_status(self) -> dict[str, ToolStatus]:
        """Every scanner considered, available or not; unavailable ones carry the reason."""
        return dict(self._status)

    def versions(self) -> dict[str, str]:
        """{tool: version} of the scanners that run, for every result's provenance metadata."""
        return {tool.adapter.name: tool.version for tool in self._tools}

    def ruleset_hashes(self) -> dict[str, str]:
        return {tool.adapter.name: tool.ruleset for tool in self._tools}

    # ----------------------------------------------------------------------------------------------------------
    # Scanning
    # ----------------------------------------------------------------------------------------------------------

    def scan(self, name: str, content: str | bytes) -> OracleResult:
        return self.scan_many([(name, content)])[0]

    def scan_many(self, configs: Sequence[tuple[str, str | bytes]]) -> list[OracleResult]:
        """One OracleResult per (name, content), in input order; never raises for a bad config or a failing tool."""
        items = [self._item(index, name, content) for index, (name, content) in enumerate(configs)]
        self.stats.configs += len(items)
        for item in items:
            self._validate(item)
        missing = self._reference_missing()
        if missing is not None:
            for item in items:
                if item.error is None:
                    item.error, item.error_detail = REFERENCE_UNAVAILABLE, missing
        valid = [item for item in items if item.error is None]
        for tool in self._tools:
            self._run_tool(tool, valid)
        versions = self.versions()
        return [self._result(item, versions) for item in items]

    def _reference_missing(self) -> str | None:
        """Why the reference cannot label (None when it runs): no other tool may stand in for it silently."""
        if self.reference is None or self.reference in self.versions():
            return None
        status = self._status.get(self.reference)
        reason = status.reason if status is not None else "it is not among this oracle's scanners"
        return f"the reference scanner {self.reference!r} is unavailable: {reason}"

    def _item(self, index: int, name: str, content: str | bytes) -> _Item:
        if isinstance(content, str):
            try:
                data = content.encode("utf-8")
            except UnicodeEncodeError:
                data = content.encode("utf-8", errors="surrogatepass")
        else:
            data = bytes(content)
        return _Item(index=index, name=name, content=content, sha=sha256_hex(data))

    def _cache_get(self, key: str) -> dict[str, Any] | None:
        if self.cache is not None:
            return self.cache.get(CACHE_NAMESPACE, key)
        return self._memory.get(key)

    def _cache_put(self, key: str, value: dict[str, Any]) -> None:
        if self.cache is not None:
            self.cache.put(CACHE_NAMESPACE, key, value)
        else:
            self._memory[key] = value

    def _validate(self, item: _Item) -> None:
        """Kind, validity and (on a miss) the parsed config; the loader's verdict is cached by content."""
        started = time.perf_counter()
        try:
            item.text = decode_config(item.content, self.limits)
        except ConfigParseError as exc:
            item.error, item.error_detail = exc.reason, str(exc)
            self.stats.parse_s += time.perf_counter() - started
            return
        item.kind = detect_kind(item.name, item.text)
        key = sha256_hex(f"{item.sha}|{item.kind}|parse|{LOADER_VERSION}|{self.limits.fingerprint()}")
        verdict = self._cache_get(key)
        if verdict is None:
            self.stats.parses += 1
            try:
                item.parsed = parse_config(item.kind, item.text, limits=self.limits)
                verdict = {"error": None, "detail": None}
            except ConfigParseError as exc:
                verdict = {"error": exc.reason, "detail": str(exc)}
            self._cache_put(key, verdict)
        item.error, item.error_detail = verdict.get("error"), verdict.get("detail")
        self.stats.parse_s += time.perf_counter() - started

    def _tool_key(self, item: _Item, tool: _Tool) -> str:
        return sha256_hex(
            f"{item.sha}|{item.kind}|{tool.adapter.name}|{tool.version}|{tool.ruleset}|"
            f"oracle {ORACLE_REVISION}|loader {LOADER_VERSION}"
        )

    def _run_tool(self, tool: _Tool, items: Sequence[_Item]) -> None:
        """Cached findings where present; every miss (unique content) goes to one batched scan() call."""
        name = tool.adapter.name
        misses: dict[str, list[_Item]] = {}
        for item in items:
            key = self._tool_key(item, tool)
            hit = self._cache_get(key)
            if hit is not None and isinstance(hit.get("findings"), list):
                try:
                    item.raw[name] = [Finding.from_dict(f) for f in hit["findings"]]
                except (TypeError, ValueError):
                    hit = None
                else:
                    item.cached[name] = True
                    self.stats.cache_hits += 1
                    continue
            self.stats.cache_misses += 1
            misses.setdefault(key, []).append(item)
        if not misses:
            return
        batch = {self._scan_name(group[0]): (key, group) for key, group in misses.items()}
        results, errors = self._call_scanner(tool, batch)
        for scan_name, (key, group) in batch.items():
            if scan_name in errors:
                for item in group:
                    item.error = SCANNER_ERROR
                    item.error_detail = f"{name}: {errors[scan_name]}"
                continue
            findings = self._name_resources(group[0], results[scan_name])
            self._cache_put(key, {"findings": [dict(f.to_dict(), path=None) for f in findings]})
            for item in group:
                item.raw[name] = findings
                item.cached[name] = False

    def _name_resources(self, item: _Item, findings: list[Finding]) -> list[Finding]:
        """Resource names as the loader gives them, so findings from different tools meet in the dedup.

        A tool's own name is kept when the config has a resource of that name; otherwise (a regex that missed a
        flow-style `metadata: {name: web}`, checkov's "Kind.namespace.name", no name at all) the finding's line
        decides, through the parsed config's node spans. Runs once per cache miss; the cache stores the result.
        """
        if item.parsed is None:
            try:
                item.parsed = parse_config(item.kind or "kubernetes", item.text or "", limits=self.limits)
            except ConfigParseError:
                return findings
        parsed = item.parsed
        known = set(parsed.resource_names())
        named: list[Finding] = []
        for finding in findings:
            if finding.resource not in known and (resource := parsed.resource_at_line(finding.line)) is not None:
                finding = Finding(
                    tool=finding.tool,
                    rule_id=finding.rule_id,
                    canonical_id=finding.canonical_id,
                    severity=finding.severity,
                    resource=resource.name,
                    path=finding.path,
                    line=finding.line,
                    message=finding.message,
                )
            named.append(finding)
        return named

    def _scan_name(self, item: _Item) -> str:
        """A unique, filesystem-safe name per content that keeps the extension scanners pick rules by."""
        base = _UNSAFE_NAME_CHARS.sub("_", PurePosixPath(item.name.replace("\\", "/")).name)[-80:] or "config"
        suffix = _KIND_SUFFIX.get(item.kind or "", "")
        if suffix and not base.lower().endswith((suffix, ".yml", ".tf.json")):
            base += suffix
        return f"{item.sha[:16]}-{base}"

    def _call_scanner(
        self, tool: _Tool, batch: dict[str, tuple[str, list[_Item]]]
    ) -> tuple[dict[str, list[Finding]], dict[str, str]]:
        """One scan() for the batch; if it raises, each file alone, so a failure is pinned to its config."""
        adapter = tool.adapter
        parsed = {scan_name: group[0].parsed for scan_name, (_, group) in batch.items()}
        texts = {scan_name: group[0].text or "" for scan_name, (_, group) in batch.items()}

        def call(names: list[str]) -> dict[str, list[Finding]]:
            started = time.perf_counter()
            self.stats.scan_calls[adapter.name] = self.stats.scan_calls.get(adapter.name, 0) + 1
            try:
                scan_parsed = getattr(adapter, "scan_parsed", None)
                if scan_parsed is not None and all(parsed[n] is not None for n in names):
                    return scan_parsed({n: parsed[n] for n in names})
                return adapter.scan({n: texts[n] for n in names})
            finally:
                self.stats.scan_s[adapter.name] = self.stats.scan_s.get(adapter.name, 0.0) + (
                    time.perf_counter() - started
                )

        names = list(batch)
        errors: dict[str, str] = {}
        try:
            results = call(names)
        except Exception as exc:  # any scanner failure: isolate it file by file below
            if len(names) == 1:
                return {}, {names[0]: f"{type(exc).__name__}: {exc}"[:1000]}
            results = {}
            for scan_name in names:
                try:
                    results.update(call([scan_name]))
                except Exception as single:  # this config is the one the scanner cannot handle
                    errors[scan_name] = f"{type(single).__name__}: {single}"[:1000]
        for scan_name in names:
            if scan_name not in errors and not isinstance(results.get(scan_name), list):
                errors[scan_name] = "the scanner returned no result for this file"
        return results, errors

    # ----------------------------------------------------------------------------------------------------------
    # Merging
    # ----------------------------------------------------------------------------------------------------------

    def _result(self, item: _Item, versions: dict[str, str]) -> OracleResult:
        raw = {tool: [_normalize(f, item.name) for f in findings] for tool, findings in item.raw.items()}
        findings: list[Finding] = []
        details: list[dict[str, Any]] = []
        disagreements: list[dict[str, Any]] = []
        if item.error is None:
            findings, details, disagreements = label_findings(raw, self.reference)
        return OracleResult(
            name=item.name,
            kind=item.kind,
            content_sha256=item.sha,
            findings=findings,
            details=details,
            raw=raw,
            error=item.error,
            error_detail=item.error_detail,
            tool_versions=dict(versions),
            cached=dict(item.cached),
            disagreements=disagreements,
            reference=self.reference,
        )


def _normalize(finding: Finding, name: str) -> Finding:
    """The config's own name as path, and the canonical id from the one mapping table when the tool left it out."""
    canonical = finding.canonical_id if finding.canonical_id in CANONICAL else None
    if canonical is None:
        canonical = canonical_id_for(finding.tool, finding.rule_id)
    if canonical == finding.canonical_id and finding.path == name:
        return finding
    return Finding(
        tool=finding.tool,
        rule_id=finding.rule_id,
        canonical_id=canonical,
        severity=finding.severity,
        resource=finding.resource,
        path=name,
        line=finding.line,
        message=finding.message,
    )


def label_findings(
    raw: dict[str, list[Finding]], reference: str | None
) -> tuple[list[Finding], list[dict[str, Any]], list[dict[str, Any]]]:
    """(labels, their details, disagreements): the reference's deduplicated findings, corroborated by the others.

    A label's representative is the reference's own finding (its severity is the canonical one, so another
    tool's rating cannot change a label either); a finding of (canonical id, resource) the reference did not make
    is a disagreement. With reference None every merged finding is a label (highest severity wins).
    """
    findings, details = merge_findings(raw, prefer=reference)
    if reference is None:
        return findings, details, []
    labels = [(f, d) for f, d in zip(findings, details, strict=True) if reference in d["tools"]]
    disagreements = [d for d in details if reference not in d["tools"]]
    return [f for f, _ in labels], [d for _, d in labels], disagreements


def merge_findings(
    raw: dict[str, list[Finding]], *, prefer: str | None = None
) -> tuple[list[Finding], list[dict[str, Any]]]:
    """Deduplicate canonical findings by (canonical_id, resource) across tools.

    The representative is the `prefer` tool's first finding when it made one, else the highest-severity finding
    (ties: the first tool in scan order, so OPA's precise line and message win over tools that report none);
    details record every tool that agreed.
    """
    groups: dict[tuple[str, str | None], list[Finding]] = {}
    for findings in raw.values():
        for finding in findings:
            if finding.canonical_id is None:
                continue
            groups.setdefault((finding.canonical_id, finding.resource), []).append(finding)
    merged: list[tuple[Finding, dict[str, Any]]] = []
    for (canonical_id, resource), group in groups.items():
        preferred = [f for f in group if f.tool == prefer]
        best = preferred[0] if preferred else max(group, key=lambda f: _SEVERITY_RANK[f.severity])  # first of equals
        rule_ids: dict[str, list[str]] = {}
        severities: dict[str, str] = {}
        for finding in group:
            rule_ids.setdefault(finding.tool, [])
            if finding.rule_id not in rule_ids[finding.tool]:
                rule_ids[finding.tool].append(finding.rule_id)
            current = severities.get(finding.tool)
            if current is None or _SEVERITY_RANK[finding.severity] > _SEVERITY_RANK[current]:
                severities[finding.tool] = finding.severity
        detail = {
            "canonical_id": canonical_id,
            "resource": resource,
            "severity": best.severity,
            "tools": sorted(rule_ids),
            "rule_ids": {tool: sorted(ids) for tool, ids in sorted(rule_ids.items())},
            "severities": dict(sorted(severities.items())),
            "occurrences": len(group),
        }
        merged.append((best, detail))
    merged.sort(key=lambda pair: (pair[0].resource or "", pair[0].canonical_id or ""))
    return [finding for finding, _ in merged], [detail for _, detail in merged]
