"""secverify's E1-E4 as Prime `verifiers` environments: found under their seed names by the library's own loader,
posing our items and prompts, and scoring every completion exactly as our verifier does (reward and each component,
compared with ==), single-turn and tool-using."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

vf = pytest.importorskip("verifiers.v1")

from secverify.interop.items import eval_slice  # noqa: E402
from secverify.interop.verifiers.common import SecverifyChatHarness, SecverifyEnv, answer_trace  # noqa: E402
from secverify_dagster.resources.models import load_registry  # noqa: E402
from secverify_dagster.runner.datasets import embedded_dataset  # noqa: E402
from secverify_dagster.runner.eval_runner import EvalRunner  # noqa: E402
from sv_shared.answers.rewards import RewardWeights, configured_reward  # noqa: E402
from sv_shared.registry import ENV_NAMES, get_environment  # noqa: E402
from sv_shared.runs.folder import RunFolder  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SEED_NAMES = {env_id: ENV_NAMES[env_id] for env_id in ("e1", "e2", "e3", "e4")}
BASELINES = {"e1": "heuristic", "e2": "tool-oracle", "e3": "scanner-fix", "e4": "phish-rules"}
RUNNER_N = {"e1": 6, "e2": 4, "e3": 2, "e4": 6}

HOSTILE = [
    "",
    "I think this one is probably fine, but I am not sure.",
    "{" * 5000 + "}" * 5000,
    '{"a": ' * 200 + "1" + "}" * 200,
    "x" * 200_000,
    '{"label": "malicious", "confidence": 0.9, "label": "benign"}',
    '{"label": "malicious", "confidence": 7.5}',
    '{"label": "benign", "confidence": -1}',
    '{"label": "malicious", "confidence": NaN}',
    '{"label": "\ud800", "confidence": 0.5}',
    "\ud800\udfff\x00 \u202e",
    '```json\n{"verdict": "phishing", "confidence": 0.8}\n```',
    '{"violations": [{"id": "\ud800"}], "patch": "\ud800", "confidence": 2}',
    '{"diff": "--- a/../../etc/passwd\\n+++ b/../../etc/passwd\\n@@ -1 +1 @@\\n-x\\n+y\\n", "cwe": "CWE-22"}',
    '{"diff": "", "cwe": "CWE-\ud800"}',
]


def load_tasks(env_id: str, **taskset: Any) -> list[Any]:
    """The tasks of the env the library loads for this taskset config (`--env.taskset.*`)."""
    config = vf.resolve_env_config({"taskset": {"id": SEED_NAMES[env_id], **taskset}})
    return list(vf.load_environment(config).taskset)


@cache
def tasks(env_id: str, n: int | None = None) -> list[Any]:
    return load_tasks(env_id, n=n)


def library_score(task: Any, completion: str) -> Any:
    """The library's verdict on `completion`: Task.score on a trace holding it."""
    trace = answer_trace(task, completion)
    asyncio.run(task.score(trace))
    return trace


def as_components(env_id: str, scores: dict[str, float]) -> dict[str, float]:
    """The verifier components that library reward scores carry: a penalty's reward is its shortfall, 1 − component."""
    penalties = configured_reward(get_environment(env_id).config).penalties
    return {name: 1.0 - score if name in penalties else score for name, score in scores.items()}


def components_of(env_id: str, trace: Any) -> dict[str, float]:
    return as_components(env_id, {name: r.score for name, r in trace.rewards.items()})


def assert_equal_verdicts(env_id: str, task: Any, completion: str, reward: float, components: dict[str, float]):
    """The same reward, bit for bit, and the same components (a penalty's reward is its shortfall, 1 − component)."""
    trace = library_score(task, completion)
    assert trace.reward == reward, (env_id, task.data.id, completion[:80])
    library_components = components_of(env_id, trace)
    if env_id == "e3":
        prefix = "detect_" if task.data.item["task"] == "detect" else ""
        library_components = {
            name.removeprefix("detect_"): score
            for name, score in library_components.items()
            if name.startswith("detect_") == bool(prefix)
        }
    assert library_components == components, (env_id, task.data.id)


@pytest.mark.parametrize("env_id", sorted(SEED_NAMES))
def test_the_library_finds_each_environment_under_its_seed_name(env_id: str) -> None:
    config = vf.resolve_env_config({"taskset": {"id": SEED_NAMES[env_id]}})
    environment = vf.load_environment(config)
    assert isinstance(environment, SecverifyEnv)
    harness = config.agent_harnesses()["agent"]
    assert harness.id == SEED_NAMES[env_id]
    from verifiers.v1.utils.loaders import harness_class

    assert issubclass(harness_class(harness.id), SecverifyChatHarness)
    assert config.agent.runtime.type == "subprocess"
    overridden = vf.resolve_env_config({"taskset": {"id": SEED_NAMES[env_id]}, "agent": {"runtime": {"type": "prime"}}})
    assert overridden.agent.runtime.type == "prime"


@pytest.mark.parametrize("env_id", sorted(SEED_NAMES))
def test_the_taskset_poses_our_items_with_our_prompts(env_id: str) -> None:
    posed = eval_slice(env_id, split="test", seed=42)
    library_tasks = tasks(env_id)
    assert [task.data.id for task in library_tasks] == [str(item[posed.env.data.id_column]) for item in posed.items]
    for task, item in zip(library_tasks, posed.items, strict=True):
        assert task.data.item == item
        system, user = posed.env.episodes.messages(item)
        assert (task.data.system_prompt, task.data.prompt) == (system["content"], user["content"])


def test_load_environment_takes_the_v0_style_keywords() -> None:
    import sv_env_network_logs

    environment = sv_env_network_logs.load_environment(split="dev", n=3, seed=7)
    posed = eval_slice("e1", split="dev", n=3, seed=7)
    assert [task.data.item for task in environment.taskset] == posed.items


@pytest.mark.parametrize("env_id", sorted(SEED_NAMES))
def test_rewards_are_the_config_weights_normalized_in_config_order(env_id: str) -> None:
    """Gains at their normalized weights, then penalties (E1's and E4's asymmetric cost) at their weights negated."""
    config = get_environment(env_id).config
    trace = library_score(tasks(env_id, 1)[0], "")
    expected = {name: weight for name, weight, _ in configured_reward(config).terms()}
    if env_id == "e3":
        detect = configured_reward(config, "detect_reward_weights").terms()
        expected |= {f"detect_{name}": weight for name, weight, _ in detect}
    assert {name: r.weight for name, r in trace.rewards.items()} == expected
    assert list(trace.rewards) == list(expected)
    if env_id in ("e1", "e4"):
        assert expected["asymmetric_cost"] == -0.7 and list(expected)[-1] == "asymmetric_cost"
        assert trace.rewards["asymmetric_cost"].score == 1.0  # an unparseable answer: the whole shortfall


def test_reweighting_through_the_library_config_changes_the_reward_as_expected() -> None:
    """`--env.taskset.task.rewards.<component>.weight` re-weights that component and leaves the others."""
    [task] = tasks("e1", 1)
    completion = '{"label": "benign", "confidence": 0.9}'
    base = library_score(task, completion)
    weights = {"accuracy": 0.0, "calibration": 0.0, "asymmetric_cost": 0.0, "format": 1.0}
    [only_format] = load_tasks("e1", n=1, task={"rewards": {name: {"weight": w} for name, w in weights.items()}})
    assert library_score(only_format, completion).reward == base.rewards["format"].score == 1.0
    # Equal weights set through the library give exactly the reward our verifier gives under equal config weights.
    equal = RewardWeights(dict.fromkeys(base.rewards, 1.0))
    [equal_task] = load_tasks("e1", n=1, task={"rewards": {n: {"weight": w} for n, w in equal.normalized().items()}})
    reweighted = library_score(equal_task, completion)
    components = {name: r.score for name, r in reweighted.rewards.items()}
    assert reweighted.reward == equal.combine(components)
    assert list(reweighted.rewards) == list(base.rewards)


@cache
def runner_samples(env_id: str, tmp_root: str) -> list[tuple[str, str, float, dict[str, float]]]:
    """(item id, completion, reward, components) from our EvalRunner with the env's rule baseline."""
    environment = get_environment(env_id)
    model = load_registry()[BASELINES[env_id]]
    outcome = EvalRunner(environment, model, evals_root=Path(tmp_root) / env_id).run(
        embedded_dataset(environment, split="test", seed=42), n=RUNNER_N[env_id], seed=42
    )
    return [
        (record.id, record.completion, record.reward, dict(record.components))
        for record in RunFolder(outcome.run_dir).read_results()
    ]


@pytest.mark.parametrize("env_id", sorted(SEED_NAMES))
def test_runner_completions_earn_equal_rewards_through_the_library(env_id: str, tmp_path_factory) -> None:
    samples = runner_samples(env_id, str(tmp_path_factory.mktemp("runs")))
    by_id = {task.data.id: task for task in tasks(env_id, RUNNER_N[env_id])}
    assert len(samples) == RUNNER_N[env_id]
    for item_id, completion, reward, components in samples:
        assert_equal_verdicts(env_id, by_id[item_id], completion, reward, components)


@pytest.mark.parametrize("env_id", sorted(SEED_NAMES))
def test_reference_and_hostile_completions_earn_equal_rewards(env_id: str) -> None:
    verifier = get_environment(env_id).verifier
    for task in tasks(env_id, 3 if env_id == "e3" else 8):
        reference = verifier.reference_answer(task.data.item)
        completions = [*HOSTILE, *([reference] if reference is not None else [])]
        for completion in completions:
            ours = verifier.score(task.data.item, completion)
            assert_equal_verdicts(env_id, task, completion, ours.reward, ours.components)


def test_e3_detect_items_score_with_the_detect_weights_exactly() -> None:
    verifier = get_environment("e3").verifier
    repair = tasks("e3", 1)[0]
    for vulnerable in (True, False):
        item = {**repair.data.item, "task": "detect", "vulnerable": vulnerable}
        task = type(repair)(repair.data.model_copy(update={"item_json": json.dumps(item)}), repair.config)
        for completion in ['{"diff": "", "cwe": "none"}', f'{{"diff": "", "cwe": "{item["cwe"]}"}}', "no", ""]:
            ours = verifier.score(item, completion)
            assert ours.details["task"] == "detect"
            assert_equal_verdicts("e3", task, completion, ours.reward, ours.components)


def test_env_packages_import_without_the_library() -> None:
    """Without verifiers installed, `import sv_env_…` works and names no adapter class."""
    hide = (
        "import sys\n"
        "sys.modules['verifiers'] = None\n"  # as if not installed: find_spec gives None, import raises
        "import sv_env_network_logs, sv_env_config_verification, sv_env_code_vulnerability, sv_env_phishing_detection\n"
        "print([m.__all__ for m in (sv_env_network_logs, sv_env_config_verification, sv_env_code_vulnerability,"
        " sv_env_phishing_detection)])\n"
    )
    out = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[[], [], [], []]"


def scripted_policy(replies: list[dict[str, Any]]):
    """A tool-calling policy that plays `replies` in order (each {"text", "tool_calls"} in OpenAI's form)."""
    from sv_shared.contracts import PolicyReply

    remaining = list(replies)

    def policy(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> PolicyReply:
        assert tools, "native tool mode offers the tools"
        return PolicyReply(**remaining.pop(0))

    return policy


def native_call(index: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"c{index}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def tool_script(env_id: str, item: dict[str, Any], final: str) -> list[dict[str, Any]]:
    """Replies that use the tool, misuse it and overrun its budget before answering `final`."""
    if env_id == "e2":
        calls = [
            {"tool": "all"},
            {"tool": "no-such-scanner"},
            {"tool": "semgrep", "content": item["content"]},
            {"tool": "all"},
        ]
        name = "scan"
    else:
        url = (json.loads(item["urls"]) if isinstance(item.get("urls"), str) else item.get("urls")) or [
            "http://example.test/x"
        ]
        calls = [
            {"target": str(url[0])},
            {"target": "paypa1-secure.example"},
            {"target": "example.com"},
            {"target": "x.test"},
        ]
        name = "url_reputation"
    return [
        {"text": "", "tool_calls": [native_call(0, name, calls[0])]},
        {"text": "checking more", "tool_calls": [native_call(1, name, calls[1]), native_call(2, name, calls[2])]},
        {"text": "", "tool_calls": [native_call(3, name, calls[3])]},
        {"text": final, "tool_calls": []},
    ]


async def library_tool_episode(task: Any, replies: list[dict[str, Any]]) -> Any:
    """The same replies through the library: each call goes to the env's Toolset (served per rollout), the results
    and the final answer form the trace, and Task.score scores it."""
    from verifiers.v1.types import AssistantMessage, ToolCall, ToolMessage

    toolset = type(task).TOOLSET(vf.ToolsetConfig())
    await toolset.setup_task(task.data)
    method = next(iter(fn for fn in vars(type(toolset)).values() if hasattr(fn, "tool")))
    exchange: list[Any] = []
    for reply in replies[:-1]:
        calls = reply["tool_calls"]
        exchange.append(
            AssistantMessage(
                content=reply["text"],
                tool_calls=[
                    ToolCall(id=c["id"], name=c["function"]["name"], arguments=c["function"]["arguments"])
                    for c in calls
                ],
            )
        )
        for call in calls:
            result = await method(toolset, **json.loads(call["function"]["arguments"]))
            exchange.append(ToolMessage(tool_call_id=call["id"], content=result))
    trace = answer_trace(task, replies[-1]["text"], exchange=exchange, state=toolset.state)
    await task.score(trace)
    return trace, exchange


@pytest.mark.parametrize("env_id", ["e2", "e4"])
def test_tool_episodes_earn_equal_rewards_and_accounting_through_the_library_toolset(env_id: str) -> None:
    environment = get_environment(env_id)
    library_tasks = load_tasks(env_id, n=2, include_tools=True)
    for task in library_tasks:
        assert type(task).toolsets(task.config), "include_tools serves the tool per rollout"
        item = task.data.item
        for final in (environment.verifier.reference_answer(item) or "", "not json", '{"label": "phishing"}'):
            replies = tool_script(env_id, item, final)
            ours = environment.episodes.rollout(item, scripted_policy(replies), tool_protocol="native")
            trace, exchange = asyncio.run(library_tool_episode(task, replies))
            system, user = ours.details["transcript"][:2]
            assert (task.data.system_prompt, task.data.prompt) == (system["content"], user["content"])
            assert trace.reward == ours.reward
            assert components_of(env_id, trace) == ours.components
            tools = ours.details["tools"]
            assert trace.metrics["tool_calls"] == tools["tool_calls"]
            assert trace.metrics["turns"] == len(replies)
            if env_id == "e2":
                assert (trace.metrics["refused_calls"], trace.metrics["invalid_calls"]) == (
                    tools["refused_calls"],
                    tools["invalid_calls"],
                )
            ours_results = [m["content"] for m in ours.details["transcript"] if m["role"] == "tool"]
            assert [m.content for m in exchange if m.role == "tool"] == ours_results


@pytest.mark.slow
def test_vf_eval_rolls_out_e1_against_the_served_model_with_our_prompts_and_rewards(served_smollm2, tmp_path: Path):
    """`vf-eval sv-env-network-logs` (the library's CLI; its chat program is built by uv from PyPI on first use)
    against SmolLM2 behind the SSE terminator on loopback: each trace's prompt is ours and its reward is our
    verifier's on the answer the model gave."""
    import os
    import time
    import urllib.request

    from served_model import free_port

    port = free_port()
    upstream = served_smollm2.base_url.removesuffix("/v1")
    proxy = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "secverify.interop.verifiers.sse_terminator",
            "--upstream",
            upstream,
            "--port",
            str(port),
        ],
        cwd=REPO,
    )
    try:
        for _ in range(100):
            assert proxy.poll() is None, "the SSE terminator exited"
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except OSError:
                time.sleep(0.2)
        bin_dir = Path(sys.executable).parent
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SV_LOCAL_KEY": "none"}
        command = [
            str(bin_dir / "vf-eval"), "sv-env-network-logs", "-m", served_smollm2.model,
            "--client.base-url", f"http://127.0.0.1:{port}/v1", "--client.api-key-var", "SV_LOCAL_KEY",
            "--sampling.max-tokens", "48", "--sampling.temperature", "0", "-n", "2", "-c", "1",
            "--no-push", "--no-rich", "-o", str(tmp_path), "--run.name", "live",
        ]  # fmt: skip
        run = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    finally:
        proxy.terminate()
        proxy.wait(timeout=10)
    environment = get_environment("e1")
    episodes = [json.loads(line) for line in (tmp_path / "live" / "traces.jsonl").read_text().splitlines()]
    assert [e["task"]["data"]["id"] for e in episodes] == [t.data.id for t in tasks("e1", 2)]
    for episode in episodes:
        [trace] = episode["traces"]
        item = json.loads(episode["task"]["data"]["item_json"])
        messages = [node["message"] for node in trace["nodes"]]
        assert [{"role": m["role"], "content": m["content"]} for m in messages[:2]] == environment.episodes.messages(
            item
        )
        answers = [
            m["content"]
            for n, m in zip(trace["nodes"], messages, strict=True)
            if n.get("sampled") and m["role"] == "assistant"
        ]
        assert answers, trace.get("errors")
        ours = environment.verifier.score(item, answers[-1])
        assert sum(r["score"] * r["weight"] for r in trace["rewards"].values()) == ours.reward
        assert as_components("e1", {name: r["score"] for name, r in trace["rewards"].items()}) == ours.components


def scripted_chat_server(replies: list[dict[str, Any]], seen: list[dict[str, Any]]) -> Any:
    """An OpenAI-compatible chat server (streaming) that answers the n-th request with replies[n]; requests go to
    `seen`. It stands in for a function-calling model, which SmolLM2 on CPU is not."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    def event(choices: list[dict[str, Any]], usage: dict[str, int] | None = None) -> bytes:
        body = {"id": "scripted", "object": "chat.completion.chunk", "created": 0, "model": "scripted"}
        body |= {"choices": choices, **({"usage": usage} if usage else {})}
        return b"data: " + json.dumps(body).encode() + b"\n\n"

    async def completions(request: Request) -> StreamingResponse:
        seen.append(await request.json())
        reply = replies[min(len(seen), len(replies)) - 1]
        calls = [{"index": i, **call} for i, call in enumerate(reply["tool_calls"])]
        delta = {"role": "assistant", "content": reply["text"], **({"tool_calls": calls} if calls else {})}
        events = [
            event([{"index": 0, "delta": delta, "finish_reason": None}]),
            event([{"index": 0, "delta": {}, "finish_reason": "tool_calls" if calls else "stop"}]),
            event([], {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}),
            b"data: [DONE]\n\n",
        ]
        return StreamingResponse(iter(events), media_type="text/event-stream")

    async def models(request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"]), Route("/v1/models", models)])


@pytest.mark.slow
def test_vf_eval_plays_a_tool_episode_through_the_served_toolset(tmp_path: Path) -> None:
    """`vf-eval sv-env-phishing-detection` with include_tools: the library serves our Toolset per rollout, its chat
    harness offers `url_reputation` as a native function, and a scripted function-calling model overruns the budget
    before answering. The tool results, accounting, turn budget and reward equal our own rollout of the same replies."""
    import os
    import threading

    import uvicorn
    from served_model import free_port

    environment = get_environment("e4")
    [task] = load_tasks("e4", n=1, include_tools=True)
    item = task.data.item
    replies = tool_script("e4", item, environment.verifier.reference_answer(item) or "")
    ours = environment.episodes.rollout(item, scripted_policy(replies), tool_protocol="native")

    seen: list[dict[str, Any]] = []
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(scripted_chat_server(replies, seen), host="127.0.0.1", port=port))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        bin_dir = Path(sys.executable).parent
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SV_LOCAL_KEY": "none"}
        command = [
            str(bin_dir / "vf-eval"), "sv-env-phishing-detection", "-m", "scripted",
            "--client.base-url", f"http://127.0.0.1:{port}/v1", "--client.api-key-var", "SV_LOCAL_KEY",
            "--env.taskset.include-tools", "true", "-n", "1", "-c", "1",
            "--no-push", "--no-rich", "-o", str(tmp_path), "--run.name", "tools",
        ]  # fmt: skip
        run = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    assert [tool["function"]["name"] for tool in seen[0]["tools"]] == ["url_reputation"]
    [episode] = [json.loads(line) for line in (tmp_path / "tools" / "traces.jsonl").read_text().splitlines()]
    [trace] = episode["traces"]
    tool_results = [n["message"]["content"] for n in trace["nodes"] if n["message"]["role"] == "tool"]
    ours_results = [m["content"] for m in ours.details["transcript"] if m["role"] == "tool"]
    assert [json.loads(r if isinstance(r, str) else r[0]["text"]) for r in tool_results] == [
        json.loads(r) for r in ours_results
    ]
    assert sum(r["score"] * r["weight"] for r in trace["rewards"].values()) == ours.reward
    assert as_components("e4", {name: r["score"] for name, r in trace["rewards"].items()}) == ours.components
    assert trace["metrics"]["tool_calls"] == ours.details["tools"]["tool_calls"] == len(ours_results) == 4
    assert "budget" in ours_results[-1] and ours.reward > 0.9
    assert len(seen) == len(replies)
