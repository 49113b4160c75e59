"""The eval runner: artifacts, same items for every model, resume after interruption, provider faults."""

from __future__ import annotations

import copy
import dataclasses
import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from secverify_dagster.resources.models import ChatRequest, Completion, ProviderError, load_registry, open_client
from secverify_dagster.runner.datasets import embedded_dataset, select_items
from secverify_dagster.runner.eval_runner import EvalRunner
from sv_shared.contracts import ToolUse
from sv_shared.registry import get_environment
from sv_shared.runs.folder import RunFolder, RunMismatchError
from sv_shared.runs.schema import ModelIdentity, ResultRecord

ENV = get_environment("e1")
HEURISTIC = load_registry()["heuristic"]


@pytest.fixture(scope="module")
def dataset():
    return embedded_dataset(ENV, split="test", seed=42)


class CountingClient:
    """The real baseline client, counting what it is asked; optionally failing or crashing on chosen calls."""

    def __init__(
        self, ids: dict[str, dict], *, fail_ids: Sequence[str] = (), crash_after_calls: int | None = None
    ) -> None:
        self.ids = ids
        self.inner = open_client(HEURISTIC, cache=None, baselines=ENV.baselines)
        self.fail_ids = set(fail_ids)
        self.crash_after_calls = crash_after_calls
        self.calls = 0
        self.requested: list[str] = []

    def complete_many(self, requests: Sequence[ChatRequest]) -> list[Completion | ProviderError]:
        if self.crash_after_calls is not None and self.calls >= self.crash_after_calls:
            raise KeyboardInterrupt("simulated crash mid-run")
        self.calls += 1
        results: list[Completion | ProviderError] = []
        for request, completion in zip(requests, self.inner.complete_many(requests), strict=True):
            flow = request.observation or {}
            item_id = next(i for i, obs in self.ids.items() if obs == flow)
            self.requested.append(item_id)
            if item_id in self.fail_ids:
                results.append(ProviderError("HTTP 503 from upstream", kind="server", retryable=True, status=503))
            else:
                results.append(completion)
        return results

    @property
    def stats(self) -> dict[str, Any]:
        return self.inner.stats

    def close(self) -> None:
        self.inner.close()


def _client(dataset, **kwargs) -> CountingClient:
    return CountingClient(
        {item["flow_id"]: ENV.episodes.observation(item) for item in dataset.frame.to_dicts()}, **kwargs
    )


def _results(run_dir: Path) -> list[ResultRecord]:
    return RunFolder(run_dir).read_results()


def test_writes_the_run_folder_with_provenance(tmp_path: Path, dataset) -> None:
    outcome = EvalRunner(ENV, HEURISTIC, evals_root=tmp_path).run(dataset, n=20, seed=42)
    assert outcome.status == "complete"
    assert outcome.run_dir is not None
    assert outcome.run_dir.parent == tmp_path / "sv-env-network-logs--heuristic"
    folder = RunFolder(outcome.run_dir)
    metadata = folder.read_metadata()
    assert metadata == outcome.metadata
    assert metadata.dataset.hash == dataset.hash
    assert metadata.dataset.source == "embedded:test"
    assert metadata.verifier_version == ENV.verifier.version
    assert metadata.model == ModelIdentity(
        id="heuristic", provider="baseline", model=HEURISTIC.model, params=HEURISTIC.params, price=HEURISTIC.price
    )
    assert metadata.seed == 42 and metadata.status == "complete"
    assert metadata.config["reward_weights"]["accuracy"] == 0.7
    assert metadata.config["reward_penalties"] == ["asymmetric_cost"]  # what the reward means travels with the run
    assert set(metadata.timings) >= {"generate_s", "score_s", "write_s", "wall_s"}
    records = _results(outcome.run_dir)
    assert len(records) == 20
    first = records[0]
    assert first.model == "heuristic" and first.parsed is not None and first.error is None
    assert first.prompt[0]["role"] == "system"
    assert first.counterparts is None and first.turns is None
    summary = folder.read_summary()
    assert summary == outcome.summary
    assert summary.metrics["n"] == 20
    assert summary.metrics["reward"]["mean"] == pytest.approx(sum(r.reward for r in records) / 20)


def test_every_model_gets_the_same_items(dataset) -> None:
    first = [item["flow_id"] for item in select_items(ENV, dataset.frame, 10, 42)]
    shuffled = dataset.frame.sample(fraction=1.0, shuffle=True, seed=7)
    assert [item["flow_id"] for item in select_items(ENV, shuffled, 10, 42)] == first
    assert [item["flow_id"] for item in select_items(ENV, dataset.frame, 10, 43)] != first


def test_interrupted_run_resumes_only_the_missing_samples(tmp_path: Path, dataset) -> None:
    # The client dies on its second call: the first chunk of 8 is on disk, the rest is not.
    crashing = _client(dataset, crash_after_calls=1)
    with pytest.raises(KeyboardInterrupt):
        EvalRunner(ENV, HEURISTIC, evals_root=tmp_path, client=crashing, chunk_size=8).run(dataset, n=20, seed=42)
    (run_dir,) = (tmp_path / "sv-env-network-logs--heuristic").iterdir()
    written = _results(run_dir)
    assert len(written) == 8

    resumed = _client(dataset)
    outcome = EvalRunner(ENV, HEURISTIC, evals_root=tmp_path, client=resumed, chunk_size=8).run(dataset, n=20, seed=42)
    assert outcome.status == "complete"
    assert len(resumed.requested) == 12
    assert not set(resumed.requested) & {r.id for r in written}
    final = _results(outcome.run_dir)
    assert len(final) == 20 and len({r.id for r in final}) == 20
    assert len(RunFolder(outcome.run_dir).read_metadata().sessions) == 2


def test_a_torn_last_line_is_cut_and_its_sample_redone(tmp_path: Path, dataset) -> None:
    runner = EvalRunner(ENV, HEURISTIC, evals_root=tmp_path)
    partial = runner.run(dataset, n=12, seed=42, max_samples=5)
    assert partial.status == "incomplete" and partial.n_done == 5
    results = partial.run_dir / "results.jsonl"
    with results.open("a") as handle:
        handle.write('{"id": "half-written", "rew')
    outcome = runner.run(dataset, n=12, seed=42)
    assert outcome.status == "complete"
    assert len(results.read_text().splitlines()) == 12
    assert all(record.id != "half-written" for record in _results(outcome.run_dir))


def test_provider_errors_are_kept_apart_and_retried_on_resume(tmp_path: Path, dataset) -> None:
    items = select_items(ENV, dataset.frame, 10, 42)
    failing = [items[1]["flow_id"], items[6]["flow_id"]]
    outcome = EvalRunner(ENV, HEURISTIC, evals_root=tmp_path, client=_client(dataset, fail_ids=failing)).run(
        dataset, n=10, seed=42
    )
    assert outcome.status == "incomplete"
    assert outcome.n_done == 8 and outcome.n_provider_errors == 2
    errors = RunFolder(outcome.run_dir).read_errors()
    assert sorted(e.id for e in errors) == sorted(failing)
    assert errors[0].kind == "server" and errors[0].status == 503
    retry = _client(dataset)
    outcome = EvalRunner(ENV, HEURISTIC, evals_root=tmp_path, client=retry).run(dataset, n=10, seed=42)
    assert outcome.status == "complete"
    assert sorted(retry.requested) == sorted(failing)


def test_a_torn_last_error_line_is_cut_before_more_errors_are_appended(tmp_path: Path, dataset) -> None:
    items = select_items(ENV, dataset.frame, 6, 42)
    failing = [items[3]["flow_id"]]
    first = EvalRunner(ENV, HEURISTIC, evals_root=tmp_path, client=_client(dataset, fail_ids=failing)).run(
        dataset, n=6, seed=42
    )
    with (first.run_dir / "errors.jsonl").open("a") as handle:
        handle.write('{"id": "killed mid-wri')
    again = EvalRunner(ENV, HEURISTIC, evals_root=tmp_path, client=_client(dataset, fail_ids=failing)).run(
        dataset, n=6, seed=42
    )
    assert [error.id for error in RunFolder(again.run_dir).read_errors()] == failing * 2


def test_same_run_id_with_different_inputs_is_refused(tmp_path: Path, dataset) -> None:
    runner = EvalRunner(ENV, HEURISTIC, evals_root=tmp_path)
    runner.run(dataset, n=5, seed=42, run_id="fixed")
    with pytest.raises(RunMismatchError, match="different inputs"):
        runner.run(dataset, n=6, seed=42, run_id="fixed")


def test_unreachable_model_is_skipped_with_a_reason(tmp_path: Path, dataset, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    outcome = EvalRunner(ENV, load_registry()["gpt-5"], evals_root=tmp_path).run(dataset, n=5)
    assert outcome.status == "skipped"
    assert "OPENAI_API_KEY" in (outcome.reason or "")
    assert not any(tmp_path.iterdir())


def test_editing_a_baseline_starts_a_new_run(tmp_path: Path, dataset, monkeypatch) -> None:
    first = EvalRunner(ENV, HEURISTIC, evals_root=tmp_path).run(dataset, n=5, seed=42)
    real_getsource = inspect.getsource
    monkeypatch.setattr(inspect, "getsource", lambda obj: real_getsource(obj) + "\n# edited rules\n")
    second = EvalRunner(ENV, HEURISTIC, evals_root=tmp_path).run(dataset, n=5, seed=42)
    assert first.run_dir != second.run_dir


class TwoTurnNetworkLogs(ToolUse):
    """E1 posed with a scripted second turn, to exercise the runner's multi-turn path with a real client."""

    def observation(self, item):
        return ENV.episodes.observation(item)

    def messages(self, item):
        return ENV.episodes.messages(item)

    def rollout(self, item, policy, *, tool_protocol: str):
        messages = self.messages(item)
        first = policy(messages, None)
        messages = [*messages, {"role": "assistant", "content": first.text}, {"role": "user", "content": "Sure?"}]
        final = policy(messages, None)
        scored = ENV.verifier.score(item, final.text)
        return dataclasses.replace(
            scored, details={"transcript": [*messages, {"role": "assistant", "content": final.text}]}
        )


def test_tool_mode_runs_episodes_and_records_transcripts(tmp_path: Path, dataset) -> None:
    env = dataclasses.replace(ENV, episodes=TwoTurnNetworkLogs())
    outcome = EvalRunner(env, HEURISTIC, evals_root=tmp_path).run(dataset, n=4, seed=42, include_tools=True)
    assert outcome.status == "complete"
    records = _results(outcome.run_dir)
    assert [r.turns for r in records] == [2, 2, 2, 2]
    assert all(r.details["transcript"][-2]["content"] == "Sure?" for r in records)
    single = EvalRunner(env, HEURISTIC, evals_root=tmp_path).run(dataset, n=4, seed=42)
    assert single.run_dir != outcome.run_dir  # the mode is part of the run's identity
    with pytest.raises(ValueError, match="no tool-using mode"):
        EvalRunner(ENV, HEURISTIC, evals_root=tmp_path).run(dataset, n=4, include_tools=True)


class BreakingToolEpisodes(TwoTurnNetworkLogs):
    """Tool episodes whose code raises on one item (a tool crashing on a hostile argument)."""

    def __init__(self, bad_id: str) -> None:
        self.bad_id = bad_id

    def rollout(self, item, policy, *, tool_protocol: str):
        if item["flow_id"] == self.bad_id:
            raise UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")
        return super().rollout(item, policy, tool_protocol=tool_protocol)


def test_an_episode_that_raises_costs_only_that_sample(tmp_path: Path, dataset) -> None:
    items = select_items(ENV, dataset.frame, 4, 42)
    env = dataclasses.replace(ENV, episodes=BreakingToolEpisodes(items[1]["flow_id"]))
    outcome = EvalRunner(env, HEURISTIC, evals_root=tmp_path).run(dataset, n=4, seed=42, include_tools=True)
    assert outcome.status == "incomplete" and outcome.n_done == 3 and outcome.n_failures == 1
    (error,) = RunFolder(outcome.run_dir).read_errors()
    assert (error.id, error.kind) == (items[1]["flow_id"], "episode")
    assert error.message.startswith("UnicodeEncodeError: 'utf-8' codec can't encode")
    assert error.message.endswith("(attempt 1 of 3)")


def test_a_dialogue_that_breaks_the_environment_costs_only_that_dialogue(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path))
    e5 = get_environment("e5")
    registry = load_registry()
    dataset = embedded_dataset(e5, split="test", seed=42)
    id_column = e5.data.id_column
    bad = select_items(e5, dataset.frame, 4, 42)[2][id_column]

    class Breaking(type(e5.episodes)):
        def run(self, items, policy, *, counterparts, judge):
            if any(item[id_column] == bad for item in items):
                raise KeyError("transcript")
            return super().run(items, policy, counterparts=counterparts, judge=judge)

    episodes = copy.copy(e5.episodes)
    episodes.__class__ = Breaking
    env = dataclasses.replace(e5, episodes=episodes)
    runner = EvalRunner(
        env, registry["template-attacker"], counterparts={"target": registry["naive-complier"]}, registry=registry
    )
    outcome = runner.run(dataset, n=4, seed=42)
    assert outcome.n_done == 3 and outcome.n_failures == 1
    (error,) = RunFolder(outcome.run_dir).read_errors()
    assert (error.id, error.kind, error.message.split(" (")[0]) == (bad, "scoring", "KeyError: 'transcript'")


def test_the_code_version_counts_untracked_files_but_not_ignored_ones(tmp_path: Path) -> None:
    """Issue 27: an uncommitted new module or config changes what a run does as much as an edited file."""
    import subprocess

    from secverify_dagster.runner.metadata import code_version, dirty_paths

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / ".gitignore").write_text("outputs/\n")
    git("add", ".gitignore")
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "init")
    (tmp_path / "outputs").mkdir()
    (tmp_path / "outputs" / "run.json").write_text("{}")
    assert not code_version(tmp_path).endswith("-dirty") and dirty_paths(tmp_path) == []
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "new.yaml").write_text("a: 1\n")
    assert code_version(tmp_path).endswith("-dirty")
    assert dirty_paths(tmp_path) == ["configs/new.yaml"]
