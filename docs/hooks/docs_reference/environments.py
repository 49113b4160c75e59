"""An environment at a glance (`<!-- generated: environment ENV -->`): package, episode kind, verifier, baselines,
corpora and their ids, reward components and weights, default N and models, tools or dialogue, ablations and split
sizes."""

from __future__ import annotations

import importlib
import re
from functools import cache
from typing import Any

from .config_tables import yaml_comments
from .markdown import code, escape, table
from .source import ROOT, constant, ensure_paths

EPISODE_KINDS = {"SingleTurn": "single-turn", "ToolUse": "tool episode", "Dialogue": "dialogue"}


def episode_kinds(env: Any) -> list[str]:
    return [EPISODE_KINDS[cls.__name__] for cls in type(env.episodes).__mro__ if cls.__name__ in EPISODE_KINDS]


@cache
def split_sizes(env_id: str) -> dict[str, int]:
    """The embedded corpus curated as the assets curate it (seed = the config's eval seed): rows per split."""
    ensure_paths()
    from sv_shared.registry import get_environment

    env = get_environment(env_id)
    splits = env.data.curate([env.data.load_source("embedded")], seed=env.config.eval.seed)
    return {name: frame.height for name, frame in splits.items()}


def _first_sentence(text: str | None) -> str:
    paragraph = (text or "").strip().split("\n\n")[0]
    return re.split(r"(?<=\.)\s", " ".join(paragraph.split()))[0]


def default_models(env: Any) -> list[str]:
    """What `secverify eval` runs when no model is named: eval.default_models, else the project's default pair."""
    return list(env.config.eval.default_models or constant("DEFAULT_RUN_MODELS"))


def _weights_table(
    weights: dict[str, float], comments: dict[str, str], section: str, penalties: frozenset[str] = frozenset()
) -> str:
    """Each component, its weight and its share of the gains (a penalty's row says so instead)."""
    total = sum(weight for name, weight in weights.items() if name not in penalties)
    rows = [
        [
            code(name),
            f"{weight:g}",
            "penalty" if name in penalties else f"{weight / total:.0%}",
            escape(comments.get(f"{section}.{name}", "")),
        ]
        for name, weight in weights.items()
    ]
    return table(["component", "weight", "share", "meaning"], rows)


def _corpus_rows(env: Any) -> list[list[str]]:
    rows = []
    config = env.config.data
    for source in env.data.sources():
        if source == "embedded":
            rows.append([code("embedded"), "shipped with the package", "the default; always available offline"])
            continue
        section = getattr(config, source, None)
        values = section.as_dict() if hasattr(section, "as_dict") else section
        where = []
        if isinstance(values, dict):
            if values.get("source"):
                where.append(f"hub id or mirror {code(values['source'])}")
            if "path" in values:
                where.append("local mirror " + (code(values["path"]) if values["path"] else "(path not set)"))
            others = {k: v for k, v in values.items() if k not in ("source", "path")}
            if others:
                where.append(code(others))
        doc = type(section).__doc__ if section is not None and type(section).__doc__ else ""
        rows.append([code(source), "; ".join(where) or "—", escape(doc)])
    return rows


def render_environment(env_id: str) -> str:
    ensure_paths()
    from sv_shared.registry import PACKAGES, config_path, get_environment

    env = get_environment(env_id)
    config = env.config
    path = config_path(env_id, ROOT)
    comments = yaml_comments(path)
    registry = _registry_descriptions()
    package = importlib.import_module(PACKAGES[env_id])
    sizes = split_sizes(env_id)
    glance = [
        ["id / name", f"{code(env_id)} / {code(env.name)}"],
        ["package", code(f"envs/{PACKAGES[env_id]}") + " — " + escape(_first_sentence(package.__doc__))],
        ["episode kind", ", ".join(episode_kinds(env))],
        ["verifier", f"{code(type(env.verifier).__name__)}, version {code(env.verifier.version)}"],
        ["label column / id column", f"{code(env.data.label_column)} / {code(env.data.id_column)}"],
        ["default N (`eval.default_n`)", f"**{config.eval.default_n}**"],
        ["split / seed", f"{code(config.eval.split)} / {config.eval.seed}"],
        ["default models", ", ".join(_default_model(model, env_id) for model in default_models(env))],
        ["generation", f"max_tokens {config.generation.max_tokens}, temperature {config.generation.temperature:g}"],
        [
            "embedded corpus, curated",
            f"{sum(sizes.values())} rows: " + " / ".join(f"{name} {count}" for name, count in sizes.items()),
        ],
    ]
    if env.data.views:
        glance.append(["feature-ablated views", ", ".join(code(view) for view in env.data.views)])
    if env.data.feedback_env:
        glance.append(["feedback from", code(env.data.feedback_env)])
    out = ["## At a glance", table(["", "value"], glance)]

    out.append("## Rule baselines")
    out.append(
        table(
            ["registry id", "what it is"],
            [[code(name), escape(registry.get(name, ""))] for name in env.baselines],
        )
    )

    out.append("## Reward")
    weights = getattr(config, "reward_weights", None)
    if weights is not None:
        from sv_shared.answers.rewards import configured_reward

        reward = configured_reward(config)
        if reward.penalties:
            out.append(
                "Reward = weighted mean of the gain components (each in [0, 1]) minus, for each penalty ("
                + ", ".join(code(name) for name in sorted(reward.penalties))
                + "), its weight × (1 − component): a right, calibrated answer earns 1, a completion that does not"
                f" parse {reward.floor:g}. `reward_weights` and `reward_penalties`:"
            )
        else:
            out.append("Reward = weighted mean of the components (each in [0, 1]), `reward_weights`:")
        out.append(_weights_table(weights.as_mapping(), comments, "reward_weights", reward.penalties))
    detect = getattr(config, "detect_reward_weights", None)
    if detect is not None:
        out.append("Detect-only items (corpora without tests), `detect_reward_weights`:")
        out.append(_weights_table(detect.as_mapping(), comments, "detect_reward_weights"))
    for section in ("costs", "reward", "abstention", "patch", "novelty"):
        values = getattr(config, section, None)
        if values is not None and hasattr(values, "as_dict"):
            out.append(f"`{section}`: " + ", ".join(f"{k} {code(v)}" for k, v in values.as_dict().items()))

    out.append("## Corpora")
    out.append(table(["source", "where it is read from", "what it is"], _corpus_rows(env)))
    out.append(
        f"`data.train_sources`: {code(config.data.train_sources)}; `data.ood_sources`: {code(config.data.ood_sources)};"
        f" split fractions {code(config.data.split_fractions.as_dict())}."
    )

    episode = [
        (section, getattr(config, section).as_dict())
        for section in ("tools", "dialogue", "target_generation", "sandbox", "verifier", "oracle")
        if getattr(config, section, None) is not None and hasattr(getattr(config, section), "as_dict")
    ]
    if episode:
        out.append("## Tools, dialogue and limits")
        out.append(table(["section", "settings"], [[code(name), code(values)] for name, values in episode]))

    ablations = ROOT / "configs" / "ablations" / f"{env_id}.yaml"
    if ablations.is_file():
        import yaml

        declared = yaml.safe_load(ablations.read_text(encoding="utf-8"))["ablations"]
        out.append("## Ablations")
        out.append(
            table(
                ["ablation", "overrides", "what it changes"],
                [
                    [
                        code(name),
                        code(", ".join(f"{k} = {v}" for k, v in spec["overrides"].items())),
                        escape(spec["description"]),
                    ]
                    for name, spec in declared.items()
                ],
            )
        )
    return "\n\n".join(out)


@cache
def _registry() -> dict[str, dict[str, Any]]:
    import yaml

    return yaml.safe_load((ROOT / "configs" / "models.yaml").read_text(encoding="utf-8"))["models"]


def _registry_descriptions() -> dict[str, str]:
    return {model_id: entry.get("description", "") for model_id, entry in _registry().items()}


def _default_model(model_id: str, env_id: str) -> str:
    """A default model, marked when it cannot answer this environment (a rule baseline of another one)."""
    entry = _registry().get(model_id, {})
    if entry.get("provider") == "baseline" and env_id not in entry.get("envs", []):
        owners = ", ".join(env.upper() for env in entry.get("envs", []))
        return f"{code(model_id)} (the {owners} baseline: reported as skipped here)"
    return code(model_id)
