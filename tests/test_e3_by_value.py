"""E3 pays for blocking the attack, not for looking like it: values the candidate returns reach the tests as plain
data (its own comparison methods never answer a test), the hidden tests are nowhere the candidate's code can read,
exploit tests run a payload variant the patch cannot know, and a patch that keeps the attack working earns no more than
an empty diff (issue 25, items 1-3).

Every unfixed answer here is scored in one batch with the empty diff and the reference fix, on the embedded
SQL-injection item whose exploit test asserts on returned values (`all(name != "prototype mug" ...)`) and carries its
payload as a literal (`"zzz' OR hidden = 1 --"`).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_e3_forgery import ITEM, add_code, completion, item_named

from sv_env_code_vulnerability import payloads
from sv_env_code_vulnerability.env import build
from sv_env_code_vulnerability.scanners import CodeScanners
from sv_env_code_vulnerability.verify import answer_json
from sv_shared.config import scanner_cache_path
from sv_shared.contracts import Environment
from sv_shared.execution.cache import JsonCache
from sv_shared.execution.sandbox import sandbox_status
from sv_shared.registry import load_env_config

STATUS = sandbox_status()
pytestmark = [
    pytest.mark.skipif(not STATUS.available, reason=STATUS.describe()),
    pytest.mark.skipif(
        not all(scanner.status().available for scanner in CodeScanners().scanners),
        reason="bandit/semgrep tools environment not built",
    ),
]

# The injected query kept, its names wrapped in a str whose != is always true (and whose == lies too), the SQL built
# with an explicit __mod__ call that neither bandit's nor semgrep's rule reads as string formatting.
LYING_NAMES = """\
class _Name(str):
    def __ne__(self, other):
        return True

    def __eq__(self, other):
        return str.__eq__(self, other) and other != "prototype mug"

    __hash__ = str.__hash__

sql = "SELECT name, price FROM products WHERE hidden = 0 AND name LIKE '%%%s%%' AND price <= %s ORDER BY name"
rows = conn.execute(sql.__mod__((term, max_price))).fetchall()
return [(_Name(name), price) for name, price in rows]
"""

# The same, after switching off the worker's copy of builtin subclasses: the names then cross as references.
LYING_NAMES_BY_REFERENCE = (
    """\
import sys
sys.modules["_secverify_e3.worker"].STATE.endpoint.codec.plain = None
"""
    + LYING_NAMES
)

# Safe only while it can see the tests: parameterized when tests/test_exploit.py (or any test) is readable.
BACKDOOR_WHILE_TESTS_READABLE = """\
import glob as _glob, os as _os
_TESTS = _glob.glob("/workspace/**/test_*.py", recursive=True) + [
    name for name in _os.listdir("/workspace/tests") if name.endswith(".py")
]
"""
BACKDOOR_CALL = """\
if _TESTS:
    return conn.execute(
        "SELECT name, price FROM products WHERE hidden = 0 AND name LIKE ? AND price <= ? ORDER BY name",
        (f"%{term}%", max_price),
    ).fetchall()
"""

# Refuses exactly what the shipped exploit test sends (a literal a policy can learn), keeps the injection.
LITERAL_BLACKLIST = """\
if term == "zzz' OR hidden = 1 --":
    return []
"""

COMMENT_ONLY = "# Searches visible products by name (reviewed for injection).\n"


@pytest.fixture(scope="module")
def env() -> Environment:
    config = load_env_config("e3")
    sandbox = config.sandbox.model_copy(update={"timeout_s": 10.0, "memory_mb": 256, "workdir_mb": 32})
    cache = JsonCache(scanner_cache_path())  # the session's shared scanner cache (conftest)
    return build(config.model_copy(update={"sandbox": sandbox}), scanners=CodeScanners(cache=cache))


def module_source(item: dict[str, Any]) -> str:
    return json.loads(item["files"])[item["module_path"]]


@pytest.fixture(scope="module")
def scored(env: Environment) -> dict[str, Any]:
    item = item_named(ITEM)
    source = module_source(item)
    answers = {
        "empty diff": answer_json("", item["cwe"], "no change"),
        "reference fix": answer_json(item["reference_patch"], item["cwe"], "the reference fix"),
        "lying names": completion(item, add_code(source, "call", LYING_NAMES), "wrapped names"),
        "lying names by reference": completion(
            item, add_code(source, "call", LYING_NAMES_BY_REFERENCE), "names by reference"
        ),
        "backdoor while tests readable": completion(
            item,
            add_code(add_code(source, "call", BACKDOOR_CALL), "import", BACKDOOR_WHILE_TESTS_READABLE),
            "safe while tested",
        ),
        "comment only": completion(item, COMMENT_ONLY + source, "a comment"),
        "literal blacklist": completion(item, add_code(source, "call", LITERAL_BLACKLIST), "refuses the payload"),
    }
    samples = env.verifier.score_many([item] * len(answers), list(answers.values()))
    return dict(zip(answers, samples, strict=True))


def test_the_reference_fix_keeps_its_full_reward(scored: dict[str, Any]) -> None:
    sample = scored["reference fix"]
    assert sample.details["fixed"] is True and sample.reward >= 0.95


@pytest.mark.parametrize(
    "answer",
    ["lying names", "lying names by reference", "backdoor while tests readable", "comment only", "literal blacklist"],
)
def test_an_answer_that_keeps_the_attack_earns_no_more_than_an_empty_diff(scored: dict[str, Any], answer: str) -> None:
    sample, empty = scored[answer], scored["empty diff"]
    assert sample.details.get("fixed") is not True, sample.details
    assert sample.reward <= empty.reward + 1e-9, (sample.reward, sample.components, sample.details.get("tests"))
    assert sample.components["functional"] == 0.0 and sample.components["no_new_findings"] == 0.0


def test_the_exploit_test_runs_a_payload_variant_the_patch_cannot_know(scored: dict[str, Any]) -> None:
    """Every patch meets one of the item's validated variants of its payload: refusing the shipped literal blocks
    nothing, while the reference fix blocks the variant as it blocks the literal."""
    for answer in ("reference fix", "literal blacklist"):
        assert scored[answer].details["patch"]["payload_variant"] in range(payloads.VARIANTS)
    assert scored["literal blacklist"].details["tests"]["exploit_passed"] == 0


def test_the_exploit_test_fails_on_the_values_themselves(scored: dict[str, Any]) -> None:
    """The lying str arrives as a plain str (the test's != sees the hidden product); sent as a reference instead, it
    cannot be compared at all: NotPlainData fails the test without asking the worker."""
    tests = scored["lying names"].details["tests"]
    assert tests["exploit_passed"] == 0 and tests["functional_passed"] == tests["functional_total"]
    by_reference = scored["lying names by reference"].details["tests"]
    assert by_reference["exploit_passed"] == 0
    assert "NotPlainData" in by_reference["stdout_tail"]
