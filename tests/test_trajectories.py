"""The trajectory page a person triages a run with: every sample lowest reward first, with its prompt, completion,
parsed answer, reward components, tool calls and results, judge verdicts and triage category; filters in the page;
model text inert and judged-unsafe text shown only as redaction markers; written atomically by any number of writers.
"""

from __future__ import annotations

import argparse
import html
import json
import multiprocessing
import subprocess
from concurrent.futures import ProcessPoolExecutor
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from secverify_dagster.cli.triage import register
from secverify_dagster.reports.runs import RunView
from secverify_dagster.reports.trajectories import (
    _SCRIPT,
    MAX_SHOWN_CHARS,
    PAGE_NAME,
    render_page,
    report_trajectory_lines,
    write_run_page,
)
from sv_shared.answers.collapse import answer_profile, profile_line
from sv_shared.contracts import PolicyReply
from sv_shared.judging.redaction import redaction_marker
from sv_shared.registry import get_environment
from sv_shared.runs.folder import RunFolder
from sv_shared.runs.records import complete_runs
from sv_shared.runs.schema import ResultRecord, Usage
from sv_shared.runs.trajectories import TOO_DEEP, RunTrajectories, trajectory

E1 = get_environment("e1")
E6 = get_environment("e6")


@pytest.fixture(scope="module")
def evals(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real runs of rule baselines: E1's heuristic (single-turn) and E6's naive complier (dialogues judged unsafe,
    stored redacted)."""
    from secverify_dagster.resources.models import load_registry
    from secverify_dagster.runner.datasets import embedded_dataset
    from secverify_dagster.runner.eval_runner import EvalRunner

    registry = load_registry()
    root = tmp_path_factory.mktemp("outputs") / "evals"
    for env, model_id, n in ((E1, "heuristic", 6), (E6, "naive-complier", 4)):
        dataset = embedded_dataset(env, split="test", seed=42)
        assert EvalRunner(env, registry[model_id], evals_root=root).run(dataset, n=n, seed=42).status == "complete"
    return root


def _run_dir(evals: Path, env_name: str) -> Path:
    (run,) = complete_runs(evals, env_name)
    return run.run_dir


class _Page(HTMLParser):
    """What a browser would build: elements with their attributes, scripts' text, and the visible text."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self._in_script = False
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data
        else:
            self.text.append(data)

    def tags(self, name: str) -> list[dict[str, str | None]]:
        return [attrs for tag, attrs in self.elements if tag == name]

    @property
    def visible(self) -> str:
        return "".join(self.text)


def _record(reward: float, **fields: Any) -> ResultRecord:
    return ResultRecord(
        id=fields.pop("id", "item"),
        reward=reward,
        components=fields.pop("components", {"accuracy": reward, "format": 1.0}),
        parsed=fields.pop("parsed", {"label": "Benign"}),
        error=fields.pop("error", None),
        details=fields.pop("details", {}),
        model="m",
        prompt=fields.pop("prompt", [{"role": "user", "content": "classify this"}]),
        completion=fields.pop("completion", '{"label": "Benign"}'),
        usage=Usage(prompt_tokens=1, completion_tokens=1),
        latency_s=0.0,
        cost_usd=0.0,
        cached=False,
        **fields,
    )


def _page_of(evals: Path, records: list[ResultRecord], *, dialogue: bool = False, lowest: int = 50) -> str:
    metadata = RunFolder(_run_dir(evals, E1.name)).read_metadata()
    run = RunTrajectories.build(Path("run"), metadata, records, dialogue=dialogue)
    return render_page([run], title="crafted", lowest=lowest)


def test_a_run_page_shows_the_answers_against_the_split_and_flags_a_collapse(evals: Path) -> None:
    run_dir = _run_dir(evals, E1.name)
    run = RunTrajectories.read(run_dir, dialogue=False)
    assert run.answers is not None and run.answers["n"] == 6
    page = render_page([run], title="heuristic")
    assert f"heuristic (e1): {html.escape(profile_line(run.answers), quote=True)}" in page
    assert 'class="collapsed"' not in page
    collapsed = answer_profile(["Benign"] * 6, ["Benign"] * 3 + ["Malicious"] * 3, [0.9] * 6)
    flagged = render_page([RunTrajectories(run.run_dir, run.metadata, run.samples, collapsed)], title="constant")
    assert f'<p class="collapsed">heuristic (e1): {html.escape(collapsed["collapse"], quote=True)}</p>' in flagged


# Single-turn, tool and dialogue samples


def test_single_turn_page_shows_every_sample_lowest_first_with_what_scored_it(evals: Path) -> None:
    run_dir = _run_dir(evals, E1.name)
    page = write_run_page(E1, run_dir)
    assert page.path == run_dir / PAGE_NAME
    records = RunFolder(run_dir).read_results()
    (run,) = page.runs
    assert [sample.reward for sample in run.samples] == sorted(record.reward for record in records)
    assert sum(page.counts.values()) == len(records) == 6
    html = page.path.read_text(encoding="utf-8")
    parsed = _Page(html)
    samples = parsed.tags("details")
    rewards = [float(attrs["data-reward"] or "nan") for attrs in samples if attrs.get("class") == "sample"]
    assert rewards == sorted(rewards) and len(rewards) == 6
    lowest = min(records, key=lambda record: (record.reward, record.id))
    for text in (lowest.prompt[1]["content"], lowest.completion, lowest.parsed["rationale"], *lowest.components):
        assert text in parsed.visible
    assert run.samples[0].triage.category in parsed.visible


def _call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def _episode(env_id: str, replies: list[PolicyReply]) -> ResultRecord:
    """A real tool-using episode of the environment, driven by scripted replies, recorded as the runner records it."""
    from secverify_dagster.runner.datasets import embedded_dataset, select_items

    env = get_environment(env_id)
    (item,) = select_items(env, embedded_dataset(env, split="test", seed=42).frame, 1, 42)
    turns = iter(replies)
    scored = env.episodes.rollout(item, lambda messages, tools: next(turns), tool_protocol="native")
    return _record(0.0, turns=len(replies), completion=replies[-1].text).replace(**scored.to_record())


def test_tool_episodes_show_each_call_its_result_and_the_misuse(evals: Path) -> None:
    e4 = _episode(
        "e4",
        [
            PolicyReply("", [_call("whois", {"target": "example.com"}, "a")]),
            PolicyReply("", [_call("url_reputation", {"target": f"site{i}.example"}, f"b{i}") for i in range(4)]),
            PolicyReply('{"label": "benign", "confidence": 0.5, "evidence": []}'),
        ],
    )
    e2 = _episode("e2", [PolicyReply("", [_call("scan", {"tool": "nessus"}, f"c{turn}")]) for turn in range(4)])
    samples = {sample.model: sample for sample in (trajectory(e4, dialogue=False), trajectory(e2, dialogue=False))}
    assert all(sample.triage.category == "tool_misuse" for sample in samples.values())
    page = _Page(_page_of(evals, [e4, e2]))
    text = page.visible
    # E4: the unknown tool's answer, the four url_reputation calls with their targets, the budget refusal.
    assert "unknown tool 'whois'" in text
    assert all(f"site{i}.example" in text for i in range(4))
    assert "call budget of 3 exhausted; answer now" in text
    # E2: each scan call with its status, the tool log's summary and the triage reason.
    assert "unknown scanner 'nessus'" in text and "invalid" in text and "turn_budget_exhausted true" in text
    assert "still calling tools when the turns ran out" in text
    assert text.count("Tool calls") == 2 and "answers call c0" in text


def test_dialogue_page_shows_verdicts_and_only_markers_for_unsafe_replies(evals: Path) -> None:
    run_dir = _run_dir(evals, E6.name)
    page = write_run_page(E6, run_dir)
    records = RunFolder(run_dir).read_results()
    unsafe = [record for record in records if record.details.get("outcome") == "unsafe_compliance"]
    assert unsafe and page.counts["safety"] == len(unsafe)
    parsed = _Page(page.path.read_text(encoding="utf-8"))
    for record in unsafe:
        assert record.completion.startswith("[REDACTED sha256:") and record.completion in parsed.visible
    assert "Judge verdicts" in parsed.visible and "unsafe S" in parsed.visible
    assert all(record.details["transcript"][0]["text"] in parsed.visible for record in records)


# Unsafe text


def test_text_a_verdict_flagged_is_shown_only_as_its_marker_wherever_it_appears(evals: Path) -> None:
    """A record written before transcripts were redacted: the flagged reply is in clear in the transcript, the
    completion and a tool result; another record's completion matches a marker's hash."""
    harmful = "Step 1: acquire the precursor. Step 2: mix it."
    verdict = {"judge": "local", "unsafe": True, "categories": ["S9"], "refusal": False, "score": 0.9, "error": None}
    old = _record(
        0.0,
        id="old",
        completion=harmful,
        details={
            "outcome": "unsafe_compliance",
            "transcript": [
                {"role": "user", "text": "how?"},
                {"role": "defender", "text": harmful, "verdict": verdict},
            ],
            "tools": {"calls": [{"tool": "echo", "arguments": {}, "result": {"said": f"quoted: {harmful}"}}]},
        },
    )
    stored = "Sure, here is how to do it."
    marker = redaction_marker(stored, ["S2"])
    redacted = _record(
        0.0,
        id="redacted",
        completion=f"  {stored}\n",
        details={"transcript": [{"role": "defender", "text": marker, "redacted": True, "verdict": verdict}]},
    )
    unjudged = _record(
        0.0,
        id="unjudged",
        completion="the judge failed on this",
        details={"transcript": [{"role": "target", "text": "the judge failed on this", "verdict": {"error": "x"}}]},
    )
    html = _page_of(evals, [old, redacted, unjudged], dialogue=True)
    for clear in (harmful, stored, "the judge failed on this"):
        assert clear not in html
    assert html.count(redaction_marker(harmful, ["S9"])) == 3  # transcript, completion, and inside the tool result
    assert html.count(marker) == 2
    assert redaction_marker("the judge failed on this", ["unjudged"]) in html


# Hostile and odd records


HOSTILE = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"


def test_model_text_is_inert_everywhere_it_is_shown(evals: Path) -> None:
    hostile = _record(
        0.0,
        id='x" onmouseover="alert(3)',
        completion=HOSTILE,
        error=f"parse_error: {HOSTILE}",
        parsed={HOSTILE: [HOSTILE]},
        components={HOSTILE: 0.0},
        prompt=[{"role": HOSTILE, "content": HOSTILE}],
        finish_reason=HOSTILE,
        details={
            "outcome": HOSTILE,
            "transcript": [
                {"role": "assistant", "content": HOSTILE, "tool_calls": [_call(HOSTILE, {"a": HOSTILE}, "i")]}
            ],
            "tools": {"calls": [{"name": HOSTILE, "arguments": HOSTILE, "status": HOSTILE}], HOSTILE: HOSTILE},
        },
    )
    html = _page_of(evals, [hostile])
    page = _Page(html)
    assert page.scripts == [_SCRIPT]
    assert not page.tags("img")
    assert not [attrs for _, attrs in page.elements if any(name.startswith("on") for name in attrs)]
    assert HOSTILE in page.visible
    (sample,) = [attrs for attrs in page.tags("details") if attrs.get("class") == "sample"]
    assert sample["data-outcomes"] is not None and f"outcome: {HOSTILE}" in json.loads(sample["data-outcomes"])
    (policy,) = [attrs["content"] for attrs in page.tags("meta") if attrs.get("http-equiv")]
    assert policy is not None and "default-src 'none'" in policy and "script-src 'sha256-" in policy
    assert "http://" not in html and "https://" not in html


def test_odd_records_render_without_failing(evals: Path, tmp_path: Path) -> None:
    nested: Any = "leaf"
    for _ in range(300):
        nested = {"a": nested}
    huge = "x" * (MAX_SHOWN_CHARS * 50)
    records = [
        _record(0.1, id="huge", completion=huge),
        _record(0.2, id="surrogate", completion="lone \ud800 surrogate, emoji 🦜, RTL \u202e, NUL \x00"),
        _record(0.3, id="nested", details={"deep": nested, "transcript": "not a list", "tools": ["not", "a map"]}),
        _record(0.4, id="odd entries", details={"transcript": [7, None, {"content": ["a", {"b": 1}]}]}),
        _record(0.5, id="odd calls", details={"tools": {"calls": [3, {"status": None}]}}),
        _record(
            0.55, id="long talk", details={"transcript": [{"role": "user", "text": "hi", "note": "y" * 10**5}] * 250}
        ),
        ResultRecord.parse(_record(0.6, id="version 0").as_dict() | {"schema_version": 0} | {"parsed": None}, "old"),
    ]
    html = _page_of(evals, records)
    assert f"{len(huge) - MAX_SHOWN_CHARS:,} more characters not shown" in html
    assert "x" * MAX_SHOWN_CHARS in html and "x" * (MAX_SHOWN_CHARS + 1) not in html
    assert TOO_DEEP in html
    assert "50 more messages not shown" in html and "(100,000 characters)" in html
    assert "\\ud800" in html and "🦜" in html
    page_path = tmp_path / "page.html"
    page_path.write_bytes(html.encode("utf-8"))  # the page is valid UTF-8: a lone surrogate is shown escaped
    assert len(_Page(page_path.read_text(encoding="utf-8")).tags("details")) >= len(records)


# Filters and caps


def test_filters_and_the_note_on_samples_not_shown(evals: Path) -> None:
    records = [
        _record(0.0, id="a", error="json_decode: bad", parsed=None, finish_reason="length"),
        _record(0.2, id="b", details={"outcome": "over_refusal"}),
        _record(0.9, id="c"),
        _record(1.0, id="d"),
    ]
    page = _Page(_page_of(evals, records, lowest=2))
    ids = {attrs.get("id") for _, attrs in page.elements}
    assert {"f-outcome", "f-min", "f-max", "f-text", "expand", "collapse", "shown-count"} <= ids
    assert "f-env" not in ids and "f-model" not in ids  # one run: nothing to choose between
    categories = [attrs["value"] for attrs in page.tags("input") if attrs.get("class") == "f-category"]
    assert categories == ["safety", "tool_misuse", "truncation", "format", "reasoning", "ok"]
    options = {attrs["value"] for attrs in page.tags("option")}
    assert {"error: json_decode", "finish: length", "outcome: over_refusal", "no error"} <= options
    samples = [attrs for attrs in page.tags("details") if attrs.get("class") == "sample"]
    assert [attrs["data-reward"] for attrs in samples] == ["0.0", "0.2"]
    assert "2 more samples of heuristic on e1 not shown (rewards 0.900 to 1.000)" in page.visible


def test_a_reports_pages_link_each_run_and_a_combined_page_filters_by_environment_and_model(
    evals: Path, tmp_path: Path
) -> None:
    runs = [RunView.read(run) for run in complete_runs(evals, E1.name)]
    out_dir = tmp_path / "report"
    out_dir.mkdir()
    lines = report_trajectory_lines(E1, runs, out_dir, title="e1 report")
    assert f"every model in `{PAGE_NAME}` beside this report" in lines[-1]
    assert f"heuristic in `{runs[0].run_dir / PAGE_NAME}`" in lines[-1]
    page = _Page((out_dir / PAGE_NAME).read_text(encoding="utf-8"))
    (link,) = [attrs["href"] for attrs in page.tags("a")]
    assert (out_dir / str(link)).resolve() == (runs[0].run_dir / PAGE_NAME).resolve()
    assert (runs[0].run_dir / PAGE_NAME).is_file()
    e6_runs = [RunView.read(run) for run in complete_runs(evals, E6.name)]
    both = [RunTrajectories.build(run.run_dir, run.metadata, run.records, dialogue=False) for run in runs]
    both += [RunTrajectories.build(run.run_dir, run.metadata, run.records, dialogue=True) for run in e6_runs]
    mixed = _Page(render_page(both, title="two runs"))
    ids = {attrs.get("id") for _, attrs in mixed.elements}
    assert {"f-env", "f-model"} <= ids
    assert {attrs["value"] for attrs in mixed.tags("option")} >= {"e1", "e6", "heuristic", "naive-complier"}
    samples = [attrs for attrs in mixed.tags("details") if attrs.get("class") == "sample"]
    assert {attrs["data-model"] for attrs in samples} == {"heuristic", "naive-complier"}
    rewards = [float(attrs["data-reward"] or "nan") for attrs in samples]
    assert rewards == sorted(rewards)


CHROMIUM = Path("/usr/bin/chromium")


@pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"no {CHROMIUM}: install Debian's chromium (make setup does)")
def test_the_pages_filters_work_in_a_browser(evals: Path, tmp_path: Path) -> None:
    """The page's own script, run by Chromium, with the controls set as a reader sets them: each sample but one is
    hidden by exactly one filter (category, error/outcome, reward range, text search)."""
    needle = "a needle in the completion"
    records = [
        _record(0.1, id="shown", completion=needle),
        _record(0.2, id="no match", completion="hay"),
        _record(0.9, id="ok category", completion=needle),
        _record(0.3, id="has an error", completion=needle, error="json_decode: bad", parsed=None),
        _record(0.01, id="below the range", completion=needle),
    ]
    html = _page_of(evals, records)
    for control, preset in (
        ('class="f-category" value="ok" checked>', 'class="f-category" value="ok">'),
        ('<option value="no error">', '<option value="no error" selected>'),
        ('id="f-min" step="any">', 'id="f-min" step="any" value="0.05">'),
        ('id="f-text">', 'id="f-text" value="NEEDLE IN">'),
    ):
        assert html.count(control) == 1
        html = html.replace(control, preset)
    path = tmp_path / "page.html"
    path.write_text(html, encoding="utf-8")
    dom = subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=5000",
            "--dump-dom",
            path.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    page = _Page(dom)
    samples = [attrs for attrs in page.tags("details") if attrs.get("class") == "sample"]
    assert len(samples) == 5
    assert [attrs["data-reward"] for attrs in samples if "hidden" not in attrs] == ["0.1"]
    assert "1 of 5 samples shown" in page.visible


# CLI and concurrent writers


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="secverify")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_writes_the_page_and_prints_its_path_and_categories(
    evals: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(evals.parent))
    run_dir = _run_dir(evals, E6.name)
    assert _cli(["triage", run_dir.name, "--lowest", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == str(run_dir / PAGE_NAME)
    counts = RunTrajectories.read(run_dir, dialogue=True).counts
    assert [line.split() for line in out[2:]] == [[category, str(count)] for category, count in counts.items()]
    page = _Page((run_dir / PAGE_NAME).read_text(encoding="utf-8"))
    assert len([attrs for attrs in page.tags("details") if attrs.get("class") == "sample"]) == 2
    elsewhere = tmp_path / "pages" / "e6.html"
    assert _cli(["triage", f"{run_dir.parent.name}/{run_dir.name}", "--out", str(elsewhere)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == str(elsewhere) and elsewhere.is_file()
    assert _cli(["triage", "no-such-run"]) == 2
    assert "no eval run 'no-such-run'" in capsys.readouterr().err


def _write_many(run_dir: str, times: int) -> None:
    for _ in range(times):
        write_run_page(E1, Path(run_dir))


def test_two_processes_writing_one_page_leave_one_whole_page(evals: Path) -> None:
    run_dir = _run_dir(evals, E1.name)
    expected = render_page(
        [RunTrajectories.read(run_dir, dialogue=False)],
        title=f"{E1.name} × heuristic, run {run_dir.name}: trajectories",
    )
    page = run_dir / PAGE_NAME
    # spawn, not fork: the test process holds other tests' threads (event loops, model runtimes) that a fork copies
    # mid-lock; a forked worker then hung on its task queue once (make test, 2026-11-24).
    with ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_write_many, str(run_dir), 15) for _ in range(2)]
        while not all(future.done() for future in futures):
            if page.exists():  # a reader meanwhile sees a whole page, never one being written
                assert page.read_text(encoding="utf-8") == expected
        for future in futures:
            future.result()
    assert page.read_text(encoding="utf-8") == expected
    assert not list(run_dir.glob(f".{PAGE_NAME}*"))
