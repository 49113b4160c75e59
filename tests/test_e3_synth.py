"""E3 synthetic recipe: mutation operators, generated exploit tests, harness + scanner validation, provenance."""

from __future__ import annotations

import json

import pytest

from sv_env_code_vulnerability import synth
from sv_env_code_vulnerability.env import build
from sv_env_code_vulnerability.scanners import CodeScanners
from sv_env_code_vulnerability.schema import SYNTHETIC_CORPUS
from sv_shared.execution.sandbox import sandbox_status
from sv_shared.registry import load_env_config

STATUS = sandbox_status()
SCANNERS_READY = all(scanner.status().available for scanner in CodeScanners().scanners)
needs_sandbox = pytest.mark.skipif(not STATUS.available, reason=STATUS.describe())


@pytest.mark.parametrize("template", synth.TEMPLATES, ids=lambda t: f"{t.name}-{t.operator}")
def test_every_template_mutates_and_renders_deterministically(template: synth.TemplateSpec) -> None:
    first = synth.candidate(template, 11)
    again = synth.candidate(template, 11)
    assert first is not None and again is not None
    assert first.files == again.files
    module = first.module_path
    assert first.files[module] != first.fixed_files[module]
    compile(first.files[module], module, "exec")
    assert first.files["tests/test_exploit.py"] == first.fixed_files["tests/test_exploit.py"]


def test_operators_make_the_intended_change() -> None:
    sql = 'row = conn.execute("SELECT id FROM t WHERE name = ?", (name,)).fetchone()\n'
    assert synth.string_sql(sql, {}) == "row = conn.execute(f\"SELECT id FROM t WHERE name = '{name}'\").fetchone()\n"
    shell = 'out = subprocess.run(["wc", "-w", path], capture_output=True)\n'
    assert synth.shell_true(shell, {}) == 'out = subprocess.run(f"wc -w {path}", shell=True, capture_output=True)\n'
    assert synth.unsafe_yaml("d = yaml.safe_load(text)\n", {}) == "d = yaml.load(text, Loader=yaml.Loader)\n"
    assert synth.drop_lower_bound("    if not 0 <= i < len(x):\n", {}) == "    if i >= len(x):\n"
    bounds = "    if pos < 0 or pos >= 4:\n        raise BufferError(pos)\n"
    assert synth.off_by_one(bounds, {}) == "    if pos < 0 or pos > 4:\n        raise BufferError(pos)\n"
    check = "def f(u, k):\n    if owners[k] != u:\n        raise PermissionError(k)\n    return k\n"
    assert synth.removed_check(check, {"token": "owners"}) == "def f(u, k):\n    return k\n"
    assert synth.removed_check(check, {"token": "absent"}) is None
    assert synth.weak_hash("hashlib.sha256(data)", {}) == "hashlib.md5(data)"
    assert synth.eval_injection("ast.literal_eval(text)", {}) == "eval(text)"
    assert (
        synth.xxe_enable("p.setFeature(feature_external_ges, False)", {}) == "p.setFeature(feature_external_ges, True)"
    )
    assert synth.string_sql("x = 1\n", {}) is None


def test_new_operators_make_the_intended_change() -> None:
    tokens = "import secrets\n\n\ndef t():\n    return secrets.randbits(64), secrets.choice(A), secrets.randbelow(9)\n"
    assert synth.weak_prng(tokens, {}) == (
        "import random\n\n\ndef t():\n    return random.getrandbits(64), random.choice(A), random.randrange(9)\n"
    )
    assert synth.weak_prng("import secrets\nx = secrets.token_hex(8)\n", {}) is None  # no PRNG twin: no mutant
    read = '    key = os.environ["APP_SECRET"]\n'
    assert synth.hardcoded_secret(read, {"literal": "dev"}) == "    key = 'dev'\n"
    escaped = "return '<p>' + html.escape(user.name) + '</p>'"
    assert synth.drop_escape(escaped, {}) == "return '<p>' + user.name + '</p>'"
    assert synth.drop_escape("return name", {}) is None


def test_variants_are_distinct_renders_and_deterministic() -> None:
    template = next(t for t in synth.TEMPLATES if t.name == "random-token")
    first = synth.variants(template, 12, seed=42)
    assert len(first) == 12
    assert len({json.dumps(made.generator_params, sort_keys=True) for made in first}) == 12
    assert [made.files for made in synth.variants(template, 12, seed=42)] == [made.files for made in first]
    assert len(synth.variants(next(t for t in synth.TEMPLATES if t.name == "xml-names"), 50, seed=1)) == 9


@needs_sandbox
@pytest.mark.skipif(not SCANNERS_READY, reason="bandit/semgrep tools environment not built")
def test_generate_validates_and_records_provenance() -> None:
    env = build(load_env_config("e3"), scanners=CodeScanners())
    report = synth.SynthReport()
    frame = synth.generate(6, seed=5, verifier=env.verifier, report=report)
    assert frame.height == 6 and report.kept == 6
    assert set(frame["source_corpus"]) == {SYNTHETIC_CORPUS} and set(frame["generator"]) == {synth.GENERATOR}
    for row in frame.to_dicts():
        params = json.loads(row["generator_params"])
        assert params["operator"] in synth.OPERATORS and params["template"] and isinstance(row["generator_seed"], int)
        assert row["reference_patch"] and json.loads(row["exploit_tests"])
        if synth.OPERATORS[params["operator"]].scanner_visible:
            assert json.loads(row["findings"]), row["module_path"]  # the scanners confirmed the mutant
    assert env.verifier.check_items(frame.to_dicts()) == {row["item_id"]: [] for row in frame.to_dicts()}


@needs_sandbox
def test_candidates_the_harness_or_scanners_reject_are_dropped() -> None:
    """A mutant whose exploit test still passes fails the harness; a scanner-visible weakness nobody reports fails
    the scanner check (no scanners here at all), while scanner-invisible ones are kept."""
    harmless = synth.TemplateSpec(
        name="harmless",
        module="harmless.py",
        operator="weak_hash",
        choices={},
        source='import hashlib\n\n\ndef tag(data):\n    hashlib.sha256(data)\n    return "fixed"\n',
        functional='from harmless import tag\n\n\ndef test_tag():\n    assert tag(b"x") == "fixed"\n',
        exploit='from harmless import tag\n\n\ndef test_still_fixed():\n    assert tag(b"y") == "fixed"\n',
    )
    indexed = next(t for t in synth.TEMPLATES if t.operator == "drop_lower_bound")
    hashed = next(t for t in synth.TEMPLATES if t.operator == "weak_hash")
    env = build(load_env_config("e3"), scanners=CodeScanners(scanners=[]))
    report = synth.SynthReport()
    frame = synth.generate(
        3, seed=1, verifier=env.verifier, max_rounds=1, report=report, templates=(harmless, indexed, hashed)
    )
    assert set(frame["cwe"]) == {"CWE-125"}
    assert report.dropped["scanners did not confirm"] >= 1
    assert report.dropped["rejected: vulnerable"] >= 1  # the harness: its exploit test passes on the mutant
