"""E3 semgrep rules for cleartext secrets in source (CWE-312). Weak PRNGs feeding secrets (CWE-338) are a Python
data-flow rule now: tests/test_e3_prng_rule.py."""

from __future__ import annotations

import pytest

from sv_env_code_vulnerability.scanners import SemgrepCodeAdapter

SEMGREP_READY = SemgrepCodeAdapter().status().available
pytestmark = pytest.mark.skipif(not SEMGREP_READY, reason="semgrep tools environment not built")

KEY = "MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu"
SECRET_POSITIVES = {
    "pem_block.py": f'SIGNING = """-----BEGIN RSA PRIVATE KEY-----\n{KEY}\n-----END RSA PRIVATE KEY-----\n"""\n',
    "pem_escaped.py": f'KEY = "-----BEGIN PRIVATE KEY-----\\n{KEY}\\n-----END PRIVATE KEY-----\\n"\n',
    "openssh.py": f'K = "-----BEGIN OPENSSH PRIVATE KEY-----\\n{KEY}\\n-----END OPENSSH PRIVATE KEY-----"\n',
    "aws.py": 'settings = {"aws": "AKIAIOSFODNN7EXAMPLE"}\n',
    "github.py": 'CLIENT = make_client("ghp_0123456789abcdefghijklmnopqrstuvwxyzAB")\n',
}
SECRET_NEGATIVES = {
    "public_key.py": f'PUBLIC = "-----BEGIN PUBLIC KEY-----\\n{KEY}\\n-----END PUBLIC KEY-----"\n',
    "header_only.py": 'HEADER = "-----BEGIN PRIVATE KEY-----"\nMARKER = "BEGIN PRIVATE KEY"\n',
    "from_env.py": 'import os\nKEY = os.environ["SIGNING_KEY"]\nprefix = "AKIA"\n',
}


@pytest.fixture(scope="module")
def findings() -> dict[str, set[str]]:
    files = {**SECRET_POSITIVES, **SECRET_NEGATIVES}
    found, errors = SemgrepCodeAdapter().scan_detailed(files)
    assert not errors
    return {name: {f"{f.rule_id}:{f.canonical_id}" for f in found.get(name, [])} for name in files}


@pytest.mark.parametrize("name", sorted(SECRET_POSITIVES))
def test_private_keys_and_provider_credentials_are_cwe_312(findings: dict[str, set[str]], name: str) -> None:
    assert any(entry.endswith(":CWE-312") for entry in findings[name])


@pytest.mark.parametrize("name", sorted(SECRET_NEGATIVES))
def test_public_keys_headers_and_environment_reads_are_not_findings(findings: dict[str, set[str]], name: str) -> None:
    assert not any(entry.endswith(":CWE-312") for entry in findings[name])
