"""Report plots as PNG files, byte-identical from run to run: reliability diagrams, risk–coverage curves, tournament
success curves, training runs' learning curves, reward by model, changes since the previous period, error-triage
counts, and rates intent-to-treat beside the same rates over the answered items.

Figures are built with the object-oriented API on an Agg canvas, so no global backend is switched and nothing
here touches pyplot's state (safe inside Dagster workers and test runs that use other backends).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

_DPI = 100
# No "Software" entry (it names the matplotlib version) so the PNG bytes depend only on the data.
_PNG_METADATA: dict[str, Any] = {"Software": None}


def _save(figure: Figure, path: Path) -> Path:
    """Write the figure as a deterministic PNG, creating the parent folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(figure)
    figure.savefig(path, format="png", dpi=_DPI, metadata=_PNG_METADATA)
    return path


def _no_data(axes: Any) -> None:
    axes.text(0.5, 0.5, "no data", ha="center", va="center", transform=axes.transAxes, color="grey")


def plot_reliability(bins_by_model: Mapping[str, Sequence[Mapping[str, Any]]], path: Path, *, title: str) -> Path:
    """Reliability diagram: accuracy against mean confidence per bin for each model, with bin counts below.

    Takes the reliability_bins of classification_metrics; empty bins (None accuracy or confidence) are skipped
    in the upper panel and shown as zero counts in the lower one.
    """
    figure = Figure(figsize=(7.0, 7.0))
    upper, lower = figure.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    upper.plot([0.0, 1.0], [0.0, 1.0], linestyle="--", color="grey", linewidth=1.0, label="perfect calibration")
    models = list(bins_by_model)
    width_share = 0.8 / max(1, len(models))
    for position, model in enumerate(models):
        bins = list(bins_by_model[model])
        filled = [b for b in bins if b.get("mean_confidence") is not None and b.get("accuracy") is not None]
        (line,) = upper.plot(
            [float(b["mean_confidence"]) for b in filled],
            [float(b["accuracy"]) for b in filled],
            marker="o",
            label=model,
        )
        # Grouped count bars: each model gets a slice of every bin's width.
        lefts = [
            float(b["lower"]) + (float(b["upper"]) - float(b["lower"])) * (0.1 + position * width_share) for b in bins
        ]
        widths = [(float(b["upper"]) - float(b["lower"])) * width_share for b in bins]
        counts = [int(b.get("count") or 0) for b in bins]
        lower.bar(lefts, counts, width=widths, align="edge", color=line.get_color(), label=model)
    if not models:
        _no_data(upper)
    upper.set_xlim(0.0, 1.0)
    upper.set_ylim(0.0, 1.05)
    upper.set_ylabel("accuracy")
    upper.set_title(title)
    upper.legend(loc="upper left", fontsize="small")
    upper.grid(True, alpha=0.3)
    lower.set_xlabel("confidence")
    lower.set_ylabel("count")
    lower.grid(True, alpha=0.3)
    figure.tight_layout()
    return _save(figure, path)


def plot_risk_coverage(
    curves_by_model: Mapping[str, Sequence[Mapping[str, Any]]],
    path: Path,
    *,
    title: str,
    aurc_by_model: Mapping[str, float | None] | None = None,
) -> Path:
    """Risk against coverage for each model (lower is better); the legend carries each model's AURC if given.

    Takes the risk_coverage curves of classification_metrics; a model with no answered items gets a legend
    entry saying so, and points with a None value are skipped.
    """
    aurc_by_model = aurc_by_model or {}
    figure = Figure(figsize=(7.0, 5.0))
    axes = figure.subplots()
    for model, curve in curves_by_model.items():
        points = [p for p in curve if p.get("coverage") is not None and p.get("risk") is not None]
        aurc = aurc_by_model.get(model)
        label = model if aurc is None else f"{model} (AURC {float(aurc):.3f})"
        if not points:
            label = f"{label} (no answers)"
        axes.plot(
            [float(p["coverage"]) for p in points],
            [float(p["risk"]) for p in points],
            marker="." if len(points) < 30 else None,
            label=label,
        )
    if not curves_by_model:
        _no_data(axes)
    else:
        axes.legend(loc="best", fontsize="small")
    axes.set_xlim(0.0, 1.0)
    axes.set_ylim(0.0, 1.05)
    axes.set_xlabel("coverage (share of all items answered)")
    axes.set_ylabel("risk (error rate among answered)")
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    figure.tight_layout()
    return _save(figure, path)


def plot_success_curves(curves: Mapping[str, Sequence[tuple[int, float]]], path: Path, *, title: str) -> Path:
    """Attack-success rate per round for each attacker → defender pairing (the tournament's success curves)."""
    figure = Figure(figsize=(7.0, 4.5))
    axes = figure.add_subplot(1, 1, 1)
    if not any(curves.values()):
        _no_data(axes)
    for label, points in sorted(curves.items()):
        if points:
            rounds, rates = zip(*sorted(points), strict=True)
            axes.plot(rounds, rates, marker="o", label=label)
    axes.set_xlabel("round")
    axes.set_ylabel("attack-success rate (judged)")
    axes.set_ylim(-0.02, 1.02)
    axes.set_title(title)
    if any(curves.values()):
        axes.legend(fontsize="small", loc="best")
        axes.xaxis.get_major_locator().set_params(integer=True)
    return _save(figure, path)


def plot_curve_panels(
    panels: Mapping[str, Mapping[str, Sequence[tuple[float, float]]]], path: Path, *, title: str, x_label: str
) -> Path:
    """Stacked panels sharing the x axis, each with its named series of (x, y) points (a training run's learning
    curve: sv_shared.training.learning_curves)."""
    figure = Figure(figsize=(7.0, 2.6 * max(1, len(panels)) + 0.6))
    axes_list = figure.subplots(max(1, len(panels)), 1, sharex=True, squeeze=False)[:, 0]
    for axes, (panel, series) in zip(axes_list, panels.items(), strict=False):
        drawn = False
        for label, points in sorted(series.items()):
            if points:
                xs, ys = zip(*sorted(points), strict=True)
                axes.plot(xs, ys, marker="o", markersize=3, label=label)
                drawn = True
        if drawn:
            axes.legend(fontsize="small", loc="best")
        else:
            _no_data(axes)
        axes.set_title(panel, fontsize="medium")
    axes_list[-1].set_xlabel(x_label)
    figure.suptitle(title)
    return _save(figure, path)


def _interval_bars(
    axes: Any,
    labels: Sequence[str],
    centres: Sequence[float],
    lows: Sequence[float],
    highs: Sequence[float],
    colors: Sequence[str],
) -> None:
    """Horizontal points with their interval as error bars, one row per label, top to bottom."""
    rows = list(range(len(labels)))[::-1]
    for row, centre, low, high, color in zip(rows, centres, lows, highs, colors, strict=True):
        axes.errorbar(centre, row, xerr=[[centre - low], [high - centre]], fmt="o", color=color, capsize=4)
    axes.set_yticks(rows, labels)
    axes.set_ylim(-0.7, len(labels) - 0.3)


def plot_reward_by_model(rewards: Mapping[str, Mapping[str, float]], path: Path, *, title: str) -> Path:
    """Each model's mean reward with its 95% bootstrap CI (the `reward` of a run's metrics: mean, ci_low, ci_high)."""
    figure = Figure(figsize=(7.0, 1.2 + 0.45 * max(1, len(rewards))))
    axes = figure.subplots()
    if rewards:
        models = sorted(rewards)
        _interval_bars(
            axes,
            models,
            [float(rewards[model]["mean"]) for model in models],
            [float(rewards[model]["ci_low"]) for model in models],
            [float(rewards[model]["ci_high"]) for model in models],
            ["tab:blue"] * len(models),
        )
    else:
        _no_data(axes)
    # Rewards are at most 1; E1's and E4's go below 0 (their cost penalty), so the axis starts at the lowest interval.
    lowest = min((float(rewards[model]["ci_low"]) for model in rewards), default=0.0)
    axes.set_xlim(min(0.0, lowest) - 0.02, 1.02)
    axes.set_xlabel("mean reward (95% bootstrap CI)")
    axes.set_title(title)
    axes.grid(True, axis="x", alpha=0.3)
    figure.tight_layout()
    return _save(figure, path)


def plot_period_deltas(deltas: Sequence[Mapping[str, Any]], path: Path, *, title: str) -> Path:
    """Each model's reward change against the previous period (delta, ci_low, ci_high over the paired items); a
    regression (`regressed`) is drawn red, a change whose CI excludes 0 orange, the rest grey."""
    figure = Figure(figsize=(7.0, 1.2 + 0.45 * max(1, len(deltas))))
    axes = figure.subplots()
    if deltas:
        colors = [
            "tab:red" if row["regressed"] else "tab:orange" if row["ci_low"] > 0 or row["ci_high"] < 0 else "grey"
            for row in deltas
        ]
        _interval_bars(
            axes,
            [str(row["model"]) for row in deltas],
            [float(row["delta"]) for row in deltas],
            [float(row["ci_low"]) for row in deltas],
            [float(row["ci_high"]) for row in deltas],
            colors,
        )
    else:
        _no_data(axes)
    axes.axvline(0.0, color="black", linewidth=1.0)
    axes.set_xlabel("Δ mean reward vs previous period (95% paired bootstrap CI)")
    axes.set_title(title)
    axes.grid(True, axis="x", alpha=0.3)
    figure.tight_layout()
    return _save(figure, path)


def plot_category_counts(
    counts_by_model: Mapping[str, Mapping[str, int]],
    categories: Sequence[str],
    path: Path,
    *,
    title: str,
    colors: Mapping[str, str] | None = None,
) -> Path:
    """Stacked horizontal bars: how many of each model's samples fell in each category (error triage), the legend
    below the axes so it never hides a bar."""
    figure = Figure(figsize=(7.0, 1.9 + 0.45 * max(1, len(counts_by_model))))
    axes = figure.subplots()
    models = sorted(counts_by_model)
    rows = list(range(len(models)))[::-1]
    lefts = [0.0] * len(models)
    for category in categories:
        widths = [float(counts_by_model[model].get(category, 0)) for model in models]
        axes.barh(rows, widths, left=lefts, label=category, color=(colors or {}).get(category))
        lefts = [left + width for left, width in zip(lefts, widths, strict=True)]
    if models:
        axes.set_yticks(rows, models)
        axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), fontsize="small", ncols=len(categories))
    else:
        _no_data(axes)
    axes.set_xlabel("samples")
    axes.set_title(title)
    figure.tight_layout()
    return _save(figure, path)


def plot_rates_itt_vs_answered(
    rates_by_model: Mapping[str, Mapping[str, Any]],
    path: Path,
    *,
    title: str,
    rate_names: Sequence[str] = ("accuracy", "f1", "fpr", "fnr"),
) -> Path:
    """One panel per model: each rate intent-to-treat (filled) beside the same rate over the answered items (hatched),
    from the `rates` of binary_rates; an undefined rate is left out and marked "–", so a model that answers little
    shows the gap between the two views at a glance."""
    models = sorted(rates_by_model)
    figure = Figure(figsize=(7.0, 1.0 + 1.6 * max(1, len(models))))
    panels = figure.subplots(max(1, len(models)), 1, squeeze=False)[:, 0]
    if not models:
        _no_data(panels[0])
    positions = list(range(len(rate_names)))
    for axes, model in zip(panels, models, strict=False):
        rates = rates_by_model[model]
        for offset, view, style in (
            (-0.2, "itt", {"color": "tab:blue"}),
            (0.2, "answered", {"hatch": "//", "fill": False, "edgecolor": "tab:blue"}),
        ):
            block = rates.get(view) or {}
            values = [block.get(name) for name in rate_names]
            heights = [0.0 if value is None else float(value) for value in values]
            label = f"{'ITT (headline)' if view == 'itt' else 'answered'}, n={block.get('n', 0)}"
            bars = axes.bar([p + offset for p in positions], heights, width=0.4, label=label, **style)
            axes.bar_label(bars, labels=["–" if v is None else f"{v:.2f}" for v in values], fontsize="x-small")
        axes.set_xticks(
            positions, [name if name in ("accuracy", "precision", "recall") else name.upper() for name in rate_names]
        )
        # Headroom above 1.0 for the bar labels and the legend, so neither hides a bar.
        axes.set_ylim(0.0, 1.45)
        axes.set_ylabel(model, fontsize="small")
        axes.legend(loc="upper center", fontsize="x-small", ncols=2)
    panels[0].set_title(title)
    figure.tight_layout()
    return _save(figure, path)
