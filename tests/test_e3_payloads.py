"""E3's payload variants (payloads.py, exploit_variants.py): each family rewrites the literals of its kind and nothing
else, a rewritten test file keeps its node ids traceable, and the draw's key is made once per installation even when
two processes ask for it together. Whether a variant is meaningful on an item is the harness's call (test_e3_by_value);
the shipped items' validations ship with them, current and equal to what the harness finds.
"""

from __future__ import annotations

import ast
import dataclasses
import multiprocessing
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from file_modules import load_file_module

from sv_env_code_vulnerability import payloads
from sv_env_code_vulnerability.env import build
from sv_env_code_vulnerability.exploit_variants import (
    KEY_VARIABLE,
    ExploitTests,
    ExploitVariants,
    payload_key,
    shipped_validations,
    validation_key,
    variant,
)
from sv_env_code_vulnerability.verify import CodeVulnerabilityVerifier
from sv_shared.registry import load_env_config

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "validate_e3_payload_variants.py"

CASES = [
    (
        "CWE-89",
        "zzz' OR hidden = 1 --",
        ["zzz' Or hidden = 1 --", "zzz'/**/OR/**/hidden = 1 /*", "zzz' OR 2>1 AND hidden = 1 --"],
    ),
    ("CWE-78", "a.txt; touch pwned", ["a.txt| touch pwned", "a.txt\ntouch pwned", "a.txt$(touch pwned)"]),
    ("CWE-22", "../secret.txt", ["./../secret.txt", "..//secret.txt", ".././secret.txt"]),
    (
        "CWE-918",
        "http://127.0.0.1:8080/admin",
        ["http://127.0.0.2:8080/admin", "http://localhost:8080/admin", "http://[::1]:8080/admin"],
    ),
    (
        "CWE-918",
        "https://api.example.com@169.254.169.254/latest",
        [
            "https://api.example.com@169.254.170.2/latest",
            "https://api.example.com@127.0.0.1/latest",
            "https://api.example.com@[fd00:ec2::254]/latest",
        ],
    ),
    ("CWE-601", "//evil.example/x", [None, "/\\evil.example/x", "///evil.example/x"]),
    (
        "CWE-79",
        "<script>alert(1)</script>",
        ["<ScRiPt>alert(1)</ScRiPt>", "<script >alert(1)</script >", "<SCRIPT>alert(1)</SCRIPT>"],
    ),
    (
        "CWE-95",
        "__import__('os').getcwd()",
        ['__import__("os").getcwd()', "__import__('os').getpid()", "__import__( 'os' ).getcwd()"],
    ),
    ("CWE-502", b"cos\ngetcwd\n(tR.", [b"cos\ngetpid\n(tR.", b"cposix\ngetcwd\n(tR.", b"cbuiltins\nlen\n(S'abc'\ntR."]),
    (
        "CWE-502",
        "settings: !!python/object/apply:os.getcwd []\n",
        [
            "settings: !!python/object/apply:os.getpid []\n",
            "settings: !!python/object/apply:posix.getcwd []\n",
            "settings: !<tag:yaml.org,2002:python/object/apply:os.getcwd> []\n",
        ],
    ),
    (
        "CWE-1333",
        "titles.is_valid_title('a' * 40 + '!')",
        [
            "titles.is_valid_title('a' * 44 + '!')",
            "titles.is_valid_title('a' * 40 + '#')",
            "titles.is_valid_title('a' * 44 + '#')",
        ],
    ),
]


@pytest.mark.parametrize(("cwe", "literal", "expected"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_family_rewrites_its_payloads(cwe: str, literal: str | bytes, expected: list[str | None]) -> None:
    family = payloads.family_for(cwe)
    assert family is not None
    assert [family.variant(literal, index) for index in range(payloads.VARIANTS)] == expected


@pytest.mark.parametrize("literal", ["red mug", "prototype mug", "a.txt", "https://media.example.com/a.png", "admin"])
def test_ordinary_values_are_left_alone(literal: str) -> None:
    """Only the open-redirect family takes any absolute URL for its payload (where a redirect may go is the attack);
    the harness then keeps its variants only where the item's tests still mean the same."""
    for family in payloads.FAMILIES.values():
        if family.name != "redirect":
            assert all(family.variant(literal, index) is None for index in range(payloads.VARIANTS))


def test_weaknesses_without_a_payload_family_keep_their_tests() -> None:
    assert payloads.family_for("CWE-328") is None and payloads.family_for(None) is None


EXPLOIT = '''\
import pytest
from webhooks import validate


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/admin", "http://localhost/"])
def test_internal_targets_are_refused(url):
    """Refuses http://127.0.0.1:8080/admin and friends."""
    with pytest.raises(ValueError):
        validate(url)


def test_message(capsys):
    assert validate.__doc__ != f"http://127.0.0.1/{1}"
'''


def test_a_test_file_is_rewritten_literal_by_literal_and_its_node_ids_follow() -> None:
    family = payloads.family_for("CWE-918")
    assert family is not None
    found = payloads.substitutions(EXPLOIT, family, 0)
    assert [sub.original for sub in found] == ["http://127.0.0.1:8080/admin", "http://localhost/"]
    rewritten = payloads.rewrite(EXPLOIT, found)
    ast.parse(rewritten)
    assert "'http://127.0.0.2:8080/admin', 'http://LOCALHOST/'" in rewritten
    assert '"""Refuses http://127.0.0.1:8080/admin and friends."""' in rewritten  # a docstring is no payload
    assert 'f"http://127.0.0.1/{1}"' in rewritten  # an f-string's parts have no reliable position
    node = "tests/test_exploit.py::test_internal_targets_are_refused[http://localhost/]"
    assert (
        payloads.renamed_node(node, found)
        == "tests/test_exploit.py::test_internal_targets_are_refused[http://LOCALHOST/]"
    )
    assert payloads.renamed_node("tests/test_exploit.py::test_message", found) == "tests/test_exploit.py::test_message"
    assert payloads.substitutions("def broken(:\n", family, 0) == []


def test_positions_count_lines_as_python_does_past_form_feeds_and_odd_separators() -> None:
    # str.splitlines also breaks at \f, \v and \x1c; Python's tokenizer does not, so a literal after one must still
    # be found at its real place and the file must still parse once rewritten
    family = payloads.family_for("CWE-918")
    assert family is not None
    source = 'import pytest\n\x0c\n# caf\u00e9 \x1c sep\nURLS = ["x", "http://localhost/"]\r\nOTHER = 1\n'
    found = payloads.substitutions(source, family, 0)
    assert [(sub.original, source[sub.start : sub.end]) for sub in found] == [
        ("http://localhost/", '"http://localhost/"')
    ]
    rewritten = payloads.rewrite(source, found)
    assert "URLS = [\"x\", 'http://LOCALHOST/']\r\nOTHER = 1\n" in rewritten
    ast.parse(rewritten)


def _key_in(outputs: str, queue: multiprocessing.Queue[bytes]) -> None:
    import os

    os.environ["SECVERIFY_OUTPUTS"] = outputs
    os.environ.pop(KEY_VARIABLE, None)
    queue.put(payload_key())


def test_the_draw_key_is_made_once_and_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    context = multiprocessing.get_context("spawn")
    queue: multiprocessing.Queue[bytes] = context.Queue()
    workers = [context.Process(target=_key_in, args=(str(tmp_path), queue)) for _ in range(4)]
    for worker in workers:
        worker.start()
    keys = {queue.get(timeout=60) for _ in workers}
    for worker in workers:
        worker.join()
    assert len(keys) == 1 and len(keys.pop()) == 64
    key_file = tmp_path / "secrets" / "e3_payload_key"
    assert key_file.stat().st_mode & 0o077 == 0 and [p.name for p in key_file.parent.iterdir()] == ["e3_payload_key"]
    monkeypatch.setenv(KEY_VARIABLE, "pinned")
    assert payload_key() == b"pinned"


@pytest.fixture(scope="module")
def validation_script() -> ModuleType:
    return load_file_module(SCRIPT)


@pytest.fixture(scope="module")
def verifier() -> CodeVulnerabilityVerifier:
    built = build(load_env_config("e3")).verifier
    assert isinstance(built, CodeVulnerabilityVerifier)
    return built


@pytest.fixture(scope="module")
def shipped_tests(validation_script: ModuleType, verifier: CodeVulnerabilityVerifier) -> list[ExploitTests]:
    return validation_script.shipped_tests(verifier)


def test_every_shipped_repair_item_ships_its_current_validation(
    validation_script: ModuleType, shipped_tests: list[ExploitTests]
) -> None:
    """Scoring a shipped item never validates its variants itself; an edited item is named as stale."""
    assert validation_script.main(["--check"]) == 0
    assert len(shipped_tests) == len(shipped_validations())
    in_families = [t for t in shipped_tests if payloads.family_for(t.cwe) is not None]
    with_variant = [t for t in in_families if shipped_validations()[validation_key(t)]]
    reference = (ROOT / "docs" / "reference" / "environments" / "e3.md").read_text(encoding="utf-8")
    assert f"{len(with_variant)} of the {len(in_families)} shipped items" in " ".join(reference.split())
    first = shipped_tests[0]
    path = first.exploit_files[0]
    edited = dataclasses.replace(first, files={**first.files, path: first.files[path] + "\n# edited\n"})
    assert validation_script.stale_items([edited, *shipped_tests[1:]]) == [first.item_id]


def test_shipped_validations_are_what_the_harness_finds(
    verifier: CodeVulnerabilityVerifier, shipped_tests: list[ExploitTests], tmp_path: Path
) -> None:
    """Validated again live, in a fresh cache: the first shipped item of every payload family with a variant, and the
    first whose variants the harness refused in part or whole."""
    shipped = shipped_validations()
    sample: dict[str, ExploitTests] = {}
    for tests in shipped_tests:
        family = payloads.family_for(tests.cwe)
        candidates = [i for i in range(payloads.VARIANTS) if family and _has_variant(tests, i)]
        if not candidates:
            continue
        found = list(shipped[validation_key(tests)])
        sample.setdefault(family.name if family else "", tests)
        if found != candidates:
            sample.setdefault("refused", tests)
    assert "refused" in sample and len(sample) >= 6, sorted(sample)
    live = ExploitVariants(verifier.harness, cache_path=tmp_path / "variants.sqlite", shipped={})
    for tests in sample.values():
        assert live.valid(tests) == list(shipped[validation_key(tests)]), tests.item_id


def _has_variant(tests: ExploitTests, index: int) -> bool:
    return variant(tests, index) is not None


class _NoRuns:
    """A harness that must not be asked: a shipped validation is answered without running anything."""

    def run(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the harness ran")


def test_a_shipped_row_answers_only_under_its_key(shipped_tests: list[ExploitTests], tmp_path: Path) -> None:
    tests = next(t for t in shipped_tests if _has_variant(t, 0))
    variants = ExploitVariants(
        _NoRuns(),  # type: ignore[arg-type]
        cache_path=tmp_path / "variants.sqlite",
        shipped={validation_key(tests): (1,)},
    )
    assert variants.valid(tests) == [1]
    path = tests.exploit_files[0]
    edited = dataclasses.replace(tests, files={**tests.files, path: tests.files[path] + "\n# edited\n"})
    with pytest.raises(AssertionError, match="the harness ran"):
        variants.valid(edited)
