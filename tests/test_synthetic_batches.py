"""Synthetic batches: which sampled candidates are kept and why not, the batch folder, resume, concurrency, targeting,
the Dagster asset and the CLI."""

from __future__ import annotations

import argparse
import json
import math
import threading
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from secverify_dagster.assets.keys import synthetic_batch_key
from secverify_dagster.assets.synthetic_batches import build_synthetic_batch_asset, build_synthetic_batch_assets
from secverify_dagster.cli import synth as cli_synth
from secverify_dagster.research.synthetic_batches import (
    BatchRequest,
    ItemSlice,
    ItemSource,
    SyntheticBatchError,
    build_synthetic_batch,
    embedded_source,
    failed_in_run,
)
from secverify_dagster.resources.dagster_resources import ArtifactStoreResource, ModelRegistryResource
from secverify_dagster.resources.models import load_registry
from secverify_dagster.runner.datasets import EvalDataset, embedded_dataset
from secverify_dagster.runner.eval_runner import EvalRunner
from sv_shared.data.datasets import write_dataset
from sv_shared.data.review import read_review_queue
from sv_shared.data.review_batches import batches_root, list_batches, read_batch
from sv_shared.registry import get_environment
from sv_shared.runs.folder import RunFolder, read_jsonl
from sv_shared.training.batch_folder import CANDIDATES_FILE, SAMPLES_DIR
from sv_shared.training.batch_items import FailedItems, ItemSliceError, base_item_id, targeted_slice
from sv_shared.training.candidates import (
    CandidateError,
    SampledCompletion,
    candidate_counts,
    completion_verifier,
    gold_verdicts,
    judge_candidates,
)
from sv_shared.training.sft_data import build_sft_dataset
from sv_shared.training.synthetic_gate import BatchGate

E1 = get_environment("e1")
REGISTRY = load_registry()
TRAIN = embedded_dataset(E1, split="train", seed=42).frame.sort("flow_id")


def _answer(label: str, confidence: float) -> str:
    return json.dumps({"label": label, "confidence": confidence, "rationale": "flow pattern"})


def _scored(item: dict, temperature: float, sample: int, completion: str) -> SampledCompletion:
    verdict = E1.verifier.score(item, completion)
    return SampledCompletion(
        item_id=item["flow_id"],
        temperature=temperature,
        sample=sample,
        completion=completion,
        reward=verdict.reward,
        components=verdict.components,
        prompt=E1.episodes.messages(item),
    )


def _source(frame: pl.DataFrame = TRAIN) -> ItemSource:
    return ItemSource("curated-train", frame, "embedded:train")


def _request(**overrides) -> BatchRequest:
    settings = {
        "temperatures": (0.3, 0.7),
        "samples_per_temperature": 2,
        "n_items": 10,
        "min_reward": 0.5,
    }
    return BatchRequest(**(settings | overrides))


# --- keep / drop ---


def test_each_drop_reason_on_crafted_completions():
    item = TRAIN.row(0, named=True)
    gold, wrong = item["label"], "Benign" if item["label"] == "Malicious" else "Malicious"
    sampled = [
        _scored(item, 0.3, 0, "no json here"),
        _scored(item, 0.3, 1, _answer(wrong, 0.9)),
        _scored(item, 0.7, 0, _answer(gold, 0.0)),  # right label, rewarded 0.8 for its zero confidence
        _scored(item, 0.7, 1, _answer(gold, 0.9)),
        _scored(item, 1.0, 0, "  " + _answer(gold, 0.9) + "\n"),  # the same answer again
        _scored(item, 1.0, 1, _answer("Abstain", 0.9)),
    ]
    judged = judge_candidates(E1, {item["flow_id"]: item}, sampled, min_reward=0.9)
    reasons = {(c.sampled.temperature, c.sampled.sample): c.drop_reason for c in judged}
    assert reasons == {
        (0.3, 0): "schema:no_json_object",
        (0.3, 1): "disagrees_with_label",
        (0.7, 0): "below_min_reward",
        (0.7, 1): None,
        (1.0, 0): "duplicate",
        (1.0, 1): "disagrees_with_label",
    }
    counts = candidate_counts(judged)
    assert counts["candidates"] == 6 and counts["kept"] == 1
    assert counts["dropped"] == {
        "below_min_reward": 1,
        "disagrees_with_label": 2,
        "duplicate": 1,
        "schema:no_json_object": 1,
    }
    assert counts["by_temperature"]["1.0"] == {
        "candidates": 2,
        "kept": 0,
        "dropped": {"disagrees_with_label": 1, "duplicate": 1},
    }
    for group in [counts, *counts["by_temperature"].values()]:
        assert group["kept"] + sum(group["dropped"].values()) == group["candidates"]


def test_a_high_reward_with_the_wrong_label_is_not_kept():
    """The label check is the verifier agreeing with the gold: a reward alone (here forged) does not keep it."""
    item = TRAIN.row(0, named=True)
    wrong = "Benign" if item["label"] == "Malicious" else "Malicious"
    forged = SampledCompletion(item["flow_id"], 0.3, 0, _answer(wrong, 0.9), reward=1.0)
    (judged,) = judge_candidates(E1, {item["flow_id"]: item}, [forged], min_reward=0.5)
    assert judged.drop_reason == "disagrees_with_label"


def test_environment_without_a_label_in_its_answer_is_judged_by_reward_alone():
    """E2's answers list violations and carry no label: a parsed answer is kept or dropped by its reward."""
    e2 = get_environment("e2")
    item = embedded_dataset(e2, split="train", seed=42).frame.row(0, named=True)
    reference = e2.verifier.reference_answer(item)
    sampled = [
        SampledCompletion(item["config_id"], 0.3, 0, reference, reward=0.9),
        SampledCompletion(item["config_id"], 0.7, 0, reference + " ", reward=0.2),
    ]
    judged = judge_candidates(e2, {item["config_id"]: item}, sampled, min_reward=0.8)
    assert [candidate.drop_reason for candidate in judged] == [None, "below_min_reward"]


@pytest.mark.parametrize("env_id", ["e1", "e4"])
def test_the_gold_verdict_of_a_label_environment_is_its_label(env_id):
    env = get_environment(env_id)
    items = {
        str(row[env.data.id_column]): row for row in embedded_dataset(env, split="train", seed=42).frame.to_dicts()
    }
    assert gold_verdicts(env, items) == {item_id: row[env.data.label_column] for item_id, row in items.items()}


def test_dialogue_environments_are_refused_naming_why():
    with pytest.raises(CandidateError, match=r"dialogue environment.*teacher dialogues"):
        completion_verifier(get_environment("e5"))


def test_candidates_of_unknown_items_and_bad_thresholds_are_refused():
    item = TRAIN.row(0, named=True)
    with pytest.raises(CandidateError, match="not in the batch"):
        judge_candidates(E1, {}, [_scored(item, 0.3, 0, "x")], min_reward=0.5)
    with pytest.raises(CandidateError, match="min_reward"):
        judge_candidates(E1, {item["flow_id"]: item}, [], min_reward=math.nan)


# --- item slices ---


def test_failed_items_target_their_synthetic_siblings():
    synthetic = E1.data.synthesize(E1.config.synthetic.n, seed=42, base=TRAIN)
    derived = [row for row in synthetic.to_dicts() if base_item_id(E1, row)]
    assert derived, "E1's recipe perturbs train flows and names the base flow"
    base = base_item_id(E1, derived[0])
    failed = FailedItems("run-x", ("reasoning",), frozenset({base}))
    sliced = targeted_slice(E1, synthetic, failed=failed)
    assert sliced.height >= 1
    assert all(base_item_id(E1, row) == base for row in sliced.to_dicts())


def test_a_slice_that_matches_nothing_says_what_was_asked():
    failed = FailedItems("run-x", ("format",), frozenset({"not-an-item"}))
    with pytest.raises(ItemSliceError, match="run-x failed in format"):
        targeted_slice(E1, TRAIN, failed=failed)
    with pytest.raises(ItemSliceError, match="no column 'nope'"):
        targeted_slice(E1, TRAIN, filters={"nope": "x"})


def test_items_from_run_targets_the_items_the_model_failed_on(tmp_path):
    evals = tmp_path / "evals"
    outcome = EvalRunner(E1, REGISTRY["heuristic"], evals_root=evals).run(
        EvalDataset(TRAIN, "embedded:train", "train"), n=40, seed=42
    )
    records = {record.id: record for record in RunFolder(outcome.run_dir).read_results()}
    failed = failed_in_run(E1, evals, outcome.metadata.run_id, ["format", "reasoning"])
    assert failed.item_ids and failed.item_ids == {i for i, r in records.items() if r.reward < 0.5}
    result = build_synthetic_batch(
        E1,
        REGISTRY["heuristic"],
        _source(),
        _request(temperatures=(0.3,), samples_per_temperature=1, n_items=None),
        datasets_root=tmp_path / "datasets",
        item_slice=ItemSlice(failed=failed),
    )
    items = pl.read_parquet(result.batch_dir / "items.parquet")
    assert set(items["flow_id"].to_list()) == failed.item_ids
    assert outcome.metadata.run_id in result.info["source_run_ids"]
    assert result.info["item_slice"]["items_from_run"]["categories"] == ["format", "reasoning"]
    with pytest.raises(SyntheticBatchError, match="no run with id 'nope'"):
        failed_in_run(E1, evals, "nope", ["format"])


# --- a real batch ---


def test_baseline_batch_writes_every_file_and_feeds_sft_data(tmp_path):
    request = _request()
    outcome = build_synthetic_batch(E1, REGISTRY["heuristic"], _source(), request, datasets_root=tmp_path)
    assert outcome.status == "complete"
    batch_dir = outcome.batch_dir
    assert batch_dir.parent == batches_root(tmp_path, "e1")
    info = json.loads((batch_dir / "batch.json").read_text(encoding="utf-8"))
    assert info["batch_id"] == batch_dir.name and batch_dir.name.split("-")[-1] and len(batch_dir.name) == 23
    assert info["temperatures"] == [0.3, 0.7] and info["samples_per_temperature"] == 2 and info["seed"] == 42
    assert info["verifier_version"] == E1.verifier.version and info["model"] == "heuristic"
    assert info["items"]["count"] == 10 and len(info["sample_runs"]) == 4
    counts = info["counts"]
    assert counts["candidates"] == 10 * 2 * 2
    assert counts["kept"] + sum(counts["dropped"].values()) == counts["candidates"]
    candidates = [value for _, value in read_jsonl(batch_dir / CANDIDATES_FILE)]
    assert len({c["id"] for c in candidates}) == 40
    # A rule baseline ignores temperature: every answer after the first of an item repeats it.
    first = [c for c in candidates if c["temperature"] == 0.3 and c["sample"] == 0]
    assert counts["kept"] == sum(c["kept"] for c in first) > 0
    assert counts["dropped"]["duplicate"] == 3 * counts["kept"]
    kept = read_batch(batch_dir).kept()
    assert [example.id for example in kept] == [c["id"] for c in candidates if c["kept"]]
    assert all(example.reward >= request.min_reward for example in kept)
    queue = read_review_queue(batch_dir)
    assert queue and len(queue) == math.ceil(0.05 * len(kept)) and set(queue) <= {e.id for e in kept}
    assert info["review_queue"]["size"] == len(queue)
    batch = list_batches(batches_root(tmp_path, "e1"))[0]
    dataset = build_sft_dataset(E1, TRAIN, min_reward=0.5, synthetic=BatchGate(included=(batch,)))
    assert dataset.provenance["counts"]["synthetic"]["kept"] == len(kept)


def test_the_same_settings_find_the_same_batch_other_settings_another(tmp_path):
    first = build_synthetic_batch(E1, REGISTRY["heuristic"], _source(), _request(), datasets_root=tmp_path)
    again = build_synthetic_batch(E1, REGISTRY["heuristic"], _source(), _request(), datasets_root=tmp_path)
    other = build_synthetic_batch(E1, REGISTRY["heuristic"], _source(), _request(seed=7), datasets_root=tmp_path)
    assert again.batch_dir == first.batch_dir and again.info == first.info
    assert other.batch_dir != first.batch_dir


def test_resume_after_a_crash_does_not_duplicate_candidates(tmp_path):
    spec, source, request = REGISTRY["heuristic"], _source(), _request()
    crashed = build_synthetic_batch(E1, spec, source, request, datasets_root=tmp_path, max_new_samples=15)
    assert crashed.status == "incomplete"
    assert not (crashed.batch_dir / "batch.json").exists()
    assert not list_batches(batches_root(tmp_path, "e1")), "an unfinished batch is not listed for training"
    done = build_synthetic_batch(E1, spec, source, request, datasets_root=tmp_path)
    assert done.status == "complete" and done.batch_dir == crashed.batch_dir
    candidates = [value for _, value in read_jsonl(done.batch_dir / CANDIDATES_FILE)]
    assert len(candidates) == len({c["id"] for c in candidates}) == 40
    for results in (done.batch_dir / SAMPLES_DIR).glob("*/*/results.jsonl"):
        assert len(read_jsonl(results)) == 10


def test_two_builders_of_one_batch_at_once_write_it_once(tmp_path):
    outcomes = []

    def build() -> None:
        outcomes.append(build_synthetic_batch(E1, REGISTRY["heuristic"], _source(), _request(), datasets_root=tmp_path))

    threads = [threading.Thread(target=build) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [o.status for o in outcomes] == ["complete", "complete"]
    assert outcomes[0].batch_dir == outcomes[1].batch_dir and outcomes[0].info == outcomes[1].info
    assert len(read_jsonl(outcomes[0].batch_dir / CANDIDATES_FILE)) == 40
    for results in (outcomes[0].batch_dir / SAMPLES_DIR).glob("*/*/results.jsonl"):
        assert len(read_jsonl(results)) == 10


def test_bad_settings_are_named():
    with pytest.raises(SyntheticBatchError, match="temperatures repeat"):
        _request(temperatures=(0.3, 0.3)).check()
    with pytest.raises(SyntheticBatchError, match="samples per temperature"):
        _request(samples_per_temperature=0).check()
    with pytest.raises(SyntheticBatchError, match="source must be one of"):
        embedded_source(E1, "test", seed=42)


# --- Dagster and the CLI ---


def test_asset_materializes_a_batch_with_its_counts(tmp_path):
    splits = E1.data.curate([E1.data.load_source("embedded")], seed=42)
    write_dataset(splits["train"], tmp_path / "datasets" / "e1" / "curated" / "train.parquet", {"split": "train"})
    asset = build_synthetic_batch_asset(E1)
    result = dg.materialize(
        [asset],
        resources={"models": ModelRegistryResource(), "artifacts": ArtifactStoreResource(root=str(tmp_path))},
        run_config={
            "ops": {
                synthetic_batch_key("e1").to_python_identifier(): {
                    "config": {
                        "model": "heuristic",
                        "source": "curated-train",
                        "n_items": 6,
                        "samples_per_temperature": 1,
                        "min_reward": 0.5,
                    }
                }
            }
        },
    )
    assert result.success
    (materialization,) = result.asset_materializations_for_node(synthetic_batch_key("e1").to_python_identifier())
    metadata = {key: value.value for key, value in materialization.metadata.items()}
    assert metadata["candidates"] == 18 and metadata["items"] == 6
    assert metadata["kept"] + sum(metadata["dropped"].values()) == 18
    assert Path(metadata["path"]).joinpath("batch.json").is_file()
    assert metadata["review_queue_size"] == (1 if metadata["kept"] else 0)
    assert {asset.key for asset in build_synthetic_batch_assets([get_environment(e) for e in ("e1", "e5")])} == {
        synthetic_batch_key("e1")
    }


def _synth_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="secverify")
    cli_synth.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["synth-batch", *argv])


def test_cli_prints_counts_and_the_batch_path(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path))
    args = _synth_args("--env", "e1", "--model", "heuristic", "--temperatures", "0.3", "1.0", "-k", "1", "-n", "5")
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "candidates 10, kept" in out and "temperature 1.0:" in out
    batch_line = out.strip().splitlines()[-1]
    assert batch_line.startswith("batch: ") and Path(batch_line.removeprefix("batch: "), "batch.json").is_file()


def test_cli_refuses_a_dialogue_environment_and_categories_without_a_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path))
    args = _synth_args("--env", "e6", "--model", "heuristic")
    with pytest.raises(CandidateError, match=r"e6 .* is a dialogue environment"):
        args.func(args)
    args = _synth_args("--env", "e1", "--model", "heuristic", "--categories", "format")
    assert args.func(args) == 2
    assert "--items-from-run" in capsys.readouterr().out
    assert not (tmp_path / "datasets").exists()


@pytest.mark.slow
def test_smollm2_batch_on_e1(tmp_path):
    request = BatchRequest((0.7,), 1, 4, min_reward=0.5)
    outcome = build_synthetic_batch(E1, REGISTRY["smollm2-135m-instruct"], _source(), request, datasets_root=tmp_path)
    assert outcome.status == "complete"
    counts = outcome.info["counts"]
    assert counts["candidates"] == 4 and counts["kept"] + sum(counts["dropped"].values()) == 4
    assert all(line["completion"] for _, line in read_jsonl(outcome.batch_dir / CANDIDATES_FILE))
