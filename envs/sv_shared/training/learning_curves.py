"""A training run's learning curve: the figures that say whether it learns, against step, from its logged history.

What a reader needs beside each other (issue 26): dev reward and dev balanced accuracy (early stopping's measurements;
a collapsed policy shows as balanced accuracy 0.5 while the reward may rise), the training loss (SFT) or mean sampled
reward (GRPO), the share of GRPO groups whose answers all earned the same reward (they teach nothing), and the policy's
token entropy (a policy near 0 has stopped exploring). TrainingResult.history holds every logged dict with its step;
this module picks those figures out of it, one row per step that logged any of them, and draws and tabulates them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from sv_shared.answers.plots import plot_curve_panels

TRAINING_FIGURES = (
    "loss",
    "reward",
    "entropy",
    "kl",
    "frac_reward_zero_std",
    "groups/without_spread_first_sample",
    "groups/without_spread",
)
"""Figures the trainers log (TRL's names, and grpo_spread's) that the curve keeps."""
DEV_PREFIXES = ("dev_reward", "dev_balanced_accuracy/")
SHOWN_DECIMALS = 3


def _kept(name: str) -> bool:
    return name in TRAINING_FIGURES or name.startswith(DEV_PREFIXES)


def curve_rows(history: Sequence[Mapping[str, Any]]) -> list[dict[str, float]]:
    """One row per step: the step and the curve's figures logged at it (several log entries of one step merge;
    a figure that is not a finite number is left out; a single environment's dev_reward/<env> is dev_reward's
    twin and is left out too)."""
    by_step: dict[int, dict[str, float]] = {}
    for entry in history:
        step = entry.get("step")
        if not isinstance(step, int | float) or isinstance(step, bool):
            continue
        figures = {
            name: float(value)
            for name, value in entry.items()
            if _kept(name) and isinstance(value, int | float) and not isinstance(value, bool) and _finite(value)
        }
        if figures:
            by_step.setdefault(int(step), {}).update(figures)
    per_env = {name for figures in by_step.values() for name in figures if name.startswith("dev_reward/")}
    if len(per_env) == 1:  # one environment: its dev reward is the run's
        for figures in by_step.values():
            figures.pop(next(iter(per_env)), None)
    return [{"step": float(step), **figures} for step, figures in sorted(by_step.items())]


def _finite(value: float) -> bool:
    return value == value and value not in (float("inf"), float("-inf"))


def _series(rows: Sequence[Mapping[str, float]], name: str) -> list[tuple[float, float]]:
    return [(row["step"], row[name]) for row in rows if name in row]


def curve_panels(rows: Sequence[Mapping[str, float]]) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """The curve's series by panel: held-out figures, what training optimised, and exploration."""
    names = sorted({name for row in rows for name in row if name != "step"})
    dev = {name: _series(rows, name) for name in names if name.startswith(DEV_PREFIXES)}
    optimised = {name: _series(rows, name) for name in ("loss", "reward") if name in names}
    shown = ("entropy", "kl", *_spread_figures(names))
    exploration = {name: _series(rows, name) for name in shown if name in names}
    return {
        "held-out dev items": dev,
        "training objective": optimised,
        "exploration (entropy, KL, share of groups without reward spread)": exploration,
    }


def _spread_figures(names: Collection[str]) -> tuple[str, ...]:
    """The zero-spread shares to show: grpo_spread's before and after resampling where it ran (TRL's
    frac_reward_zero_std is then the second one again), TRL's own otherwise."""
    spread = tuple(name for name in ("groups/without_spread_first_sample", "groups/without_spread") if name in names)
    return spread or tuple(name for name in ("frac_reward_zero_std",) if name in names)


def plot_learning_curve(rows: Sequence[Mapping[str, float]], path: Path, *, title: str) -> Path:
    """The curve as a PNG of three panels sharing the step axis (an empty panel says "no data")."""
    return plot_curve_panels(curve_panels(rows), path, title=title, x_label="step")


def curve_markdown(rows: Sequence[Mapping[str, float]]) -> str:
    """The curve as a Markdown table (step, then each figure; blank where a step did not log it)."""
    if not rows:
        return "_No figures were logged._"
    names = sorted({name for row in rows for name in row if name != "step"}, key=_column_order)
    lines = ["| step | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for row in rows:
        cells = [f"{row[name]:.{SHOWN_DECIMALS}f}" if name in row else "" for name in names]
        lines.append(f"| {int(row['step'])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _column_order(name: str) -> tuple[int, str]:
    if name.startswith(DEV_PREFIXES):
        return 0, name
    return 1 + (TRAINING_FIGURES.index(name) if name in TRAINING_FIGURES else len(TRAINING_FIGURES)), name


def curve_summary(rows: Sequence[Mapping[str, float]]) -> dict[str, Any]:
    """Headline figures of the curve: best dev reward and its step, last dev balanced accuracy per environment,
    the mean share of GRPO groups without spread, and the first and last entropy."""
    summary: dict[str, Any] = {"steps": int(rows[-1]["step"]) if rows else 0}
    dev = _series(rows, "dev_reward")
    if dev:
        step, best = max(dev, key=lambda point: (point[1], -point[0]))
        summary["best_dev_reward"] = {"step": int(step), "value": round(best, SHOWN_DECIMALS)}
    for name in sorted({name for row in rows for name in row if name.startswith("dev_balanced_accuracy/")}):
        summary[f"last_{name}"] = round(_series(rows, name)[-1][1], SHOWN_DECIMALS)
    for name in _spread_figures({name for row in rows for name in row}):
        shares = [value for _, value in _series(rows, name)]
        if shares:
            summary[f"mean_{name}"] = round(sum(shares) / len(shares), SHOWN_DECIMALS)
    entropy = _series(rows, "entropy")
    if entropy:
        summary["entropy_first_last"] = [round(entropy[0][1], SHOWN_DECIMALS), round(entropy[-1][1], SHOWN_DECIMALS)]
    return summary
