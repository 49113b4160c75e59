"""The config files' reference: each file's keys from its typed model with the shipped files (models, sft, rlft,
sft_datasets, promotion, owners, ablations, experiments; `<!-- generated: config NAME -->`) and an environment's
configs/envs/<env>.yaml (`<!-- generated: env-config ENV -->`)."""

from __future__ import annotations

import json
from collections.abc import Callable

from .config_tables import config_table, shipped_file
from .markdown import code, escape, table
from .source import ROOT, ensure_paths, load_object


def render_env_config(env_id: str) -> str:
    ensure_paths()
    from sv_shared.registry import config_model, config_path

    path = config_path(env_id, ROOT)
    return "\n\n".join([config_table(config_model(env_id), path), shipped_file(path)])


def _render_models() -> str:
    ensure_paths()
    registry_file = load_object("RegistryFile")
    path = ROOT / "configs" / "models.yaml"
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    rows = [
        [
            code(model_id),
            entry.get("provider", ""),
            code(entry.get("model") or model_id),
            ", ".join(entry.get("envs") or []) or "all",
            escape(entry.get("description", "")),
        ]
        for model_id, entry in data["models"].items()
    ]
    return "\n\n".join(
        [
            "### Keys",
            config_table(registry_file, None),
            f"### The shipped portfolio ({len(rows)} models)",
            table(["id", "provider", "model", "environments", "description"], rows),
            shipped_file(path),
        ]
    )


def _render_recipes(kind: str) -> str:
    ensure_paths()
    from sv_shared.training.recipes import RlftRecipe, SftRecipe

    model = SftRecipe if kind == "sft" else RlftRecipe
    files = sorted((ROOT / "configs" / kind).glob("*.yaml"))
    import yaml

    rows = []
    for path in files:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        start = data.get("base_model") if kind == "sft" else data.get("init_from")
        rows.append(
            [
                code(path.stem),
                data.get("stage", ""),
                code(start),
                ", ".join(data.get("envs", [])),
                data.get("method", "full"),
                str(data.get("max_steps", "—")),
                data.get("profile", "cpu"),
            ]
        )
    first = "base_model" if kind == "sft" else "init_from"
    return "\n\n".join(
        [
            "### Keys",
            config_table(model, None),
            f"### The shipped recipes ({len(files)})",
            table(["recipe", "stage", first, "envs", "method", "max_steps", "profile"], rows),
            *(shipped_file(path) for path in files),
        ]
    )


def _render_single(model_name: str, file_name: str) -> str:
    path = ROOT / "configs" / file_name
    return "\n\n".join([config_table(load_object(model_name), path), shipped_file(path, open_=True)])


def _render_ablations() -> str:
    import yaml

    files = sorted((ROOT / "configs" / "ablations").glob("*.yaml"))
    rows = []
    for path in files:
        for name, spec in yaml.safe_load(path.read_text(encoding="utf-8"))["ablations"].items():
            overrides = ", ".join(f"{key} = {value}" for key, value in spec["overrides"].items())
            rows.append([path.stem.upper(), code(name), code(overrides), escape(spec["description"])])
    return "\n\n".join(
        [
            "### Keys",
            config_table(load_object("_AblationFile"), None),
            f"### The shipped ablations ({len(rows)})",
            table(["env", "ablation", "overrides", "what it changes"], rows),
            *(shipped_file(path) for path in files),
        ]
    )


def _render_experiments() -> str:
    import yaml

    files = sorted((ROOT / "configs" / "experiments").rglob("*.yaml"))
    rows = []
    for path in files:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        training = (data.get("training") or {}).get("recipe", "—")
        reward = data.get("reward") or {}
        reward_text = reward.get("ablation") or (json.dumps(reward.get("reward_weights")) if reward else "default")
        rows.append(
            [code(path.relative_to(ROOT).as_posix()), code(data["name"]), code(training), escape(str(reward_text))]
        )
    return "\n\n".join(
        [
            "### Keys",
            config_table(load_object("Experiment"), None),
            f"### The shipped records ({len(files)})",
            table(["file", "name", "training", "reward"], rows),
            *(shipped_file(path) for path in files),
        ]
    )


CONFIGS: dict[str, Callable[[], str]] = {
    "models": _render_models,
    "sft": lambda: _render_recipes("sft"),
    "rlft": lambda: _render_recipes("rlft"),
    "sft_datasets": lambda: _render_single("SftDatasetsConfig", "sft_datasets.yaml"),
    "promotion": lambda: _render_single("PromotionConfig", "promotion.yaml"),
    "owners": lambda: _render_single("OwnersConfig", "owners.yaml"),
    "ablations": _render_ablations,
    "experiments": _render_experiments,
}


def render_config(name: str) -> str:
    if name not in CONFIGS:
        raise KeyError(f"no config renderer {name!r}; known: {sorted(CONFIGS)}")
    return CONFIGS[name]()


def config_files_covered() -> set[str]:
    """The config files the reference renders (tests compare it with what is under configs/)."""
    covered = {"models.yaml", "sft_datasets.yaml", "promotion.yaml", "owners.yaml"}
    for folder in ("envs", "sft", "rlft", "ablations", "experiments"):
        covered |= {
            path.relative_to(ROOT / "configs").as_posix() for path in (ROOT / "configs" / folder).rglob("*.yaml")
        }
    return covered
