"""Human spot-check of synthetic batches: a seeded 5% review queue, reviewers' decisions stored with the batch, the
review status against the configured threshold, the CLI, the blocking asset check, and the training gate that leaves
an unreviewed or over-threshold batch out unless an override (recorded) names it."""

from __future__ import annotations

import argparse
import getpass
import json
import multiprocessing
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pytest

from secverify_dagster.assets.keys import sft_dataset_key, synthetic_batch_key
from secverify_dagster.assets.review_checks import CHECK_NAME, build_review_check
from secverify_dagster.assets.training import build_sft_dataset_asset
from secverify_dagster.cli.review import register
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource, ModelRegistryResource
from secverify_dagster.training.settings import SftDatasetSettings, load_sft_dataset_settings
from sv_shared.config import ConfigError, validate_config
from sv_shared.data.datasets import write_dataset
from sv_shared.data.review import REVIEW_QUEUE_FILE, ReviewError, read_review_queue, write_review_queue
from sv_shared.data.review_batches import SyntheticBatch, read_batch
from sv_shared.data.review_decisions import (
    REVIEWS_FILE,
    ReviewSettings,
    read_decisions,
    record_decisions,
    review_status,
)
from sv_shared.registry import get_environment
from sv_shared.training.sft_data import build_sft_dataset
from sv_shared.training.sft_files import read_sft_dataset
from sv_shared.training.synthetic_gate import UNFINISHED, ReviewOverride, gate_batches

E1 = get_environment("e1")
REPO = Path(__file__).resolve().parents[1]
SETTINGS = ReviewSettings(sample_share=0.25, max_rejection_rate=0.2)
"""A quarter of 20 kept examples: 5 to review, so one rejection (20%) passes and two (40%) do not."""


def _write_batch(
    root: Path,
    batch_id: str,
    *,
    items: pl.DataFrame | None = None,
    created_at: str = "2026-11-24T10:00:00+00:00",
) -> Path:
    """A batch folder as the synthetic-batch builder writes it: 20 synthetic E1 items (or the given ones), each with a
    kept completion the verifier rewards (the item's reference answer)."""
    folder = root / "datasets" / "e1" / "batches" / batch_id
    folder.mkdir(parents=True)
    items = E1.data.synthesize(20, seed=7) if items is None else items
    items.write_parquet(folder / "items.parquet")
    kept = []
    for index, item in enumerate(items.to_dicts()):
        kept.append(
            {
                "id": f"{batch_id}-{index:03d}",
                "item_id": str(item[E1.data.id_column]),
                "prompt": E1.episodes.messages(item),
                "completion": E1.verifier.reference_answer(item),
                "reward": 1.0,
                "temperature": 0.7,
            }
        )
    (folder / "kept.jsonl").write_text("".join(json.dumps(row) + "\n" for row in kept), encoding="utf-8")
    (folder / "candidates.jsonl").write_text("".join(json.dumps(row) + "\n" for row in kept), encoding="utf-8")
    counts = {"candidates": len(kept), "kept": len(kept), "dropped": {}}
    info = {"batch_id": batch_id, "env": "e1", "created_at": created_at, "model": "heuristic", "counts": counts}
    (folder / "batch.json").write_text(json.dumps(info), encoding="utf-8")
    write_review_queue(folder, [row["id"] for row in kept], share=SETTINGS.sample_share, seed=SETTINGS.seed)
    return folder


@pytest.fixture
def outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path))
    return tmp_path


@pytest.fixture
def batch(outputs: Path) -> SyntheticBatch:
    return read_batch(_write_batch(outputs, "b1"))


# --- the queue ---


def test_the_sample_is_five_percent_seeded_and_independent_of_order(tmp_path: Path) -> None:
    ids = [f"ex-{index}" for index in range(41)]
    first = write_review_queue(tmp_path / "a", ids)
    assert len(first) == 3  # ceil(0.05 × 41)
    assert write_review_queue(tmp_path / "b", list(reversed(ids))) == first
    assert set(first) <= set(ids) and len(set(first)) == 3
    assert write_review_queue(tmp_path / "c", ids, seed=7) != first
    assert write_review_queue(tmp_path / "d", ["only"]) == ["only"]  # at least one when any is kept
    assert write_review_queue(tmp_path / "e", []) == []
    assert len(write_review_queue(tmp_path / "f", [f"x{i}" for i in range(200)])) == 10
    assert read_review_queue(tmp_path / "a") == first


def test_bad_samples_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ReviewError, match="share"):
        write_review_queue(tmp_path, ["a"], share=0)
    with pytest.raises(ReviewError, match="unique"):
        write_review_queue(tmp_path, ["a", "a"])
    assert not (tmp_path / REVIEW_QUEUE_FILE).exists()


def test_the_queue_is_created_once(tmp_path: Path) -> None:
    ids = [f"ex-{index}" for index in range(40)]
    first = write_review_queue(tmp_path, ids)
    written = (tmp_path / REVIEW_QUEUE_FILE).read_bytes()
    assert write_review_queue(tmp_path, ids) == first  # the same sample: returned as it is
    with pytest.raises(ReviewError, match="different sample"):
        write_review_queue(tmp_path, ids[:20])
    assert (tmp_path / REVIEW_QUEUE_FILE).read_bytes() == written
    assert [path.name for path in tmp_path.iterdir()] == [REVIEW_QUEUE_FILE]  # no temporary file left


def _queue_in_process(folder: str, ids: list[str]) -> list[str]:
    return write_review_queue(Path(folder), ids)


def test_two_processes_queue_the_same_batch_at_once(tmp_path: Path) -> None:
    ids = [f"ex-{index}" for index in range(400)]
    # spawn, not fork: the test process holds other tests' threads (event loops, model runtimes) that a fork copies
    # mid-lock; a forked worker then hung on its task queue once (make test, 2026-11-24).
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        results = pool.starmap(_queue_in_process, [(str(tmp_path), ids), (str(tmp_path), list(reversed(ids)))])
    assert results[0] == results[1] == read_review_queue(tmp_path)
    assert len(results[0]) == 20


# --- decisions and status ---


def test_a_later_decision_by_the_same_reviewer_supersedes_and_both_stay_logged(batch: SyntheticBatch) -> None:
    queue = read_review_queue(batch.path) or []
    assert len(queue) == 5
    early = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
    record_decisions(batch.path, queue, "accept", reviewer="ana", now=early)
    record_decisions(batch.path, [queue[0]], "reject", reviewer="ana", note="label is wrong")
    log = read_decisions(batch.path)
    assert [(d.item, d.decision) for d in log] == [*((example, "accept") for example in queue), (queue[0], "reject")]
    assert log[0].at == "2026-11-24T12:00:00+00:00" and log[-1].note == "label is wrong"
    status = review_status(batch.path, max_rejection_rate=0.2)
    assert (status.reviewed, status.accepted, status.rejected, status.rejected_ids) == (5, 4, 1, (queue[0],))
    assert status.passed  # 1 of 5 = 20%: not above the threshold
    record_decisions(batch.path, [queue[0]], "accept", reviewer="ana")
    assert review_status(batch.path, max_rejection_rate=0.2).rejected == 0


def test_any_reviewers_rejection_counts(batch: SyntheticBatch) -> None:
    queue = read_review_queue(batch.path) or []
    record_decisions(batch.path, queue, "accept", reviewer="ana")
    record_decisions(batch.path, queue[:2], "reject", reviewer="bo", note="leaks the answer")
    status = review_status(batch.path, max_rejection_rate=0.2)
    assert status.rejected == 2 and status.rejection_rate == pytest.approx(0.4)
    assert not status.passed and "rejection rate 40.0%" in status.reason


def test_status_until_every_sampled_example_is_reviewed(batch: SyntheticBatch) -> None:
    queue = read_review_queue(batch.path) or []
    status = review_status(batch.path, max_rejection_rate=0.2)
    assert (status.sampled, status.reviewed, status.rejection_rate, status.passed) == (5, 0, None, False)
    record_decisions(batch.path, queue[:4], "accept", reviewer="ana")
    status = review_status(batch.path, max_rejection_rate=0.2)
    assert status.unreviewed_ids == (queue[4],) and not status.passed
    assert status.reason == "1 of 5 sampled examples not reviewed"


def test_bad_decisions_record_nothing(batch: SyntheticBatch) -> None:
    queue = read_review_queue(batch.path) or []
    not_sampled = next(
        row["id"] for row in map(json.loads, (batch.path / "kept.jsonl").open()) if row["id"] not in queue
    )
    with pytest.raises(ReviewError, match="not in the review queue"):
        record_decisions(batch.path, [queue[0], not_sampled], "accept", reviewer="ana")
    with pytest.raises(ReviewError, match="needs a note"):
        record_decisions(batch.path, [queue[0]], "reject", reviewer="ana")
    with pytest.raises(ReviewError, match="control"):
        record_decisions(batch.path, [queue[0]], "accept", reviewer="ana\nbo")
    assert not (batch.path / REVIEWS_FILE).exists()


def _decide_in_process(folder: str, reviewer: str, example_ids: list[str], rounds: int) -> None:
    for index in range(rounds):
        decision = "accept" if index % 2 else "reject"
        record_decisions(Path(folder), example_ids, decision, reviewer=reviewer, note=f"round {index}")


def test_two_reviewers_at_once_both_land(batch: SyntheticBatch) -> None:
    queue = read_review_queue(batch.path) or []
    with multiprocessing.get_context("spawn").Pool(2) as pool:  # see above: spawn, not fork
        pool.starmap(_decide_in_process, [(str(batch.path), "ana", queue, 30), (str(batch.path), "bo", queue, 30)])
    log = read_decisions(batch.path)
    assert len(log) == 2 * 30 * len(queue)
    assert {reviewer: sum(d.reviewer == reviewer for d in log) for reviewer in ("ana", "bo")} == {"ana": 150, "bo": 150}
    status = review_status(batch.path, max_rejection_rate=0.2)
    assert status.passed and status.accepted == 5  # each reviewer's last round accepted


def test_the_threshold_is_configured_and_validated() -> None:
    review = load_sft_dataset_settings().review
    assert (review.sample_share, review.max_rejection_rate) == (0.05, 0.2)
    with pytest.raises(ConfigError, match="max_rejection_rate"):
        validate_config(ReviewSettings, {"max_rejection_rate": 1.5}, source="configs/sft_datasets.yaml")
    with pytest.raises(ConfigError, match="unknown key"):
        validate_config(ReviewSettings, {"sample_shares": 0.1}, source="configs/sft_datasets.yaml")


# --- CLI ---


def _review(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="secverify")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["review", *argv])
    return int(args.func(args))


def test_cli_round_trip(batch: SyntheticBatch, capsys: pytest.CaptureFixture[str]) -> None:
    queue = read_review_queue(batch.path) or []
    assert _review("--env", "e1", "--batch", "b1", "list") == 0
    listed = capsys.readouterr().out
    assert "sampled 5, reviewed 0" in listed and "NOT PASSED" in listed and " ".join(queue) in listed

    assert _review("--env", "e1", "--batch", "b1", "show", queue[0]) == 0
    shown = capsys.readouterr().out
    example = batch.kept_by_id()[queue[0]]
    assert example.completion in shown and example.prompt[-1].content in shown
    assert f"item {example.item_id}" in shown and "gold label:" in shown and "reward 1.000" in shown

    assert _review("--env", "e1", "--reviewer", "ana", "accept", *queue[1:]) == 0  # default batch: the latest
    assert _review("--env", "e1", "--reviewer", "ana", "reject", queue[0], "--note", "wrong | label") == 0
    out = capsys.readouterr().out
    assert "rejected 1 by ana" in out and "PASSED (reviewed)" in out
    report = (batch.path / "review.md").read_text(encoding="utf-8")
    assert "**PASSED**" in report and "ana: reject" in report and "wrong \\| label" in report
    assert all(example_id in report for example_id in queue)
    with pytest.raises(SystemExit):
        _review("--env", "e1", "reject", queue[0])  # a rejection says why
    assert _review("--env", "e1", "accept", queue[1]) == 0
    assert read_decisions(batch.path)[-1].reviewer == getpass.getuser()  # the default reviewer: the OS user


def test_show_redacts_unsafe_dialogue_text(outputs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """E5/E6 texts are screened before a reviewer sees them, as everywhere text is stored or shown."""
    e6 = get_environment("e6")
    validation = REPO / "envs" / "sv_shared" / "judging" / "data" / "judge_validation.jsonl"
    unsafe = next(row for row in map(json.loads, validation.open(encoding="utf-8")) if row["unsafe"])
    folder = outputs / "datasets" / "e6" / "batches" / "d1"
    folder.mkdir(parents=True)
    item = e6.data.load_source("embedded").head(1)
    item.write_parquet(folder / "items.parquet")
    example = {
        "id": "d1-000",
        "item_id": str(item[e6.data.id_column][0]),
        "prompt": [{"role": "user", "content": unsafe["request"]}],
        "completion": unsafe["response"],
        "reward": 1.0,
    }
    (folder / "kept.jsonl").write_text(json.dumps(example) + "\n", encoding="utf-8")
    (folder / "batch.json").write_text(json.dumps({"batch_id": "d1", "env": "e6", "created_at": "x"}), encoding="utf-8")
    write_review_queue(folder, ["d1-000"])
    assert _review("--env", "e6", "show", "d1-000") == 0
    shown = capsys.readouterr().out
    assert "[REDACTED sha256:" in shown and unsafe["response"] not in shown


def test_cli_names_unknown_batches_and_examples(batch: SyntheticBatch) -> None:
    with pytest.raises(ReviewError, match=r"no batch 'nope'.*b1"):
        _review("--env", "e1", "--batch", "nope", "list")
    with pytest.raises(ReviewError, match="not in the review queue"):
        _review("--env", "e1", "show", "b1-999")


# --- the asset check ---


@dg.asset(key=synthetic_batch_key("e1"))
def _batch_already_written() -> None:
    """Stands in for the synthetic-batch asset: the batch folder is already on disk (the fixture wrote it)."""


def _evaluate_check(outputs: Path) -> dg.AssetCheckEvaluation:
    result = dg.materialize(
        [_batch_already_written, build_review_check("e1", SETTINGS)],
        resources={"artifacts": ArtifactStoreResource(root=str(outputs))},
        raise_on_error=False,
    )
    (evaluation,) = result.get_asset_check_evaluations()
    assert evaluation.asset_check_key == dg.AssetCheckKey(synthetic_batch_key("e1"), CHECK_NAME)
    return evaluation


def test_asset_check_fails_until_the_latest_batch_passes_its_review(outputs: Path) -> None:
    old = read_batch(_write_batch(outputs, "b0", created_at="2026-11-20T10:00:00+00:00"))
    record_decisions(old.path, read_review_queue(old.path) or [], "accept", reviewer="ana")
    latest = read_batch(_write_batch(outputs, "b1"))
    queue = read_review_queue(latest.path) or []

    evaluation = _evaluate_check(outputs)
    assert not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.ERROR
    assert evaluation.metadata["batch"].value == "b1"  # the latest, not the reviewed older one
    assert evaluation.metadata["unreviewed_ids"].value == queue and evaluation.metadata["sampled"].value == 5

    record_decisions(latest.path, queue, "accept", reviewer="ana")
    record_decisions(latest.path, queue[:2], "reject", reviewer="bo", note="ambiguous")
    evaluation = _evaluate_check(outputs)
    assert not evaluation.passed and evaluation.metadata["rejected"].value == 2
    assert evaluation.metadata["rejection_rate"].value == pytest.approx(0.4)

    record_decisions(latest.path, queue[1:2], "accept", reviewer="bo")
    evaluation = _evaluate_check(outputs)
    assert evaluation.passed and evaluation.metadata["unreviewed_ids"].value == []


def test_the_check_is_blocking() -> None:
    (spec,) = build_review_check("e1", SETTINGS).check_specs
    assert spec.blocking


# --- the training gate ---


def _e1_items() -> list[dict[str, Any]]:
    return E1.data.curate([E1.data.load_source("embedded")], seed=42)["train"].head(5).to_dicts()


def test_gate_leaves_out_an_unreviewed_batch_and_names_it(batch: SyntheticBatch) -> None:
    gate = gate_batches([batch], SETTINGS)
    dataset = build_sft_dataset(E1, _e1_items(), min_reward=0.8, synthetic=gate)
    assert not any(example.source.startswith("synthetic:") for example in dataset.examples)
    (dropped,) = dataset.provenance["synthetic_batches"]["dropped_batches"]
    assert dropped["batch"] == "b1" and dropped["reason"] == "5 of 5 sampled examples not reviewed"
    assert dataset.provenance["synthetic_batches"]["included"] == []


def test_gate_includes_a_passing_batch_rescored_by_the_verifier(batch: SyntheticBatch) -> None:
    record_decisions(batch.path, read_review_queue(batch.path) or [], "accept", reviewer="ana")
    kept = batch.kept()
    # A kept example the verifier does not reward is not trained on, whatever the batch recorded.
    broken = {**kept[0].model_dump(), "completion": "no answer here"}
    rows = [broken, *(example.model_dump() for example in kept[1:])]
    (batch.path / "kept.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    dataset = build_sft_dataset(E1, _e1_items(), min_reward=0.8, synthetic=gate_batches([batch], SETTINGS))
    synthetic = [example for example in dataset.examples if example.source == "synthetic:b1"]
    assert len(synthetic) == len(kept) - 1
    assert {example.target for example in synthetic} == {example.completion for example in kept[1:]}
    counts = dataset.provenance["counts"]["synthetic"]
    assert counts["kept"] == len(kept) - 1 and sum(counts["dropped"].values()) == 1
    assert dataset.provenance["synthetic_batches"]["included"][0]["review"]["passed"]


def test_an_override_includes_a_failing_batch_and_is_recorded(batch: SyntheticBatch) -> None:
    override = ReviewOverride(batch="b1", reason="urgent ablation, reviewed offline", by="lead")
    dataset = build_sft_dataset(E1, _e1_items(), min_reward=0.8, synthetic=gate_batches([batch], SETTINGS, [override]))
    assert any(example.source == "synthetic:b1" for example in dataset.examples)
    provenance = dataset.provenance["synthetic_batches"]
    assert provenance["overrides"] == [{**override.as_dict(), "review_reason": "5 of 5 sampled examples not reviewed"}]
    assert provenance["dropped_batches"] == []
    with pytest.raises(ReviewError, match="do not exist: b9"):
        gate_batches([batch], SETTINGS, [ReviewOverride(batch="b9", reason="typo", by="lead")])


def test_sft_dataset_asset_shows_dropped_batches_and_overrides(batch: SyntheticBatch, outputs: Path) -> None:
    splits = E1.data.curate([E1.data.load_source("embedded")], seed=42)
    for split in ("train", "dev", "test"):
        write_dataset(splits[split], outputs / "datasets" / "e1" / "curated" / f"{split}.parquet", {})
    # A reviewed batch whose items are test items: passed, yet never trained on (a checkpoint is measured on them).
    leaking = read_batch(_write_batch(outputs, "b0", items=splits["test"].head(4), created_at="2026-11-01T00:00:00Z"))
    record_decisions(leaking.path, read_review_queue(leaking.path) or [], "accept", reviewer="ana")
    asset = build_sft_dataset_asset(E1, SftDatasetSettings(min_reward=0.8), SETTINGS)
    resources = {"models": ModelRegistryResource(), "artifacts": ArtifactStoreResource(root=str(outputs))}

    def materialize(config: dict[str, Any]) -> dict[str, Any]:
        result = dg.materialize(
            [asset], resources=resources, run_config={"ops": {"e1__sft_dataset": {"config": config}}}
        )
        (event,) = result.get_asset_materialization_events()
        assert event.asset_key == sft_dataset_key("e1")
        return {key: value.value for key, value in event.materialization.metadata.items()}

    plain = materialize({})
    assert plain["synthetic_batches"] == ["b0"] and plain["review_overrides"] == []
    assert plain["dropped_batches"] == [{"batch": "b1", "reason": "5 of 5 sampled examples not reviewed"}]
    # A batch whose build stopped part-way (no batch.json yet) is listed as dropped, with why, not passed over.
    half_built = outputs / "datasets" / "e1" / "batches" / "b2"
    (half_built / "samples").mkdir(parents=True)
    assert materialize({})["dropped_batches"] == [
        {"batch": "b2", "reason": UNFINISHED},
        {"batch": "b1", "reason": "5 of 5 sampled examples not reviewed"},
    ]
    shutil.rmtree(half_built)

    override = {"batch": "b1", "reason": "reviewed in the meeting", "by": "lead"}
    overridden = materialize({"override_review": [override]})
    assert overridden["synthetic_batches"] == ["b0", "b1"] and overridden["dropped_batches"] == []
    assert overridden["review_overrides"] == [{**override, "review_reason": "5 of 5 sampled examples not reviewed"}]
    assert overridden["examples"] > plain["examples"]
    # Of the 24 synthetic examples, 4 copy held-out (test) items and 3 are left out to keep the labels balanced.
    dropped = {"held_out_overlap": 4, "label_balance": 3}
    assert overridden["kept"]["synthetic"] == 17 and overridden["dropped"]["synthetic"] == dropped
    written = read_sft_dataset(outputs / "datasets" / "e1" / "sft")
    assert written.provenance["synthetic_batches"]["overrides"][0]["by"] == "lead"
    assert written.provenance["counts"]["synthetic"] == {"kept": 17, "dropped": dropped}
    assert {example.source for example in written.examples} == {"reference", "synthetic:b1"}


def test_an_rlft_run_draws_a_batch_s_items_only_once_its_review_passed(outputs: Path) -> None:
    from secverify_dagster.training.inputs import sliced_items
    from secverify_dagster.training.paths import TrainingError, TrainingPaths
    from sv_shared.config.experiments import DataSlices

    curated = outputs / "datasets" / "e1" / "curated"
    curated.mkdir(parents=True)
    for split, frame in E1.data.curate([E1.data.load_source("embedded")], seed=42).items():
        frame.write_parquet(curated / f"{split}.parquet")
    folder = _write_batch(outputs, "b1")
    paths = TrainingPaths(outputs)
    with pytest.raises(TrainingError, match=r"synthetic batch b1 is not used for training: .*not reviewed"):
        sliced_items(E1, paths, DataSlices(synthetic_batches=["b1"]))
    override = ReviewOverride(batch="b1", reason="labels checked by hand", by="ana")
    pool, hashes = sliced_items(E1, paths, DataSlices(synthetic_batches=["b1"], override_review=[override]))
    assert "e1/batches/b1" in hashes
    record_decisions(folder, read_review_queue(folder) or [], "accept", reviewer="ana")
    pool, _ = sliced_items(E1, paths, DataSlices(synthetic_batches=["b1"]))
    batch_ids = set(pl.read_parquet(folder / "items.parquet")[E1.data.id_column])
    assert batch_ids & set(pool[E1.data.id_column])
