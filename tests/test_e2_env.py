"""E2 environment: the contract the runner uses, the tool-oracle baseline through the real eval runner, and the
tool-using rollout with scripted policies (budget enforcement, both protocols, malformed calls)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from secverify_dagster.resources.models import ModelSpec
from secverify_dagster.runner.datasets import EvalDataset
from secverify_dagster.runner.eval_runner import EvalRunner
from sv_env_config_verification import data, rollout
from sv_env_config_verification.adapters.opa import OpaAdapter
from sv_env_config_verification.env import build
from sv_env_config_verification.oracle import Oracle
from sv_shared.contracts import Environment, ToolUse
from sv_shared.registry import load_env_config

TOOL_ORACLE = ModelSpec(id="tool-oracle", provider="baseline", model="tool-oracle", envs=["e2"])


@pytest.fixture(scope="module")
def env() -> Environment:
    return build(load_env_config("e2"), oracle=Oracle([OpaAdapter()]))


@pytest.fixture(scope="module")
def items(env: Environment) -> dict[str, dict[str, Any]]:
    hand_written = env.data.load_source("embedded").filter(pl.col("source_corpus") == data.EMBEDDED_CORPUS)
    return {row["filename"]: row for row in hand_written.iter_rows(named=True)}


# --- the contract ---


def test_identity_and_sources(env: Environment) -> None:
    assert (env.env_id, env.name, env.data.id_column) == ("e2", "sv-env-config-verification", "config_id")
    assert env.data.sources()[0] == "embedded"
    with pytest.raises(KeyError, match="unknown E2 corpus"):
        env.data.load_source("nope")
    with pytest.raises(FileNotFoundError, match=r"data\.terraform\.path"):
        env.data.load_source("terraform")
    assert env.generation_params()["max_tokens"] >= 512
    assert isinstance(env.episodes, ToolUse)  # `--include-tools` plays scanner-calling episodes


def test_observation_and_messages_hide_the_answer(env: Environment, items: dict) -> None:
    item = items["edge-proxy-hostnetwork.yaml"]
    assert set(env.episodes.observation(item)) == {"kind", "filename", "content"}
    system, user = env.episodes.messages(item)
    assert "K8S_HOST_NAMESPACE" in system["content"] and "TF_S3_PUBLIC" not in system["content"]
    assert '"violations"' in system["content"] and "unified diff" in system["content"]
    assert item["content"].rstrip() in user["content"] and "edge-proxy-hostnetwork.yaml" in user["content"]
    assert "oracle" not in json.dumps(env.episodes.messages(item)).lower()


def test_curate_and_synthesize(env: Environment) -> None:
    embedded = env.data.load_source("embedded")
    splits = env.data.curate([embedded], seed=42)
    assert sum(part.height for part in splits.values()) == embedded.height
    synthetic = env.data.synthesize(6, seed=1, base=splits["train"])
    assert synthetic.height == 6 and env.data.validate(synthetic).height == 6


# --- the tool-oracle baseline through the runner ---


def test_tool_oracle_baseline_through_the_runner(env: Environment, tmp_path: Path) -> None:
    # Labelled by this test's oracle (the shipped labels may include scanners it does not run).
    shipped = env.data.load_source("embedded")
    frame = data.label_with_oracle(shipped.select("kind", "filename", "content", "source_corpus"), env.verifier.oracle)
    dataset = EvalDataset(frame=frame, source="embedded:all", split="all")
    outcome = EvalRunner(env, TOOL_ORACLE, evals_root=tmp_path).run(dataset, n=frame.height, seed=42)
    assert outcome.status == "complete" and outcome.n_done == frame.height
    records = [json.loads(line) for line in (outcome.run_dir / "results.jsonl").read_text().splitlines()]
    assert {record["error"] for record in records} == {None}
    assert outcome.summary is not None
    metrics = outcome.summary.metrics
    assert metrics["detection_score"] == 1.0 and metrics["fpr_clean"] == 0.0
    assert metrics["weighted"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    patch = metrics["patch"]
    assert patch["applies_rate"] == 1.0 and patch["valid_rate"] == 1.0
    assert patch["introduces_new_rate"] == 0.0 and patch["destructive_rate"] == 0.0
    assert patch["provided_rate"] >= 0.7 and patch["fixes_all_rate"] >= 0.7
    assert metrics["oracle_versions"] == {"opa": OpaAdapter().status().version}
    by_name = {record["id"]: record for record in records}
    node_exporter = frame.filter(pl.col("filename") == "node-exporter.yaml")["config_id"][0]
    assert by_name[node_exporter]["details"]["patch"]["fixes_all"]


def test_score_many_equals_scoring_one_by_one(items: dict) -> None:
    counting = Oracle([OpaAdapter()])
    batch_env = build(load_env_config("e2"), oracle=counting)
    chosen = [items[name] for name in ("node-exporter.yaml", "ebs-unencrypted.tf", "storefront.yaml")]
    baseline = batch_env.baselines["tool-oracle"]
    completions = [baseline(batch_env.episodes.observation(item)) for item in chosen]
    calls_before = counting.stats.scan_calls["opa"]
    batched = batch_env.verifier.score_many(chosen, completions)
    assert counting.stats.scan_calls["opa"] == calls_before + 1  # one scanner call for the whole batch
    single_env = build(load_env_config("e2"), oracle=Oracle([OpaAdapter()]))
    single = [single_env.verifier.score(item, completion) for item, completion in zip(chosen, completions, strict=True)]
    assert [s.to_record() for s in batched] == [s.to_record() for s in single]


# --- the tool-using rollout ---


def _native(name: str, arguments: Any, call_id: str) -> dict[str, Any]:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}


class Scripted:
    """A policy replaying fixed replies, recording the messages and tools it was shown."""

    def __init__(self, replies: list[Any]) -> None:
        self.replies = list(replies)
        self.seen: list[tuple[list[dict[str, Any]], Any]] = []

    def __call__(self, messages: list[dict[str, Any]], tools: Any) -> Any:
        self.seen.append((messages, tools))
        return self.replies.pop(0)


FINAL = json.dumps(
    {"violations": [{"id": "K8S_HOST_NAMESPACE", "severity": "high", "resource": "Deployment/edge-proxy"}],
     "patch": None, "confidence": 0.9}
)  # fmt: skip


def test_native_episode_calls_a_scanner_then_answers(env: Environment, items: dict) -> None:
    item = items["edge-proxy-hostnetwork.yaml"]
    policy = Scripted([{"text": "", "tool_calls": [_native("scan", {"tool": "opa"}, "c1")]}, {"text": FINAL}])
    episode = env.episodes.run_episode(item, policy, protocol="native")
    assert (episode.turns, episode.tool_calls, episode.refused_calls, episode.invalid_calls) == (2, 1, 0, 0)
    tools = policy.seen[0][1]
    assert tools[0]["function"]["name"] == "scan"
    assert tools[0]["function"]["parameters"]["properties"]["tool"]["enum"] == ["opa", "all"]
    tool_message = episode.messages[-2]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "c1"
    result = json.loads(tool_message["content"])
    assert {f["id"] for f in result["findings"]} == {"K8S_HOST_NAMESPACE"}
    assert episode.messages[2]["tool_calls"][0]["function"]["name"] == "scan"
    scored = env.episodes.score_episode(item, episode)
    assert scored.components["detection"] == 1.0
    assert scored.details["tools"]["tool_calls"] == 1 and scored.details["transcript"] == episode.messages


def test_budget_is_enforced_and_counted(env: Environment, items: dict) -> None:
    item = items["edge-proxy-hostnetwork.yaml"]
    two_calls = {
        "text": "checking",
        "tool_calls": [_native("scan", {"tool": "opa"}, "a"), _native("scan", {"tool": "all"}, "b")],
    }
    policy = Scripted([two_calls, two_calls, two_calls])
    episode = env.episodes.run_episode(
        item, policy, protocol="native", budget=rollout.Budget(max_turns=3, max_tool_calls=3)
    )
    assert episode.tool_calls == 3 and episode.refused_calls == 3
    assert episode.turns == 3 and episode.turn_budget_exhausted
    statuses = [call["status"] for call in episode.calls]
    assert statuses == ["ok", "ok", "ok", "refused", "refused", "refused"]
    refusals = [m["content"] for m in episode.messages if m["role"] == "tool" and m["content"].startswith("refused")]
    assert len(refusals) == 3 and "budget of 3 scanner calls" in refusals[0]
    scored = env.episodes.score_episode(item, episode)
    assert scored.error == "no_json_object" and scored.reward == 0.0  # the run goes on: a named failure
    metrics = env.verifier.aggregate([scored.to_record()], {item["config_id"]: item})
    assert metrics["tools"]["tool_calls_per_episode"] == 3.0 and metrics["tools"]["over_budget_rate"] == 1.0


def test_text_protocol_for_local_models(env: Environment, items: dict) -> None:
    item = items["ebs-unencrypted.tf"]
    fixed = item["content"].replace(
        '  type              = "st1"\n', '  type              = "st1"\n  encrypted = true\n'
    )
    call = 'Let me check.\nTOOL: scan {"tool": "opa", "content": ' + json.dumps(fixed) + "}\n"
    answer = json.dumps(
        {"violations": [{"id": "TF_EBS_UNENCRYPTED", "severity": "medium", "resource": "aws_ebs_volume.scratch"}],
         "patch": None, "confidence": 0.8}
    )  # fmt: skip
    policy = Scripted([call, answer])
    episode = env.episodes.run_episode(item, policy, protocol="text")
    system = policy.seen[0][0][0]["content"]
    assert policy.seen[0][1] is None and 'TOOL: scan {"tool": "<scanner>"}' in system and "at most 3" in system
    result = episode.messages[3]  # system, user, assistant (the call), user (the result), assistant
    assert result["role"] == "user" and result["content"].startswith("TOOL RESULT scan opa: ")
    assert json.loads(result["content"].split(": ", 1)[1])["findings"] == []  # the revised text is clean
    assert episode.calls[0]["arguments"]["content"].startswith("<") and episode.final == answer
    assert env.episodes.score_episode(item, episode).components["detection"] == 1.0


def test_malformed_calls_are_answered_and_counted(env: Environment, items: dict) -> None:
    item = items["storefront.yaml"]
    bad = [
        _native("scan", "{not json", "x1"),
        _native("rm_rf", {"tool": "opa"}, "x2"),
        _native("scan", {"tool": "nmap"}, "x3"),
        _native("scan", {"tool": "opa", "path": "/etc/passwd"}, "x4"),
    ]
    policy = Scripted(
        [{"text": "", "tool_calls": bad}, json.dumps({"violations": [], "patch": None, "confidence": 0.7})]
    )
    episode = env.episodes.run_episode(
        item, policy, protocol="native", budget=rollout.Budget(max_turns=2, max_tool_calls=10)
    )
    assert episode.invalid_calls == 4 and episode.tool_calls == 4
    errors = [json.loads(m["content"])["error"] for m in episode.messages if m["role"] == "tool"]
    assert errors[0] == "arguments are not valid JSON" and "unknown tool 'rm_rf'" in errors[1]
    assert "unknown scanner 'nmap'" in errors[2] and "unexpected argument" in errors[3]
    assert env.episodes.score_episode(item, episode).reward == pytest.approx(1.0)


def test_scan_tool_reports_loader_errors(env: Environment) -> None:
    findings, error = env.episodes.scan_tool("opa", "x.yaml", "a: &a [*a]\n")
    assert findings == [] and error is not None and error.startswith("yaml_bomb")


def test_embedded_item_ids_are_stable(env: Environment) -> None:
    frame = data.load_embedded()
    assert frame["config_id"].to_list() == frame["content_hash"].to_list()
    assert frame["config_id"].n_unique() == frame.height


def test_tool_oracle_answers_do_not_depend_on_the_hash_seed() -> None:
    """A baseline's completion is part of a run's record: the same item must get the same patch text in every
    process, whatever order Python's hash seed gives a set."""
    code = (
        "import hashlib\n"
        "import polars as pl\n"
        "from sv_env_config_verification.adapters.opa import OpaAdapter\n"
        "from sv_env_config_verification.env import build\n"
        "from sv_env_config_verification.oracle import Oracle\n"
        "from sv_shared.registry import load_env_config\n"
        "env = build(load_env_config('e2'), oracle=Oracle([OpaAdapter()]))\n"
        "rows = env.data.load_source('embedded').filter(pl.col('source_corpus') == 'sv-embedded').to_dicts()\n"
        "answers = ''.join(env.baselines['tool-oracle'](env.episodes.observation(row)) for row in rows)\n"
        "print(hashlib.sha256(answers.encode()).hexdigest())\n"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(digests) == 1
