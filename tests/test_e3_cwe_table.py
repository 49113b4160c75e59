"""E3 scanner findings carry a CWE: every bandit test id of the installed bandit and every semgrep rule is mapped."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from sv_env_code_vulnerability.scanners import (
    BANDIT_CWES_FILE,
    RULE_CWES,
    BanditAdapter,
    SemgrepCodeAdapter,
)
from sv_shared.execution.toolenv import ScannerError, tools_python

CWE = re.compile(r"^CWE-[1-9][0-9]*$")
SNIPPETS = Path(__file__).resolve().parents[1] / "bench" / "bench_e3_snippets"
BANDIT_READY = BanditAdapter().status().available
needs_bandit = pytest.mark.skipif(not BANDIT_READY, reason="bandit tools environment not built")
_LIST_TESTS = """
import json
from bandit.core import extension_loader as loader
ids = {p.plugin._test_id: p.name for p in loader.MANAGER.plugins}
ids.update({k: v["name"] for k, v in loader.MANAGER.blacklist_by_id.items()})
print(json.dumps(ids))
"""


def _installed_bandit_tests() -> dict[str, str]:
    try:
        python = tools_python()
    except ScannerError as error:
        pytest.skip(str(error))
    completed = subprocess.run([str(python), "-c", _LIST_TESTS], capture_output=True, text=True, check=True)
    return json.loads(completed.stdout)


@needs_bandit
def test_every_bandit_test_id_of_the_installed_version_has_a_cwe() -> None:
    installed = _installed_bandit_tests()
    assert len(installed) > 60
    assert sorted(installed) == sorted(RULE_CWES)
    table = yaml.safe_load(BANDIT_CWES_FILE.read_text(encoding="utf-8"))
    assert {test_id: entry["name"] for test_id, entry in table.items()} == installed


def test_every_mapped_cwe_is_well_formed_and_every_override_says_why() -> None:
    table = yaml.safe_load(BANDIT_CWES_FILE.read_text(encoding="utf-8"))
    for test_id, entry in table.items():
        assert CWE.match(entry["cwe"]), test_id
        if "bandit" in entry and entry["bandit"] != entry["cwe"]:
            assert entry.get("why"), f"{test_id} overrides bandit's {entry['bandit']} without a reason"


def test_every_semgrep_rule_names_its_cwe() -> None:
    rules = SemgrepCodeAdapter().rules
    assert len(rules) >= 12
    for rule_id, rule in rules.items():
        assert CWE.match(str((rule.get("metadata") or {}).get("cwe"))), rule_id


@needs_bandit
def test_issue_examples_torch_load_and_paramiko_carry_their_cwe() -> None:
    files = {name: (SNIPPETS / name).read_text(encoding="utf-8") for name in ("model_loader.py", "deploy_ssh.py")}
    findings, errors = BanditAdapter().scan_detailed(files)
    assert not errors
    by_rule = {f.rule_id: f.canonical_id for found in findings.values() for f in found}
    assert by_rule["B614"] == "CWE-502" and by_rule["B601"] == "CWE-78" and by_rule["B615"] == "CWE-494"
    assert all(f.canonical_id for found in findings.values() for f in found)
