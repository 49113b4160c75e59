"""The E2 oracle: dedup across tools, caching by content, batching, and per-config isolation of failures."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path

import regopy

from sv_env_config_verification.adapters.opa import RULE_MAP as OPA_RULE_MAP
from sv_env_config_verification.adapters.opa import OpaAdapter
from sv_env_config_verification.canonical import ADAPTER_MODULES, CANONICAL, canonical_id_for, mapping_table
from sv_env_config_verification.config_model import ParsedConfig
from sv_env_config_verification.oracle import OPTIONAL_ADAPTERS, Oracle, merge_findings
from sv_shared.execution.cache import JsonCache
from sv_shared.execution.findings import Finding, ToolStatus

FIXTURES = Path(__file__).parent / "fixtures" / "e2_opa"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def pod(name: str, *, privileged: bool = True) -> str:
    return (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n  containers:\n"
        "    - name: app\n      image: nginx:1.25\n"
        f"      securityContext: {{privileged: {str(privileged).lower()}}}\n"
    )


class CountingOpa(OpaAdapter):
    """The real OPA adapter, counting how often (and with how many files) the oracle calls it."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []

    def scan_parsed(self, configs: Mapping[str, ParsedConfig]) -> dict[str, list[Finding]]:
        self.calls.append(len(configs))
        return super().scan_parsed(configs)

    def scan(self, files: Mapping[str, str]) -> dict[str, list[Finding]]:
        self.calls.append(len(files))
        return super().scan(files)


class ExplodingOpa(CountingOpa):
    """The real OPA adapter, failing on any config that contains the Pod named "boom"."""

    def scan_parsed(self, configs: Mapping[str, ParsedConfig]) -> dict[str, list[Finding]]:
        if any("Pod/boom" in config.resource_names() for config in configs.values()):
            self.calls.append(len(configs))
            raise RuntimeError("scanner crashed")
        return super().scan_parsed(configs)


class FakeTool:
    """A scanner that reports a fixed list of findings for every file (dedup tests only)."""

    def __init__(self, name: str, findings: list[Finding], status: ToolStatus | None = None) -> None:
        self.name = name
        self._findings = findings
        self._status = status or ToolStatus(available=True, version="9.9")

    def status(self) -> ToolStatus:
        return self._status

    def ruleset_hash(self) -> str:
        return "fake"

    def scan(self, files: Mapping[str, str]) -> dict[str, list[Finding]]:
        return {name: list(self._findings) for name in files}


def finding(tool: str, rule_id: str, canonical_id: str | None, severity: str, resource: str) -> Finding:
    return Finding(tool, rule_id, canonical_id, severity, resource, "scanned-name.yaml", None, f"{tool} {rule_id}")


def test_without_a_reference_the_same_problem_from_two_tools_counts_once_with_the_highest_severity() -> None:
    alpha = FakeTool(
        "alpha",
        [
            finding("alpha", "A-1", "K8S_PRIVILEGED", "medium", "Pod/web"),
            finding("alpha", "A-1", "K8S_PRIVILEGED", "medium", "Pod/web"),  # e.g. two containers
            finding("alpha", "A-999", None, "low", "Pod/web"),  # outside the vocabulary
        ],
    )
    beta = FakeTool(
        "beta",
        [
            finding("beta", "B-7", "K8S_PRIVILEGED", "high", "Pod/web"),
            finding("beta", "B-8", "K8S_HOSTPATH", "high", "Pod/web"),
            finding("beta", "B-7", "K8S_PRIVILEGED", "high", "Pod/other"),
        ],
    )
    (result,) = Oracle([alpha, beta], reference=None).scan_many([("web.yaml", pod("web"))])
    assert result.error is None
    assert [(f.canonical_id, f.resource) for f in result.findings] == [
        ("K8S_PRIVILEGED", "Pod/other"),
        ("K8S_HOSTPATH", "Pod/web"),
        ("K8S_PRIVILEGED", "Pod/web"),
    ]
    merged = result.findings[2]
    assert merged.severity == "high" and merged.tool == "beta"
    assert all(f.path == "web.yaml" for f in result.findings)  # the config's own name, not the scanned name
    detail = result.details[2]
    assert detail["tools"] == ["alpha", "beta"]
    assert detail["rule_ids"] == {"alpha": ["A-1"], "beta": ["B-7"]}
    assert detail["severities"] == {"alpha": "medium", "beta": "high"}
    assert detail["occurrences"] == 3
    assert len(result.raw["alpha"]) == 3 and result.raw["alpha"][2].canonical_id is None  # kept in raw only
    assert result.tool_versions == {"alpha": "9.9", "beta": "9.9"}


def test_real_opa_and_a_second_tool_agree_on_one_finding() -> None:
    second = FakeTool("beta", [finding("beta", "B-7", "K8S_PRIVILEGED", "high", "Pod/web")])
    (result,) = Oracle([OpaAdapter(), second]).scan_many([("web.yaml", pod("web"))])
    privileged = [d for d in result.details if d["canonical_id"] == "K8S_PRIVILEGED"]
    assert privileged == [
        {
            "canonical_id": "K8S_PRIVILEGED",
            "resource": "Pod/web",
            "severity": "high",
            "tools": ["beta", "opa"],
            "rule_ids": {"beta": ["B-7"], "opa": ["SV-K8S-001"]},
            "severities": {"beta": "high", "opa": "high"},
            "occurrences": 2,
        }
    ]
    chosen = next(f for f in result.findings if f.canonical_id == "K8S_PRIVILEGED")
    assert chosen.tool == "opa" and chosen.line == 8  # equal severity: the first tool (with a line) wins


def test_a_tools_misnamed_resource_is_renamed_from_its_line_before_dedup() -> None:
    misnamed = Finding("beta", "B-7", "K8S_PRIVILEGED", "high", "Pod/#0", "x.yaml", 8, "privileged")
    located = Finding("beta", "B-9", "K8S_HOSTPATH", "high", None, "x.yaml", 2, "no name, a line")
    nowhere = Finding("beta", "B-8", "K8S_LATEST_TAG", "medium", "Pod.default.web", "x.yaml", None, "no line")
    (result,) = Oracle([OpaAdapter(), FakeTool("beta", [misnamed, located, nowhere])]).scan_many(
        [("web.yaml", pod("web"))]
    )
    assert [f.resource for f in result.raw["beta"]] == ["Pod/web", "Pod/web", "Pod.default.web"]
    (privileged,) = [d for d in result.details if d["canonical_id"] == "K8S_PRIVILEGED"]
    assert privileged["resource"] == "Pod/web" and privileged["tools"] == ["beta", "opa"]


def test_merge_ignores_unmapped_findings() -> None:
    findings, details = merge_findings({"x": [finding("x", "X-1", None, "high", "Pod/a")]})
    assert findings == [] and details == []


def test_second_scan_is_served_from_the_cache(tmp_path: Path) -> None:
    configs = [(f"pod-{i}.yaml", pod(f"p{i}", privileged=i % 2 == 0)) for i in range(5)]
    configs.append(("dup.yaml", configs[0][1]))  # same content under another name: scanned once
    configs.append(("bucket.tf", fixture("tf_s3_public_acl.vulnerable.tf")))
    cache = JsonCache(tmp_path / "scanner.sqlite")
    opa = CountingOpa()
    oracle = Oracle([opa], cache)
    first = oracle.scan_many(configs)
    assert opa.calls == [6]  # one batched call for every unique content
    assert first[0].cached == {"opa": False}
    assert first[5].findings[0].path == "dup.yaml"

    second = oracle.scan_many(configs)
    assert opa.calls == [6]
    assert all(result.cached == {"opa": True} for result in second)
    assert [r.findings for r in second] == [r.findings for r in first]
    assert [r.raw for r in second] == [r.raw for r in first]

    # A fresh oracle (a new process) on the same cache file parses and scans nothing.
    reopened_opa = CountingOpa()
    reopened = Oracle([reopened_opa], JsonCache(tmp_path / "scanner.sqlite"))
    third = reopened.scan_many(configs)
    assert reopened_opa.calls == [] and reopened.stats.parses == 0
    assert [r.findings for r in third] == [r.findings for r in first]

    changed = [*configs[:2], ("pod-new.yaml", pod("fresh"))]
    reopened.scan_many(changed)
    assert reopened_opa.calls == [1]


def test_cache_key_includes_the_tool_version(tmp_path: Path) -> None:
    cache = JsonCache(tmp_path / "scanner.sqlite")
    config = [("web.yaml", pod("web"))]
    Oracle([FakeTool("alpha", [], ToolStatus(True, version="1.0"))], cache, reference=None).scan_many(config)
    upgraded = Oracle([FakeTool("alpha", [], ToolStatus(True, version="2.0"))], cache, reference=None)
    (result,) = upgraded.scan_many(config)
    assert result.cached == {"alpha": False}


def test_a_bad_config_gets_its_error_and_the_batch_goes_on() -> None:
    bomb = (
        fixture("k8s_privileged.vulnerable.yaml")
        + "---\na: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(8))
    )
    configs = [
        ("good.yaml", fixture("k8s_privileged.vulnerable.yaml")),
        ("bomb.yaml", bomb),
        ("latin1.yaml", "name: caf\xe9\n".encode("latin-1")),
        ("broken.tf", 'resource "aws_s3_bucket" "b" {\n  acl = \n}\n'),
        ("huge.yaml", "# pad\n" * 1_000_000),
        ("good.tf", fixture("tf_rds_public.vulnerable.tf")),
    ]
    opa = CountingOpa()
    oracle = Oracle([opa])
    results = oracle.scan_many(configs)
    assert [r.error for r in results] == [None, "yaml_bomb", "not_utf8", "invalid_hcl", "too_large", None]
    assert [r.canonical_ids() for r in results] == [["K8S_PRIVILEGED"], [], [], [], [], ["TF_RDS_PUBLIC"]]
    assert all(r.raw == {} for r in results[1:5])
    assert opa.calls == [2]  # the bad configs never reached the scanner
    again = oracle.scan_many(configs)  # the verdicts are cached too
    assert [r.error for r in again] == [r.error for r in results]
    assert opa.calls == [2]


def test_a_scanner_failure_is_pinned_to_its_config_and_not_cached() -> None:
    opa = ExplodingOpa()
    oracle = Oracle([opa])
    configs = [("a.yaml", pod("a")), ("boom.yaml", pod("boom")), ("c.yaml", pod("c"))]
    results = oracle.scan_many(configs)
    assert [r.error for r in results] == [None, "scanner_error", None]
    assert results[1].findings == [] and "opa" in (results[1].error_detail or "")
    assert "K8S_PRIVILEGED" in results[0].canonical_ids() and "K8S_PRIVILEGED" in results[2].canonical_ids()
    assert opa.calls == [3, 1, 1, 1]  # the batch, then each file alone to find the culprit
    retried = oracle.scan_many(configs)
    assert retried[1].error == "scanner_error" and opa.calls[-1] == 1  # failures are retried, not cached


def test_unavailable_tools_are_listed_with_reasons_and_skipped() -> None:
    class Broken(FakeTool):
        def status(self) -> ToolStatus:
            raise OSError("binary crashed on --version")

    missing = FakeTool("kube-linter", [], ToolStatus(available=False, reason="kube-linter is not on PATH"))
    oracle = Oracle([OpaAdapter(), missing, Broken("semgrep", [])])
    status = oracle.tool_status()
    assert status["opa"].available and status["opa"].version == regopy.__version__
    assert status["kube-linter"] == ToolStatus(available=False, reason="kube-linter is not on PATH")
    assert not status["semgrep"].available and "binary crashed" in status["semgrep"].reason
    assert oracle.versions() == {"opa": regopy.__version__}
    (result,) = oracle.scan_many([("web.yaml", pod("web"))])
    assert result.tool_versions == {"opa": regopy.__version__} and set(result.raw) == {"opa"}


def test_default_oracle_runs_opa_and_accounts_for_every_optional_scanner() -> None:
    oracle = Oracle()
    status = oracle.tool_status()
    assert status["opa"].available
    for tool in OPTIONAL_ADAPTERS:
        assert tool in status
        assert status[tool].available or status[tool].reason
    (result,) = oracle.scan_many([("web.yaml", pod("web"))])
    assert result.error is None, result.error_detail
    assert result.tool_versions == oracle.versions()
    # Every real scanner that runs here reports the privileged container; the oracle counts it once.
    (privileged,) = [d for d in result.details if d["canonical_id"] == "K8S_PRIVILEGED"]
    running_with_k8s_rules = {"opa", "semgrep", "checkov", "trivy", "kube-linter"} & set(oracle.versions())
    assert set(privileged["tools"]) == running_with_k8s_rules


def test_results_serialize_to_json() -> None:
    (result,) = Oracle([OpaAdapter()]).scan_many([("web.yaml", pod("web"))])
    data = json.loads(json.dumps(result.to_dict()))
    assert data["findings"][0]["tool"] == "opa" and data["tool_versions"] == {"opa": regopy.__version__}


def test_warm_scans_are_fast(tmp_path: Path) -> None:
    configs = [(path.name, path.read_text()) for path in sorted(FIXTURES.iterdir())]
    configs += [(f"extra-{i}.yaml", pod(f"x{i}")) for i in range(100 - len(configs))]
    oracle = Oracle([OpaAdapter()], JsonCache(tmp_path / "scanner.sqlite"))
    oracle.scan_many(configs)
    started = time.perf_counter()
    results = oracle.scan_many(configs)
    elapsed = time.perf_counter() - started
    assert all(r.cached == {"opa": True} for r in results)
    assert elapsed < 1.0, f"warm scan of 100 configs took {elapsed:.3f} s"


def test_one_mapping_table_for_every_tool() -> None:
    table = mapping_table()  # raises if any adapter maps a rule to an id outside the vocabulary
    assert {tool for tool, _ in table} == set(ADAPTER_MODULES)
    assert set(table.values()) <= set(CANONICAL)
    for rule_id, canonical_id in OPA_RULE_MAP.items():
        assert canonical_id_for("opa", rule_id) == canonical_id
    assert canonical_id_for("opa", "SV-K8S-001") == "K8S_PRIVILEGED"
    assert canonical_id_for("opa", "no-such-rule") is None
    assert canonical_id_for("no-such-tool", "SV-K8S-001") is None
    # A privileged container is the same canonical finding whichever tool reports it.
    privileged = {tool for (tool, _), canonical_id in table.items() if canonical_id == "K8S_PRIVILEGED"}
    assert {"opa", "semgrep", "checkov"} <= privileged
