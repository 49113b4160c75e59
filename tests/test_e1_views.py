"""E1's feature-ablated views: what a view hides and keeps, view runs kept apart from full runs, and the report's
"Robustness to missing fields" section built from them (the functions the CLI, the eval asset and the report call)."""

from __future__ import annotations

from pathlib import Path

import pytest

from secverify_dagster.reports.runs import RunView
from secverify_dagster.reports.views import (
    UnknownViewError,
    dataset_views,
    robustness_lines,
    robustness_rows,
    view_dataset,
    view_evals_root,
)
from secverify_dagster.resources.models import load_registry
from secverify_dagster.runner.datasets import embedded_dataset
from secverify_dagster.runner.eval_runner import EvalRunner
from sv_env_network_logs import views
from sv_env_network_logs.schema import FEATURE_COLUMNS, validate_flows
from sv_shared.registry import get_environment
from sv_shared.runs.records import complete_runs, latest_complete_runs

N = 12


@pytest.fixture(scope="module")
def env():
    return get_environment("e1")


def test_a_view_blanks_its_fields_and_keeps_ids_labels_and_the_rest(env) -> None:
    test = embedded_dataset(env, split="test", seed=42).frame
    for name in env.data.views:
        viewed = env.data.view(test, name)
        hidden = views.FIELD_VIEWS[name]
        assert viewed.select(hidden).null_count().row(0) == (test.height,) * len(hidden)
        kept = [column for column in test.columns if column not in hidden]
        assert viewed.select(kept).equals(test.select(kept))
    assert set(dataset_views(env)) == {"no-bytes", "no-packets", "no-state", "no-service"}
    with pytest.raises(views.UnknownViewError, match="no-bytez"):
        views.ablate(test, "no-bytez")


def test_view_dataset_names_the_view_and_refuses_unknown_ones(env) -> None:
    dataset = embedded_dataset(env, split="test", seed=42)
    viewed = view_dataset(env, dataset, "no-packets")
    assert viewed.source == "embedded:test:no-packets" and viewed.split == "test"
    assert viewed.frame["flow_id"].to_list() == dataset.frame["flow_id"].to_list()
    assert viewed.hash != dataset.hash  # a distinct run, paired with the full one by item id
    with pytest.raises(UnknownViewError, match="no-bytes, no-packets"):
        view_dataset(env, dataset, "no-ports")
    with pytest.raises(UnknownViewError, match="has no view"):
        view_dataset(get_environment("e4"), dataset, "no-bytes")


def test_view_runs_feed_the_robustness_section_and_never_the_headline(env, tmp_path: Path) -> None:
    evals_root = tmp_path / "evals"
    spec = load_registry()["heuristic"]
    dataset = embedded_dataset(env, split="test", seed=42)
    full = EvalRunner(env, spec, evals_root=evals_root).run(dataset, n=N, seed=42)
    for view in ("no-bytes", "no-state"):
        outcome = EvalRunner(env, spec, evals_root=view_evals_root(evals_root, view)).run(
            view_dataset(env, dataset, view), n=N, seed=42
        )
        assert outcome.status == "complete" and outcome.run_dir.is_relative_to(evals_root / "views" / view)
    # The full run stays the model's only run on the split for every reader of evals/.
    assert [run.run_dir for run in latest_complete_runs(evals_root, env.name)] == [full.run_dir]
    assert len(complete_runs(evals_root, env.name)) == 1

    runs = [RunView.read(complete_runs(evals_root, env.name)[0])]
    rows = {row["view"]: row for row in robustness_rows(env, runs, evals_root)}
    assert rows["no-packets"]["source"] == "embedded:test:no-packets" and "missing" in rows["no-packets"]
    state = rows["no-state"]
    assert state["delta_accuracy"]["n_paired"] == N
    assert state["delta_accuracy"]["ci_low"] <= state["delta_accuracy"]["delta"] <= state["delta_accuracy"]["ci_high"]
    assert state["accuracy"] - full.summary.metrics["accuracy"] == pytest.approx(state["delta_accuracy"]["delta"])
    lines = robustness_lines(env, runs, list(rows.values()))
    assert lines[1] == "## Robustness to missing fields"
    table = [line for line in lines if line.startswith("| heuristic |")]
    assert [line.split(" | ")[1] for line in table] == ["full", "no-bytes", "no-packets", "no-state", "no-service"]
    assert "no complete run of this view" in table[-1]


def test_an_environment_without_views_has_no_robustness_section() -> None:
    assert robustness_lines(get_environment("e4"), [], []) == []


def test_ablated_flows_still_validate_against_the_schema(env) -> None:
    """A view keeps each flow's id (its content hash as recorded), so only the hash recomputation is skipped."""
    test = embedded_dataset(env, split="test", seed=42).frame
    for name in env.data.views:
        assert validate_flows(env.data.view(test, name), check_hashes=False).height == test.height


def test_every_combination_of_missing_field_groups_hides_exactly_their_fields(env) -> None:
    """The 2^4 combinations the baseline figures are measured on (sv_env_network_logs.figures)."""
    test = embedded_dataset(env, split="test", seed=42).frame
    combinations = views.missing_groups()
    assert len(combinations) == 2 ** len(views.ABLATED_VIEWS) == len(set(combinations))
    assert combinations[0] == () and views.combined_name(()) == views.FULL_VIEW
    assert views.combined_name(("no-bytes", "no-packets")) == "no-bytes+no-packets"
    for missing in combinations:
        hidden = {field for view in missing for field in views.FIELD_VIEWS[view]}
        viewed = views.ablate_together(test, missing)
        assert {column for column in test.columns if viewed[column].null_count() == test.height} >= hidden
        kept = [column for column in test.columns if column not in hidden]
        assert viewed.select(kept).equals(test.select(kept))


def test_keep_only_blanks_every_other_flow_field_and_keeps_ids_and_labels(env) -> None:
    test = embedded_dataset(env, split="test", seed=42).frame
    endpoints = views.keep_only(test, views.ENDPOINT_FIELDS)
    for column in FEATURE_COLUMNS:
        if column in views.ENDPOINT_FIELDS:
            assert endpoints[column].equals(test[column])
        else:
            assert endpoints[column].null_count() == test.height
    assert endpoints.select("flow_id", "label").equals(test.select("flow_id", "label"))
