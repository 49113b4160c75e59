"""The eval runner: one environment × one model over N items, written as a resumable run folder.

The package's modules: `eval_runner.py` (the loop, its lock and resume), `episodes.py` (the one interface an episode
kind implements) and its three kinds `single_turn.py`, `tool_episode.py` and `dialogue.py`, `failures.py` (retries
and giving up), `metadata.py` (provenance), `datasets.py` (items), `offline_scoring.py` (`secverify score`) and
`tournament.py` (attacker × defender rounds of E5 dialogues).

outputs/evals/<env name>--<model id>/<run id>/
  metadata.json   provenance: dataset hash and source, verifier version, model and parameters, config, seed,
                  code version, timings, token usage, cost, status
  results.jsonl   one scored sample a line, appended as samples finish (a crash loses at most the line being written)
  errors.jsonl    samples that failed: provider failures (after retries) and failures of the runner's own work on a
                  sample (scoring, a tool episode, writing its record); those samples are retried on resume
  summary.json    the environment's metrics over every item (results.jsonl, and each item it lacks as a failure)

The files' schema and version policy are declared in sv_shared.runs.schema; sv_shared.runs.folder reads and writes them.

The run id is derived from everything that determines the results, so the same command after a crash resumes the same
run and finishes the missing samples only.

A failing sample never stops a run: any exception while scoring it, playing its episode or writing its record is
caught and recorded as that sample's error, its batch-mates are scored without it. Failures that say something about
the sample (ITEM_FAILURES: the runner's own, a provider refusing or garbling that request, a baseline or counterpart
raising on it) are counted in errors.jsonl; a sample that failed MAX_ITEM_ATTEMPTS times, over any number of sessions,
is given up: no longer retried, its last error says so, and the run completes without a scored sample of it
(summary.n_scored counts the samples scored). Failures that say something about the service (rate limits, outages, a
missing key or model) are retried on every resume without bound: they would give up on samples that are fine. Samples
are given up only in a run that has scored some sample, so a failure every sample shares (a misconfigured request)
leaves the run incomplete instead of complete and empty.

No item leaves the metrics: every item without a scored sample, given up or still to be retried, counts as a failure,
the answer of a model that said nothing (sv_shared.runs.unscored), and summary.unscored names each with its last error.

One process writes a run folder at a time: the runner holds its lock from reading it to writing its summary. A second
runner of the same run waits for it (up to LOCK_WAIT_S, then fails naming the holder) and then resumes a run with
nothing left to do; no sample is generated or scored twice. The lock is the kernel's and dies with its process.
"""

from secverify_dagster.runner.datasets import EvalDataset, embedded_dataset, file_dataset, select_items
from secverify_dagster.runner.dialogue import (
    DialogueParts,
    JudgeModels,
    batch_policy,
    counterpart_policy,
    open_dialogue_parts,
)
from secverify_dagster.runner.eval_runner import EvalOutcome, EvalRunner, ProgressCallback
from secverify_dagster.runner.failures import MAX_ITEM_ATTEMPTS
from secverify_dagster.runner.metadata import code_version, dirty_paths
from secverify_dagster.runner.offline_scoring import score_completions

__all__ = [
    "MAX_ITEM_ATTEMPTS",
    "DialogueParts",
    "EvalDataset",
    "EvalOutcome",
    "EvalRunner",
    "JudgeModels",
    "ProgressCallback",
    "batch_policy",
    "code_version",
    "counterpart_policy",
    "dirty_paths",
    "embedded_dataset",
    "file_dataset",
    "open_dialogue_parts",
    "score_completions",
    "select_items",
]
