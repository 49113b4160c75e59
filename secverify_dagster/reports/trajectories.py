"""The trajectory page: a run's samples (or a report's runs' samples), lowest reward first, as one static HTML file.

Each sample folds open to its triage category and reason, reward components, parsed answer, error and finish reason,
prompt, completion, message-by-message transcript (tool calls with their results, each judged turn's verdict), the
tools' own call log, the judge's verdicts and the verifier's other details: what inspect_ai's log viewer shows of a
sample. Filters (category, error or outcome, environment, model, reward range, text search) run in the page's own
script; the page loads nothing (its Content-Security-Policy allows no network and no script but its own, by hash).

Model text is hostile: every text is HTML-escaped, none is placed inside the script, and a text longer than
MAX_SHOWN_CHARS is cut with a note (the full text stays in the run's results.jsonl). Judged-unsafe text is shown only
as redaction markers (sv_shared.runs.trajectories). Pages are written atomically (sv_shared.data.files), so two
processes writing one page leave one whole page, and the same inputs give the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import html
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

from secverify_dagster.reports.runs import RunView
from sv_shared.answers.collapse import profile_line
from sv_shared.contracts import Dialogue, Environment
from sv_shared.data.files import json_text, write_text_atomic
from sv_shared.judging.redaction import is_redacted
from sv_shared.runs.trajectories import Message, RunTrajectories, ToolCall, Trajectory
from sv_shared.runs.triage import CATEGORIES, Category

PAGE_NAME: Final = "trajectories.html"
"""The page's name in a run folder, and beside a report."""

DEFAULT_LOWEST: Final = 200
"""Samples shown per run by default, lowest reward first; the page says how many more there are."""

MAX_SHOWN_CHARS: Final = 10_000
"""Longest text shown in one block; the rest is cut with a note."""

MAX_INLINE_CHARS: Final = 300
"""Longest value shown in a line of notes (a message's turn and tactic, a tool log's counts)."""

MAX_SHOWN_ITEMS: Final = 200
"""Most messages or tool calls shown for one sample; the rest are counted in a note."""

_CATEGORY_COLORS: Final[dict[Category, str]] = {
    "safety": "#cf222e",
    "tool_misuse": "#bc4c00",
    "truncation": "#7d4e00",
    "format": "#8250df",
    "reasoning": "#6e7781",
    "ok": "#1a7f37",
}

_STYLE: Final = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5rem auto; max-width: 80rem;
       padding: 0 1rem; color: #1f2328; line-height: 1.4; }
h1 { font-size: 1.4rem; border-bottom: 1px solid #d0d7de; padding-bottom: .3rem; }
h3 { font-size: .95rem; margin: .8rem 0 .3rem; }
table { border-collapse: collapse; margin: .4rem 0; font-size: .85rem; }
th, td { border: 1px solid #d0d7de; padding: .2rem .5rem; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
pre { background: #f6f8fa; padding: .5rem; border-radius: 4px; white-space: pre-wrap; overflow-wrap: anywhere;
      margin: .2rem 0; font-size: .8rem; max-height: 30rem; overflow: auto; }
.note { color: #57606a; font-size: .85rem; }
.collapsed { color: #fff; background: #cf222e; padding: .4rem .6rem; border-radius: 4px; font-weight: 600; }
.cut { color: #9a6700; font-size: .8rem; }
#filters { position: sticky; top: 0; background: #fff; border-bottom: 1px solid #d0d7de; padding: .5rem 0;
           display: flex; flex-wrap: wrap; gap: .4rem 1rem; align-items: center; font-size: .85rem; z-index: 1; }
#filters input[type=number] { width: 5rem; }
details.sample { border: 1px solid #d0d7de; border-radius: 6px; margin: .4rem 0; padding: .3rem .6rem; }
details.sample > summary { cursor: pointer; }
details.sample[open] > summary { border-bottom: 1px solid #eaeef2; padding-bottom: .3rem; }
.reward { font-family: ui-monospace, monospace; font-weight: 600; }
.cat { color: #fff; border-radius: 3px; padding: 0 .35rem; font-size: .8rem; }
.message { border-left: 3px solid #d0d7de; padding-left: .5rem; margin: .4rem 0; }
.role { font-weight: 600; font-size: .8rem; text-transform: uppercase; color: #57606a; }
.role-assistant, .role-defender, .role-attacker { border-left-color: #0969da; }
.role-tool { border-left-color: #bc4c00; }
.unsafe { color: #cf222e; font-weight: 600; }
.redacted pre, pre.redacted { background: #fff1f0; }
"""

_SCRIPT: Final = """
(function () {
  "use strict";
  const samples = Array.from(document.querySelectorAll("details.sample"));
  const texts = new Map(samples.map((s) => [s, s.textContent.toLowerCase()]));
  const outcomes = new Map(samples.map((s) => [s, JSON.parse(s.dataset.outcomes)]));
  const byId = (id) => document.getElementById(id);
  const value = (id) => (byId(id) ? byId(id).value : "");
  function apply() {
    const categories = new Set(
      Array.from(document.querySelectorAll("input.f-category:checked")).map((box) => box.value));
    const outcome = value("f-outcome"), env = value("f-env"), model = value("f-model");
    const low = parseFloat(value("f-min")), high = parseFloat(value("f-max"));
    const query = value("f-text").trim().toLowerCase();
    let shown = 0;
    for (const sample of samples) {
      const reward = parseFloat(sample.dataset.reward);
      const visible = categories.has(sample.dataset.category)
        && (!outcome || outcomes.get(sample).includes(outcome))
        && (!env || sample.dataset.env === env)
        && (!model || sample.dataset.model === model)
        && (isNaN(low) || reward >= low)
        && (isNaN(high) || reward <= high)
        && (!query || texts.get(sample).includes(query));
      sample.hidden = !visible;
      if (visible) shown += 1;
    }
    byId("shown-count").textContent = shown + " of " + samples.length + " samples shown";
  }
  document.querySelectorAll("#filters input, #filters select").forEach((control) => {
    control.addEventListener("input", apply);
    control.addEventListener("change", apply);
  });
  byId("expand").addEventListener("click", () => samples.forEach((s) => { if (!s.hidden) s.open = true; }));
  byId("collapse").addEventListener("click", () => samples.forEach((s) => { s.open = false; }));
  apply();
})();
"""

_SCRIPT_HASH: Final = base64.b64encode(hashlib.sha256(_SCRIPT.encode("utf-8")).digest()).decode("ascii")

_POLICY: Final = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{_SCRIPT_HASH}'"
"""Nothing loads from anywhere and no script runs but the page's own (inline styles only)."""


def _esc(value: Any) -> str:
    """HTML-escaped text (quotes too, so it is safe in attributes); a lone surrogate, which has no UTF-8 form, is
    shown as its escape."""
    text = value if isinstance(value, str) else str(value)
    return html.escape(text.encode("utf-8", "backslashreplace").decode("utf-8"), quote=True)


def _pre(text: str, css: str = "") -> str:
    cut = ""
    if len(text) > MAX_SHOWN_CHARS:
        cut = (
            f'<div class="cut">… {len(text) - MAX_SHOWN_CHARS:,} more characters not shown '
            f"({len(text):,} in all; the full text is in the run's results.jsonl)</div>"
        )
        text = text[:MAX_SHOWN_CHARS]
    opening = f'<pre class="{css}">' if css else "<pre>"
    return f"{opening}{_esc(text)}</pre>{cut}"


def _json(value: Any) -> str:
    return _pre(json_text(value, indent=2, default=str))


def _inline(key: str, value: Any) -> str:
    """A short `key value` for a line of notes; a long value is cut (its whole form is in the Details section or
    results.jsonl)."""
    text = value if isinstance(value, str) else json_text(value, default=str)
    shown = text if len(text) <= MAX_INLINE_CHARS else text[:MAX_INLINE_CHARS] + f"… ({len(text):,} characters)"
    return f"{_esc(key)} {_esc(shown)}"


def _number(value: float) -> str:
    return f"{value:.3f}"


def _cut_note(total: int, what: str) -> str:
    hidden = total - MAX_SHOWN_ITEMS
    return f'<div class="cut">… {hidden:,} more {what} not shown</div>' if hidden > 0 else ""


def _category_badge(category: Category) -> str:
    return f'<span class="cat" style="background:{_CATEGORY_COLORS[category]}">{_esc(category)}</span>'


def _verdict_line(message: Message) -> str:
    verdict = message.verdict
    if verdict is None:
        return ""
    flags = [
        f'<span class="unsafe">unsafe {_esc(", ".join(verdict.categories))}</span>' if verdict.unsafe else "safe",
        *(["refusal"] if verdict.refusal else []),
        *(["safe alternative"] if verdict.safe_alternative else []),
        *([f"score {_number(verdict.score)}"] if verdict.score is not None else []),
        *([f"judge error {_esc(verdict.error)}"] if verdict.error else []),
    ]
    return f'<div class="note">judge {_esc(verdict.judge)}: {" · ".join(flags)}</div>'


def _message(message: Message) -> str:
    extra = ", ".join(_inline(key, value) for key, value in message.extra.items())
    header = f'<span class="role">{_esc(message.role)}</span>'
    if message.tool_call_id:
        header += f' <span class="note">answers call {_esc(message.tool_call_id)}</span>'
    if extra:
        header += f' <span class="note">{extra}</span>'
    calls = "".join(
        f'<div class="note">calls <b>{_esc(call.name)}</b> (id {_esc(call.id)})</div>{_pre(call.arguments)}'
        for call in message.tool_calls
    )
    body = _pre(message.text, "redacted" if message.redacted else "") if message.text or not calls else ""
    return f'<div class="message role-{_esc(message.role)}">{header}{body}{calls}{_verdict_line(message)}</div>'


def _messages(messages: Sequence[Message]) -> str:
    return "".join(_message(message) for message in messages[:MAX_SHOWN_ITEMS]) + _cut_note(len(messages), "messages")


def _tool_calls(sample: Trajectory) -> str:
    if not sample.tool_summary and not sample.tool_calls:
        return ""
    rows = "".join(_tool_call_row(index, call) for index, call in enumerate(sample.tool_calls[:MAX_SHOWN_ITEMS], 1))
    table = (
        f"<table><tr><th>#</th><th>tool</th><th>status</th><th>arguments</th><th>result</th></tr>{rows}</table>"
        if rows
        else '<p class="note">No tool calls.</p>'
    )
    summary = ", ".join(_inline(key, value) for key, value in sample.tool_summary.items())
    return (
        "<h3>Tool calls</h3>"
        + (f'<p class="note">{summary}</p>' if summary else "")
        + table
        + _cut_note(len(sample.tool_calls), "tool calls")
    )


def _tool_call_row(index: int, call: ToolCall) -> str:
    result = call.result if not call.extra else {"result": call.result, **call.extra}
    return (
        f"<tr><td>{index}</td><td>{_esc(call.name)}</td><td>{_esc(call.status or '–')}</td>"
        f"<td>{_json(call.arguments)}</td><td>{_json(result)}</td></tr>"
    )


def _verdicts(sample: Trajectory) -> str:
    verdicts = sample.verdicts
    if not verdicts:
        return ""
    rows = "".join(
        f"<tr><td>{_esc(message.extra.get('turn', '–'))}</td><td>{_esc(message.role)}</td>"
        f"<td>{_esc(verdict.judge)}</td>"
        f"<td>{'<span class=unsafe>yes</span>' if verdict.unsafe else 'no'}</td>"
        f"<td>{_esc(', '.join(verdict.categories) or '–')}</td><td>{'yes' if verdict.refusal else 'no'}</td>"
        f"<td>{'yes' if verdict.safe_alternative else 'no'}</td>"
        f"<td>{_number(verdict.score) if verdict.score is not None else '–'}</td><td>{_esc(verdict.error or '–')}</td>"
        "</tr>"
        for message, verdict in verdicts
    )
    return (
        "<h3>Judge verdicts</h3><table><tr><th>turn</th><th>role</th><th>judge</th><th>unsafe</th><th>categories</th>"
        f"<th>refusal</th><th>safe alternative</th><th>score</th><th>error</th></tr>{rows}</table>"
    )


def _scoring(sample: Trajectory) -> str:
    components = "".join(
        f"<tr><td>{_esc(name)}</td><td>{_number(value)}</td></tr>" for name, value in sample.components.items()
    )
    facts = [
        ("reward", _number(sample.reward)),
        ("triage", f"{_category_badge(sample.triage.category)} {_esc(sample.triage.reason)}"),
        ("error", _esc(sample.error) if sample.error else "none"),
        ("finish reason", _esc(sample.finish_reason or "not recorded")),
    ]
    rows = "".join(f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in facts)
    return (
        f"<h3>Scoring</h3><table>{rows}</table>"
        f"<table><tr><th>component</th><th>value</th></tr>{components}</table>"
        f"<h3>Parsed answer</h3>{_json(sample.parsed) if sample.parsed is not None else '<p class=note>none</p>'}"
    )


def _sample(run: RunTrajectories, sample: Trajectory, rank: int) -> str:
    metadata = run.metadata
    attributes = {
        "class": "sample",
        "data-category": sample.triage.category,
        "data-outcomes": json_text(list(sample.outcomes)),
        "data-env": metadata.env,
        "data-model": metadata.model.id,
        "data-reward": repr(sample.reward),
    }
    opening = " ".join(f'{name}="{_esc(value)}"' for name, value in attributes.items())
    reason = f" — {_esc(sample.triage.reason)}" if sample.triage.reason else ""
    summary = (
        f'<summary>{rank}. <span class="reward">{_number(sample.reward)}</span> '
        f"{_category_badge(sample.triage.category)}"
        f" <code>{_esc(sample.id)}</code> {_esc(metadata.model.id)} on {_esc(metadata.env)}{reason}</summary>"
    )
    transcript = f"<h3>Transcript</h3>{_messages(sample.transcript)}" if sample.transcript else ""
    return (
        f"<details {opening}>{summary}"
        f"{_scoring(sample)}"
        f"<details><summary><b>Prompt</b> ({len(sample.prompt)} messages)</summary>{_messages(sample.prompt)}</details>"
        f"<h3>Completion</h3>{_pre(sample.completion, 'redacted' if is_redacted(sample.completion) else '')}"
        f"{transcript}{_tool_calls(sample)}{_verdicts(sample)}"
        f"<h3>Details</h3>{_json(sample.details)}"
        f"<h3>Run</h3>{_json(sample.run)}"
        "</details>"
    )


def _mean(values: Iterable[float]) -> str:
    values = list(values)
    return _number(sum(values) / len(values)) if values else "–"


def _runs_table(runs: Sequence[RunTrajectories], lowest: int, run_links: Mapping[Path, str]) -> str:
    header = "".join(f"<th>{_esc(category)}</th>" for category in CATEGORIES)
    link_header = "<th>page</th>" if run_links else ""
    rows = []
    for run in runs:
        metadata = run.metadata
        counts = run.counts
        link = run_links.get(run.run_dir)
        notes = []
        if metadata.rescored_from is not None:
            notes.append(f"re-scored from {metadata.rescored_from.run_id} ({metadata.rescored_from.ablation})")
        if metadata.experiment is not None:
            notes.append(f"experiment {metadata.experiment.path}")
        rows.append(
            f"<tr><td>{_esc(metadata.env)} {_esc(metadata.env_name)}</td><td>{_esc(metadata.model.id)}</td>"
            f"<td>{_esc(metadata.run_id)}{''.join(f'<div class=note>{_esc(n)}</div>' for n in notes)}</td>"
            f"<td>{_esc(metadata.status)}</td><td>{len(run.samples)} of {metadata.n_items}</td>"
            f"<td>{min(lowest, len(run.samples))}</td><td>{_mean(sample.reward for sample in run.samples)}</td>"
            + "".join(f"<td>{counts[category]}</td>" for category in CATEGORIES)
            + (f'<td><a href="{_esc(link)}">run page</a></td>' if link else ("<td></td>" if run_links else ""))
            + "</tr>"
        )
    return (
        "<table><tr><th>environment</th><th>model</th><th>run</th><th>status</th><th>scored</th><th>shown</th>"
        f"<th>mean reward</th>{header}{link_header}</tr>{''.join(rows)}</table>"
    )


def _answer_profiles(runs: Sequence[RunTrajectories]) -> str:
    """Each run's answers against the split's labels; a collapsed policy's flag first, where nobody can miss it."""
    lines = []
    for run in runs:
        if not run.answers or not run.answers.get("n"):
            continue
        who = f"{_esc(run.metadata.model.id)} ({_esc(run.metadata.env)})"
        if run.answers["collapsed"]:
            lines.append(f'<p class="collapsed">{who}: {_esc(run.answers["collapse"])}</p>')
        lines.append(f'<p class="note">{who}: {_esc(profile_line(run.answers))}</p>')
    return "\n".join(lines) + ("\n" if lines else "")


def _select(control_id: str, label: str, options: Counter[str]) -> str:
    choices = "".join(
        f'<option value="{_esc(value)}">{_esc(value)} ({count})</option>' for value, count in sorted(options.items())
    )
    return f'<label>{label} <select id="{control_id}"><option value="">any</option>{choices}</select></label>'


def _filters(runs: Sequence[RunTrajectories], shown: Sequence[Trajectory]) -> str:
    counts = Counter(sample.triage.category for sample in shown)
    categories = "".join(
        f'<label><input type="checkbox" class="f-category" value="{category}" checked> {_esc(category)} '
        f"({counts.get(category, 0)})</label>"
        for category in CATEGORIES
    )
    outcomes = Counter(tag for sample in shown for tag in sample.outcomes)
    envs = Counter(run.metadata.env for run in runs)
    models = Counter(run.metadata.model.id for run in runs)
    return (
        f'<div id="filters">{categories}{_select("f-outcome", "Error / outcome", outcomes)}'
        + (_select("f-env", "Environment", envs) if len(envs) > 1 else "")
        + (_select("f-model", "Model", models) if len(models) > 1 else "")
        + '<label>Reward from <input type="number" id="f-min" step="any"> to <input type="number" id="f-max" '
        'step="any"></label><label>Search <input type="search" id="f-text"></label>'
        '<button type="button" id="expand">Expand all</button><button type="button" id="collapse">Collapse all'
        '</button><span id="shown-count" class="note"></span></div>'
    )


def _more_notes(runs: Sequence[RunTrajectories], lowest: int) -> str:
    notes = []
    for run in runs:
        rest = run.samples[lowest:]
        if rest:
            notes.append(
                f'<p class="note">{len(rest):,} more samples of {_esc(run.metadata.model.id)} on '
                f"{_esc(run.metadata.env)} not shown (rewards {_number(rest[0].reward)} to "
                f"{_number(rest[-1].reward)}); "
                f"<code>secverify triage {_esc(run.run_dir)} --lowest {len(run.samples)}</code> shows every one.</p>"
            )
    return "".join(notes)


def render_page(
    runs: Sequence[RunTrajectories],
    *,
    title: str,
    lowest: int = DEFAULT_LOWEST,
    run_links: Mapping[Path, str] | None = None,
) -> str:
    """The page over the runs' `lowest` lowest-reward samples each, all of them in one list, lowest reward first.
    run_links: a run folder → a link to its own page (combined pages)."""
    shown_by_run = [(run, sample) for run in runs for sample in run.samples[:lowest]]
    shown_by_run.sort(key=lambda pair: (pair[1].reward, pair[0].metadata.env, pair[0].metadata.model.id, pair[1].id))
    samples = "".join(_sample(run, sample, rank) for rank, (run, sample) in enumerate(shown_by_run, 1))
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">\n'
        f"<title>{_esc(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        f"<h1>{_esc(title)}</h1>\n"
        '<p class="note">Samples lowest reward first; click one to open it. Categories are the reports\' error '
        "triage. Judged-unsafe text appears only as [REDACTED …] markers (hash, categories, length). Texts over "
        f"{MAX_SHOWN_CHARS:,} characters are cut; the run's results.jsonl holds them whole.</p>\n"
        f"{_runs_table(runs, lowest, run_links or {})}\n{_answer_profiles(runs)}"
        f"{_filters(runs, [sample for _, sample in shown_by_run])}\n"
        f'<div id="samples">{samples}</div>\n{_more_notes(runs, lowest)}\n'
        f"<script>{_SCRIPT}</script>\n</body>\n</html>\n"
    )


@dataclass(frozen=True)
class TrajectoryPage:
    """A written page and the runs it shows."""

    path: Path
    runs: list[RunTrajectories]

    @property
    def counts(self) -> dict[Category, int]:
        """Samples per triage category over every run shown (all samples, not only those on the page)."""
        return {category: sum(run.counts[category] for run in self.runs) for category in CATEGORIES}


def is_dialogue(env: Environment) -> bool:
    return isinstance(env.episodes, Dialogue)


def run_title(run: RunTrajectories) -> str:
    return f"{run.metadata.env_name} × {run.metadata.model.id}, run {run.metadata.run_id}: trajectories"


def write_run_page(
    env: Environment, run_dir: Path, *, out: Path | None = None, lowest: int = DEFAULT_LOWEST
) -> TrajectoryPage:
    """The run's page, written atomically to `out` (default: trajectories.html in the run folder)."""
    run = RunTrajectories.read(run_dir, dialogue=is_dialogue(env))
    path = out or run_dir / PAGE_NAME
    write_text_atomic(path, render_page([run], title=run_title(run), lowest=lowest))
    return TrajectoryPage(path, [run])


def _relative_link(target: Path, folder: Path) -> str:
    return quote(Path(os.path.relpath(target.resolve(), folder.resolve())).as_posix())


def report_trajectory_lines(
    env: Environment, runs: Sequence[RunView], out_dir: Path, *, title: str, lowest: int = DEFAULT_LOWEST
) -> list[str]:
    """A report's trajectory pages: each run's own page in its folder and a combined page beside the report
    (filterable by model, linking each run's page), and the markdown lines that say where they are. The lines name
    paths rather than link them: report.html stays self-contained, opening anywhere with nothing to follow."""
    if not runs:
        return []
    dialogue = is_dialogue(env)
    built = [
        RunTrajectories.build(
            run.run_dir, run.metadata, run.records, dialogue=dialogue, answers=run.metrics.get("answers")
        )
        for run in runs
    ]
    links: dict[Path, str] = {}
    for run in built:
        page = run.run_dir / PAGE_NAME
        write_text_atomic(page, render_page([run], title=run_title(run), lowest=lowest))
        links[run.run_dir] = _relative_link(page, out_dir)
    write_text_atomic(
        out_dir / PAGE_NAME, render_page(built, title=f"{title}: trajectories", lowest=lowest, run_links=links)
    )
    return [
        "",
        "Trajectory pages (samples lowest reward first with their prompts, answers, tool calls, verdicts and "
        f"categories; filterable by model, category and outcome): every model in `{PAGE_NAME}` beside this report; "
        + "; ".join(f"{run.metadata.model.id} in `{run.run_dir / PAGE_NAME}`" for run in built)
        + ".",
    ]
