"""Reading a project YAML file into its typed model: a bad or unknown key fails with the file, the field and what
was expected, never silently."""

from __future__ import annotations

import copy
import threading
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

Model = TypeVar("Model", bound=BaseModel)


class ConfigError(ValueError):
    """A config file is unreadable or does not match its typed model; the message names the file and the fields."""


# libyaml's loader where PyYAML was built with it (ten times faster on the configs every command and test reads).
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PARSED: dict[tuple[str, int, int, int], dict[str, Any]] = {}
_PARSED_LOCK = threading.Lock()


def read_yaml(path: Path) -> dict[str, Any]:
    """Read a trusted project YAML file (configs); untrusted YAML goes through the environments' own loaders.

    A file is parsed once per content version (its path, inode, size and modification time) and each caller gets
    its own copy, so an edited config is read again and no caller sees another's changes."""
    try:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_ino, stat.st_size, stat.st_mtime_ns)
        with _PARSED_LOCK:
            cached = _PARSED.get(key)
        if cached is not None:
            return copy.deepcopy(cached)
        with path.open(encoding="utf-8") as handle:
            data = yaml.load(handle, Loader=_LOADER)  # a safe loader: CSafeLoader or SafeLoader
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read ({error})") from error
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML ({error})") from error
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    with _PARSED_LOCK:
        _PARSED[key] = copy.deepcopy(data)
    return data


def describe_errors(error: ValidationError) -> list[str]:
    """One line per failed field: dotted path, what was expected, and what was given."""
    lines = []
    for detail in error.errors():
        field = ".".join(str(part) for part in detail["loc"]) or "(top level)"
        if detail["type"] == "extra_forbidden":
            lines.append(f"{field}: unknown key (not a setting of this config; check its spelling)")
            continue
        given = detail.get("input")
        shown = repr(given) if not isinstance(given, dict) else "a mapping"
        lines.append(f"{field}: {detail['msg'].lower()}, got {shown} ({type(given).__name__})")
    return lines


def validate_config(model: type[Model], data: Any, *, source: str) -> Model:
    """Validate already-read data against a typed model; `source` names where it came from in the error."""
    try:
        return model.model_validate(data)
    except ValidationError as error:
        problems = "\n  ".join(describe_errors(error))
        raise ConfigError(f"{source}: invalid config\n  {problems}") from None


def read_config(model: type[Model], path: Path) -> Model:
    """Read and validate one YAML config file."""
    return validate_config(model, read_yaml(path), source=str(path))
