"""The regression gate: has a model's core metric on an environment dropped against its previous comparable run?

Core metric (CORE_METRIC): the mean reward over the items both runs drew, where a sample a run gave up (it failed
MAX_ITEM_ATTEMPTS times and the runner completed the run without it) counts as the least reward any answer earns (0,
or minus the penalty weights where the environment has penalties: E1 and E4, -0.7), what an answer the verifier
cannot parse earns, so failing on an item never scores better than answering it wrongly: a model that stops
answering its hard items cannot raise its mean, and an item scored before but given up now counts fully against it.
Each item's two rewards are paired, so per-item difficulty cancels.

Comparable: the previous run is the most recent complete run of the same model on the same environment, started
before the judged one, that agrees on everything that decides what a reward means:
  - the same items: the same dataset (hash) and seed. The runner draws items as a seeded permutation of the split
    (runner.select_items), so runs of different N on one dataset and seed share their first min(N) items, which are
    paired (a run cannot escape the gate by changing N). The records must confirm it: the runs share min(N) items.
  - the same scoring: the verifier version and provenance (scanner versions, rule sets) and the environment's own
    config sections (reward weights, costs, tool budgets, dialogue settings: all but the shared generation, eval,
    data, synthetic and checks sections);
  - the same episode: single turn or tool-using, and for dialogues the same counterparts and judge.
What may differ is the model under test: provider, weights, parameters, generation settings, code version; that is
what a regression comes from. Earlier runs that differ are skipped, and when none is left the verdict names the most
recent one and how it differs: it passes, but never silently.

Regressed, by the seed's rule ("fail CI if reward drops >3% on core metrics"): at least MIN_PAIRED_ITEMS shared
items and a relative change of the paired means below -MAX_RELATIVE_DROP. The seeded paired bootstrap's 95% CI of
(current - previous) is reported with every verdict, and the reason says when a failing drop lies within the noise of
the items; `require_significance` (secverify check --require-significance) fails only a drop whose CI lies entirely
below 0 as well, the stricter reading that lets a 5% drop on 2 of 32 items pass. A run the gate cannot judge (a
non-finite reward, items missing with no record of why) raises UnjudgeableRunError: it is neither passed nor called a
regression.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sv_shared.answers.rewards import reward_floor
from sv_shared.answers.statistics import align_paired, paired_bootstrap
from sv_shared.config import EnvConfig
from sv_shared.registry import ENV_NAMES, EnvironmentNotAvailable, implemented_env_ids
from sv_shared.runs.folder import RunFolder
from sv_shared.runs.records import FinishedRun, complete_runs, latest_complete_runs
from sv_shared.runs.schema import RunMetadata

MAX_RELATIVE_DROP = 0.03
"""A drop of the core metric by more than this share of the previous value is a regression (the seed's rule)."""

MIN_PAIRED_ITEMS = 6
"""Fewer shared items are reported as not judged: one item of 5 moves the mean by 20%, and even a drop on every one of
them has a two-sided sign-test p of 2/2^5 = 0.0625, while the bootstrap CI collapses to a point when all differences
agree and would call it certain."""

CORE_METRIC = "reward_mean"
"""The name the core metric is shown under: mean reward over the shared items, a given-up sample counting the floor."""

CONFIDENCE = 0.95
N_RESAMPLES = 10_000

SHARED_CONFIG_SECTIONS = frozenset(EnvConfig.model_fields) - {"reward_penalties"}
"""Config sections every environment has that do not change how an answer is scored (generation settings belong to
the model under test, the eval, data, synthetic and checks sections choose items or data, which the dataset hash and
seed cover); reward_penalties, which every environment may set, does."""


class UnjudgeableRunError(ValueError):
    """A run whose records the gate cannot judge: a non-finite reward, or items missing with no record of why."""


@dataclass(frozen=True)
class GateVerdict:
    """One model's run on one environment against its previous comparable run (None: there was none)."""

    env_id: str
    model_id: str
    current_run: str
    previous_run: str | None
    n_paired: int
    mean_current: float | None
    """The current run's CORE_METRIC: over the shared items, or over all its items when nothing is paired."""
    mean_previous: float | None
    delta: float | None
    relative_change: float | None
    """delta / |mean_previous|; None when nothing is paired or the previous mean is 0."""
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    regressed: bool
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"metric": CORE_METRIC, **asdict(self)}


@dataclass(frozen=True)
class Judgement:
    """A verdict and the runs it judged (the Dagster check links both folders)."""

    verdict: GateVerdict
    current: FinishedRun
    previous: FinishedRun | None


@dataclass(frozen=True)
class _Scores:
    """A run's rewards by item, the items it gave up, and whether its episodes were tool-using."""

    rewards: dict[str, float]
    given_up: frozenset[str]
    tool_episodes: bool
    floor: float = 0.0
    """The least reward any answer earns under the run's config (sv_shared.answers.rewards.reward_floor)."""

    @property
    def items(self) -> frozenset[str]:
        return frozenset(self.rewards) | self.given_up

    def reward(self, item_id: str) -> float:
        """The item's reward; a given-up item's is the floor, the least any answer earns."""
        return self.rewards.get(item_id, self.floor)

    def mean(self) -> float | None:
        return sum(self.reward(item) for item in self.items) / len(self.items) if self.items else None


def _scores(run: FinishedRun) -> _Scores:
    folder = RunFolder(run.run_dir)
    rewards: dict[str, float] = {}
    tool_episodes = False
    for record in folder.read_results():
        reward = float(record.reward)
        if not math.isfinite(reward):
            raise UnjudgeableRunError(
                f"{folder.results_path}: item {record.id!r} has reward {reward}; a run with a non-finite reward "
                "cannot be judged (re-score it or remove the run)"
            )
        rewards[record.id] = reward
        tool_episodes |= record.turns is not None
    # In a complete run every item was scored or given up, and a given-up item has its failures in errors.jsonl.
    given_up = frozenset(error.id for error in folder.read_errors()) - rewards.keys()
    found = len(rewards) + len(given_up)
    if found != run.metadata.n_items:
        raise UnjudgeableRunError(
            f"{run.run_dir}: its metadata says {run.metadata.n_items} items, its results and errors hold {found}; "
            "items missing with no record of why cannot be judged"
        )
    return _Scores(rewards, given_up, tool_episodes, reward_floor(run.metadata.config))


def _scoring_config(metadata: RunMetadata) -> dict[str, Any]:
    return {section: value for section, value in metadata.config.items() if section not in SHARED_CONFIG_SECTIONS}


def _counterparts(metadata: RunMetadata) -> dict[str, Any] | None:
    if metadata.counterparts is None:
        return None
    return {role: identity.as_dict() for role, identity in sorted(metadata.counterparts.items())}


_ASPECTS: dict[str, Callable[[RunMetadata], Any]] = {
    "environment": lambda metadata: metadata.env,
    "model": lambda metadata: metadata.model.id,
    "dataset hash": lambda metadata: metadata.dataset.hash,
    "seed": lambda metadata: metadata.seed,
    "verifier version": lambda metadata: metadata.verifier_version,
    "verifier provenance": lambda metadata: metadata.verifier_provenance,
    "scoring config": _scoring_config,
    "counterparts": _counterparts,
    "judge": lambda metadata: metadata.judge,
}
"""What must be equal for two runs' rewards to mean the same (see the module's docstring)."""


def _shown(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _differences(
    current: FinishedRun, current_scores: _Scores, previous: FinishedRun
) -> tuple[list[str], _Scores | None]:
    """How previous differs from current in what decides a reward's meaning (empty: comparable), and previous's
    scores where its metadata agrees (a run that differs there is not read further)."""
    problems = [
        f"{aspect} {_shown(read(previous.metadata))} → {_shown(read(current.metadata))}"
        for aspect, read in _ASPECTS.items()
        if read(previous.metadata) != read(current.metadata)
    ]
    if problems:
        return problems, None
    previous_scores = _scores(previous)
    if previous_scores.tool_episodes != current_scores.tool_episodes:
        kinds = {True: "tool-using", False: "single-turn"}
        problems.append(f"episodes {kinds[previous_scores.tool_episodes]} → {kinds[current_scores.tool_episodes]}")
    expected = min(len(previous_scores.items), len(current_scores.items))
    shared = len(previous_scores.items & current_scores.items)
    if shared != expected:
        problems.append(f"items: the runs share {shared} items, not the first {expected} of one seeded draw")
    return problems, previous_scores


def _started(run: FinishedRun) -> tuple[datetime, str]:
    return datetime.fromisoformat(run.metadata.started_at), run.run_id


def _earlier_runs(evals_root: Path, run: FinishedRun) -> list[FinishedRun]:
    """Complete runs of run's model on its environment that started before it (latest session), newest first."""
    earlier = [
        candidate
        for candidate in complete_runs(evals_root, run.metadata.env_name, run.model_id)
        if candidate.run_dir.resolve() != run.run_dir.resolve() and _started(candidate) < _started(run)
    ]
    return sorted(earlier, key=_started, reverse=True)


def _search(
    evals_root: Path, run: FinishedRun, scores: _Scores
) -> tuple[FinishedRun | None, _Scores | None, list[tuple[FinishedRun, list[str]]]]:
    """The previous comparable run and its scores, and the more recent runs skipped, each with how it differs."""
    skipped: list[tuple[FinishedRun, list[str]]] = []
    for candidate in _earlier_runs(evals_root, run):
        problems, candidate_scores = _differences(run, scores, candidate)
        if not problems and candidate_scores is not None:
            return candidate, candidate_scores, skipped
        skipped.append((candidate, problems))
    return None, None, skipped


def previous_comparable_run(evals_root: Path, run: FinishedRun) -> FinishedRun | None:
    """The most recent complete run of the same model and environment started before run that it can be compared
    with (see the module's docstring), or None."""
    previous, _, _ = _search(evals_root, run, _scores(run))
    return previous


def _unpaired(run: FinishedRun, scores: _Scores, previous_run: str | None, reason: str) -> GateVerdict:
    return GateVerdict(
        env_id=run.metadata.env,
        model_id=run.model_id,
        current_run=run.run_id,
        previous_run=previous_run,
        n_paired=0,
        mean_current=scores.mean(),
        mean_previous=None,
        delta=None,
        relative_change=None,
        ci_low=None,
        ci_high=None,
        p_value=None,
        regressed=False,
        reason=reason,
    )


def _paired_records(scores: _Scores, items: Sequence[str]) -> list[Mapping[str, Any]]:
    return [{"id": item, "reward": scores.reward(item)} for item in items]


def _given_up_note(current: _Scores, previous: _Scores, shared: frozenset[str]) -> str:
    lost = len((current.given_up & shared) - previous.given_up)
    regained = len((previous.given_up & shared) - current.given_up)
    notes = []
    if lost:
        notes.append(f"{lost} items given up in this run (scored before) count as reward {current.floor:g}")
    if regained:
        notes.append(f"{regained} items given up before (scored now) count as reward {previous.floor:g} there")
    return "; " + "; ".join(notes) if notes else ""


def _compared(
    run: FinishedRun,
    scores: _Scores,
    previous: FinishedRun,
    previous_scores: _Scores,
    seed: int,
    require_significance: bool = False,
) -> GateVerdict:
    shared = scores.items & previous_scores.items
    if not shared:
        return _unpaired(run, scores, previous.run_id, f"no items shared with run {previous.run_id}: not judged")
    ids, now, before = align_paired(
        _paired_records(scores, sorted(shared)), _paired_records(previous_scores, sorted(shared))
    )
    stats = paired_bootstrap(now, before, n_resamples=N_RESAMPLES, seed=seed, confidence=CONFIDENCE)
    relative = stats.delta / abs(stats.mean_b) if stats.mean_b != 0 else None
    # From a previous mean of 0 any drop is an unbounded relative drop.
    large = relative < -MAX_RELATIVE_DROP if relative is not None else stats.delta < 0
    significant = stats.ci_high < 0
    enough = len(ids) >= MIN_PAIRED_ITEMS
    change = f"{relative:+.1%}" if relative is not None else "relative change undefined: previous mean 0"
    summary = (
        f"{CORE_METRIC} {stats.mean_b:.3f} → {stats.mean_a:.3f} ({change}) on {len(ids)} shared items vs run "
        f"{previous.run_id}; {CONFIDENCE:.0%} CI of the change [{stats.ci_low:+.3f}, {stats.ci_high:+.3f}]"
    )
    regressed = enough and large and (significant or not require_significance)
    noise = "significant" if significant else "the CI includes 0"
    if not enough:
        verdict = f"not judged: fewer than {MIN_PAIRED_ITEMS} shared items"
    elif stats.delta >= 0:
        verdict = "no drop"
    elif not large:
        verdict = f"a drop within the {MAX_RELATIVE_DROP:.0%} allowed ({noise})"
    elif not regressed:
        verdict = f"beyond the {MAX_RELATIVE_DROP:.0%} allowed, but the CI includes 0 and significance is required"
    else:
        verdict = f"REGRESSED: beyond the {MAX_RELATIVE_DROP:.0%} allowed ({noise})"
    return GateVerdict(
        env_id=run.metadata.env,
        model_id=run.model_id,
        current_run=run.run_id,
        previous_run=previous.run_id,
        n_paired=len(ids),
        mean_current=stats.mean_a,
        mean_previous=stats.mean_b,
        delta=stats.delta,
        relative_change=relative,
        ci_low=stats.ci_low,
        ci_high=stats.ci_high,
        p_value=stats.p_value,
        regressed=regressed,
        reason=f"{summary}: {verdict}{_given_up_note(scores, previous_scores, shared)}",
    )


def compare_runs(
    current: FinishedRun, previous: FinishedRun, *, seed: int = 42, require_significance: bool = False
) -> GateVerdict:
    """current against previous on their shared items. Runs that are not comparable (see the module's docstring)
    are not judged: the verdict has no statistics, is not a regression, and its reason says how they differ."""
    scores = _scores(current)
    problems, previous_scores = _differences(current, scores, previous)
    if problems or previous_scores is None:
        return _unpaired(
            current, scores, previous.run_id, f"not comparable with run {previous.run_id}: " + "; ".join(problems)
        )
    return _compared(current, scores, previous, previous_scores, seed, require_significance)


def judge(evals_root: Path, run: FinishedRun, *, seed: int = 42, require_significance: bool = False) -> Judgement:
    """run against its previous comparable run under evals_root; with none, a passing verdict that says why."""
    scores = _scores(run)
    previous, previous_scores, skipped = _search(evals_root, run, scores)
    if previous is not None and previous_scores is not None:
        return Judgement(_compared(run, scores, previous, previous_scores, seed, require_significance), run, previous)
    where = f"{run.model_id} on {run.metadata.env}"
    if not skipped:
        reason = f"no previous comparable run: this is the first complete run of {where}"
    else:
        latest, problems = skipped[0]
        reason = (
            f"no previous comparable run: {len(skipped)} earlier runs of {where} differ; the latest, "
            f"{latest.run_id}, in {'; '.join(problems)}"
        )
    return Judgement(_unpaired(run, scores, None, reason), run, None)


def gate(
    evals_root: Path,
    env_ids: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    *,
    seed: int = 42,
    require_significance: bool = False,
) -> list[GateVerdict]:
    """Each model's latest complete run on each environment (default: all implemented) against its previous
    comparable run; models limits the models judged."""
    verdicts = []
    for env_id in env_ids if env_ids is not None else implemented_env_ids():
        if env_id not in ENV_NAMES:
            raise EnvironmentNotAvailable(f"unknown environment {env_id!r}; known: {', '.join(ENV_NAMES)}")
        for run in latest_complete_runs(evals_root, ENV_NAMES[env_id]):
            if models is None or run.model_id in models:
                verdicts.append(judge(evals_root, run, seed=seed, require_significance=require_significance).verdict)
    return verdicts
