"""Rates intent-to-treat beside answered-only: a model that fails the answer format cannot report a low FPR, every
rate a report shows comes in both views with the headline named, and summaries written before keep being read."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from test_reports import W48, _build, _scores, write_run

from secverify_dagster.reports.environment_report import summary_lines
from sv_shared.answers.costs import CostTable
from sv_shared.answers.metrics import RATES_LEGEND, Outcome, binary_rates, classification_metrics, with_rates
from sv_shared.registry import get_environment
from sv_shared.runs.folder import RunFolder
from sv_shared.runs.schema import RunSummary

GARBLED = "Benign, I think. The flow looks normal"
"""An answer with no JSON object: a format failure in both detection environments."""


def _negative_items(env_id: str, negative_label: str, count: int) -> list[dict[str, Any]]:
    env = get_environment(env_id)
    rows = env.data.load_source("embedded").to_dicts()
    negatives = [row for row in rows if row[env.data.label_column] == negative_label]
    assert len(negatives) >= count
    return negatives[:count]


def _run_metrics(env_id: str, items: list[dict[str, Any]], completions: list[str]) -> dict[str, Any]:
    """The metrics the runner would write: each completion scored by the environment's verifier, then aggregated."""
    verifier = get_environment(env_id).verifier
    id_column = get_environment(env_id).data.id_column
    records = [
        verifier.score(item, completion).to_record() for item, completion in zip(items, completions, strict=True)
    ]
    return verifier.aggregate(records, {item[id_column]: item for item in items})


@pytest.mark.parametrize(("env_id", "negative_label"), [("e4", "Legitimate"), ("e1", "Benign")])
def test_46_format_failures_on_50_negatives_give_itt_fpr_092_not_0(env_id: str, negative_label: str) -> None:
    verifier = get_environment(env_id).verifier
    items = _negative_items(env_id, negative_label, 50)
    # The example: 4 correct answers, 46 that do not parse.
    completions = [verifier.reference_answer(item) or "" for item in items[:4]] + [GARBLED] * 46
    metrics = _run_metrics(env_id, items, completions)
    rates = metrics["rates"]
    assert rates["headline"] == "itt"
    assert rates["itt"]["fpr"] == pytest.approx(46 / 50)
    assert rates["itt"]["accuracy"] == pytest.approx(4 / 50)
    assert rates["answered"]["n"] == 4
    assert rates["answered"]["fpr"] == 0.0
    assert rates["answered"]["accuracy"] == 1.0
    assert metrics["n_format_failures"] == 46
    # A false alarm among the answered items moves both views.
    flagged = [
        json.dumps({"label": "Malicious" if env_id == "e1" else "Phishing", "confidence": 0.9, "evidence": []}),
        *completions[1:],
    ]
    rates = _run_metrics(env_id, items, flagged)["rates"]
    assert rates["itt"]["fpr"] == pytest.approx(47 / 50)
    assert rates["answered"]["fpr"] == pytest.approx(1 / 4)


def _random_outcomes(rng: random.Random, n: int) -> list[Outcome]:
    outcomes = []
    for _ in range(n):
        truth = rng.random() < 0.4
        kind = rng.choice(["answer", "answer", "abstain", "failure"])
        if kind == "answer":
            outcomes.append(Outcome(truth, rng.random() < 0.5, False, round(rng.random(), 2)))
        elif kind == "abstain":
            outcomes.append(Outcome(truth, None, True, 0.5))
        else:
            outcomes.append(Outcome(truth, None, False, None))
    return outcomes


def test_older_summaries_get_both_views_derived_from_their_counts() -> None:
    costs = CostTable(miss=5.0, false_alarm=1.0, abstain=0.5)
    rng = random.Random(42)
    for n in (0, 1, 7, 60):
        outcomes = _random_outcomes(rng, n)
        metrics = classification_metrics(outcomes, costs=costs)
        legacy = {key: value for key, value in metrics.items() if key != "rates"}
        assert with_rates(legacy)["rates"] == metrics["rates"] == binary_rates(outcomes)
    # SmolLM2's E4 run written before the change: 44 format failures, and "fpr": 0.0 in its summary.
    smollm2_e4 = {
        "n": 44,
        "n_answered": 0,
        "n_positive": 24,
        "n_negative": 20,
        "confusion": {"tp": 0, "fp": 0, "tn": 0, "fn": 24},
        "fpr": 0.0,
        "f1": 0.0,
    }
    rates = with_rates(smollm2_e4)["rates"]
    assert (rates["itt"]["fpr"], rates["itt"]["fnr"], rates["itt"]["accuracy"]) == (1.0, 1.0, 0.0)
    assert rates["answered"]["n"] == 0 and rates["answered"]["fpr"] is None
    # Metrics that are not a binary classifier's, or whose counts contradict each other, come back as they were.
    assert with_rates({"n": 3, "asr": 0.5}) == {"n": 3, "asr": 0.5}
    contradictory = {**smollm2_e4, "n_answered": 30}  # more answered misses than positives
    assert with_rates(contradictory) == contradictory


def test_reports_show_both_views_with_the_headline_also_for_an_older_run(tmp_path: Path) -> None:
    evals = tmp_path / "evals"
    run = write_run(evals, "smollm2", _scores(44, 0), started=W48)
    folder = RunFolder(run.run_dir)
    older = folder.read_summary().as_dict()
    # The metrics an older E1 aggregate wrote: 44 items, 40 unanswered, the 4 answered all right.
    older["metrics"] |= {
        "n_answered": 4,
        "n_positive": 24,
        "n_negative": 20,
        "confusion": {"tp": 1, "fp": 0, "tn": 3, "fn": 23},
        "fpr": 0.0,
    }
    folder.write_summary(RunSummary.parse(older, "summary.json"))
    report, data = _build(tmp_path, evals, "latest")
    markdown = report.markdown_path.read_text(encoding="utf-8")
    header = next(line for line in markdown.splitlines() if line.startswith("| model | n | reward"))
    cells = [cell.strip() for cell in header.split("|")]
    row = [
        cell.strip() for cell in next(line for line in markdown.splitlines() if line.startswith("| smollm2")).split("|")
    ]
    assert row[cells.index("FPR (ITT)")] == f"{17 / 20:.3f}"
    assert row[cells.index("FPR (answered)")] == "0.000"
    assert row[cells.index("FNR (ITT)")] == f"{23 / 24:.3f}"
    assert row[cells.index("FNR (answered)")] == "0.000"
    assert markdown.count(RATES_LEGEND) == 2  # under the results table and under the rates plot
    assert "Headline: (ITT)" in report.html_path.read_text(encoding="utf-8")
    assert any(plot.name == "rates.png" for plot in report.plots)
    assert data["metrics"]["smollm2"]["rates"]["itt"]["fpr"] == pytest.approx(17 / 20)


def test_the_cli_summary_names_the_headline() -> None:
    e1 = get_environment("e1")
    metrics = classification_metrics(
        [Outcome(False, None, False, None), Outcome(False, False, False, 0.9)],
        costs=CostTable(miss=1.0, false_alarm=1.0, abstain=0.5),
    )
    metrics |= {"reward": {"mean": 0.5, "ci_low": 0.0, "ci_high": 1.0}, "format_errors": {"no_json_object": 1}}
    lines = summary_lines(e1, metrics)
    assert "FPR (ITT) 0.500" in lines[0] and "FPR (answered) 0.000" in lines[0]
    assert lines[-1] == RATES_LEGEND
