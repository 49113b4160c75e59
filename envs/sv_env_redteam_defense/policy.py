"""The E6 policy library: safe refusal templates per hazard category and guided helpful answers per benign topic.

It is the one labeller of the environment: every corpus row's desired response, policy_id and guidance come from
`PolicyLibrary.label`, and the verifier can render the desired response of a refusal with `render_refusal`. The
library is a YAML file (data/policy_library.yaml by default) checked on load: every S-code and every benign topic
present, no empty template, 1-3 safe alternatives per category, unique policy ids. A broken file raises
PolicyLibraryError listing every problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from sv_env_redteam_defense.schema import BENIGN_TOPICS, DESIRED_OF_KIND, HAZARD_CODES
from sv_shared.data.errors import CorpusValidationError
from sv_shared.data.hashing import sha256_hex, stable_json

LIBRARY_FILE = "policy_library.yaml"
MAX_ALTERNATIVES = 3


class PolicyLibraryError(CorpusValidationError):
    """The policy library file is missing pieces or malformed; the message lists every problem."""


@dataclass(frozen=True)
class RefusalPolicy:
    """How to refuse one hazard category: a brief template and 1-3 safe alternatives."""

    category: str
    policy_id: str
    template: str
    alternatives: tuple[str, ...]


@dataclass(frozen=True)
class HelpPolicy:
    """How to help in one benign topic: topic-level key points and guided answers (entry -> key points)."""

    topic: str
    policy_id: str
    description: str
    key_points: tuple[str, ...]
    entries: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def points(self, entry: str | None = None) -> tuple[str, ...]:
        """The key points of a guided answer, or the topic's key points when entry is None."""
        if entry is None:
            return self.key_points
        try:
            return self.entries[entry]
        except KeyError:
            known = sorted(self.entries)
            raise KeyError(f"policy library topic {self.topic!r} has no entry {entry!r}; it has {known}") from None


@dataclass(frozen=True)
class Label:
    """What a conversation deserves: desired response, the policy that says so, and its guidance."""

    desired: str
    policy_id: str
    guidance: tuple[str, ...]


@dataclass(frozen=True)
class PolicyLibrary:
    version: int
    refusals: Mapping[str, RefusalPolicy]
    helpful: Mapping[str, HelpPolicy]
    source: str

    def refusal(self, category: str) -> RefusalPolicy:
        try:
            return self.refusals[category]
        except KeyError:
            raise KeyError(f"no refusal policy for {category!r}; categories are {list(self.refusals)}") from None

    def guidance(self, topic: str) -> HelpPolicy:
        try:
            return self.helpful[topic]
        except KeyError:
            raise KeyError(f"no helpful-answer policy for {topic!r}; topics are {list(self.helpful)}") from None

    def policy_id(self, category: str) -> str:
        """The policy id labelling a category (an S-code or a benign topic); KeyError when it has none."""
        if category in self.refusals:
            return self.refusals[category].policy_id
        if category in self.helpful:
            return self.helpful[category].policy_id
        raise KeyError(f"policy library has no policy for category {category!r}")

    def label(self, kind: str, category: str, *, entry: str | None = None) -> Label:
        """The label of a conversation: refuse with the category's alternatives, or help with the topic's (or the
        entry's) key points. A kind/category mismatch raises ValueError."""
        if kind not in DESIRED_OF_KIND:
            raise ValueError(f"kind must be one of {list(DESIRED_OF_KIND)}, got {kind!r}")
        if kind == "adversarial":
            if category not in HAZARD_CODES:
                raise ValueError(f"an adversarial conversation needs an S-code category, got {category!r}")
            if entry is not None:
                raise ValueError("entries are guided helpful answers; adversarial conversations have none")
            policy = self.refusal(category)
            return Label("refuse", policy.policy_id, policy.alternatives)
        if category not in BENIGN_TOPICS:
            raise ValueError(f"a benign conversation needs a topic in {list(BENIGN_TOPICS)}, got {category!r}")
        help_policy = self.guidance(category)
        return Label("help", help_policy.policy_id, help_policy.points(entry))

    def render_refusal(self, category: str, *, alternative: int = 0) -> str:
        """The desired response to a probe of this category: the template plus one safe alternative."""
        policy = self.refusal(category)
        if not 0 <= alternative < len(policy.alternatives):
            raise IndexError(f"{category} has {len(policy.alternatives)} alternatives, asked for #{alternative}")
        return f"{policy.template} {policy.alternatives[alternative]}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "refusals": {
                code: {"policy_id": p.policy_id, "template": p.template, "alternatives": list(p.alternatives)}
                for code, p in self.refusals.items()
            },
            "helpful": {
                topic: {
                    "policy_id": p.policy_id,
                    "description": p.description,
                    "key_points": list(p.key_points),
                    "entries": {name: list(points) for name, points in p.entries.items()},
                }
                for topic, p in self.helpful.items()
            },
        }

    def library_hash(self) -> str:
        """16-hex hash of the library's content (not its formatting), for provenance metadata."""
        return sha256_hex(stable_json(self.to_dict()))[:16]


# --- loading and checking -----------------------------------------------------------------------------------------


def default_library_path() -> Path:
    return Path(str(resources.files("sv_env_redteam_defense") / "data" / LIBRARY_FILE))


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _texts(value: Any, where: str, problems: list[str], *, low: int, high: int | None = None) -> tuple[str, ...]:
    if not isinstance(value, list):
        problems.append(f"{where}: must be a list of strings, got {type(value).__name__}")
        return ()
    texts = []
    for index, item in enumerate(value):
        text = _text(item)
        if text is None:
            problems.append(f"{where}[{index}]: must be a non-empty string, got {item!r}")
        else:
            texts.append(text)
    if len(value) < low or (high is not None and len(value) > high):
        span = f"{low}-{high}" if high is not None else f"at least {low}"
        problems.append(f"{where}: needs {span} items, has {len(value)}")
    return tuple(texts)


def _refusals(section: Any, problems: list[str]) -> dict[str, RefusalPolicy]:
    if not isinstance(section, dict):
        problems.append("refusals: must be a mapping from S-code to policy")
        return {}
    unknown = sorted(set(map(str, section)) - set(HAZARD_CODES))
    if unknown:
        problems.append(f"refusals: unknown categories {unknown}; the vocabulary is {list(HAZARD_CODES)}")
    missing = [code for code in HAZARD_CODES if code not in section]
    if missing:
        problems.append(f"refusals: missing categories {missing} (every S-code needs a refusal policy)")
    policies = {}
    for code in HAZARD_CODES:
        entry = section.get(code)
        if entry is None:
            continue
        if not isinstance(entry, dict):
            problems.append(f"refusals.{code}: must be a mapping with policy_id, template, alternatives")
            continue
        policy_id, template = _text(entry.get("policy_id")), _text(entry.get("template"))
        if policy_id is None:
            problems.append(f"refusals.{code}.policy_id: empty or missing")
        if template is None:
            problems.append(f"refusals.{code}.template: empty or missing")
        alternatives = _texts(
            entry.get("alternatives"), f"refusals.{code}.alternatives", problems, low=1, high=MAX_ALTERNATIVES
        )
        if policy_id and template and alternatives:
            policies[code] = RefusalPolicy(code, policy_id, template, alternatives)
    return policies


def _helpful(section: Any, problems: list[str]) -> dict[str, HelpPolicy]:
    if not isinstance(section, dict):
        problems.append("helpful: must be a mapping from benign topic to policy")
        return {}
    unknown = sorted(set(map(str, section)) - set(BENIGN_TOPICS))
    if unknown:
        problems.append(f"helpful: unknown topics {unknown}; the topics are {list(BENIGN_TOPICS)}")
    missing = [topic for topic in BENIGN_TOPICS if topic not in section]
    if missing:
        problems.append(f"helpful: missing topics {missing} (every benign topic needs a helpful-answer policy)")
    policies = {}
    for topic in BENIGN_TOPICS:
        entry = section.get(topic)
        if entry is None:
            continue
        if not isinstance(entry, dict):
            problems.append(f"helpful.{topic}: must be a mapping with policy_id, description, key_points, entries")
            continue
        policy_id = _text(entry.get("policy_id"))
        if policy_id is None:
            problems.append(f"helpful.{topic}.policy_id: empty or missing")
        description = _text(entry.get("description")) or ""
        key_points = _texts(entry.get("key_points"), f"helpful.{topic}.key_points", problems, low=1)
        raw_entries = entry.get("entries", {}) or {}
        entries: dict[str, tuple[str, ...]] = {}
        if not isinstance(raw_entries, dict):
            problems.append(f"helpful.{topic}.entries: must be a mapping from entry name to key points")
        else:
            for name, points in raw_entries.items():
                entries[str(name)] = _texts(points, f"helpful.{topic}.entries.{name}", problems, low=1)
        if policy_id and key_points:
            policies[topic] = HelpPolicy(topic, policy_id, description, key_points, entries)
    return policies


def parse_policy_library(document: Any, *, source: str = "<memory>") -> PolicyLibrary:
    """A checked PolicyLibrary from the parsed YAML document; PolicyLibraryError lists every problem."""
    problems: list[str] = []
    if not isinstance(document, dict):
        raise PolicyLibraryError(f"policy library {source}: must be a YAML mapping with refusals and helpful")
    version = document.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool):
        problems.append(f"version: must be an integer, got {version!r}")
    refusals = _refusals(document.get("refusals"), problems)
    helpful = _helpful(document.get("helpful"), problems)
    ids = [p.policy_id for p in refusals.values()] + [p.policy_id for p in helpful.values()]
    duplicated = sorted({policy_id for policy_id in ids if ids.count(policy_id) > 1})
    if duplicated:
        problems.append(f"policy ids must be unique; repeated: {duplicated}")
    if problems:
        listed = "\n".join(f"  - {problem}" for problem in problems)
        raise PolicyLibraryError(f"invalid policy library {source} ({len(problems)} problem(s)):\n{listed}")
    return PolicyLibrary(version=int(version), refusals=refusals, helpful=helpful, source=source)


@lru_cache(maxsize=8)
def _load(path: str, mtime_ns: int) -> PolicyLibrary:
    try:
        document = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise PolicyLibraryError(f"policy library {path} is not valid YAML: {error}") from error
    return parse_policy_library(document, source=path)


def load_policy_library(path: str | Path | None = None) -> PolicyLibrary:
    """The policy library at path (default: the shipped data/policy_library.yaml), checked."""
    resolved = Path(path) if path is not None else default_library_path()
    if not resolved.is_file():
        raise FileNotFoundError(f"policy library {resolved} does not exist")
    return _load(str(resolved), resolved.stat().st_mtime_ns)


def library_hash(path: str | Path | None = None) -> str:
    """Hash of the library at path (default: the shipped one)."""
    return load_policy_library(path).library_hash()
