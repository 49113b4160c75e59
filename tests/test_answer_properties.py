"""Property-based tests (hypothesis) of every answer parser, every completion scorer and the patch appliers.

Whatever a policy writes (any Unicode, lone surrogates and control characters included, NaN and infinities, huge,
deeply nested, repeated keys, answer-shaped JSON with wrong types), a parser returns a ParseResult and a scorer a
ScoredSample: no exception escapes, every failure is named from the documented set, every component lies in [0, 1]
and every reward in [floor, 1] (0, or E1's and E4's -0.7). E3's scorer runs a sandbox per answer, so it gets a
handful of hostile diffs, not a search.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

import pytest
from e2_fakes import PRIVILEGED_WEB as WEB
from e2_fakes import FakeOracle, FakeResult, make_item
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sv_env_code_vulnerability import verify as e3_verify
from sv_env_config_verification import patching as e2_patching
from sv_env_config_verification import schema as e2_schema
from sv_env_config_verification import verify as e2_verify
from sv_env_config_verification.config_model import PARSE_ERROR_REASONS
from sv_env_phishing_detection import verify as e4_verify
from sv_env_phishing_detection.schema import EVIDENCE_TYPES
from sv_env_redteam_attack.schema import TACTICS
from sv_shared.answers.parsing import SETTLED_REFUSALS, FormatError
from sv_shared.contracts import CompletionVerifier, Environment, ParseResult, ScoredSample
from sv_shared.execution import patch_format
from sv_shared.execution import patching as shared_patching
from sv_shared.execution.findings import SEVERITIES
from sv_shared.execution.sandbox import sandbox_status
from sv_shared.registry import get_environment

# Sized so the whole module takes well under a minute on two busy cores.
FAST = settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
SCORING = settings(max_examples=120, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

# --- documented failure names ---

FORMAT_ERRORS = frozenset(FormatError)
PARSE_ERRORS: dict[str, frozenset[str]] = {
    "e1": FORMAT_ERRORS,
    "e2": FORMAT_ERRORS | set(e2_schema.AnswerError),
    "e3": FORMAT_ERRORS | set(e3_verify.AnswerError),
    "e4": FORMAT_ERRORS | set(e4_verify.EvidenceError),
    "e5": frozenset({"empty_message", *SETTLED_REFUSALS}),
    "e6": frozenset({"empty_reply"}),
}
E2_PATCH_ERRORS = (
    frozenset(e2_patching.PatchErrorReason)
    | {f"{stage}_{reason}" for stage in ("original", "patched") for reason in PARSE_ERROR_REASONS}
    | {"destructive_fix", "adds_suppression", "rescan_failed"}
)
SCORE_ERRORS: dict[str, frozenset[str]] = {
    "e1": PARSE_ERRORS["e1"],
    "e2": PARSE_ERRORS["e2"] | E2_PATCH_ERRORS,
    "e4": PARSE_ERRORS["e4"],
}

# --- strategies: text, JSON, answer shapes, completions ---

# Every assigned code point class, surrogates (Cs) and controls (Cc) included; only unassigned ones are left out.
CHARACTERS = st.characters(categories=["L", "M", "N", "P", "S", "Z", "Cc", "Cf", "Cs", "Co"])
JSON_PUNCTUATION = st.sampled_from([*'{}[]":,\\ \n\t', "NaN", "Infinity", "-", "1e999", "null", "```"])
any_text = st.text(CHARACTERS, max_size=80)
jsonish_text = st.lists(st.one_of(JSON_PUNCTUATION, st.text(CHARACTERS, max_size=3)), max_size=60).map("".join)
numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.sampled_from([0, 1, 0.5, 1.0000001, -0.0, 5e-324, 1e308]),
)
confidences = st.one_of(st.floats(0, 1), st.sampled_from([0, 1, 0.5]))
json_scalars = st.one_of(st.none(), st.booleans(), numbers, any_text)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(any_text, children, max_size=4)),
    max_leaves=12,
)


def field(preferred: st.SearchStrategy[Any], loose: bool) -> st.SearchStrategy[Any]:
    """The well-typed value, or (loose) sometimes any JSON at all: a wrong type must be a named failure."""
    return st.one_of(preferred, preferred, json_values) if loose else preferred


def pointer(tokens: Iterable[str]) -> str:
    return "".join("/" + token.replace("~", "~0").replace("/", "~1") for token in tokens)


CONTAINER = ["spec", "template", "spec", "containers", "0"]
REAL_POINTERS = [
    "",
    "/spec",
    "/spec/replicas",
    "/metadata/name",
    pointer(CONTAINER),
    pointer([*CONTAINER[:-1], "-"]),
    pointer([*CONTAINER, "image"]),
    pointer([*CONTAINER, "securityContext"]),
    pointer([*CONTAINER, "securityContext", "privileged"]),
]
POINTER_TOKENS = st.one_of(
    st.sampled_from(["spec", "metadata", "template", "containers", "securityContext", "0", "1", "-", "a/b", "~"]),
    st.text(CHARACTERS, max_size=6),
    st.from_regex(r"[0-9]{1,30}", fullmatch=True),
)
pointers = st.one_of(st.sampled_from(REAL_POINTERS), st.lists(POINTER_TOKENS, max_size=7).map(pointer), any_text)


def json_patches(loose: bool) -> st.SearchStrategy[list[Any]]:
    """Op lists; well-typed ones carry every member an op may need (value and from), loose ones any subset."""
    paths = field(pointers, loose) if loose else st.sampled_from(REAL_POINTERS)
    members = {"op": field(st.sampled_from(e2_patching.JSON_PATCH_OPS), loose), "path": paths}
    extra = {"value": json_values, "from": paths}
    if loose:
        return st.lists(st.fixed_dictionaries(members, optional=extra), max_size=8)
    return st.lists(st.fixed_dictionaries(members | extra), min_size=1, max_size=3)


json_patch_ops = json_patches(loose=True)
CONFIG_LINES = [
    "          privileged: false",
    "        image: nginx:latest",
    "  replicas: 0",
    "---",
    "apiVersion: v1",
    "kind: List",
    "x: &x [*x]",
    "  encrypted = true",
    '  tags = { a = "b" }',
    "}",
    "{",
    "\t",
]


@st.composite
def edit_diffs(draw: st.DrawFn, original: str, filename: str) -> str:
    """A diff that applies: a slice of the file's lines removed and other lines (its own, config-like ones or any
    text) added, with or without file headers; the patched config then faces re-parsing and re-scanning."""
    lines = original.splitlines()
    start = draw(st.integers(0, len(lines) - 1))
    old = lines[start : start + draw(st.integers(0, min(4, len(lines) - start)))]
    added = st.one_of(
        st.sampled_from(lines), st.sampled_from(CONFIG_LINES), any_text.map(lambda t: t.replace("\n", ""))
    )
    new = draw(st.lists(added, max_size=4))
    header = draw(st.sampled_from([f"--- a/{filename}\n+++ b/{filename}\n", f"--- {filename}\n+++ {filename}\n", ""]))
    body = "".join(f"-{line}\n" for line in old) + "".join(f"+{line}\n" for line in new)
    if not body:
        body = f" {lines[start]}\n"
    return f"{header}@@ -{start + 1},{len(old)} +{start + 1},{len(new)} @@\n{body}"


def diff_lines(original: str, filenames: list[str]) -> st.SearchStrategy[str]:
    """Diff-shaped text: headers naming the file (or another), hunk headers with any numbers, the file's own lines
    as context or removals, and arbitrary additions; enough structure to get past the parser's first checks."""
    lines = original.splitlines() or [""]
    names = st.sampled_from([*filenames, "other.yaml", "../escape", "/etc/passwd", "a" * 300, "d/" * 40 + "x"])
    number = st.one_of(st.integers(0, 40).map(str), st.integers(0, 10**12).map(str), st.just("9" * 5000))
    header = st.tuples(names, names).map(lambda pair: f"--- a/{pair[0]}\n+++ b/{pair[1]}")
    hunk = st.tuples(number, number, number, number).map(lambda n: f"@@ -{n[0]},{n[1]} +{n[2]},{n[3]} @@")
    body = st.one_of(
        st.sampled_from(lines).map(lambda line: " " + line),
        st.sampled_from(lines).map(lambda line: "-" + line),
        any_text.map(lambda text: "+" + text.replace("\n", " ")),
        st.sampled_from(["@@", "\\ No newline at end of file", "```", "", "new file mode 100644", "GIT binary patch"]),
        st.sampled_from(["diff --git a/x b/x", "rename from x", "rename to y", "deleted file mode 100644"]),
    )
    section = st.tuples(st.one_of(header, st.just("")), hunk, st.lists(body, min_size=1, max_size=10))
    sections = st.lists(section, min_size=1, max_size=3).map(
        lambda parts: "\n".join("\n".join(filter(None, [head, top, *rest])) for head, top, rest in parts) + "\n"
    )
    return st.one_of(sections, sections, any_text, jsonish_text)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def repeat_a_key(answer: dict[str, Any]) -> str:
    """The answer's JSON text with its first key given twice (json.dumps cannot write that)."""
    if not answer:
        return '{"label": 1, "label": 2}'
    return "{" + dumps(next(iter(answer))) + ": null, " + dumps(answer)[1:]


def nest(depth: int, inner: str) -> str:
    return "[" * depth + inner + "]" * depth


def completions(answers: Callable[[bool], st.SearchStrategy[dict[str, Any]]]) -> st.SearchStrategy[str]:
    """Completions a policy might write around (or instead of) an answer: well-typed answers (half the time, so
    scoring gets past the parser), answers with wrong types, repeated keys, deep nesting, huge padding, noise."""
    typed, loose = answers(False), answers(True)
    return st.one_of(
        st.one_of(
            typed.map(dumps),
            typed.map(lambda answer: json.dumps(answer)),  # ASCII escapes: lone surrogates as \\ud800
            st.tuples(any_text, typed, any_text).map(lambda t: f"{t[0]}\n```json\n{dumps(t[1])}\n```\n{t[2]}"),
            st.tuples(any_text, typed, any_text).map(lambda t: f"{t[0]} {dumps(t[1])} {t[2]}"),
        ),
        st.one_of(
            any_text,
            jsonish_text,
            loose.map(dumps),
            loose.map(repeat_a_key),
            st.tuples(st.integers(0, 400), loose).map(lambda t: '{"x": ' + nest(t[0], dumps(t[1])) + "}"),
            st.tuples(st.integers(0, 400), loose).map(lambda t: nest(t[0], dumps(t[1]))),
            st.tuples(st.sampled_from([99_000, 100_001, 200_001]), loose).map(lambda t: dumps(t[1]) + " " + "x" * t[0]),
            st.from_regex(r'\{"(label|confidence|diff|cwe|message|violations)": ?(-?[0-9.eE+]{1,12}|"[^"]{0,8}")\}'),
        ),
    )


def e1_answers(loose: bool) -> st.SearchStrategy[dict[str, Any]]:
    labels = st.sampled_from(["Benign", "Malicious", "Abstain", " malicious ", "BENIGN", "Attack"])
    return st.fixed_dictionaries(
        {"label": field(labels, loose), "confidence": numbers if loose else confidences},
        optional={"rationale": field(any_text, loose)},
    )


def e4_answers(loose: bool) -> st.SearchStrategy[dict[str, Any]]:
    entry = st.fixed_dictionaries(
        {"type": field(st.sampled_from(sorted(EVIDENCE_TYPES)), loose), "quote": field(any_text, loose)}
    )
    labels = st.sampled_from(["Phishing", "Legitimate", "Abstain", "phishing", "Spam"])
    return st.fixed_dictionaries(
        {"label": field(labels, loose), "confidence": numbers if loose else confidences},
        optional={"evidence": field(st.lists(entry, max_size=40), loose)},
    )


def e3_answers(loose: bool) -> st.SearchStrategy[dict[str, Any]]:
    cwe = st.one_of(st.from_regex(r"(?i)(cwe)?[ _:-]?[0-9]{0,7}", fullmatch=True), any_text)
    return st.fixed_dictionaries(
        {"diff": field(diff_lines("import os\n", ["app.py"]), loose), "cwe": field(cwe, loose)},
        optional={"explanation": field(any_text, loose)},
    )


def e5_answers(loose: bool) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"message": field(any_text, loose)}, optional={"tactic": field(st.sampled_from(list(TACTICS)), loose)}
    )


def e6_answers(loose: bool) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"reply": field(any_text, loose)})


VOLUME_TF = 'resource "aws_ebs_volume" "data" {\n  size      = 40\n  encrypted = false\n}\n'


def e2_answers(content: str, filename: str) -> Callable[[bool], st.SearchStrategy[dict[str, Any]]]:
    def answers(loose: bool) -> st.SearchStrategy[dict[str, Any]]:
        violation = st.fixed_dictionaries(
            {
                "id": field(st.sampled_from([*e2_schema.canonical_ids()[:8], "k8s-privileged", "NOT_A_RULE"]), loose),
                "severity": field(st.sampled_from([*SEVERITIES, "HIGH", " Low "]), loose),
            },
            optional={
                "resource": field(st.sampled_from(["Deployment/web", "web", "aws_ebs_volume.data"]), loose),
                "evidence": field(any_text, loose),
            },
        )
        patches = [st.none(), json_patches(loose), edit_diffs(content, filename)]
        if loose:
            patches += [json_patches(loose).map(dumps), diff_lines(content, [filename]), json_values]
        return st.fixed_dictionaries(
            {
                "violations": field(st.lists(violation, max_size=5), loose),
                "confidence": numbers if loose else confidences,
            },
            optional={"patch": st.one_of(*patches)},
        )

    return answers


E2_WEB_ANSWERS = e2_answers(WEB, "web.yaml")
ANSWERS: dict[str, Callable[[bool], st.SearchStrategy[dict[str, Any]]]] = {
    "e1": e1_answers,
    "e2": E2_WEB_ANSWERS,
    "e3": e3_answers,
    "e4": e4_answers,
    "e5": e5_answers,
    "e6": e6_answers,
}

# --- the environments, built once ---


@cache
def environment(env_id: str) -> Environment:
    return get_environment(env_id)


class TolerantOracle(FakeOracle):
    """The fake oracle, reporting a scan error (as a real scanner does) on a patched config its rules cannot read,
    e.g. a container that is null: the scorer under test is the verifier, not the fake."""

    def _scan(self, name: str, content: str) -> FakeResult:
        try:
            return super()._scan(name, content)
        except (AttributeError, TypeError) as error:
            return FakeResult([], "scan_failed", str(error))


@cache
def e2_verifier() -> e2_verify.ConfigVerifier:
    """E2's verifier with the deterministic fake oracle (the real scanners cost seconds per call)."""
    return e2_verify.ConfigVerifier(environment("e2").config, oracle=TolerantOracle())  # type: ignore[arg-type]


@cache
def e2_items() -> tuple[dict[str, Any], ...]:
    oracle = FakeOracle()
    return (
        make_item(oracle, "kubernetes", "web.yaml", WEB),
        make_item(oracle, "terraform", "volume.tf", VOLUME_TF),
    )


@cache
def items(env_id: str) -> tuple[dict[str, Any], ...]:
    env = environment(env_id)
    frame = env.data.load_source("embedded")
    label = env.data.label_column
    return tuple(frame.unique(label, keep="first", maintain_order=True).head(3).to_dicts())


def parser(env_id: str) -> Callable[[str], ParseResult]:
    verifier = environment(env_id).verifier
    return verifier.parse if isinstance(verifier, CompletionVerifier) else verifier.parse_turn  # type: ignore[attr-defined]


# --- checks ---


def check_parse(result: ParseResult, documented: frozenset[str]) -> None:
    assert isinstance(result, ParseResult)
    if result.ok:
        assert isinstance(result.output, dict)
    else:
        assert result.output is None and result.error, "a failure needs a name"
        assert result.error in documented, f"undocumented parse error {result.error!r}"


def in_unit_interval(value: float) -> bool:
    return isinstance(value, float | int) and math.isfinite(value) and 0.0 <= value <= 1.0


def check_sample(sample: ScoredSample, parsed: ParseResult, documented: frozenset[str], floor: float = 0.0) -> None:
    """Components in [0, 1], the reward in [floor, 1] (E1's and E4's floor is -0.7), a failure earning the floor."""
    assert isinstance(sample, ScoredSample)
    assert math.isfinite(sample.reward) and floor <= sample.reward <= 1.0, sample.reward
    assert all(in_unit_interval(value) for value in sample.components.values()), sample.components
    if not parsed.ok:
        assert sample.reward == floor and sample.error == parsed.error and sample.parsed is None
    if sample.error is not None:
        assert sample.error in documented, f"undocumented score error {sample.error!r}"
    json.dumps(sample.to_record())  # what results.jsonl gets: plain JSON, however hostile the answer


# --- parsers (every environment) ---


@pytest.mark.parametrize("env_id", sorted(ANSWERS))
def test_no_completion_crashes_a_parser_and_every_failure_is_named(env_id: str) -> None:
    parse, documented = parser(env_id), PARSE_ERRORS[env_id]

    @FAST
    @given(completions(ANSWERS[env_id]))
    def run(completion: str) -> None:
        check_parse(parse(completion), documented)

    run()


@pytest.mark.parametrize("env_id", ["e1", "e2", "e3", "e4", "e5"])
def test_a_repeated_key_is_always_a_named_format_failure(env_id: str) -> None:
    parse = parser(env_id)

    @FAST
    @given(ANSWERS[env_id](True).filter(bool), st.data())
    def run(answer: dict[str, Any], data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(answer)))
        text = "{" + dumps(key) + ": " + dumps(data.draw(json_values)) + ", " + dumps(answer)[1:]
        assert parse(text).error == FormatError.DUPLICATE_KEY

    run()


# --- scorers: E1, E2, E4 (E3 below, E5/E6 score whole dialogues) ---


@pytest.mark.parametrize("env_id", ["e1", "e4"])
def test_detection_scores_are_in_range_and_failures_named(env_id: str) -> None:
    verifier = environment(env_id).verifier
    assert isinstance(verifier, CompletionVerifier)

    @SCORING
    @given(st.sampled_from(items(env_id)), completions(ANSWERS[env_id]))
    def run(item: dict[str, Any], completion: str) -> None:
        check_sample(
            verifier.score(item, completion), verifier.parse(completion), SCORE_ERRORS[env_id], verifier.reward_floor
        )

    run()


def test_e2_scores_are_in_range_and_failures_named() -> None:
    verifier = e2_verifier()
    web, volume = e2_items()
    answers = st.one_of(
        st.tuples(st.just(web), completions(E2_WEB_ANSWERS)),
        st.tuples(st.just(volume), completions(e2_answers(VOLUME_TF, "volume.tf"))),
    )

    @SCORING
    @given(answers)
    def run(case: tuple[dict[str, Any], str]) -> None:
        item, completion = case
        check_sample(verifier.score(item, completion), verifier.parse(completion), SCORE_ERRORS["e2"])

    run()


def test_e2_batch_scores_match_one_by_one() -> None:
    verifier = e2_verifier()
    web, _ = e2_items()

    @settings(max_examples=15, deadline=None, database=None)
    @given(st.lists(completions(E2_WEB_ANSWERS), min_size=1, max_size=4))
    def run(batch: list[str]) -> None:
        together = verifier.score_many([web] * len(batch), batch)
        assert [s.reward for s in together] == [verifier.score(web, text).reward for text in batch]

    run()


# --- the appliers ---


@FAST
@given(json_values, json_patch_ops)
def test_json_patch_applies_or_names_why_and_never_touches_its_input(document: Any, ops: list[Any]) -> None:
    before = json.dumps(document)
    try:
        result = e2_patching.apply_json_patch(document, ops)
    except e2_patching.PatchError as error:
        assert error.reason in set(e2_patching.PatchErrorReason)
    else:
        json.dumps(result)
    assert json.dumps(document) == before


@FAST
@given(st.integers(1, 60), st.sampled_from(["", "/spec", "/spec/template"]), st.integers(0, 3000))
def test_json_patch_growth_and_depth_are_bounded(copies: int, source: str, depth: int) -> None:
    """Self-copies double the document, deep values overflow the stack: each stops at a named bound."""
    document = {"spec": {"template": {"a": "x" * 100, "b": list(range(20))}}}
    ops: list[dict[str, Any]] = [{"op": "copy", "from": source, "path": f"{source}/c{n}"} for n in range(copies)]
    value: Any = 1
    for _ in range(depth):
        value = [value]
    ops.append({"op": "add", "path": "/deep", "value": value})
    try:
        result = e2_patching.apply_json_patch(document, ops)
    except e2_patching.PatchError as error:
        assert error.reason in {"patch_growth_exceeded", "patch_too_deep", "patch_too_many_ops", "patch_too_large"}
    else:
        assert depth < e2_patching.MAX_JSON_PATCH_DEPTH
        assert len(json.dumps(result)) < 8 * e2_patching.MAX_JSON_PATCH_GROWTH


@FAST
@given(st.sampled_from([WEB, VOLUME_TF, "", "a\r\nb\r\n", "x\x00y\n"]), st.data())
def test_e2_unified_diffs_apply_or_name_why(original: str, data: st.DataObject) -> None:
    filename = "volume.tf" if original == VOLUME_TF else "web.yaml"
    diff = data.draw(diff_lines(original, [filename]))
    try:
        assert isinstance(e2_patching.apply_unified_diff(original, diff, filename), str)
    except e2_patching.PatchError as error:
        assert error.reason in set(e2_patching.PatchErrorReason)


PROJECT = {
    "app.py": "import os\n\n\ndef run(cmd):\n    os.system(cmd)\n",
    "tests/test_app.py": "def test_x():\n    pass\n",
}


@FAST
@given(diff_lines(PROJECT["app.py"], ["app.py", "tests/test_app.py", "new.py"]))
def test_project_diffs_apply_or_name_why(diff: str) -> None:
    try:
        result = shared_patching.apply_patch_to_files(diff, PROJECT, protected=patch_format.PYTEST_PROTECTED)
    except patch_format.PatchError as error:
        assert error.code in set(patch_format.PatchErrorCode)
    else:
        assert all(isinstance(text, str) for text in result.updated(PROJECT).values())


# --- E3's scorer: a sandbox per answer, so a handful of hostile diffs ---

STATUS = sandbox_status()
NEW_FILE = "--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+x = 1\n"
HOSTILE_E3_DIFFS = {
    "deep path": NEW_FILE.format(path="d/" * 3000 + "x.py"),
    "long name": NEW_FILE.format(path="n" * 400 + ".py"),
    "lone surrogate path": NEW_FILE.format(path="bad\ud800.py"),
    "huge line number": "--- a/app.py\n+++ b/app.py\n@@ -" + "9" * 5000 + " +1 @@\n-x\n+y\n",
    "many files": "".join(NEW_FILE.format(path=f"f{n}.py") for n in range(60)),
    "many hunks": "--- a/app.py\n+++ b/app.py\n" + "@@\n-nothing\n+x\n" * 600,
    "deep answer": '{"diff": ' + nest(500, '""') + ', "cwe": "CWE-78"}',
    "repeated key": '{"diff": "", "diff": "x", "cwe": "CWE-78"}',
}


@pytest.mark.skipif(not STATUS.available, reason=STATUS.describe())
def test_e3_scores_hostile_diffs_with_named_errors() -> None:
    verifier = environment("e3").verifier
    assert isinstance(verifier, CompletionVerifier)
    frame = environment("e3").data.load_source("embedded")
    item = frame.filter(frame["task"] == "repair").row(0, named=True)
    answers = [
        text if text.startswith("{") else json.dumps({"diff": text, "cwe": "CWE-78"})
        for text in HOSTILE_E3_DIFFS.values()
    ]
    scored = verifier.score_many([item] * len(answers), answers)
    for name, sample in zip(HOSTILE_E3_DIFFS, scored, strict=True):
        assert in_unit_interval(sample.reward), name
        assert sample.error and (
            sample.error.startswith(("hostile_patch:", "patch:")) or sample.error in PARSE_ERRORS["e3"]
        ), (name, sample.error)
        json.dumps(sample.to_record())
