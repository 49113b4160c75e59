"""E1-E4 as inspect_ai tasks give the rewards our runner gives: the same items in the same order, the same messages,
and per sample the same reward and components (float ==) for the runner's own completions, for hostile completions,
and for tool episodes; in memory and read back from the .eval log. Also: discovery through the entry point, the
viewer, registry models as inspect models, and (slow) live rollouts of the local model: served on loopback (through
inspect's `openai-api` and through `secverify/<id>`) and in-process (inspect's `hf`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai")

from browser import CHROMIUM, chromium_page
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ChatMessage, ModelOutput, ModelUsage, get_model
from inspect_ai.tool import ToolCall
from served_model import ONE_TORCH_THREAD, ServedModel, free_port, inspect_environment

from secverify.interop.inspect.messages import chat_messages
from secverify.interop.inspect.provider import BaselineThroughInspectError, UnknownRegistryModelError, openai_messages
from secverify.interop.inspect.tasks import NoToolModeError, single_turn_task
from secverify.interop.items import eval_slice
from secverify_dagster.resources.models import ModelSpec, open_client
from secverify_dagster.runner.datasets import embedded_dataset
from secverify_dagster.runner.eval_runner import EvalRunner
from sv_shared.answers.metrics import metric_value
from sv_shared.contracts import Environment, Item, PolicyReply
from sv_shared.registry import get_environment
from sv_shared.runs.folder import RunFolder

BASELINES = {"e1": ("heuristic", 6), "e2": ("tool-oracle", 4), "e3": ("scanner-fix", 2), "e4": ("phish-rules", 6)}
"""The rule baseline whose completions each environment replays, and how many items (the first N of the test split)."""

USAGE = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
"""Given with every mock output: without usage inspect counts tokens with tiktoken, which downloads its tables."""


def hostile(answer: str) -> list[str]:
    """Completions a model may write, built around an honest answer (so env-specific fields are present)."""
    body = answer.strip()[1:] if answer.strip().startswith("{") else '"x": 1}'
    return [
        "",
        "I looked at it carefully and I think it is fine, no JSON from me.",
        "x" * 300_000 + answer,
        '{"label": ' + "[" * 20_000 + "]" * 20_000 + "}",
        '{"confidence": 0.01, ' + body,
        '{"note": "\ud800 lone surrogate", ' + body,
        answer.replace('"confidence": ', '"confidence": 7.5, "c": '),
        answer.replace('"confidence": ', '"confidence": NaN, "c": '),
        f"```json\n{answer}\n```",
        '{"label": 5, "confidence": "high", "violations": "none", "diff": 3, "evidence": {}}',
        answer + answer,
    ]


@pytest.fixture
def log_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """inspect writes its logs here only (never into the repository)."""
    folder = tmp_path / "inspect-logs"
    monkeypatch.setenv("INSPECT_LOG_DIR", str(folder))
    return folder


def baseline_spec(model_id: str, env_id: str) -> ModelSpec:
    return ModelSpec(id=model_id, provider="baseline", model=model_id, envs=[env_id])


def observed(observation: Mapping[str, Any]) -> str:
    """An observation as a key: the baseline client is given only the observation, not the item."""
    return json.dumps(observation, sort_keys=True, default=str)


def run_ours(env: Environment, model_id: str, n: int, evals_root: Path, answer: Callable[[Item], str] | None = None):
    """Our runner's records and run metrics (summary.json) for the first n test items; `answer` replaces the
    baseline's completions (the runner still calls it as a baseline client, so records go through its own path)."""
    spec = baseline_spec(model_id, env.env_id)
    client = None
    if answer is not None:
        items = {observed(env.episodes.observation(item)): item for item in eval_slice(env, n=n).items}
        client = open_client(spec, cache=None, baselines={model_id: lambda obs: answer(items[observed(obs)])})
    dataset = embedded_dataset(env, split="test", seed=42)
    outcome = EvalRunner(env, spec, evals_root=evals_root, client=client).run(dataset, n=n, seed=42)
    assert outcome.status == "complete", outcome
    return RunFolder(outcome.run_dir).read_results(), outcome.summary.metrics


def replaying(env: Environment, items: Sequence[Item], completions: Mapping[str, str]):
    """mockllm answering each sample with the completion our runner recorded for its item."""
    by_prompt = {json.dumps(env.episodes.messages(item), default=str): str(item[env.data.id_column]) for item in items}

    def output(messages: list[ChatMessage], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        key = json.dumps([{"role": m.role, "content": m.text} for m in messages], default=str)
        reply = ModelOutput.from_content(model="mockllm/model", content=completions[by_prompt[key]])
        reply.usage = USAGE
        return reply

    return get_model("mockllm/model", custom_outputs=output)


def turns(messages: str | Sequence[ChatMessage]) -> list[dict[str, str]]:
    """Messages as role and text (inspect gives each message a fresh id, so objects never compare equal)."""
    assert not isinstance(messages, str)
    return [{"role": message.role, "content": message.text} for message in messages]


def scores_by_sample(log: EvalLog) -> dict[str, dict[str, float]]:
    assert log.status == "success", log.error
    return {str(sample.id): dict(next(iter(sample.scores.values())).value) for sample in log.samples}


def assert_equal(ours: Mapping[str, Any], theirs: Mapping[str, dict[str, float]]) -> None:
    """Per sample: reward and every component ==, no approx."""
    assert set(theirs) == set(ours)
    for item_id, record in ours.items():
        value = theirs[item_id]
        assert value["reward"] == record.reward, item_id
        assert {k: v for k, v in value.items() if k != "reward"} == record.components, item_id


@pytest.mark.parametrize("env_id", list(BASELINES))
def test_runner_and_hostile_completions_score_the_same_through_inspect(
    env_id: str, tmp_path: Path, log_dir: Path
) -> None:
    env = get_environment(env_id)
    model_id, n = BASELINES[env_id]
    honest = run_ours(env, model_id, n, tmp_path / "evals")
    items = eval_slice(env_id, n=n).items
    answers = {str(item[env.data.id_column]): env.baselines[model_id](env.episodes.observation(item)) for item in items}
    cases = hostile(next(iter(answers.values())))
    hostile_items = eval_slice(env_id, n=len(cases)).items
    crafted = {str(item[env.data.id_column]): text for item, text in zip(hostile_items, cases, strict=True)}
    attacked = run_ours(
        env, model_id, len(cases), tmp_path / "hostile", answer=lambda item: crafted[str(item[env.data.id_column])]
    )

    for (records, summary), chosen in ((honest, items), (attacked, hostile_items)):
        ours = {record.id: record for record in records}
        task = single_turn_task(env_id, n=len(chosen))
        (log,) = inspect_eval(
            task,
            model=replaying(env, chosen, {record.id: record.completion for record in records}),
            log_dir=str(log_dir),
            display="none",
        )
        # the runner's items, in its order, posed with the messages the runner sent
        assert [sample.id for sample in task.dataset] == [record.id for record in records]
        assert [turns(sample.input) for sample in task.dataset] == [record.prompt for record in records]
        logged = {str(sample.id): turns(sample.input) for sample in log.samples}
        assert logged == {record.id: record.prompt for record in records}
        assert_equal(ours, scores_by_sample(log))
        assert_equal(ours, scores_by_sample(read_eval_log(log.location)))
        assert log.eval.task_version == env.verifier.version
        # explanation = the verifier's named error; the `secverify` metrics = summary.json's report columns
        assert {str(s.id): next(iter(s.scores.values())).explanation for s in log.samples} == {
            record.id: record.error for record in records
        }
        reported = {m.name: m.value for s in log.results.scores for m in s.metrics.values() if m.group == "secverify"}
        expected = {key: metric_value(summary, key) for _, key in env.verifier.report_columns()}
        assert reported == {key: value for key, value in expected.items() if value is not None}
    assert list(log_dir.glob("*.eval")), "inspect wrote its logs where it was told"


MALFORMED = '{"target": "unterminated'
"""Arguments that are not JSON: inspect's provider keeps only its parse error, our episode sees the raw text."""

SCRIPTS: dict[str, list[list[tuple[str, Any]]]] = {
    # per turn, the tool calls (name, arguments); the turn after the last answers. Budgets are 3 calls: the script
    # spends them, makes one malformed call, and is refused once.
    "e2": [
        [("scan", {"tool": "all"})],
        [("scan", {"tool": "all"}), ("scan", MALFORMED)],
        [("scan", {"tool": "all"})],
    ],
    "e4": [
        [("url_reputation", {"target": "example.com"})],
        [("url_reputation", MALFORMED), ("url_reputation", {"target": "http://paypa1-secure.com/login"})],
        [("url_reputation", {"target": "bank.example"})],
    ],
}
TOOL_BASELINES = {"e2": "tool-oracle", "e4": "phish-rules"}


def scripted_calls(env_id: str, turn: int) -> list[tuple[str, str, Any]]:
    script = SCRIPTS[env_id]
    return (
        [(f"call_{turn}_{index}", name, args) for index, (name, args) in enumerate(script[turn])]
        if turn < len(script)
        else []
    )


@pytest.mark.parametrize("env_id", list(SCRIPTS))
def test_tool_episodes_score_the_same_through_inspect(env_id: str, log_dir: Path) -> None:
    env = get_environment(env_id)
    items = eval_slice(env_id, n=3).items
    answers = {
        str(item[env.data.id_column]): env.baselines[TOOL_BASELINES[env_id]](env.episodes.observation(item))
        for item in items
    }
    opening: dict[str, str] = {}  # the episode's first user message -> item id

    def our_policy(item_id: str):
        def policy(messages: list[dict[str, Any]], specs: Any) -> PolicyReply:
            opening.setdefault(next(m["content"] for m in messages if m["role"] == "user"), item_id)
            calls = scripted_calls(env_id, sum(m["role"] == "assistant" for m in messages))
            tool_calls = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
                }
                for call_id, name, args in calls
            ]
            return PolicyReply(text="checking" if calls else answers[item_id], tool_calls=tool_calls)

        return policy

    ours = {
        str(item[env.data.id_column]): env.episodes.rollout(
            item, our_policy(str(item[env.data.id_column])), tool_protocol="native"
        )
        for item in items
    }

    def inspect_output(messages: list[ChatMessage], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        item_id = opening[next(m.text for m in messages if m.role == "user")]
        calls = scripted_calls(env_id, sum(m.role == "assistant" for m in messages))
        if not calls:
            reply = ModelOutput.from_content(model="mockllm/model", content=answers[item_id])
        else:
            reply = ModelOutput.from_content(model="mockllm/model", content="checking")
            reply.choices[0].message.tool_calls = [
                ToolCall(id=call_id, function=name, arguments={}, parse_error="not JSON")
                if isinstance(args, str)
                else ToolCall(id=call_id, function=name, arguments=args)
                for call_id, name, args in calls
            ]
            reply.choices[0].stop_reason = "tool_calls"
        reply.usage = USAGE
        return reply

    task = single_turn_task(env_id, n=3, include_tools=True)
    (log,) = inspect_eval(
        task, model=get_model("mockllm/model", custom_outputs=inspect_output), log_dir=str(log_dir), display="none"
    )
    for result in (log, read_eval_log(log.location)):
        assert_equal(ours, scores_by_sample(result))
        for sample in result.samples:
            record = next(iter(sample.scores.values())).metadata
            theirs, mine = record["details"]["tools"], ours[str(sample.id)].details["tools"]
            # the same calls, refusals and malformed calls; only the wall-clock tool time differs
            assert {**theirs, "tool_time_s": 0} == {**mine, "tool_time_s": 0}
            assert script_was_played(env_id, theirs)


def script_was_played(env_id: str, tools: Mapping[str, Any]) -> bool:
    """The verdict's accounting shows the script's three calls, its malformed call and its call over budget."""
    if env_id == "e2":
        return (tools["tool_calls"], tools["invalid_calls"], tools["refused_calls"]) == (3, 1, 1)
    calls = tools["calls"]
    return len(calls) == 4 and calls[1]["arguments"] is None and "exhausted" in calls[3]["result"]["error"]


def test_registry_models_refuse_baselines_and_unknown_ids_by_name() -> None:
    with pytest.raises(BaselineThroughInspectError):
        get_model("secverify/heuristic")
    with pytest.raises(UnknownRegistryModelError, match="gpt-5-mini"):
        get_model("secverify/no-such-model")


def test_a_tool_transcript_survives_the_trip_through_inspect_messages() -> None:
    transcript = [
        {"role": "system", "content": "review"},
        {"role": "user", "content": "config \ud800"},
        {
            "role": "assistant",
            "content": "checking",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "scan", "arguments": '{"tool": "all"}'}},
                {"id": "c2", "type": "function", "function": {"name": "scan", "arguments": "[1, 2]"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "1 finding"},
        {"role": "tool", "tool_call_id": "c2", "content": "arguments must be a JSON object"},
        {"role": "assistant", "content": "{}"},
    ]
    converted = chat_messages(transcript)
    assert converted[3].function == "scan" and converted[2].tool_calls[1].parse_error
    back = openai_messages(converted)
    assert [m["role"] for m in back] == [m["role"] for m in transcript]
    assert [m["content"] for m in back] == [m["content"] for m in transcript]
    assert back[2]["tool_calls"][0] == transcript[2]["tool_calls"][0]
    assert [m.get("tool_call_id") for m in back] == [m.get("tool_call_id") for m in transcript]


def test_tool_mode_is_only_for_tool_using_environments() -> None:
    with pytest.raises(NoToolModeError):
        single_turn_task("e1", n=1, include_tools=True)


TASK_NAMES = [
    *(f"e{index}" for index in range(1, 7)),
    "network_logs",
    "config_verification",
    "code_vulnerability",
    "phishing_detection",
    "redteam_attack",
    "redteam_defense",
]


def test_inspect_finds_the_six_environments_through_the_entry_point(tmp_path: Path) -> None:
    # A fresh process imports nothing of ours: only the `inspect_ai` entry point can register the tasks there. It
    # runs outside the checkout: with the checkout on sys.path, its build leftover secverify.egg-info (no PEP 610
    # direct_url.json) hides the editable install from inspect, which then does not namespace the tasks.
    probe = (
        "import json\n"
        "from inspect_ai._util.registry import registry_info, registry_lookup\n"
        f"names = {[f'secverify/{name}' for name in TASK_NAMES]!r}\n"
        "print(json.dumps({n: registry_info(registry_lookup('task', n)).metadata['params'] for n in names}))\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True, cwd=tmp_path
    )
    params = json.loads(found.stdout.strip().splitlines()[-1])
    assert set(params) == {f"secverify/{name}" for name in TASK_NAMES}
    for name, names in params.items():
        assert {"split", "n", "seed", "dataset"} <= set(names), name
    assert "include_tools" in params["secverify/e2"] and "include_tools" in params["secverify/phishing_detection"]
    assert "target" in params["secverify/e5"] and "judge" in params["secverify/e6"]


def _e1_log(log_dir: Path) -> tuple[EvalLog, list[str]]:
    """A two-sample E1 log (the heuristic's answers replayed) and its sample ids."""
    env = get_environment("e1")
    items = eval_slice("e1", n=2).items
    answers = {str(item["flow_id"]): env.baselines["heuristic"](env.episodes.observation(item)) for item in items}
    (log,) = inspect_eval(
        single_turn_task("e1", n=2), model=replaying(env, items, answers), log_dir=str(log_dir), display="none"
    )
    return log, list(answers)


@contextmanager
def inspect_viewer(log_dir: Path) -> Iterator[str]:
    """`inspect view` on loopback over log_dir, once its API lists the logs: yields its URL, stops it afterwards."""
    port = free_port()
    command = [str(Path(sys.executable).parent / "inspect"), "view", "--log-dir", str(log_dir)]
    viewer = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "INSPECT_LOG_DIR": str(log_dir)},
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert viewer.poll() is None, viewer.stderr.read().decode() if viewer.stderr else viewer.returncode
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/log-files", timeout=5):
                    break
            except OSError:
                assert time.monotonic() < deadline, "the viewer did not answer within 60 s"
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}"
    finally:
        viewer.terminate()
        viewer.wait(timeout=30)


@pytest.fixture(scope="module")
def viewed_e1_log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EvalLog, list[str], str]]:
    """A two-sample E1 log, its sample ids, and the URL of one `inspect view` over its folder: both viewer tests
    read the same log, so it is written and the viewer started once (seconds each)."""
    folder = tmp_path_factory.mktemp("inspect-view")
    log, sample_ids = _e1_log(folder)
    with inspect_viewer(folder) as url:
        yield log, sample_ids, url


def test_the_viewer_serves_a_log_on_loopback(viewed_e1_log: tuple[EvalLog, list[str], str]) -> None:
    log, _, url = viewed_e1_log
    with urllib.request.urlopen(f"{url}/api/log-files", timeout=5) as response:
        listing = json.loads(response.read())
    assert [Path(entry["name"]).name for entry in listing["files"]] == [Path(log.location).name]
    with urllib.request.urlopen(f"{url}/", timeout=5) as response:
        assert response.status == 200 and b"<html" in response.read().lower()


@pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"no {CHROMIUM}: install Debian's chromium (make setup does)")
def test_the_viewer_shows_the_samples_rewards_and_components_in_a_browser(
    viewed_e1_log: tuple[EvalLog, list[str], str], tmp_path: Path
) -> None:
    """What a user opening the log sees in headless Chromium: the task, each sample and our scorer's columns."""
    _, sample_ids, url = viewed_e1_log
    with chromium_page(tmp_path / "screens") as page:
        page.navigate(f"{url}/")
        page.wait_for_text("sv-env-network-logs", timeout_s=60)
        for sample_id in sample_ids:
            page.wait_for_text(sample_id)
        for column in ("REWARD", "ACCURACY", "CALIBRATION", "FORMAT"):
            assert page.count_text(column) >= 1, column
        page.screenshot("samples")


def assert_rollout_scored_as_ours(log_dir: Path, n: int) -> None:
    """The log of a live `inspect eval secverify/e1`: the runner's first n items, posed with our messages, and each
    sample's reward and components == our verifier's on the completion the model wrote."""
    (path,) = log_dir.glob("*.eval")
    log = read_eval_log(str(path))
    assert log.status == "success", log.error
    env = get_environment("e1")
    items = {str(item["flow_id"]): item for item in eval_slice("e1", n=n).items}
    assert {str(sample.id) for sample in log.samples} == set(items)
    for sample in log.samples:
        item = items[str(sample.id)]
        assert turns(sample.input) == env.episodes.messages(item)
        ours = env.verifier.score(item, sample.output.completion)
        value = next(iter(sample.scores.values())).value
        assert value == {"reward": ours.reward, **ours.components}, sample.id


def inspect_cli(log_dir: Path, *args: str, env: Mapping[str, str] | None = None) -> None:
    command = [str(Path(sys.executable).parent / "inspect"), "eval", "secverify/e1", "-T", "n=2", *args]
    command += ["--log-dir", str(log_dir), "--display", "plain", "--max-connections", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.mark.slow
def test_live_rollout_through_the_served_model(served_smollm2: ServedModel, tmp_path: Path) -> None:
    # inspect's own OpenAI-compatible provider, with openai 3.x put first on the path (see inspect_environment)
    inspect_cli(
        tmp_path, "--model", f"openai-api/local/{served_smollm2.model}", env=inspect_environment(served_smollm2)
    )
    assert_rollout_scored_as_ours(tmp_path, 2)


@pytest.mark.slow
def test_live_rollout_through_the_served_model_as_a_registry_model(served_smollm2: ServedModel, tmp_path: Path) -> None:
    # secverify's own client behind `--model secverify/<id>`: the served path that works with openai 2.x as well
    registry = tmp_path / "models.yaml"
    entry = {"provider": "openai_compatible", "model": served_smollm2.model, "base_url": served_smollm2.base_url}
    registry.write_text(json.dumps({"defaults": {"params": {"temperature": 0}}, "models": {"smollm2-served": entry}}))
    logs = tmp_path / "logs"
    inspect_cli(logs, "--model", "secverify/smollm2-served", "-M", f"registry={registry}")
    assert_rollout_scored_as_ours(logs, 2)


@pytest.mark.slow
def test_live_rollout_through_inspects_transformers_provider(exported_smollm2: Path, tmp_path: Path) -> None:
    inspect_cli(
        tmp_path,
        "--model",
        f"hf/{exported_smollm2}",
        "-M",
        "device=cpu",
        "-M",
        "do_sample=false",
        env={"HF_HUB_OFFLINE": "1", **ONE_TORCH_THREAD},
    )
    assert_rollout_scored_as_ours(tmp_path, 2)
