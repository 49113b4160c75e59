"""A training run's learning curve from its logged history: the figures kept, merged per step, drawn and tabulated."""

from __future__ import annotations

import math
from pathlib import Path

import dagster as dg

from secverify_dagster.pipeline import _draw_blocked_learning_curve
from sv_shared.training.learning_curves import (
    curve_markdown,
    curve_panels,
    curve_rows,
    curve_summary,
    plot_learning_curve,
)

GRPO_HISTORY = [
    {"step": 1, "loss": 0.2, "reward": 0.1, "entropy": 0.9, "frac_reward_zero_std": 1.0, "grad_norm": 0.0},
    {"step": 1, "groups/without_spread": 0.5, "groups/without_spread_first_sample": 1.0},
    {"step": 2, "loss": 0.1, "reward": 0.3, "entropy": 0.5, "frac_reward_zero_std": 0.0, "epoch": 0.1},
    {"step": 2, "dev_reward": 0.40, "dev_reward/e1": 0.40, "dev_balanced_accuracy/e1": 0.5},
    {"step": 4, "loss": math.nan, "reward": 0.4, "entropy": 0.3},
    {"step": 4, "dev_reward": 0.55, "dev_reward/e1": 0.55, "dev_balanced_accuracy/e1": 0.75},
    {"train_runtime": 12.0},
]


def test_rows_keep_the_curve_figures_per_step_and_leave_out_the_rest() -> None:
    rows = curve_rows(GRPO_HISTORY)
    assert [row["step"] for row in rows] == [1, 2, 4]
    assert rows[0] == {
        "step": 1,
        "loss": 0.2,
        "reward": 0.1,
        "entropy": 0.9,
        "frac_reward_zero_std": 1.0,
        "groups/without_spread": 0.5,
        "groups/without_spread_first_sample": 1.0,
    }
    assert "loss" not in rows[2]  # NaN is no figure
    # One environment: dev_reward/e1 is dev_reward's twin.
    assert all("dev_reward/e1" not in row for row in rows)
    mixed = curve_rows([{"step": 5, "dev_reward": 0.5, "dev_reward/e1": 0.4, "dev_reward/e4": 0.6}])
    assert mixed == [{"step": 5, "dev_reward": 0.5, "dev_reward/e1": 0.4, "dev_reward/e4": 0.6}]


def test_summary_names_the_best_dev_step_and_the_share_of_groups_without_spread() -> None:
    summary = curve_summary(curve_rows(GRPO_HISTORY))
    assert summary == {
        "steps": 4,
        "best_dev_reward": {"step": 4, "value": 0.55},
        "last_dev_balanced_accuracy/e1": 0.75,
        "mean_groups/without_spread_first_sample": 1.0,
        "mean_groups/without_spread": 0.5,
        "entropy_first_last": [0.9, 0.3],
    }
    assert curve_summary([]) == {"steps": 0}


def test_zero_spread_is_shown_before_and_after_resampling_and_trl_share_only_without_them() -> None:
    """grpo_spread's trained batch is what TRL's frac_reward_zero_std measures, so with both the curve shows the share
    before resampling and the share left out, not the same series twice; a plain TRL run keeps TRL's figure."""
    exploration = curve_panels(curve_rows(GRPO_HISTORY))[
        "exploration (entropy, KL, share of groups without reward spread)"
    ]
    assert list(exploration) == ["entropy", "groups/without_spread_first_sample", "groups/without_spread"]
    plain = [entry for entry in GRPO_HISTORY if not any(name.startswith("groups/") for name in entry)]
    plain_rows = curve_rows(plain)
    assert list(curve_panels(plain_rows)["exploration (entropy, KL, share of groups without reward spread)"]) == [
        "entropy",
        "frac_reward_zero_std",
    ]
    assert curve_summary(plain_rows)["mean_frac_reward_zero_std"] == 0.5


def test_the_table_and_the_plot(tmp_path: Path) -> None:
    rows = curve_rows(GRPO_HISTORY)
    table = curve_markdown(rows).splitlines()
    assert table[0].startswith("| step | dev_balanced_accuracy/e1 | dev_reward | loss | reward | entropy |")
    assert table[3].startswith("| 2 | 0.500 | 0.400 | 0.100 | 0.300 | 0.500 |")
    assert curve_markdown([]) == "_No figures were logged._"
    first = plot_learning_curve(rows, tmp_path / "a.png", title="e1")
    again = plot_learning_curve(rows, tmp_path / "b.png", title="e1")
    assert first.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert first.read_bytes() == again.read_bytes()  # deterministic, as every report plot
    assert plot_learning_curve([], tmp_path / "empty.png", title="e1").is_file()


def test_a_failed_safety_scan_does_not_hide_the_learning_curve() -> None:
    """The scan is a blocking check, so Dagster skips the checkpoint's downstream assets in the same run; `secverify
    train` then draws the learning curve in a run of its own (the curve is what a reviewer reads to see why)."""

    @dg.asset
    def checkpoint() -> None:
        return None

    @dg.asset_check(asset=checkpoint, blocking=True)
    def safety_scan() -> dg.AssetCheckResult:
        return dg.AssetCheckResult(passed=False, metadata={"reason": "5 unsafe conversations vs the parent's 3"})

    @dg.asset(deps=[checkpoint])
    def learning_curve() -> None:
        return None

    defs = dg.Definitions(assets=[checkpoint, learning_curve], asset_checks=[safety_scan])
    job = defs.resolve_implicit_global_asset_job_def()
    with dg.instance_for_test() as instance:
        result = job.execute_in_process(
            instance=instance, asset_selection=[checkpoint.key, learning_curve.key], raise_on_error=False
        )
        drawn = {event.asset_key for event in result.get_asset_materialization_events()}
        assert drawn == {checkpoint.key}  # the blocking check skipped the curve
        _draw_blocked_learning_curve(job, instance, learning_curve.key, result)
        assert instance.get_latest_materialization_event(learning_curve.key) is not None
        runs = instance.get_runs()
        _draw_blocked_learning_curve(job, instance, checkpoint.key, result)  # materialized already: no new run
        assert len(instance.get_runs()) == len(runs) == 2
