"""The Dagster UI in a real browser: headless Chromium drives the project's webserver on loopback as a user would.

It shows every asset group in the global lineage, launches a partitioned eval (E1 × heuristic) from the asset's
Materialize dialog and sees the run succeed; once E1's report is made, every image in the report's metadata renders.
Screenshots of each step are kept under $SECVERIFY_TEST_ARTIFACTS/ui (default outputs/test-artifacts/ui), one
folder per test run.

The instance is the project's dagster.yaml with one change: runs launch at once (DefaultRunCoordinator) instead of
being queued. The queue needs a dagster-daemon, and that daemon would also tick the new-model sensor (running by
default), which backfills every reachable model on every environment: dozens of runs that have nothing to do with
the UI. What the UI does with a launch is the same either way.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest
import yaml
from browser import CHROMIUM, Page, chromium_page
from webserver import running_webserver

from secverify_dagster.assets.keys import checkpoint_evals_key, eval_key, report_key
from secverify_dagster.definitions import defs
from secverify_dagster.partitions import AWAITING_APPROVAL_PARTITION, registry_pairs
from secverify_dagster.pipeline import prepare_instance
from secverify_dagster.resources.models import load_registry
from sv_shared.config import project_root

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"no {CHROMIUM}: install Debian's chromium (make setup does)"),
]

ENV_ID = "e1"
MODEL = "heuristic"
"""E1's rule baseline: a real eval run in seconds, on every machine."""
RUN_TIMEOUT_S = 180.0

_GROUP_NODES = """[...document.querySelectorAll('svg foreignObject.group')].map((node) => {
  const box = node.getBoundingClientRect();
  const inView = box.width > 0 && box.left >= 0 && box.top >= 0 && box.right <= innerWidth && box.bottom <= innerHeight;
  const text = node.firstElementChild?.innerText || '';
  return {name: text.split('\\n')[0].trim(), inView, fetching: text.includes('fetching statuses')};
})"""
"""The collapsed group nodes of the lineage graph: each one's name (its first line), whether it is on screen and
whether it is still fetching its assets' statuses."""

_IMAGES = """(async (scope) => {
  const root = scope ? document.querySelector(scope) : document;
  const images = root ? [...root.querySelectorAll('img')] : [];
  await Promise.all(images.map((img) => img.decode().catch(() => null)));
  return images.map((img) => ({src: img.getAttribute('src').slice(0, 80), complete: img.complete,
                               width: img.naturalWidth}));
})"""
"""Every <img> in a scope, once each has loaded or failed: its source (start), whether complete, its pixel width."""


def _artifacts_dir() -> Path:
    root = Path(os.environ.get("SECVERIFY_TEST_ARTIFACTS") or project_root() / "outputs" / "test-artifacts")
    return root / "ui" / f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{os.getpid()}"


def _instance_config() -> str:
    """The project's dagster.yaml, with runs launched at once instead of queued (see the module's docstring)."""
    config = yaml.safe_load((project_root() / "dagster.yaml").read_text(encoding="utf-8"))
    config["run_coordinator"] = {"module": "dagster._core.run_coordinator", "class": "DefaultRunCoordinator"}
    return yaml.safe_dump(config)


@pytest.fixture()
def instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dg.DagsterInstance]:
    """A fresh Dagster home (storages made, model partitions seeded) and outputs folder, shared with the webserver."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(_instance_config(), encoding="utf-8")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path / "outputs"))
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)  # the API models cannot run here: they are on no grid
    instance = prepare_instance(registry_pairs(load_registry()))
    try:
        yield instance
    finally:
        instance.dispose()


def test_the_ui_shows_the_lineage_launches_an_eval_and_renders_the_report(
    instance: dg.DagsterInstance, tmp_path: Path
) -> None:
    groups = {node.group_name for node in defs.resolve_asset_graph().asset_nodes}
    with running_webserver(os.environ, tmp_path / "webserver.log") as server:
        # E1's data lineage, materialized in-process (as `secverify run` does) while the webserver loads.
        data = defs.resolve_job_def(f"{ENV_ID}_data_job").execute_in_process(instance=instance, raise_on_error=False)
        assert data.success, f"{ENV_ID}_data_job failed before the browser started"
        with chromium_page(_artifacts_dir()) as page:
            url = server.wait_ready()
            _lineage_shows_every_group(page, url, groups)
            _launch_eval_partition_from_the_ui(page, url, instance)
            # Launching from the UI is shown above; the report is materialized in-process, where it takes a second.
            report = defs.resolve_job_def(f"{ENV_ID}_report_job").execute_in_process(
                instance=instance, raise_on_error=False
            )
            assert report.success, f"{ENV_ID}_report_job failed"
            (made,) = report.asset_materializations_for_node(f"{ENV_ID}__report")
            report_folder = Path(made.metadata["report"].value).parent
            plots = sorted(report_folder.rglob("*.png"))
            assert plots, f"the report wrote no plots in {report_folder}"
            _report_plots_render(page, url, plots)


def _lineage_shows_every_group(page: Page, url: str, groups: set[str]) -> None:
    page.navigate(f"{url}/asset-groups")
    page.wait_until(
        lambda: page.evaluate(_GROUP_NODES),
        lambda nodes: (
            {node["name"] for node in nodes if node["inView"]} == groups and not any(node["fetching"] for node in nodes)
        ),
        f"lineage graph with exactly the groups {sorted(groups)} on screen, their assets' statuses loaded",
        timeout_s=60,
    )
    _dismiss_community_dialog(page)
    page.screenshot("1-lineage")


def _dismiss_community_dialog(page: Page) -> None:
    """A fresh Dagster home greets its first visitor with a newsletter dialog over the page; a user skips it."""
    greeted = page.evaluate(
        "new Promise((done) => { const t0 = Date.now(); const poll = () => "
        "document.body.innerText.includes('Join the Dagster community') ? done(true) : "
        "Date.now() - t0 > 10000 ? done(false) : setTimeout(poll, 100); poll(); })"
    )
    if greeted:
        page.click_text("Skip", within="[role=dialog]")
        page.wait_for("!document.body.innerText.includes('Join the Dagster community')", "community dialog closed")


def _launch_eval_partition_from_the_ui(page: Page, url: str, instance: dg.DagsterInstance) -> None:
    asset = eval_key(ENV_ID)
    page.navigate(f"{url}/assets/{asset.to_user_string()}")
    page.click_text("Materialize…")
    title = f"Launch runs to materialize {' / '.join(asset.path)}"
    page.wait_for_text(title, within="[role=dialog]")
    page.click_text("Select a partition or create one", selector="*", within="[role=dialog]")
    page.type_text(MODEL)
    page.click_text(MODEL, selector="[role=menuitem]")
    # Close the partition list the way a user does, by clicking the dialog's title.
    page.click_text(title, selector="*", within="[role=dialog]")
    page.wait_for_text("1 partition", within="[role=dialog]")
    page.screenshot("2-eval-launch-dialog")
    page.click_text("Launch 1 run", within="[role=dialog]")
    run = _follow_launched_run(page, instance, "3-eval-run")
    assert run.tags.get("dagster/from_ui") == "true" and run.tags.get("dagster/partition") == MODEL, run.tags
    assert run.asset_selection == {asset}, run.asset_selection
    materialization = instance.get_latest_materialization_event(asset)
    assert materialization is not None and materialization.run_id == run.run_id
    assert materialization.dagster_event.partition == MODEL


def _report_plots_render(page: Page, url: str, plots: list[Path]) -> None:
    asset = report_key(ENV_ID)
    page.navigate(f"{url}/assets/{asset.to_user_string()}")
    page.wait_for(
        "document.images.length > 0 || document.body.innerText.includes('[Show Markdown]')",
        f"metadata of {asset.to_user_string()}'s materialization (images or markdown)",
    )
    images = page.evaluate(f"{_IMAGES}(null)")
    page.screenshot("4-report-metadata")
    # Each markdown entry opens in a dialog; its images must render there.
    entries = page.count_text("[Show Markdown]")
    for index in range(entries):
        page.click_text("[Show Markdown]", selector="*", nth=index)
        page.wait_for("!!document.querySelector('[role=dialog]')", f"markdown dialog #{index}")
        images += page.evaluate(f"{_IMAGES}('[role=dialog]')")
        page.screenshot(f"5-report-markdown-{index}")
        page.click_text("Close", within="[role=dialog]")
        page.wait_for("!document.querySelector('[role=dialog]')", f"markdown dialog #{index} closed")

    broken = [image for image in images if not (image["complete"] and image["width"] > 0)]
    assert not broken, f"images in {asset.to_user_string()}'s metadata that do not render: {broken}"
    assert len(images) >= len(plots), (
        f"{len(images)} images in {asset.to_user_string()}'s metadata for the report's {len(plots)} plots "
        f"({', '.join(plot.name for plot in plots)})"
    )


def _follow_launched_run(page: Page, instance: dg.DagsterInstance, screenshot: str) -> dg.DagsterRun:
    """From the "Launched run" toast to the run's page; waits for the run to end and the page to show its success."""
    page.wait_for_text("Launched run", exact=False)
    page.click_text("View")
    run_id = page.wait_for(
        "location.pathname.startsWith('/runs/') && location.pathname.split('/')[2]", "the launched run's page"
    )
    run = page.wait_until(
        lambda: instance.get_run_by_id(run_id),
        lambda found: found is not None and found.is_finished,
        f"end of run {run_id}",
        RUN_TIMEOUT_S,
    )
    if run.status != dg.DagsterRunStatus.SUCCESS:
        page.screenshot(f"failed-{screenshot}")
        pytest.fail(f"run {run_id} ended {run.status.value}: {_failure_reasons(instance, run_id)}")
    page.wait_for_text("Success", timeout_s=60)
    page.screenshot(screenshot)
    return run


def _failure_reasons(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    """The errors of a run's failed steps and of the run itself, innermost cause last."""
    reasons = []
    for record in instance.all_logs(run_id):
        event = record.dagster_event
        if event is None or not (event.is_step_failure or event.is_run_failure):
            continue
        error = getattr(event.event_specific_data, "error", None)
        while error is not None:
            reasons.append(error.message.strip())
            error = error.cause
    return reasons


def test_the_ui_explains_automation_checkpoint_lineage_and_approval(
    instance: dg.DagsterInstance, tmp_path: Path
) -> None:
    """What a governance reviewer opens: every schedule and sensor with its description, a checkpoint's evals in
    the lineage between the checkpoint and the report, and the approval job offering the checkpoints that await a
    decision (issue 27)."""
    awaiting = "smollm2-135m-instruct.sft.20261129-ui"
    instance.add_dynamic_partitions(AWAITING_APPROVAL_PARTITION, [awaiting])
    repository = defs.get_repository_def()
    automations = {
        **{schedule.name: schedule.description for schedule in repository.schedule_defs},
        **{sensor.name: sensor.description for sensor in repository.sensor_defs},
    }
    with (
        running_webserver(os.environ, tmp_path / "webserver.log") as server,
        chromium_page(_artifacts_dir()) as page,
    ):
        url = server.wait_ready()
        page.navigate(f"{url}/automation")
        page.wait_for_text("weekly_sweep", timeout_s=60)
        _dismiss_community_dialog(page)
        page.screenshot("1-automation")
        links = page.evaluate(
            "[...document.querySelectorAll('a')].map((a) => a.getAttribute('href'))"
            ".filter((href) => href && /\\/(schedules|sensors)\\//.test(href))"
        )
        assert {link.rsplit("/", 1)[-1] for link in links} == set(automations)
        for link in links:
            name = link.rsplit("/", 1)[-1]
            page.navigate(f"{url}{link}")
            # Its description's first line (a docstring's line breaks are the UI's to wrap).
            page.wait_for_text(automations[name].split("\n")[0], selector="td", exact=False, timeout_s=60)
        page.screenshot("2-sensor-description")
        location = links[0].split("/schedules/")[0].split("/sensors/")[0]

        evals = checkpoint_evals_key("rlft", "e1")
        page.navigate(f"{url}/assets/{evals.to_user_string()}?view=lineage")
        # Upstream the checkpoint and the split it is measured on, downstream the report that shows it.
        for node in ("curated_splits", "report", "ablations"):
            page.wait_for_text(node, timeout_s=60)
        page.screenshot("3-checkpoint-evals-lineage")

        page.navigate(f"{url}{location}/jobs/approve_checkpoint_job/partitions")
        page.wait_for_text(awaiting, timeout_s=60)
        page.wait_for_text("Total partitions", exact=False)
        page.screenshot("4-approval-partitions")

        # An eval asset's grid lists the models that can run on its environment only: E1's baseline and the local
        # model, not another environment's baseline nor an API model without its key.
        page.navigate(f"{url}/assets/{eval_key(ENV_ID).to_user_string()}?view=partitions")
        page.wait_for_text("heuristic", timeout_s=60)
        page.wait_for_text("smollm2-135m-instruct", timeout_s=60)
        shown = page.evaluate("document.body.innerText")
        assert not {"tool-oracle", "phish-rules", "policy-defender", "gpt-5"} & set(shown.split()), shown[:2000]
        page.screenshot("5-e1-partitions")
