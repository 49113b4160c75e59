"""Training into checkpoints: SFT, RLFT (GRPO on the verifiers' rewards, or on a dialogue's own episodes) and the
joint attacker/defender stage; each run resumes when interrupted and ends with a manifest of its recipe, parent, data
and code."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from secverify_dagster.assets.keys import TOURNAMENT_ENV
from secverify_dagster.resources.models import ModelSpec, load_registry, open_client
from secverify_dagster.runner.datasets import select_items
from secverify_dagster.runner.dialogue import batch_policy
from secverify_dagster.runner.metadata import code_version, dirty_paths
from secverify_dagster.runner.tournament import TournamentConfig, run_tournament
from secverify_dagster.training.inputs import ExperimentInputs, dev_probes, rlft_rows, sft_examples
from secverify_dagster.training.parents import Parent, resolve_parent
from secverify_dagster.training.paths import Log, ReportTo, TrainingError, TrainingPaths, curated
from secverify_dagster.training.promotion import scan_dataset
from sv_shared.contracts import Dialogue, Environment
from sv_shared.data.hashing import sha256_hex, stable_json
from sv_shared.registry import get_environment
from sv_shared.runs.schema import ExperimentRef
from sv_shared.training.checkpoints import CheckpointManifest, finish_training_run, open_training_run
from sv_shared.training.episode_rollout import EpisodeRollout, episode_reward
from sv_shared.training.joint import joint_rounds
from sv_shared.training.recipes import (
    RlftRecipe,
    SftRecipe,
    effective_reward_weights,
    init_kind,
    load_rlft_recipe,
    load_sft_recipe,
    recipe_hash,
)
from sv_shared.training.rewards import build_shaped_environments, grpo_reward_functions
from sv_shared.training.trainers import TrainingResult, run_grpo, run_sft


def _run_key(
    recipe_digest: str, parent: Parent, data: Mapping[str, str], experiment: ExperimentInputs | None = None
) -> str:
    """What makes two training runs the same run (so an interrupted one resumes): recipe, parent, data, and the
    experiment record it was made from (an edited record makes a new run)."""
    key: dict[str, Any] = {"recipe": recipe_digest, "parent": parent.model_id, "data": dict(data)}
    if experiment is not None:
        key["experiment"] = experiment.ref.as_dict()
    return sha256_hex(stable_json(key))


def _recipe_of(
    experiment: ExperimentInputs | None, kind: str, recipe_name: str, load: Callable[[str], Any]
) -> SftRecipe | RlftRecipe:
    if experiment is None:
        return load(recipe_name)
    expected = SftRecipe if kind == "sft" else RlftRecipe
    if not isinstance(experiment.recipe, expected) or experiment.recipe.name != recipe_name:
        trains = f"{experiment.ref.path} trains {experiment.recipe.name}"
        raise TrainingError(f"experiment {trains}, not {kind}/{recipe_name}")
    return experiment.recipe


def training_metrics(result: TrainingResult) -> dict[str, Any]:
    """What a checkpoint's manifest records of its training: pace, memory, resume point, every logged dict."""
    data = result.to_dict()
    for local_path in ("output_dir", "model_dir"):
        data.pop(local_path)
    if result.resumed_from is not None:
        data["resumed_from"] = result.resumed_from.name
    return data


def _manifest(
    recipe: SftRecipe | RlftRecipe,
    run: Any,
    parent: Parent,
    result: TrainingResult,
    *,
    data: Mapping[str, str],
    reward_weights: Mapping[str, Mapping[str, float]],
    experiment: ExperimentRef | None = None,
) -> CheckpointManifest:
    return CheckpointManifest(
        model_id=run.model_id,
        parent_model=parent.model_id,
        base_model=parent.base_model,
        stage=recipe.stage,
        run_id=run.run_id,
        recipe_name=recipe.name,
        recipe_hash=recipe_hash(recipe),
        recipe=recipe.model_dump(mode="json"),
        envs=list(recipe.envs),
        reward_weights={env: dict(weights) for env, weights in reward_weights.items()},
        data=dict(data),
        code_version=code_version(),
        dirty_paths=dirty_paths(),
        metrics=training_metrics(result),
        experiment=experiment,
    )


def _env_reward_weights(env_ids: Sequence[str]) -> dict[str, dict[str, float]]:
    return {env_id: get_environment(env_id).config.reward_weights.as_mapping() for env_id in env_ids}


def train_sft(
    recipe_name: str,
    *,
    paths: TrainingPaths,
    registry: Mapping[str, ModelSpec],
    report_to: ReportTo = "none",
    log: Log = print,
    gpu: bool | None = None,
    experiment: ExperimentInputs | None = None,
) -> CheckpointManifest:
    """Fine-tune the recipe's base model on its environments' SFT datasets; resumes an interrupted run. experiment:
    the record the run is made from (its recipe replaces the file's; the manifest records its ref)."""
    recipe = _recipe_of(experiment, "sft", recipe_name, load_sft_recipe)
    parent = resolve_parent(recipe.base_model, paths=paths, registry=registry)
    examples, data = sft_examples(recipe, paths, experiment)
    key = _run_key(recipe_hash(recipe), parent, data, experiment)
    with open_training_run(paths.checkpoints, parent.model_id, recipe.stage, key, base_model=parent.base_model) as run:
        log(
            f"SFT {recipe.name}: {len(examples)} examples, {parent.model_id} → {run.run_dir}"
            + (" (resuming)" if run.resumed else "")
        )
        result = run_sft(
            recipe,
            base_model_dir=parent.folder,
            examples=examples,
            output_dir=run.run_dir,
            report_to=report_to,
            gpu=gpu,
            run_name=run.model_id,
            dev_probes=dev_probes(recipe, {env_id: get_environment(env_id) for env_id in recipe.envs}, paths),
        )
        manifest = _manifest(
            recipe,
            run,
            parent,
            result,
            data=data,
            reward_weights=_env_reward_weights(recipe.envs),
            experiment=experiment.ref if experiment else None,
        )
        finish_training_run(run, manifest)
    return manifest


def _grpo_checkpoint(
    recipe: RlftRecipe,
    envs: Mapping[str, Environment],
    parent: Parent,
    *,
    paths: TrainingPaths,
    registry: Mapping[str, ModelSpec],
    report_to: ReportTo,
    log: Log,
    gpu: bool | None,
    counterparts: Mapping[str, str] | None = None,
    extra_data: Mapping[str, str] | None = None,
    experiment: ExperimentInputs | None = None,
) -> CheckpointManifest:
    """One GRPO run from `parent` on `envs` into a new (or the resumed) checkpoint folder.

    Single-turn environments are trained on their verifiers' reward functions (the total is optimised, each
    component logged). Dialogue environments, and tool environments when the recipe asks for tools, are played
    through their own episode code (one environment per run): the reward is the episode's verifier score."""
    slices = {experiment.env_id: experiment.slices} if experiment else None
    rows, data = rlft_rows(envs, recipe, paths, slices)
    data = {**data, **(extra_data or {})}
    multi_turn = recipe.tools or any(isinstance(env.episodes, Dialogue) for env in envs.values())
    key = _run_key(recipe_hash(recipe), parent, data, experiment)
    with contextlib.ExitStack() as stack:
        rollout_func = None
        if multi_turn:
            if len(envs) != 1:
                raise TrainingError(f"{recipe.name}: multi-turn GRPO trains one environment per run, not {list(envs)}")
            (env,) = envs.values()
            rollout_func = stack.enter_context(
                episode_rollout(env, recipe, paths=paths, registry=registry, counterparts=counterparts)
            )
            funcs, weights = [episode_reward], [1.0]
        else:
            funcs, weights = grpo_reward_functions(envs)
        if multi_turn and recipe.early_stopping is not None:
            raise TrainingError(f"{recipe.name}: early stopping scores single answers; episodes are not measured so")
        probes = dev_probes(recipe, {env_id: get_environment(env_id) for env_id in envs}, paths)
        run = stack.enter_context(
            open_training_run(paths.checkpoints, parent.model_id, recipe.stage, key, base_model=parent.base_model)
        )
        resuming = " (resuming)" if run.resumed else ""
        log(f"GRPO {recipe.name}: {len(rows)} prompts, {parent.model_id} → {run.run_dir}{resuming}")
        result = run_grpo(
            recipe,
            base_model_dir=parent.folder,
            rows=rows,
            reward_funcs=funcs,
            reward_weights=weights,
            output_dir=run.run_dir,
            report_to=report_to,
            rollout_func=rollout_func,
            gpu=gpu,
            run_name=run.model_id,
            dev_probes=probes,
        )
        manifest = _manifest(
            recipe,
            run,
            parent,
            result,
            data=data,
            reward_weights=effective_reward_weights(recipe),
            experiment=experiment.ref if experiment else None,
        )
        return finish_training_run(run, manifest)


def train_rlft(
    recipe_name: str,
    *,
    paths: TrainingPaths,
    registry: Mapping[str, ModelSpec],
    report_to: ReportTo = "none",
    log: Log = print,
    gpu: bool | None = None,
    experiment: ExperimentInputs | None = None,
) -> CheckpointManifest:
    """GRPO on the recipe's environments with their verifiers as the reward; resumes an interrupted run. A joint
    recipe (rlft-joint) trains its attacker and defender in alternating rounds (see train_joint). experiment: the
    record the run is made from (its recipe replaces the file's, its data slices choose the prompts)."""
    recipe = _recipe_of(experiment, "rlft", recipe_name, load_rlft_recipe)
    if recipe.joint is not None:
        if experiment is not None:
            raise TrainingError(f"{recipe.name} is a joint recipe: its rounds are not trained from an experiment")
        return train_joint(recipe, paths=paths, registry=registry, report_to=report_to, log=log, gpu=gpu)[-1]
    parent = resolve_parent(recipe.init_from, paths=paths, registry=registry, sft_recipe=init_kind(recipe) == "sft")
    envs = build_shaped_environments(recipe)
    return _grpo_checkpoint(
        recipe,
        envs,
        parent,
        paths=paths,
        registry=registry,
        report_to=report_to,
        log=log,
        gpu=gpu,
        experiment=experiment,
    )


def train_joint(
    recipe: RlftRecipe,
    *,
    paths: TrainingPaths,
    registry: Mapping[str, ModelSpec],
    report_to: ReportTo = "none",
    log: Log = print,
    gpu: bool | None = None,
) -> list[CheckpointManifest]:
    """The curriculum's joint stage: before every tournament round from 2 on, one side trains (E5 attacker or E6
    defender, starting from init_from) while the other is frozen at its latest checkpoint (its configured frozen
    model until it has one); then the tournament plays every round with those checkpoints, which records them.

    The defender's E6 conversations are scripted, so the frozen attacker reaches it only through E6's probes
    synthesized from stored E5 attacks (the e5 eval → e6 synthetic feedback), not within the round."""
    joint = recipe.joint
    if joint is None:
        raise TrainingError(f"{recipe.name} is not a joint recipe")
    envs = build_shaped_environments(recipe)
    chains: dict[str, list[str]] = {"attacker": [], "defender": []}
    frozen_base = {"attacker": joint.frozen_attacker, "defender": joint.frozen_defender}
    made: list[CheckpointManifest] = []
    for planned in joint_rounds(joint.rounds, joint.first_side):
        side, other = planned.trains, planned.frozen
        start = chains[side][-1] if chains[side] else recipe.init_from
        parent = resolve_parent(
            start, paths=paths, registry=registry, sft_recipe=not chains[side] and init_kind(recipe) == "sft"
        )
        frozen = chains[other][-1] if chains[other] and joint.update_counterparts else frozen_base[other]
        counterparts = {"target": frozen} if side == "attacker" else {}
        log(f"joint round {planned.round}: {side} trains on {planned.env_id} from {parent.model_id}; {other} {frozen}")
        manifest = _grpo_checkpoint(
            recipe,
            {planned.env_id: envs[planned.env_id]},
            parent,
            paths=paths,
            registry=registry,
            report_to=report_to,
            log=log,
            gpu=gpu,
            counterparts=counterparts,
            extra_data={"joint/round": str(planned.round), "joint/side": side, "joint/frozen": frozen},
        )
        chains[side].append(manifest.model_id)
        made.append(manifest)
        registry = load_registry()
    record_joint_tournament(recipe, chains, frozen_base, paths=paths, registry=registry, log=log)
    return made


def record_joint_tournament(
    recipe: RlftRecipe,
    chains: Mapping[str, Sequence[str]],
    frozen_base: Mapping[str, str],
    *,
    paths: TrainingPaths,
    registry: Mapping[str, ModelSpec],
    log: Log,
) -> dict[str, Any]:
    """Play the tournament over the joint stage's rounds: round 1 the frozen models, then each side advancing to
    its checkpoints in the order they were trained (the tournament's own alternation)."""
    joint = recipe.joint
    assert joint is not None
    env = get_environment(TOURNAMENT_ENV)
    dataset = scan_dataset(env, paths)
    config = TournamentConfig(
        attackers=[frozen_base["attacker"]],
        defenders=[frozen_base["defender"]],
        rounds=joint.rounds,
        n=recipe.items_per_env,
        seed=recipe.seed,
        checkpoints={frozen_base[side]: list(chain) for side, chain in chains.items() if chain},
    )
    record = run_tournament(
        env, dataset, config, registry=registry, evals_root=paths.evals, out_root=paths.root / "tournaments"
    )
    log(f"joint stage recorded by tournament {record['tournament_id']}")
    return record


@contextlib.contextmanager
def episode_rollout(
    env: Environment,
    recipe: RlftRecipe,
    *,
    paths: TrainingPaths,
    registry: Mapping[str, ModelSpec],
    counterparts: Mapping[str, str] | None = None,
) -> Iterator[Callable[..., dict[str, Any]]]:
    """The rollout that plays the environment's own episodes with the trainer's model: its counterparts (default:
    the environment's) are rule baselines or registry models, frozen; their clients close when training ends."""
    items = select_items(env, curated(paths, env.env_id, "train"), recipe.items_per_env, recipe.seed)
    dialogue = env.episodes if isinstance(env.episodes, Dialogue) else None
    chosen = dict(counterparts) if counterparts else (dialogue.counterpart_roles() if dialogue else {})
    baselines = dialogue.counterpart_baselines() if dialogue else {}
    policies: dict[str, Any] = {}
    clients = []
    try:
        for role, model_id in chosen.items():
            if model_id in baselines:
                policies[role] = model_id
                continue
            spec = registry[model_id]
            client = open_client(spec, cache=None, baselines=baselines)
            clients.append(client)
            params = {**(dialogue.counterpart_generation_params(role) if dialogue else {}), **spec.params}
            policies[role] = batch_policy(client, params, recipe.seed)
        yield EpisodeRollout(env, items, counterparts=policies, tool_protocol="text")
    finally:
        for client in clients:
            client.close()
