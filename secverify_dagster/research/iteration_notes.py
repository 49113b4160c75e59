"""Iteration notes: outputs/notes/<date>-iteration.md (and a .json sidecar with the same facts), scaffolded from a
triage of a baseline run, the hypothesis, the batch or tweak tried, and the fast eval of a candidate against the
baseline on the same items.

The note quotes no model text: the triage gives sample ids, rewards, categories and reasons built from the
verifier's names (sv_shared.runs.triage), so a judged-unsafe reply of E5/E6 cannot leak into it. A note is never
overwritten: a second note of the same day is <date>-iteration-2.md, then -3, each name claimed atomically with its
content complete (a hard link of a finished file, which fails when the name is taken).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from sv_shared.answers.collapse import profile_line
from sv_shared.answers.metrics import metric_value
from sv_shared.answers.statistics import align_paired, paired_bootstrap
from sv_shared.config.experiments import Experiment
from sv_shared.contracts import Dialogue, Environment
from sv_shared.data.files import write_json_atomic
from sv_shared.data.review_batches import batches_root, find_batch
from sv_shared.runs.ablations import load_ablation
from sv_shared.runs.folder import RunFolder
from sv_shared.runs.records import FinishedRun
from sv_shared.runs.schema import ExperimentRef, ResultRecord
from sv_shared.runs.triage import category_counts, lowest_reward_examples, triage_run

TRAJECTORIES_PAGE = "trajectories.html"
SEED = 42
LOWEST = 5
HYPOTHESIS_PLACEHOLDER = (
    "**TO FILL IN** (no experiment given): what the triage suggests, and what should move if it holds."
)


class IterationNoteError(ValueError):
    """A note that cannot be made as asked (unknown run, runs on different items); the message says which."""


def find_run(evals_root: Path, env: Environment, run_id: str) -> FinishedRun:
    """A complete run of the environment by run id: on a whole split, a feature-ablated view or a re-score."""
    patterns = (f"{env.name}--*/{run_id}", f"views/*/{env.name}--*/{run_id}", f"ablations/*/{env.name}--*/{run_id}")
    found = [path for pattern in patterns for path in sorted(evals_root.glob(pattern)) if path.is_dir()]
    if not found:
        raise IterationNoteError(f"no {env.env_id} run {run_id!r} under {evals_root}")
    if len(found) > 1:
        raise IterationNoteError(f"run id {run_id!r} names {len(found)} runs: {', '.join(map(str, found))}")
    metadata = RunFolder(found[0]).read_metadata()
    if metadata.status != "complete":
        raise IterationNoteError(f"run {run_id} ({found[0]}) is {metadata.status}, not complete")
    return FinishedRun(found[0], metadata)


@dataclass(frozen=True)
class Delta:
    """Candidate − baseline of one quantity: a paired bootstrap (per-item values) or a point delta (run metrics)."""

    name: str
    baseline: float | None
    candidate: float | None
    delta: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None


@dataclass(frozen=True)
class IterationFacts:
    env: str
    date: str
    baseline: dict[str, Any]
    triage: dict[str, Any]
    hypothesis: str
    hypothesis_from: str
    """The experiment's path, or "placeholder"."""
    tweak: list[str]
    candidate: dict[str, Any] | None = None
    fast_eval: dict[str, Any] | None = None
    links: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _run_facts(run: FinishedRun) -> dict[str, Any]:
    metadata = run.metadata
    return {
        "run_id": metadata.run_id,
        "model": metadata.model.id,
        "dataset": metadata.dataset.source,
        "n_items": metadata.n_items,
        "seed": metadata.seed,
        "experiment": metadata.experiment.as_dict() if metadata.experiment else None,
        "rescored_from": metadata.rescored_from.as_dict() if metadata.rescored_from else None,
        "run_dir": str(run.run_dir),
        "answers": run.summary().metrics.get("answers"),
    }


def triage_facts(env: Environment, run: FinishedRun, limit: int = LOWEST) -> dict[str, Any]:
    """Counts per error category and the lowest-reward failing samples (ids, rewards, categories, reasons)."""
    triaged = triage_run(run.records(), dialogue=isinstance(env.episodes, Dialogue))
    return {
        "n": len(triaged),
        "counts": category_counts(triaged),
        "lowest": [sample.as_dict() for sample in lowest_reward_examples(triaged, limit)],
    }


def check_same_items(baseline: FinishedRun, candidate: FinishedRun) -> list[str]:
    """The item ids both runs scored; IterationNoteError when they did not draw the same items with the same seed."""
    a, b = baseline.metadata, candidate.metadata
    problems = []
    if a.seed != b.seed:
        problems.append(f"seed {a.seed} vs {b.seed}")
    if a.n_items != b.n_items:
        problems.append(f"{a.n_items} vs {b.n_items} items")
    ids_a = {record.id for record in baseline.records()}
    ids_b = {record.id for record in candidate.records()}
    if ids_a != ids_b:
        problems.append(f"{len(ids_a ^ ids_b)} item ids only one of them answered")
    if problems:
        raise IterationNoteError(
            f"runs {a.run_id} and {b.run_id} did not draw the same items ({'; '.join(problems)}): a paired "
            "comparison needs both runs on the same items with the same seed (same split, N and seed)"
        )
    if a.config != b.config:
        changed = sorted(key for key in {*a.config, *b.config} if a.config.get(key) != b.config.get(key))
        raise IterationNoteError(
            f"runs {a.run_id} and {b.run_id} were scored under different configs ({', '.join(changed)} differ): "
            "their rewards are not comparable; evaluate both models under one config (a reward tweak's effect on "
            "stored answers is an ablation: `secverify ablate`)"
        )
    return sorted(ids_a)


def _paired(name: str, baseline: Sequence[Mapping[str, Any]], candidate: Sequence[Mapping[str, Any]]) -> Delta:
    ids, base, cand = align_paired(candidate, baseline)
    if not ids:
        return Delta(name, None, None, None)
    result = paired_bootstrap(base, cand, seed=SEED)
    return Delta(name, result.mean_b, result.mean_a, result.delta, result.ci_low, result.ci_high, result.p_value)


def _component_rows(records: Sequence[ResultRecord], component: str) -> list[dict[str, Any]]:
    return [{"id": record.id, "reward": record.components.get(component)} for record in records]


def _metric(metrics: Mapping[str, Any], key: str) -> float | None:
    value = metric_value(metrics, key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def fast_eval(env: Environment, baseline: FinishedRun, candidate: FinishedRun) -> dict[str, Any]:
    """Candidate vs baseline on the same items: the reward and each reward component as paired bootstraps (seed
    42), each headline metric the environment reports as the point delta of the two runs' metrics."""
    ids = check_same_items(baseline, candidate)
    base_records, cand_records = list(baseline.records()), list(candidate.records())
    rows = [
        _paired(
            "reward",
            [{"id": record.id, "reward": record.reward} for record in base_records],
            [{"id": record.id, "reward": record.reward} for record in cand_records],
        )
    ]
    components = sorted({name for record in base_records + cand_records for name in record.components})
    rows += [
        _paired(f"component {name}", _component_rows(base_records, name), _component_rows(cand_records, name))
        for name in components
    ]
    base_metrics, cand_metrics = baseline.summary().metrics, candidate.summary().metrics
    headline = []
    for label, key in env.verifier.report_columns():
        before, after = _metric(base_metrics, key), _metric(cand_metrics, key)
        delta = after - before if before is not None and after is not None else None
        headline.append(asdict(Delta(label, before, after, delta)))
    return {"n_paired": len(ids), "paired": [asdict(row) for row in rows], "headline": headline}


def tweak_lines(
    env: Environment,
    experiment: tuple[Experiment, ExperimentRef] | None,
    batch_id: str | None,
    datasets_root: Path,
) -> list[str]:
    """What was tried: the experiment (its path, hash and changes, its ablation described) and the synthetic batch."""
    lines = []
    if experiment is not None:
        record, ref = experiment
        lines.append(f"experiment {ref.name}: {ref.path} (sha256 {ref.sha256[:12]}…)")
        lines += [f"  {change}" for change in record.changes()]
        if record.reward.ablation is not None:
            ablation = load_ablation(env.env_id, record.reward.ablation)
            lines.append(f"  ablation {ablation.name}: {' '.join(ablation.description.split())}")
    if batch_id is not None:
        batch = find_batch(batches_root(datasets_root, env.env_id), batch_id)
        counts = batch.info.get("counts")
        shown = f"; counts {counts}" if isinstance(counts, Mapping) else ""
        lines.append(f"synthetic batch {batch_id}: {batch.path}{shown}")
    return lines or ["**TO FILL IN**: no experiment or batch given (the tweak tried)."]


def build_facts(
    env: Environment,
    baseline: FinishedRun,
    *,
    candidate: FinishedRun | None = None,
    experiment: tuple[Experiment, ExperimentRef] | None = None,
    batch_id: str | None = None,
    datasets_root: Path,
    today: date | None = None,
) -> IterationFacts:
    """The note's facts: refuses (IterationNoteError) a candidate that did not answer the baseline's items."""
    result = fast_eval(env, baseline, candidate) if candidate is not None else None
    links: dict[str, str] = {}
    for label, run in (("baseline", baseline), ("candidate", candidate)):
        if run is None:
            continue
        links[f"{label} run"] = str(run.run_dir)
        page = run.run_dir / TRAJECTORIES_PAGE
        if page.is_file():
            links[f"{label} trajectories"] = str(page)
    return IterationFacts(
        env=env.env_id,
        date=(today or datetime.now(UTC).date()).isoformat(),
        baseline=_run_facts(baseline),
        triage=triage_facts(env, baseline),
        hypothesis=" ".join(experiment[0].hypothesis.split()) if experiment else HYPOTHESIS_PLACEHOLDER,
        hypothesis_from=experiment[1].path if experiment else "placeholder",
        tweak=tweak_lines(env, experiment, batch_id, datasets_root),
        candidate=_run_facts(candidate) if candidate is not None else None,
        fast_eval=result,
        links=links,
    )


def _number(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _answer_lines(run: Mapping[str, Any]) -> list[str]:
    """A run's answers against the split's labels, its collapse flag in bold first (none where answers are no
    labels)."""
    profile = run.get("answers")
    if not profile or not profile.get("n"):
        return []
    flag = [f"**{run['model']}: {profile['collapse']}**", ""] if profile["collapsed"] else []
    return [*flag, f"{run['model']}: {profile_line(profile)}.", ""]


def render(facts: IterationFacts) -> str:
    """The note as markdown."""
    base = facts.baseline
    lines = [
        f"# {facts.env} iteration, {facts.date}",
        "",
        "## Triage of the baseline",
        "",
        f"Run `{base['run_id']}` ({base['model']}, {base['dataset']}, n={base['n_items']}, seed {base['seed']}): "
        f"{facts.triage['n']} scored samples.",
        "",
        *_answer_lines(base),
        "| category | samples |",
        "|---|---|",
        *(f"| {category} | {count} |" for category, count in facts.triage["counts"].items()),
        "",
        "Lowest-reward samples (ids and the verifier's reasons; no model text):",
        "",
        "| id | reward | category | reason |",
        "|---|---|---|---|",
        *(
            f"| {_escape(row['id'])} | {row['reward']:.3f} | {row['category']} | {_escape(row['reason'])} |"
            for row in facts.triage["lowest"]
        ),
        "",
        "## Hypothesis",
        "",
        f"{facts.hypothesis}"
        + ("" if facts.hypothesis_from == "placeholder" else f" (from `{facts.hypothesis_from}`)"),
        "",
        "## The batch or tweak",
        "",
        *(f"- {line}" if not line.startswith("  ") else f"  - {line.strip()}" for line in facts.tweak),
        "",
        "## Fast eval",
        "",
    ]
    if facts.fast_eval is None or facts.candidate is None:
        lines.append("**TO FILL IN**: no candidate run yet (`secverify iterate ... --candidate <run id>`).")
    else:
        cand = facts.candidate
        lines += [
            f"Candidate `{cand['run_id']}` ({cand['model']}, {cand['dataset']}) vs baseline on the same "
            f"{facts.fast_eval['n_paired']} items (seed {base['seed']}); paired bootstrap, seed {SEED}, 95% CI.",
            "",
            *_answer_lines(cand),
            "| quantity | baseline | candidate | delta [95% CI] | p |",
            "|---|---|---|---|---|",
        ]
        for row in facts.fast_eval["paired"]:
            interval = f"[{_number(row['ci_low'], True)}, {_number(row['ci_high'], True)}]"
            lines.append(
                f"| {row['name']} | {_number(row['baseline'])} | {_number(row['candidate'])} | "
                f"{_number(row['delta'], True)} {interval} | {_number(row['p_value'])} |"
            )
        lines += ["", "Headline metrics (the two runs' values; point deltas):", ""]
        lines += ["| metric | baseline | candidate | delta |", "|---|---|---|---|"]
        lines += [
            f"| {row['name']} | {_number(row['baseline'])} | {_number(row['candidate'])} | "
            f"{_number(row['delta'], True)} |"
            for row in facts.fast_eval["headline"]
        ]
    lines += ["", "## Links", "", *(f"- {label}: `{path}`" for label, path in facts.links.items()), ""]
    return "\n".join(lines)


def write_note(notes_dir: Path, facts: IterationFacts) -> Path:
    """outputs/notes/<date>-iteration.md, or -2, -3, … when taken (never overwritten), and its .json sidecar."""
    notes_dir.mkdir(parents=True, exist_ok=True)
    text = render(facts)
    handle, draft = tempfile.mkstemp(dir=notes_dir, prefix=".draft-", suffix=".md")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        number = 1
        while True:
            path = notes_dir / f"{facts.date}-iteration{'' if number == 1 else f'-{number}'}.md"
            try:
                os.link(draft, path)
                break
            except FileExistsError:
                number += 1
    finally:
        os.unlink(draft)
    write_json_atomic(path.with_suffix(".json"), facts.as_dict() | {"note": path.name})
    return path
