"""A policy collapsed onto one answer is flagged wherever its results are shown (sv_shared/answers/collapse.py)."""

from __future__ import annotations

import json

import pytest

from secverify_dagster.reports.environment_report import summary_lines
from sv_shared.answers.collapse import answer_profile, profile_line
from sv_shared.registry import get_environment

SPLIT = ["Benign"] * 19 + ["Malicious"] * 13


def test_a_policy_answering_one_label_almost_everywhere_is_collapsed() -> None:
    # the learning run's SFT checkpoint: "Benign" at 0.9 on 30 of 32 items
    answers = ["Benign"] * 19 + ["Benign"] * 11 + ["Malicious"] * 2
    profile = answer_profile(answers, SPLIT, [0.9] * 32)
    assert profile["collapsed"]
    assert profile["collapse"] == (
        "COLLAPSED: answers 'Benign' on 94% of items, where the split has 59% 'Benign'; balanced accuracy 0.58"
    )
    assert profile["answers"] == {"Benign": 30 / 32, "Malicious": 2 / 32}
    assert profile["split"] == {"Benign": 19 / 32, "Malicious": 13 / 32}
    assert profile["recall"] == {"Benign": 1.0, "Malicious": 2 / 13}
    assert profile["balanced_accuracy"] == pytest.approx((1.0 + 2 / 13) / 2)
    assert profile["best_constant"] == {"answer": "Benign", "accuracy": 19 / 32, "agreement": 30 / 32}
    assert (profile["distinct_answers"], profile["distinct_confidences"]) == (2, 1)


def test_answering_a_label_as_often_as_the_split_holds_it_is_no_collapse() -> None:
    split = ["Benign"] * 19 + ["Malicious"]
    profile = answer_profile(list(split), split)
    assert not profile["collapsed"] and profile["collapse"] is None and profile["balanced_accuracy"] == 1.0


def test_completions_that_did_not_parse_are_format_failures_not_a_collapse() -> None:
    profile = answer_profile([None] * 32, SPLIT)
    assert not profile["collapsed"] and profile["answers"] == {"(no answer)": 1.0}
    assert profile["balanced_accuracy"] == 0.0 and profile["distinct_confidences"] is None


def test_always_abstaining_is_a_collapse_onto_the_abstention() -> None:
    profile = answer_profile(["Abstain"] * 32, SPLIT)
    assert profile["collapsed"] and profile["collapse"].startswith("COLLAPSED: answers 'Abstain' on 100% of items")


def test_a_detection_run_flags_its_collapse_above_its_reward() -> None:
    env = get_environment("e1")
    items = {f"i{k}": {"label": label} for k, label in enumerate(SPLIT)}
    answer = {"label": "Benign", "confidence": 0.9, "rationale": "x"}
    records = [{"id": item_id, "parsed": answer, "reward": 0.5, "components": {}, "error": None} for item_id in items]
    metrics = env.verifier.aggregate(records, items)
    assert metrics["answers"]["collapsed"]
    lines = summary_lines(env, metrics)
    assert lines[0].startswith("COLLAPSED: answers 'Benign' on 100% of items, where the split has 59% 'Benign'")
    assert lines[2] == profile_line(metrics["answers"])
    assert "agrees with always 'Benign' on 100%" in lines[2]
    json.dumps(metrics)  # plain data all the way down
