"""What every secverify environment shares as a Prime `verifiers` (0.4, `verifiers.v1`) environment.

- `SecverifyTaskData`: a task carries its environment id and the whole corpus item (label included) as JSON, so
  scoring and replay need nothing but the trace.
- `SecverifyTasksetConfig`: the items `secverify eval` poses (split, n, seed, dataset, through `eval_slice`), so a
  library run of N items poses exactly the first N items of a secverify run with that seed.
- `SecverifyTask`: the verdict of the environment's own verifier, computed once per trace, and `component_task`, the
  rubric: one weighted `@vf.reward` per reward component, so `Trace.reward` is our reward bit for bit.
- `SecverifyChatHarness`: the default harness is a chat loop (tools as native function calls), never `bash`.
- `SecverifyEnv`: a single-agent env whose seat runs in a local subprocess unless told otherwise.
- `load_seed_environment`: the v0-style `load_environment(**kwargs)`, built through the library's own resolver.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar

import verifiers.v1 as vf
from verifiers.v1.harnesses.null import NullHarness
from verifiers.v1.types import content_text

from secverify.interop.items import EMBEDDED, env_id_for, eval_slice
from sv_shared.answers.rewards import RewardWeights, configured_reward, term_value
from sv_shared.config import EnvConfig
from sv_shared.contracts import Environment, Item, Message, ScoredSample
from sv_shared.registry import ENV_NAMES, build_environment, load_env_config

VERDICT_KEY = "secverify"
"""trace.info key of our verifier's verdict (reward, components, error), written once per trace by scoring."""


_BUILT_LOCK = threading.Lock()
_BUILT: dict[tuple[str, str], Environment] = {}


def _built(env_id: str, config_json: str, config: EnvConfig) -> Environment:
    with _BUILT_LOCK:
        key = (env_id, config_json)
        if key not in _BUILT:
            _BUILT[key] = build_environment(env_id, config)
        return _BUILT[key]


class ItemNotPortableError(ValueError):
    """A corpus item that does not survive the JSON round trip a task's wire data makes (so scoring it from the
    trace would differ from scoring it in our runner)."""


class SecverifyTaskData(vf.TaskData):
    env_id: str = ""
    """e1 … e6."""
    item_json: str = "{}"
    """The whole corpus item, label included: scoring-side data, as `answer` is in a math taskset."""

    @property
    def item(self) -> Item:
        return json.loads(self.item_json)


class SecverifyTaskConfig(vf.TaskConfig):
    include_tools: bool = False
    """Set from the taskset config's `include_tools` (`Task.toolsets` sees only the task config)."""


class SecverifyTasksetConfig(vf.TasksetConfig):
    """Which items a run poses: `eval_slice(env, split=…, n=…, seed=…, dataset=…)`."""

    split: str = "test"
    n: int | None = None
    """The first n items of the seeded order (None: the whole split); the same items `secverify eval -n` scores."""
    seed: int = 42
    """The order seed, as `secverify eval --seed` (default 42)."""
    dataset: str = EMBEDDED
    """"embedded" (the shipped corpus, curated as the Dagster assets curate it) or an items file's path."""
    include_tools: bool = False
    """Tool-using episodes (E2 scanners, E4 URL reputation): the tool prompt, and the tools served per rollout."""
    task: SecverifyTaskConfig = SecverifyTaskConfig()

    def model_post_init(self, context: Any) -> None:
        super().model_post_init(context)
        if self.task.include_tools != self.include_tools:
            self.task = self.task.model_copy(update={"include_tools": self.include_tools})


def item_wire(item: Item) -> str:
    """An item as task wire data; refuses one the JSON round trip would change (ItemNotPortableError)."""
    try:
        wire = json.dumps(item, sort_keys=True)
    except (TypeError, ValueError) as error:
        raise ItemNotPortableError(f"item {item.get('item_id', item.get('id'))!r} is not JSON: {error}") from error
    if json.loads(wire) != item:
        raise ItemNotPortableError(f"item {item.get('item_id', item.get('id'))!r} changes in a JSON round trip")
    return wire


def task_data(env: Environment, item: Item, messages: list[Message]) -> SecverifyTaskData:
    """Task data posing `messages` (a system message, then the user's), exactly as our runner sends them."""
    system = [m["content"] for m in messages if m["role"] == "system"]
    rest = [m for m in messages if m["role"] != "system"]
    prompt: str | list[Message] = rest[0]["content"] if [m["role"] for m in rest] == ["user"] else rest
    return SecverifyTaskData(
        id=str(item[env.data.id_column]),
        name=env.name,
        prompt=prompt,
        system_prompt="\n\n".join(system) if system else None,
        env_id=env.env_id,
        item_json=item_wire(item),
    )


def completion_text(trace: vf.Trace) -> str:
    """The final answer exactly as the model wrote it (`trace.last_reply` strips it; our parser must see it raw)."""
    replies = trace.assistant_messages
    return content_text(replies[-1].content) if replies else ""


@dataclass(frozen=True)
class WeightSet:
    """One set of reward weights and the items it scores (E3 scores repair and detect items with different sets)."""

    weights: RewardWeights
    prefix: str = ""
    """Prepended to the component names of this set's rewards (their names must be unique across sets)."""
    applies: Callable[[Item], bool] | None = None
    """Which items the set scores (None: all); on other items its rewards are 0.0, which leaves the sum exact."""


class SecverifyTask(vf.Task[SecverifyTaskData, vf.State, SecverifyTaskConfig]):
    """Scoring through the environment's own verifier: `verdict` runs it once per trace (the first caller, a metric,
    stores it in trace.info); reward components and metrics read it."""

    ENV_ID: ClassVar[str] = ""

    @classmethod
    def environment(cls) -> Environment:
        """The environment as its config file describes it now, built once per config: every score asks for it, and
        building one opens its scanners (E2's oracle checks trivy in a subprocess each time)."""
        config = load_env_config(cls.ENV_ID)
        return _built(cls.ENV_ID, config.model_dump_json(), config)

    async def score_answer(self, trace: vf.Trace) -> ScoredSample:
        """Our verifier's verdict on this trace (overridden where an episode adds more than the final answer)."""
        verifier = self.environment().verifier
        return await asyncio.to_thread(verifier.score, self.data.item, completion_text(trace))

    async def verdict(self, trace: vf.Trace) -> dict[str, Any]:
        cached = trace.info.get(VERDICT_KEY)
        if cached is None:
            sample = await self.score_answer(trace)
            cached = {"reward": sample.reward, "components": dict(sample.components), "error": sample.error}
            trace.info[VERDICT_KEY] = cached
        return cached

    @vf.metric(priority=100)
    async def secverify(self, trace: vf.Trace) -> dict[str, float]:
        """Our verifier's reward (for comparison with the weighted sum) and whether it refused the answer's format
        (its named error is in trace.info["secverify"]["error"]). Runs before the rewards, so they share its verdict."""
        verdict = await self.verdict(trace)
        return {"secverify_reward": verdict["reward"], "format_error": 1.0 if verdict["error"] else 0.0}


def _component_reward(name: str, component: str, penalty: bool, weight_set: WeightSet) -> Callable[..., Any]:
    async def reward(self: SecverifyTask, trace: vf.Trace) -> float:
        if weight_set.applies is not None and not weight_set.applies(self.data.item):
            return 0.0
        return term_value(float((await self.verdict(trace))["components"][component]), penalty)

    reward.__name__ = reward.__qualname__ = name
    reward.__doc__ = (
        f"1 − our verifier's {component!r} component (a penalty, at a negative weight)."
        if penalty
        else f"Our verifier's {component!r} component."
    )
    return reward


def component_task(env_id: str, weight_sets: list[WeightSet], base: type[SecverifyTask] = SecverifyTask) -> type:
    """A Task class whose rubric is the verifier's reward terms (RewardWeights.terms): one `@vf.reward` each, a gain
    weighted by its normalized config weight, a penalty giving 1 − component at its negated weight, recorded in that
    order (descending priority), so Σ score·weight is `RewardWeights.combine`."""
    namespace: dict[str, Any] = {"ENV_ID": env_id, "__module__": base.__module__}
    names = [(ws, ws.prefix + c, c, w, p) for ws in weight_sets for c, w, p in ws.weights.terms()]
    if len({name for _, name, _, _, _ in names}) != len(names):
        raise ValueError(f"{env_id}: reward names repeat across weight sets; give the sets distinct prefixes")
    for rank, (weight_set, name, component, weight, penalty) in enumerate(names):
        fn = _component_reward(name, component, penalty, weight_set)
        namespace[name] = vf.reward(fn, weight=weight, priority=len(names) - rank)
    return type(f"{ENV_NAMES[env_id].title().replace('-', '')}Rubric", (base,), namespace)


def config_weights(env: Environment) -> WeightSet:
    """The environment's configured `reward_weights` (configs/envs/<env>.yaml), scoring every item."""
    return WeightSet(configured_reward(env.config))


class SecverifyTaskset(vf.Taskset):
    """Tasks from `eval_slice`, posed by the environment's episodes (`messages`), for a subclass that names its
    environment (`ENV_ID`) and Task class (in its generic parameters)."""

    ENV_ID: ClassVar[str] = ""

    def messages(self, env: Environment, item: Item) -> list[Message]:
        """The prompt for one item: the single-turn messages (a tool-using env overrides this for tool mode)."""
        return env.episodes.messages(item)

    def load(self) -> Iterator[vf.Task]:
        config: SecverifyTasksetConfig = self.config
        posed = eval_slice(self.ENV_ID, split=config.split, n=config.n, seed=config.seed, dataset=config.dataset)
        task_cls = self.task_type()
        for item in posed.items:
            yield task_cls(task_data(posed.env, item, self.messages(posed.env, item)), config.task)


class SecverifyChatHarness(NullHarness):
    """The default harness of every secverify taskset: the library's chat loop, which offers a task's tools as
    native function calls and never executes model-written code (the library's own default, `bash`, does)."""


def local_agent(**fields: Any) -> vf.AgentConfig:
    """A role's default seat: its harness runs as a local subprocess (the library's default is a remote Prime
    sandbox); `--env.<role>.runtime.type prime` (or any runtime) still overrides it."""
    return vf.AgentConfig(runtime=vf.SubprocessConfig(), **fields)


class SecverifyEnvConfig(vf.SingleAgentEnvConfig):
    agent: vf.AgentConfig = local_agent()
    """The policy's seat (CLI: --env.agent.*), local by default."""


class SecverifyEnv(vf.SingleAgentEnv, vf.Env[SecverifyEnvConfig]):
    """The single-agent env (one `agent` seat playing each task) with a local runtime by default."""


@cache
def _taskset_fields(seed_name: str) -> frozenset[str]:
    from verifiers.v1.utils.loaders import taskset_config_type

    return frozenset(taskset_config_type(seed_name).model_fields)


def load_seed_environment(seed_name: str, **kwargs: Any) -> vf.Env:
    """The env for `sv-env-…` through the library's own loader: taskset-config keys (split, n, seed, dataset,
    include_tools, task, …) go to `taskset`, the rest (agent, timeout, …) to the env config."""
    seed_name = ENV_NAMES[env_id_for(seed_name)]
    taskset = {key: value for key, value in kwargs.items() if key in _taskset_fields(seed_name)}
    rest = {key: value for key, value in kwargs.items() if key not in taskset}
    if "taskset" in rest:
        raise ValueError("pass taskset settings as keywords (split=…, n=…), not as taskset=")
    config = vf.resolve_env_config({**rest, "taskset": {**taskset, "id": seed_name}})
    return vf.load_environment(config)


def answer_trace(
    task: vf.Task, completion: str, *, exchange: Sequence[Any] = (), state: vf.State | None = None
) -> vf.Trace:
    """A trace of `task` whose model answered `completion`, after the tool-calling turns in `exchange` (assistant and
    tool messages, in order) with the rollout's `state`: scores a given episode through `Task.score` (the library's
    own scoring path) without a rollout."""
    from verifiers.v1.graph import MessageNode
    from verifiers.v1.state import state_cls
    from verifiers.v1.trace import AgentInfo, TraceTask
    from verifiers.v1.types import AssistantMessage, SystemMessage, UserMessage

    messages: list[Any] = [SystemMessage(content=task.data.system_prompt)] if task.data.system_prompt else []
    messages += [UserMessage(content=task.data.prompt_text), *exchange, AssistantMessage(content=completion)]
    nodes = [
        MessageNode(parent=index - 1 if index else None, message=message, sampled=isinstance(message, AssistantMessage))
        for index, message in enumerate(messages)
    ]
    return vf.Trace(
        task=TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
        state=state if state is not None else state_cls(type(task))(),
        agent=AgentInfo(config=local_agent(), name="offline", trainable=False),
        nodes=nodes,
    )
