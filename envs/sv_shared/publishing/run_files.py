"""A run's files as they may be shared: metadata and summary sanitized whole; each sample reduced to no model text.

Per sample (results.jsonl line) the rule is the simplest safe one: no model text at all. Kept: the id, the model and
counterparts, the reward and its components, the named error, usage, latency, cost, cache flag, turns and finish
reason. The prompt and the completion are kept only as their sha256 (and length), so a holder of the original can
prove which text it was; a completion that is already a redaction marker (judged-unsafe E5/E6 text, stored redacted)
is kept as that marker. The parsed answer and the details (transcripts, judge verdicts' text, patches, rationales) are
left out. Every kept string still goes through the sanitizer (secrets, local paths).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from sv_shared.data.files import json_text
from sv_shared.data.hashing import sha256_hex
from sv_shared.judging.redaction import is_redacted
from sv_shared.publishing.sanitize import Sanitizer

PUBLIC_SAMPLE_FIELDS: Final = (
    "schema_version",
    "id",
    "model",
    "counterparts",
    "reward",
    "components",
    "error",
    "usage",
    "latency_s",
    "cost_usd",
    "cached",
    "turns",
    "finish_reason",
)
HASHED_FIELDS: Final = ("prompt", "completion")


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json_text(value, sort_keys=True)


def public_sample(record: Mapping[str, Any], sanitizer: Sanitizer) -> dict[str, Any]:
    """A result line with no model text: kept fields sanitized, prompt and completion as hashes, the rest counted
    under `model-text:<field>` in the sanitizer's counts."""
    public: dict[str, Any] = {name: record[name] for name in PUBLIC_SAMPLE_FIELDS if name in record}
    for name in HASHED_FIELDS:
        if name in record:
            text = _as_text(record[name])
            public[f"{name}_sha256"] = sha256_hex(text)
            public[f"{name}_chars"] = len(text)
    completion = record.get("completion")
    if isinstance(completion, str) and is_redacted(completion):
        public["completion"] = completion.strip()
        sanitizer.counts["model-text:kept-redaction-marker"] += 1
    for name in record.keys() - PUBLIC_SAMPLE_FIELDS:
        sanitizer.counts[f"model-text:{name}"] += 1
    return sanitizer.json(public)
