"""E3's weak-PRNG rule (CWE-338) judges by where a value goes: a weak PRNG value reaching a token, password, key,
salt, nonce or session id is a finding at the sink; the same PRNG used for shuffles, test data, jitter, MIME
boundaries or temp names is not, whatever its variables are called."""

from __future__ import annotations

import ast
import re
import sysconfig
from pathlib import Path

import pytest

from sv_env_code_vulnerability.rules import PYTHON_RULES
from sv_env_code_vulnerability.rules.secret_names import names_a_secret, text_labels_a_secret
from sv_env_code_vulnerability.rules.weak_prng import CWE, RULE_ID, find_weak_prng_secrets
from sv_env_code_vulnerability.scanners import CodeScanners, PythonRulesAdapter

CASES = Path(__file__).resolve().parent / "fixtures" / "e3_prng"
POSITIVES = sorted((CASES / "positive").glob("*.py"))
NEGATIVES = sorted((CASES / "negative").glob("*.py"))
MARKER = "# expect: CWE-338"


def marked_lines(text: str) -> set[int]:
    return {number for number, line in enumerate(text.splitlines(), 1) if MARKER in line}


def rule_lines(text: str) -> set[int]:
    findings, errors = PythonRulesAdapter().scan_detailed({"case.py": text})
    assert not errors
    return {f.line for f in findings["case.py"] if f.rule_id == RULE_ID and f.canonical_id == CWE}


def test_the_case_set_is_the_size_the_bench_reports() -> None:
    assert len(POSITIVES) >= 30 and len(NEGATIVES) >= 30
    assert all(marked_lines(path.read_text(encoding="utf-8")) for path in POSITIVES)


@pytest.mark.parametrize("path", POSITIVES, ids=lambda path: path.stem)
def test_a_weak_prng_value_reaching_a_secret_is_reported_at_each_sink(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert rule_lines(text) == marked_lines(text)


@pytest.mark.parametrize("path", NEGATIVES, ids=lambda path: path.stem)
def test_a_weak_prng_value_that_reaches_no_secret_is_not_reported(path: Path) -> None:
    assert rule_lines(path.read_text(encoding="utf-8")) == set()


MIME = (CASES / "negative" / "n04_mime_boundary.py").read_text(encoding="utf-8")


def test_a_mime_boundary_drawn_into_a_variable_called_token_is_not_a_secret() -> None:
    assert "token = random.randrange(sys.maxsize)" in MIME
    assert rule_lines(MIME) == set()


def test_the_same_draw_is_reported_once_it_leaves_as_a_token() -> None:
    leaked = MIME.replace("    return candidate\n", "    register(token)\n    return candidate\n")
    assert rule_lines(leaked) == {MIME.splitlines().index("    return candidate") + 1}


def test_the_standard_librarys_own_mime_boundary_is_not_reported() -> None:
    generator = Path(sysconfig.get_paths()["stdlib"]) / "email" / "generator.py"
    if not generator.is_file():
        pytest.skip("this interpreter ships no email package source")
    text = generator.read_text(encoding="utf-8")
    assert re.search(r"token = random\.randrange", text)
    assert rule_lines(text) == set()


def test_a_summary_carries_the_draw_through_helpers_and_a_clean_source_stops_it() -> None:
    helpers = (
        "import random\nimport secrets\n\n\ndef _draw(n):\n    return random.getrandbits(n)\n\n\n"
        "def _hex(value):\n    return format(value, 'x')\n\n\n"
        "def issue(user):\n    user.api_key = _hex(_draw(128))\n\n\n"
        "def issue_safely(user):\n    user.api_key = _hex(_draw(8)) + secrets.token_hex(16)\n"
    )
    assert rule_lines(helpers) == {14}


def test_star_and_aliased_imports_and_bound_methods_are_still_the_prng() -> None:
    text = (
        "from random import *\nimport random as r\n\npick = r.Random(7).choice\n\n\n"
        "def a(user):\n    user.password = ''.join(choice('ab') for _ in range(9))\n\n\n"
        "def b(user):\n    user.password = ''.join(pick('ab') for _ in range(9))\n"
    )
    assert rule_lines(text) == {8, 12}


@pytest.mark.parametrize(
    "draw",
    [
        "random.choices(VOCAB, WEIGHTS)[0]",
        "random.choices(VOCAB, cum_weights=WEIGHTS)[0]",
        "numpy.random.choice(VOCAB, 1, True, WEIGHTS)[0]",
        "str(random.gauss(0, 1))",
    ],
)
def test_weighted_sampling_and_distribution_draws_are_statistics_not_secrets(draw: str) -> None:
    text = f"import random\n\nimport numpy\n\n\ndef next_token():\n    return {draw}\n"
    assert rule_lines(text) == set()
    assert rule_lines(text.replace(draw, "random.choice(VOCAB)")) == {7}


def test_a_module_without_random_or_numpy_is_not_analysed_and_has_no_finding() -> None:
    text = "import os\n\n\ndef reset_token():\n    return os.urandom(16).hex()\n"
    assert find_weak_prng_secrets(ast.parse(text)) == []


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("reset_token", True),
        ("resetTokenHex", True),
        ("SECRET_KEY", True),
        ("X-CSRF-Token", True),
        ("session_id", True),
        ("otp_code", True),
        ("token_length", False),
        ("token_refresh_delay", False),
        ("tokens", False),
        ("key", False),
        ("session", False),
        ("boundary", False),
    ],
)
def test_a_name_is_read_by_its_head_word(name: str, secret: bool) -> None:
    assert names_a_secret(name) is secret


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("https://example.com/reset?token=", True),
        ("Bearer ", True),
        ("Your verification code is ", True),
        ("multipart/form-data; boundary=", False),
        ("Your order id is ", False),
    ],
)
def test_text_before_a_value_labels_it(text: str, secret: bool) -> None:
    assert text_labels_a_secret(text) is secret


def test_findings_carry_tool_rule_cwe_severity_and_line() -> None:
    text = "import random\n\n\ndef new_password():\n    return str(random.random())\n"
    findings, errors = PythonRulesAdapter().scan_detailed({"a.py": text})
    assert errors == {}
    (finding,) = findings["a.py"]
    assert (finding.tool, finding.rule_id, finding.canonical_id, finding.severity) == (
        "sv-rules",
        RULE_ID,
        CWE,
        "medium",
    )
    assert finding.line == 5 and "new_password" in finding.message


def test_unparsable_files_are_per_file_errors_and_long_chains_are_walked() -> None:
    chain = "import random\ntoken = random.random()" + " + 1" * 1500 + "\n"
    findings, errors = PythonRulesAdapter().scan_detailed({"bad.py": "def (:\n", "chain.py": chain})
    assert set(errors) == {"bad.py"} and findings["bad.py"] == []
    assert [f.line for f in findings["chain.py"]] == [2]


def test_every_python_rule_names_its_cwe_and_runs_with_the_other_scanners() -> None:
    assert all(re.fullmatch(r"CWE-[1-9][0-9]*", rule.cwe) for rule in PYTHON_RULES)
    assert "sv-rules" in [scanner.name for scanner in CodeScanners().scanners]


def test_the_ruleset_hash_follows_the_rule_sources(tmp_path: Path) -> None:
    rules = Path(PythonRulesAdapter().rules_dir)
    for path in rules.glob("*.py"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    before = PythonRulesAdapter(rules_dir=tmp_path).ruleset_hash()
    assert before == PythonRulesAdapter().ruleset_hash()
    (tmp_path / "weak_prng.py").write_text((rules / "weak_prng.py").read_text() + "\n# changed\n")
    assert PythonRulesAdapter(rules_dir=tmp_path).ruleset_hash() != before
