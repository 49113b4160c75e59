"""The optional URL-reputation tool: an offline store of domain facts a model may consult, and its call protocols.

Nothing here touches the network: answers come from a JSON store shipped with the package (domain first-seen
dates, block/allow lists, written by scripts/build_e4_embedded.py), from feeds loaded from local files (an APWG
export adds block-listed domains) and from the look-alike detector. Domain ages are counted to the store's fixed
`as_of` date, never to the wall clock, so a lookup answers the same on every run.

A model calls the tool either by function calling (`TOOL_SPEC`, OpenAI format) or, for models without it, by the
text protocol (`TEXT_PROTOCOL`): a line `LOOKUP url_reputation <url or domain>`, answered by a line
`RESULT url_reputation <json>`. `ReputationTool` handles both, enforces a call budget and records every call in
`transcript` (what the runner writes with the sample).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from importlib import resources
from pathlib import Path
from typing import Any

from sv_env_phishing_detection.detectors import (
    BRAND_DOMAINS,
    SHORTENERS,
    href_host,
    is_ip_host,
    lookalike,
    registrable_domain,
)
from sv_shared.answers.parsing import decode_json

TOOL_NAME = "url_reputation"
STORE_FILE = "reputation.json"
LISTS = ("block", "allow")

TOOL_SPEC: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": (
            "Offline reputation of a link or domain from the email: whether it is on a block or allow list, how "
            "long the domain has been known (age in days), and whether it imitates a brand domain (look-alike "
            "score 0 to 1). Use it on links and sender domains you are unsure about."
        ),
        "parameters": {
            "type": "object",
            "properties": {"target": {"type": "string", "description": "A URL or a domain name, as in the email."}},
            "required": ["target"],
            "additionalProperties": False,
        },
    },
}

TEXT_PROTOCOL = (
    f"You may check up to {{budget}} links or domains before answering. To check one, write a line "
    f"`LOOKUP {TOOL_NAME} <url or domain>` and stop; the answer comes back as `RESULT {TOOL_NAME} <json>` with "
    "fields listed (block/allow/null), age_days, lookalike_of and lookalike_score. Then give your JSON answer."
)
_TEXT_CALL = re.compile(rf"^\s*LOOKUP\s+{TOOL_NAME}\s+(\S+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class DomainRecord:
    """What the store knows about one registrable domain."""

    first_seen: date | None
    listed: str | None
    source: str

    def __post_init__(self) -> None:
        if self.listed is not None and self.listed not in LISTS:
            raise ValueError(f"listed must be one of {LISTS} or None, got {self.listed!r}")


@dataclass(frozen=True)
class ReputationStore:
    """Domain records keyed by registrable domain, with the date ages are counted to."""

    as_of: date
    domains: Mapping[str, DomainRecord] = field(default_factory=dict)

    @classmethod
    def from_json(cls, path: Path) -> ReputationStore:
        """A store file: {"as_of": "YYYY-MM-DD", "domains": {domain: {"first_seen", "listed", "source"}}}."""
        data = json.loads(path.read_text(encoding="utf-8"))
        try:
            domains = {
                domain.casefold(): DomainRecord(
                    first_seen=date.fromisoformat(record["first_seen"]) if record.get("first_seen") else None,
                    listed=record.get("listed"),
                    source=str(record.get("source", path.name)),
                )
                for domain, record in data["domains"].items()
            }
            return cls(as_of=date.fromisoformat(data["as_of"]), domains=domains)
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{path}: not a reputation store ({type(error).__name__}: {error})") from error

    @classmethod
    def load_default(cls) -> ReputationStore:
        """The store shipped with the package (the embedded and synthetic corpora's domains, the brand list)."""
        return cls.from_json(Path(str(resources.files("sv_env_phishing_detection") / "data" / STORE_FILE)))

    def with_blocklist(self, urls: Iterable[str], *, source: str, first_seen: date | None = None) -> ReputationStore:
        """A copy with the domains of these URLs (e.g. an APWG feed's) block-listed; brand domains are never
        block-listed (a feed URL on a brand domain is a compromised page, not a malicious domain)."""
        domains = dict(self.domains)
        for url in urls:
            host = _host(url)
            if host is None or is_ip_host(host):
                continue
            domain = registrable_domain(host)
            if domain in BRAND_DOMAINS:
                continue
            known = domains.get(domain)
            domains[domain] = DomainRecord(
                first_seen=known.first_seen if known else first_seen, listed="block", source=source
            )
        return ReputationStore(as_of=self.as_of, domains=domains)

    def lookup(self, target: str) -> dict[str, Any]:
        """Everything the store says about a URL or domain (plain JSON); unknown domains say so."""
        host = _host(target)
        if host is None:
            return {"target": target, "error": "not a URL or domain name"}
        domain = host if is_ip_host(host) else registrable_domain(host)
        record = self.domains.get(domain)
        listed = record.listed if record else None
        if domain in BRAND_DOMAINS:
            listed = "allow"
        imitation = lookalike(host)
        first_seen = record.first_seen if record else None
        return {
            "target": target,
            "host": host,
            "domain": domain,
            "known": record is not None or domain in BRAND_DOMAINS,
            "listed": listed,
            "list_source": record.source if record and record.listed else None,
            "first_seen": first_seen.isoformat() if first_seen else None,
            "age_days": (self.as_of - first_seen).days if first_seen else None,
            "lookalike_of": imitation.brand_domain if imitation else None,
            "lookalike_kind": imitation.kind if imitation else None,
            "lookalike_score": imitation.score if imitation else 0.0,
            "shortener": domain in SHORTENERS or host in SHORTENERS,
            "ip_literal": is_ip_host(host),
            "punycode": "xn--" in host or not host.isascii(),
        }


def _host(target: str) -> str | None:
    """The host of a URL, or a bare domain name, lowercased; None when it is neither."""
    text = target.strip().strip("<>\"'")
    if "://" in text or text.casefold().startswith("www."):
        return href_host(text)
    candidate = text.split("/", 1)[0].split("@")[-1].rstrip(".").casefold()
    if re.fullmatch(r"[\w-]+(?:\.[\w-]+)+", candidate) or is_ip_host(candidate):
        return candidate
    return None


def parse_text_calls(completion: str) -> list[str]:
    """Targets of the text-protocol calls in a completion, in order."""
    return _TEXT_CALL.findall(completion)


@dataclass
class ReputationTool:
    """The tool as a model sees it: a budget of calls, each recorded in the transcript with its result."""

    store: ReputationStore
    budget: int = 3
    transcript: list[dict[str, Any]] = field(default_factory=list)

    def __call__(self, arguments: Mapping[str, Any] | str) -> dict[str, Any]:
        """Handle one function call; `arguments` is the call's JSON arguments (string or already decoded)."""
        # The model's arguments are read by the answer rules (decode_json): a huge number or deep nesting is refused
        # by name here, not raised, and nothing JSON cannot write back reaches the transcript.
        decoded = decode_json(arguments)[0] if isinstance(arguments, str) else dict(arguments)
        target = decoded.get("target") if isinstance(decoded, dict) else None
        if not isinstance(target, str):
            result: dict[str, Any] = {"error": 'arguments must be a JSON object {"target": "<url or domain>"}'}
        elif len(self.transcript) >= self.budget:
            result = {"target": target, "error": f"call budget of {self.budget} exhausted; answer now"}
        else:
            result = self.store.lookup(target)
        self.transcript.append({"tool": TOOL_NAME, "arguments": decoded, "result": result})
        return result

    def respond_text(self, completion: str) -> list[str]:
        """Answer the text-protocol calls in a completion: one `RESULT url_reputation <json>` line per call."""
        return [
            f"RESULT {TOOL_NAME} {json.dumps(self({'target': target}), ensure_ascii=False, sort_keys=True)}"
            for target in parse_text_calls(completion)
        ]

    def instructions(self) -> str:
        """The text-protocol paragraph for a prompt, with this tool's budget."""
        return TEXT_PROTOCOL.format(budget=self.budget)
