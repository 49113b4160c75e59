"""Named ablations: reward configs that differ from an environment's default by a few overrides.

configs/ablations/<env>.yaml names each ablation with a description and `overrides`, dotted paths into
configs/envs/<env>.yaml (`reward_weights.calibration: 0.0`). An ablation is applied onto a config and the result is
validated by the environment's own Config model, so an unknown path or an invalid value fails naming the file and the
ablation. "default" is the config unchanged (no overrides): re-scoring under it must reproduce a run exactly.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sv_shared.config import EnvConfig, project_root
from sv_shared.config.reading import ConfigError, describe_errors, read_yaml, validate_config
from sv_shared.contracts import Environment, Verifier
from sv_shared.data.hashing import sha256_hex, stable_json
from sv_shared.registry import build_environment, config_model, load_env_config

DEFAULT = "default"
"""The name of the environment's config unchanged."""

NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
"""Ablation names become folder names (outputs/evals/ablations/<name>/)."""


class AblationError(ValueError):
    """An ablation that is unknown, malformed, or cannot be applied; the message names the file and the ablation."""


class _AblationSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    description: str = Field(min_length=1)
    overrides: dict[str, Any] = Field(min_length=1)


class _AblationFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    ablations: dict[str, _AblationSpec]


@dataclass(frozen=True)
class Ablation:
    """One named ablation of an environment: what it changes, and where it is declared."""

    env_id: str
    name: str
    description: str
    overrides: Mapping[str, Any] = field(default_factory=dict)
    """Dotted config path → value."""
    source: str = ""
    """The file that declares it (relative to the project root); empty for "default"."""

    @property
    def sha256(self) -> str:
        """sha256 of the overrides as canonical JSON: a changed ablation is told apart from the one a run used."""
        return sha256_hex(stable_json(dict(self.overrides)))

    @property
    def where(self) -> str:
        return f"{self.source or 'configs/envs/' + self.env_id + '.yaml'} ablation {self.name!r}"

    def apply(self, config: EnvConfig) -> EnvConfig:
        """The config with the overrides applied, validated by the environment's Config model."""
        data = copy.deepcopy(config.as_dict())
        for path, value in self.overrides.items():
            _set_path(data, path, value, self.where)
        try:
            return validate_config(type(config), data, source=self.where)
        except ConfigError as error:
            raise AblationError(str(error)) from None

    def check_rescorable(self, verifier: Verifier) -> None:
        """Refuse overrides a re-score of stored answers cannot reflect (they shape the episode itself)."""
        shaped = [path for path in self.overrides if not verifier.rescorable(path.split(".", 1)[0])]
        if shaped:
            raise AblationError(
                f"{self.where} changes {', '.join(shaped)}, which a re-score of stored samples cannot reflect (it "
                "shapes what the model was shown or did, or what was measured while it played): run an eval under "
                "that config instead"
            )


def _set_path(data: dict[str, Any], path: str, value: Any, where: str) -> None:
    parts = path.split(".")
    node: Any = data
    for depth, part in enumerate(parts):
        if not isinstance(node, dict) or part not in node:
            parent = ".".join(parts[:depth]) or "the top level"
            known = ", ".join(sorted(node)) if isinstance(node, dict) else f"none ({parent} is a value)"
            raise AblationError(f"{where}: unknown config path {path!r}: no {part!r} under {parent} (keys: {known})")
        if depth == len(parts) - 1:
            node[part] = value
        else:
            node = node[part]


def ablations_path(env_id: str, root: Path | None = None) -> Path:
    return (root or project_root()) / "configs" / "ablations" / f"{env_id}.yaml"


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def ablations(env_id: str, root: Path | None = None) -> list[Ablation]:
    """Every ablation declared for an environment, in file order, each checked against its default config."""
    root = root or project_root()
    path = ablations_path(env_id, root)
    config_model(env_id)  # an unknown environment fails here, naming the known ones
    if not path.is_file():
        return []
    source = _relative(path, root)
    try:
        declared = _AblationFile.model_validate(read_yaml(path))
    except ValidationError as error:
        raise AblationError(f"{source}: invalid ablations file\n  " + "\n  ".join(describe_errors(error))) from None
    except ConfigError as error:
        raise AblationError(str(error)) from None
    found = []
    base = load_env_config(env_id, root)
    for name, spec in declared.ablations.items():
        if name == DEFAULT or not NAME_PATTERN.match(name):
            raise AblationError(
                f"{source}: ablation name {name!r} must match {NAME_PATTERN.pattern} and not be {DEFAULT!r}"
            )
        ablation = Ablation(env_id, name, spec.description, dict(spec.overrides), source)
        ablation.apply(base)
        found.append(ablation)
    return found


def default_ablation(env_id: str) -> Ablation:
    return Ablation(env_id, DEFAULT, "the environment's config unchanged")


def load_ablation(env_id: str, name: str, root: Path | None = None) -> Ablation:
    """One ablation by name ("default": the config unchanged); an unknown name fails listing the known ones."""
    if name == DEFAULT:
        return default_ablation(env_id)
    declared = {ablation.name: ablation for ablation in ablations(env_id, root)}
    if name not in declared:
        known = ", ".join([DEFAULT, *declared])
        raise AblationError(
            f"{_relative(ablations_path(env_id, root), root or project_root())}: no ablation "
            f"{name!r} for {env_id}; known: {known}"
        )
    return declared[name]


def ablated_config(ablation: Ablation, base: EnvConfig | Mapping[str, Any] | None = None) -> EnvConfig:
    """The ablation applied onto `base`: a typed config, a config's plain values (a run's metadata.config), or by
    default configs/envs/<env>.yaml."""
    model = config_model(ablation.env_id)
    if base is None:
        typed = load_env_config(ablation.env_id)
    elif isinstance(base, EnvConfig):
        typed = base
    else:
        try:
            typed = validate_config(model, dict(base), source=f"the stored config of an {ablation.env_id} run")
        except ConfigError as error:
            raise AblationError(str(error)) from None
    return ablation.apply(typed)


def ablated_environment(
    ablation: Ablation, base: EnvConfig | Mapping[str, Any] | None = None, **tools: Any
) -> Environment:
    """The environment built with the ablated config (tools inject scanners or an oracle, as for build)."""
    return build_environment(ablation.env_id, ablated_config(ablation, base), **tools)
