"""Sanitizing text and JSON for external sharing: secrets and local paths out, each replacement counted by rule.

Rules, applied in this order to every string (JSON keys and values alike):
  credentials   PEM private keys, Authorization headers, bearer tokens, the values of this machine's *_KEY,
                *_TOKEN, *_SECRET and *_PASSWORD environment variables, provider key formats (OpenAI/Anthropic sk-,
                AWS AKIA/ASIA, GitHub, GitLab, Slack, Stripe, Google, Hugging Face, JWTs: the formats of E3's
                credential-literal rule, and more) and `name = value` assignments whose name says it is a secret.
                Replaced by
                `[REDACTED credential:<rule>]`; no hash is kept, since a hash of a key lets a holder confirm a guess.
  local paths   the outputs root becomes `outputs`, the project root `.`, the home folder `~`; any other absolute
                path (two or more segments, POSIX or Windows) becomes `[REDACTED path]`.
  identity      this machine's host name and the user's name (unless it is the system account "root", a word that
                says nothing about a person) as whole words: `[REDACTED host]`, `[REDACTED user]`.
A JSON value under a key that names a secret (api_key, token, password, authorization, cookie, …) is replaced whole.
Images inlined as data URIs are left as they are (they are pictures, not text).

Every marker starts with the redaction marker prefix (sv_shared.judging.redaction.MARKER_PREFIX), and no rule matches
a marker, so sanitizing twice changes nothing.
"""

from __future__ import annotations

import getpass
import os
import re
import socket
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any, Final

from sv_shared.judging.redaction import MARKER_PREFIX

SECRET_ENV_SUFFIXES: Final = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
MIN_SECRET_CHARS: Final = 8
"""Environment values shorter than this are not treated as secrets (a flag like "1" would redact every digit)."""
SYSTEM_ACCOUNTS: Final = frozenset({"root"})

_VALUE = r"[^\s\"',;\[\]<>]"
"""A character of a secret value: never a quote, separator or bracket, so a marker is never taken for a value."""

CREDENTIAL_PATTERNS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    (
        "private-key",
        re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY"),
    ),
    (
        "authorization-header",
        re.compile(rf"(?i)\b(?:proxy-)?authorization\b\"?\s*[:=]\s*\"?(?:(?:bearer|basic|token)\s+)?{_VALUE}+"),
    ),
    ("bearer-token", re.compile(rf"(?i)\bbearer\s+{_VALUE}{{8,}}")),
    ("openai-anthropic-key", re.compile(r"\bsk-(?=[A-Za-z_-]*\d)[A-Za-z0-9_-]{16,}")),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[0-9A-Za-z]{36,}|github_pat_[0-9A-Za-z_]{40,})")),
    ("gitlab-token", re.compile(r"\bglpat-[0-9A-Za-z_-]{20,}")),
    ("slack-token", re.compile(r"\bxox[abposr]-[0-9A-Za-z-]{10,}")),
    ("stripe-key", re.compile(r"\b(?:sk|rk)_live_[0-9A-Za-z]{16,}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}")),
)

_ASSIGNMENT = re.compile(
    rf"(?i)\b([A-Za-z0-9_.-]*(?:api[_-]?key|secret|token|password|passwd))(\"?\s*[:=]\s*[\"']?)({_VALUE}{{8,}})"
)
_SECRET_KEY_PARTS: Final = frozenset(
    {"apikey", "token", "secret", "password", "passwd", "authorization", "cookie", "credential", "credentials"}
)
_KEY_QUALIFIERS: Final = frozenset({"api", "access", "secret", "private", "auth", "signing"})
_DATA_URI = re.compile(r"data:image/[a-z+]+;base64,[A-Za-z0-9+/=]+")
_ABSOLUTE_POSIX = re.compile(r"(?<![\w.:/~\]-])/(?:[\w.@+-]+/)+[\w.@+-]*")
_ABSOLUTE_WINDOWS = re.compile(r"\b[A-Za-z]:\\(?:[^\\\s\"'<>|]+\\)*[^\\\s\"'<>|]*")


def credential_marker(rule: str) -> str:
    return f"{MARKER_PREFIX} credential:{rule}]"


PATH_MARKER: Final = f"{MARKER_PREFIX} path]"
HOST_MARKER: Final = f"{MARKER_PREFIX} host]"
USER_MARKER: Final = f"{MARKER_PREFIX} user]"


def secret_field(key: str) -> bool:
    """Whether a JSON key names a secret: a part like token or password, or "key" qualified (api_key, accessKey)."""
    parts = [part.lower() for part in re.split(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])", key) if part]
    if any(part in _SECRET_KEY_PARTS for part in parts):
        return True
    return any(part == "key" and before in _KEY_QUALIFIERS for before, part in pairwise(parts))


@dataclass(frozen=True)
class LocalFacts:
    """What identifies this machine and its user: replaced wherever it appears."""

    roots: tuple[tuple[str, str], ...]
    """(absolute path, what it becomes), longest first."""
    secrets: tuple[tuple[str, str], ...]
    """(value, environment variable name), longest value first."""
    hostnames: tuple[str, ...]
    user: str | None

    @classmethod
    def of_this_machine(cls, *, outputs: Path, project: Path, environ: Mapping[str, str] | None = None) -> LocalFacts:
        environ = os.environ if environ is None else environ
        roots = {str(outputs.resolve()): "outputs", str(outputs): "outputs", str(project.resolve()): "."}
        home = Path.home()
        roots |= {str(home): "~", str(home.resolve()): "~"}
        secrets = {
            value: name
            for name, value in environ.items()
            if name.upper().endswith(SECRET_ENV_SUFFIXES) and len(value) >= MIN_SECRET_CHARS
        }
        hosts = {name for name in (socket.gethostname(), socket.getfqdn()) if len(name) >= 2 and name != "localhost"}
        user = getpass.getuser()
        return cls(
            roots=tuple(sorted(((path, to) for path, to in roots.items() if path != "/"), key=lambda r: -len(r[0]))),
            secrets=tuple(sorted(secrets.items(), key=lambda item: -len(item[0]))),
            hostnames=tuple(sorted(hosts, key=len, reverse=True)),
            user=None if user in SYSTEM_ACCOUNTS or len(user) < 2 else user,
        )


@dataclass
class Sanitizer:
    """Sanitizes strings and JSON values, counting what each rule replaced (`counts`, for the bundle's manifest)."""

    facts: LocalFacts
    counts: Counter[str] = field(default_factory=Counter)

    def _sub(
        self, rule: str, pattern: re.Pattern[str], text: str, replace: str | Callable[[re.Match[str]], str]
    ) -> str:
        result, n = pattern.subn(replace, text)
        if n:
            self.counts[rule] += n
        return result

    def _plain(self, text: str) -> str:
        for value, name in self.facts.secrets:
            if value in text:
                self.counts[f"credential:env:{name}"] += text.count(value)
                text = text.replace(value, credential_marker(f"env:{name}"))
        for rule, pattern in CREDENTIAL_PATTERNS:
            text = self._sub(f"credential:{rule}", pattern, text, credential_marker(rule))
        text = self._sub(
            "credential:assignment",
            _ASSIGNMENT,
            text,
            lambda match: f"{match[1]}{match[2]}{credential_marker('assignment')}",
        )
        for root, replacement in self.facts.roots:
            pattern = re.compile(re.escape(root) + r"(?![\w.-])")
            text = self._sub(f"path:{replacement}", pattern, text, replacement)
        text = self._sub("path:absolute", _ABSOLUTE_POSIX, text, PATH_MARKER)
        text = self._sub("path:absolute", _ABSOLUTE_WINDOWS, text, PATH_MARKER)
        for host in self.facts.hostnames:
            text = self._sub("host", re.compile(rf"(?i)(?<![\w.-]){re.escape(host)}(?![\w-])"), text, HOST_MARKER)
        if self.facts.user:
            text = self._sub(
                "user", re.compile(rf"(?<![\w.-]){re.escape(self.facts.user)}(?![\w-])"), text, USER_MARKER
            )
        return text

    def text(self, text: str) -> str:
        """The text sanitized; inlined images are kept as they are."""
        pieces: list[str] = []
        last = 0
        for image in _DATA_URI.finditer(text):
            pieces += [self._plain(text[last : image.start()]), image[0]]
            last = image.end()
        pieces.append(self._plain(text[last:]))
        return "".join(pieces)

    def json(self, value: Any) -> Any:
        """A JSON value sanitized: every string, keys included; a string under a secret-naming key replaced whole."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            cleaned: dict[str, Any] = {}
            for key, item in value.items():
                if secret_field(str(key)) and isinstance(item, str) and item and not item.startswith(MARKER_PREFIX):
                    self.counts["credential:field"] += 1
                    cleaned[self.text(str(key))] = credential_marker("field")
                else:
                    cleaned[self.text(str(key))] = self.json(item)
            return cleaned
        if isinstance(value, list | tuple):
            return [self.json(item) for item in value]
        return value
