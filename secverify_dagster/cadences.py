"""The seed's cadences as dates: which weeks are bi-weekly weeks, and which models a sweep may ask for.

"Every other week" has no cron form, and ISO-week parity is not it: a 53-week ISO year (2026) puts two odd weeks
together across the new year. A bi-weekly week is one whose distance in days from a fixed Monday is a multiple of
14, so consecutive runs are always exactly 14 days apart.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import date, timedelta

from secverify_dagster.resources.models import ModelSpec, Reachability, reachability

WEEKLY_ENVS = ("e1", "e2", "e3", "e4")
"""The weekly quick sweep's environments (N=10 each)."""

NIGHTLY_ENVS = ("e1", "e2", "e3", "e4")
"""The nightly regression evals' environments (the unmodified open checkpoints)."""

BIWEEKLY_ANCHOR = date(2026, 11, 23)
"""A Monday: the first bi-weekly week starts here; the others every 14 days before and after it."""


def biweekly_period_start(day: date) -> date:
    """The Monday that starts the 14-day period holding `day` (floor division: days before the anchor work too)."""
    return BIWEEKLY_ANCHOR + timedelta(days=14 * ((day - BIWEEKLY_ANCHOR).days // 14))


def is_biweekly_week(day: date) -> bool:
    """Whether `day` falls in the first week of its 14-day period (the week the bi-weekly jobs run)."""
    return (day - biweekly_period_start(day)).days < 7


def runnable_pairs(
    models: Collection[str],
    env_ids: Collection[str],
    registry: Mapping[str, ModelSpec],
    baselines: Mapping[str, Collection[str]],
) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """(env, model) pairs a sweep should request, and why every other pair is left out: a model no longer in the
    registry (retired), one configured for other environments, a rule baseline of another environment, a model
    whose key or endpoint is not set here. Decided from configuration before any run is requested."""
    runnable: list[tuple[str, str]] = []
    left_out: dict[str, str] = {}
    for env_id in env_ids:
        for model_id in models:
            if model_id not in registry:
                left_out[f"{env_id}:{model_id}"] = "retired: no longer in the model registry"
                continue
            status: Reachability = reachability(
                registry[model_id], env_id, available_baselines=baselines.get(env_id, ())
            )
            if status.ok:
                runnable.append((env_id, model_id))
            else:
                left_out[f"{env_id}:{model_id}"] = status.reason
    return runnable, left_out


def is_open_base_model(spec: ModelSpec) -> bool:
    """An unmodified open-weights checkpoint (what the nightly regression evals watch): served by us, not an API,
    not a rule baseline, not one of our own trained checkpoints."""
    return spec.provider in ("openai_compatible", "local_transformers") and spec.stage is None
