"""Bootstrap statistics: exact degenerate cases, agreement with a plain loop, and seeded reproducibility."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import sv_shared.answers.statistics as statistics
from sv_shared.answers.statistics import PairedBootstrap, align_paired, bootstrap_mean_ci, paired_bootstrap


def _loop_percentile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolation percentile written out by hand (numpy's default method)."""
    position = q / 100.0 * (len(sorted_values) - 1)
    below = math.floor(position)
    above = min(below + 1, len(sorted_values) - 1)
    return sorted_values[below] + (sorted_values[above] - sorted_values[below]) * (position - below)


def _loop_resampled_means(values: list[float], n_resamples: int, seed: int) -> list[float]:
    """One resample at a time, each drawn with its own rng call, summed in a plain loop."""
    rng = np.random.default_rng(seed)
    n = len(values)
    means = []
    for _ in range(n_resamples):
        indices = rng.integers(0, n, size=n)
        means.append(sum(values[int(j)] for j in indices) / n)
    return means


def test_identical_samples_give_zero_delta() -> None:
    a = [0.1, 0.5, 0.9, 0.3]
    result = paired_bootstrap(a, list(a), n_resamples=500)
    assert result.delta == 0.0
    assert (result.ci_low, result.ci_high) == (0.0, 0.0)
    assert result.p_value == 1.0


def test_constant_shift_collapses_the_interval() -> None:
    b = [0.0, 0.25, 0.5, 1.0, 0.75]
    a = [value + 0.5 for value in b]
    result = paired_bootstrap(a, b, n_resamples=500)
    assert result.delta == 0.5
    assert (result.ci_low, result.ci_high) == (0.5, 0.5)
    # Every resampled delta is positive: no share at or below zero.
    assert result.p_value == 0.0
    assert result.mean_a == pytest.approx(1.0)
    assert result.mean_b == pytest.approx(0.5)


def test_paired_bootstrap_matches_a_plain_loop() -> None:
    a = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.3]
    b = [0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.8]
    n_resamples, seed = 400, 7
    differences = [x - y for x, y in zip(a, b, strict=True)]
    deltas = sorted(_loop_resampled_means(differences, n_resamples, seed))
    at_or_below = sum(1 for d in deltas if d <= 0) / n_resamples
    at_or_above = sum(1 for d in deltas if d >= 0) / n_resamples

    result = paired_bootstrap(a, b, n_resamples=n_resamples, seed=seed, confidence=0.9)
    assert result.ci_low == pytest.approx(_loop_percentile(deltas, 5.0), abs=1e-12)
    assert result.ci_high == pytest.approx(_loop_percentile(deltas, 95.0), abs=1e-12)
    assert result.p_value == pytest.approx(min(1.0, 2 * min(at_or_below, at_or_above)), abs=1e-12)
    assert result.delta == pytest.approx(sum(a) / 7 - sum(b) / 7)
    assert (result.n, result.n_resamples, result.seed, result.confidence) == (7, 400, 7, 0.9)


def test_two_item_p_value() -> None:
    # Differences [1, 0]: a resample's mean delta is <= 0 only when both draws pick item 2 (about 1 in 4),
    # so p is about 2 * 1/4; with this seed, exactly twice the share the loop sees.
    result = paired_bootstrap([1.0, 0.0], [0.0, 0.0], n_resamples=2000, seed=3)
    share = sum(1 for d in _loop_resampled_means([1.0, 0.0], 2000, 3) if d <= 0) / 2000
    assert result.p_value == pytest.approx(2 * share)
    assert 0.4 < result.p_value < 0.6


def test_swapping_models_mirrors_the_result() -> None:
    a = [0.2, 0.9, 0.4, 0.8, 0.1, 0.7]
    b = [0.3, 0.5, 0.4, 0.2, 0.6, 0.9]
    forward = paired_bootstrap(a, b, n_resamples=1000, seed=11)
    backward = paired_bootstrap(b, a, n_resamples=1000, seed=11)
    assert backward.delta == pytest.approx(-forward.delta)
    assert backward.ci_low == pytest.approx(-forward.ci_high)
    assert backward.ci_high == pytest.approx(-forward.ci_low)
    assert backward.p_value == pytest.approx(forward.p_value)


def test_same_seed_same_result_and_seed_matters() -> None:
    a = [0.2, 0.9, 0.4, 0.8, 0.1, 0.7, 0.35]
    b = [0.3, 0.5, 0.4, 0.2, 0.6, 0.9, 0.1]
    assert paired_bootstrap(a, b, seed=5) == paired_bootstrap(a, b, seed=5)
    assert paired_bootstrap(a, b, seed=5) != paired_bootstrap(a, b, seed=6)
    assert bootstrap_mean_ci(a, seed=5) == bootstrap_mean_ci(a, seed=5)


def test_chunked_draws_equal_one_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    a = [0.2, 0.9, 0.4, 0.8, 0.1, 0.7, 0.35]
    b = [0.3, 0.5, 0.4, 0.2, 0.6, 0.9, 0.1]
    whole = paired_bootstrap(a, b, n_resamples=1000, seed=9)
    whole_ci = bootstrap_mean_ci(a, n_resamples=1000, seed=9)
    monkeypatch.setattr(statistics, "_MAX_INDEX_CELLS", 20)  # 2 rows of 7 per chunk
    assert paired_bootstrap(a, b, n_resamples=1000, seed=9) == whole
    assert bootstrap_mean_ci(a, n_resamples=1000, seed=9) == whole_ci


def test_to_dict_is_plain_json() -> None:
    result = paired_bootstrap([0.1, 0.2, 0.9], [0.0, 0.4, 0.3], n_resamples=100)
    assert isinstance(result, PairedBootstrap)
    record = result.to_dict()
    assert set(record) == {
        "mean_a",
        "mean_b",
        "delta",
        "ci_low",
        "ci_high",
        "p_value",
        "n",
        "n_resamples",
        "seed",
        "confidence",
    }
    for key, value in record.items():
        assert type(value) is (int if key in {"n", "n_resamples", "seed"} else float), key
    json.dumps(record, allow_nan=False)


def test_invalid_inputs_raise() -> None:
    with pytest.raises(ValueError):
        paired_bootstrap([1.0, 0.0], [1.0])
    with pytest.raises(ValueError):
        paired_bootstrap([], [])
    with pytest.raises(ValueError):
        paired_bootstrap([float("nan")], [0.0])
    with pytest.raises(ValueError):
        paired_bootstrap([1.0], [0.0], confidence=1.0)
    with pytest.raises(ValueError):
        paired_bootstrap([1.0], [0.0], n_resamples=0)
    with pytest.raises(ValueError):
        bootstrap_mean_ci([])


def test_bootstrap_mean_ci_matches_a_plain_loop() -> None:
    values = [0.0, 1.0, 0.5, 0.25, 1.0]
    means = sorted(_loop_resampled_means(values, 300, 13))
    mean, low, high = bootstrap_mean_ci(values, n_resamples=300, seed=13)
    assert mean == pytest.approx(0.55)
    assert low == pytest.approx(_loop_percentile(means, 2.5), abs=1e-12)
    assert high == pytest.approx(_loop_percentile(means, 97.5), abs=1e-12)
    assert bootstrap_mean_ci([0.25] * 4) == (0.25, 0.25, 0.25)
    assert all(type(value) is float for value in (mean, low, high))


def test_align_paired() -> None:
    records_a = [
        {"id": "c", "reward": 0.3},
        {"id": "a", "reward": 1.0},
        {"id": "b", "reward": 0.5},
        {"id": "only_a", "reward": 0.9},
        {"id": "unscored", "reward": None},
    ]
    records_b = [
        {"id": "a", "reward": 0.0},
        {"id": "b", "reward": 0.25},
        {"id": "c", "reward": 1},
        {"id": "only_b", "reward": 0.1},
        {"id": "unscored", "reward": 0.4},
    ]
    ids, a, b = align_paired(records_a, records_b)
    assert ids == ["a", "b", "c"]
    assert a == [1.0, 0.5, 0.3]
    assert b == [0.0, 0.25, 1.0]
    assert all(type(value) is float for value in a + b)

    ids, a, b = align_paired([{"k": 2, "v": 1.0}], [{"k": "2", "v": 0.0}], key="k", value="v")
    assert (ids, a, b) == (["2"], [1.0], [0.0])
    assert align_paired([], [{"id": "a", "reward": 1.0}]) == ([], [], [])
    with pytest.raises(ValueError):
        align_paired([{"id": "a", "reward": 1.0}, {"id": "a", "reward": 0.0}], [])
