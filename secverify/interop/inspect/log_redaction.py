"""Judged-unsafe and unjudged dialogue text kept out of inspect's log.

inspect records every `Model.generate` call as a ModelEvent holding the raw input, output and API payload, and hands
each event to the sample's subscribers (the realtime sample buffer, hooks) the moment it happens, before any judge has
read the text. So a dialogue's model calls are recorded in a private transcript that nothing subscribes to
(`private_model_events`); once the episode is judged, `redacted_events` gives copies of those events in which every
text the episode did not store in clear reads as its redaction marker, and only those copies reach the sample's
transcript and the .eval log. The rule is the runner's: a text is written in clear only if the judge and the storage
screen cleared it, as the stored transcript shows; a model output the episode never judged (malformed, truncated,
wrapped in more than the turn asks for) is withheld as unjudged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from inspect_ai.event import Event, ModelEvent
from inspect_ai.log import Transcript
from inspect_ai.log._transcript import init_transcript
from inspect_ai.model import ContentReasoning

from secverify.interop.inspect.messages import loggable_text
from sv_shared.data.hashing import sha256_hex
from sv_shared.judging.redaction import UNJUDGED, marker_sha256_prefix, redaction_marker

FRAGMENT_CHARS = 64
"""A withheld text's opening this long found in a string redacts that whole string: prompts may show a text cut
short (E5's attacker sees target replies up to 1,200 characters), which whole-text replacement would miss."""

ATTACHMENT_PREFIX = "attachment://"
_CATEGORIES = re.compile(r"categories:([A-Za-z0-9,_-]+)")


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """value with change applied to every string in it (mappings and sequences walked, keys kept)."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, Mapping):
        return {key: map_strings(inner, change) for key, inner in value.items()}
    if isinstance(value, list | tuple):
        return [map_strings(inner, change) for inner in value]
    return value


def private_model_events() -> Transcript:
    """Route this thread's (and its model calls') events to a fresh transcript with no subscribers.

    Call it in the worker thread that plays an episode: anyio copies that thread's context into every coroutine it
    starts on the event loop, so the model calls the episode makes record their events here and nowhere else.
    (`init_transcript` is inspect's own way to do this, as its batch model providers use it for background calls.)"""
    captured = Transcript()
    init_transcript(captured)
    return captured


def _marker_categories(marker: str) -> list[str]:
    match = _CATEGORIES.search(marker)
    return match.group(1).split(",") if match else []


def _same_json(first: str, second: str) -> bool:
    try:
        return json.loads(first) == json.loads(second)
    except (ValueError, RecursionError):  # not JSON, or nested past what the decoder follows
        return False


def withheld_texts(
    outputs: Iterable[str],
    entries: Sequence[Mapping[str, Any]],
    *,
    derived: Callable[[str], Iterable[str]],
    as_completion: Callable[[Mapping[str, Any]], str],
    completion_role: str,
) -> dict[str, str]:
    """Each text the log must not show in clear, with the marker it shows instead.

    outputs: the raw model outputs of the episode; entries: its stored transcript (redacted texts are markers);
    derived: the texts an episode reads from an output (the parsed message or reply); as_completion: a stored turn of
    the model under evaluation written as the completion its prompt asks for (completion_role's turns).
    Withheld: the original of every redacted transcript entry (found by the hash and length its marker carries), and
    every non-empty output that is not exactly a text the transcript stores in clear."""
    cleared: set[str] = set()
    redacted: dict[tuple[str, int], str] = {}
    for entry in entries:
        text = str(entry["text"])
        if entry.get("redacted"):
            prefix = marker_sha256_prefix(text)
            if prefix is not None:
                redacted[(prefix, int(entry["chars"]))] = text
            continue
        cleared.add(text)
        if entry.get("role") == completion_role:
            cleared.add(as_completion(entry))
    withheld: dict[str, str] = {}
    for output in outputs:
        categories: list[str] = []
        for candidate in dict.fromkeys([output, output.strip(), *derived(output)]):
            marker = redacted.get((sha256_hex(candidate)[:16], len(candidate)))
            if marker is not None and candidate.strip():
                withheld[candidate] = marker
                categories = categories or _marker_categories(marker)
        stripped = output.strip()
        if not stripped:
            continue
        in_clear = stripped in cleared or any(_same_json(stripped, text) for text in cleared if text.startswith("{"))
        if categories or not in_clear:
            withheld[output] = redaction_marker(output, categories or [UNJUDGED])
    return withheld


def _spellings(text: str) -> list[str]:
    """The text as it may sit inside a string: itself, and JSON-escaped (an API payload or tool argument)."""
    return list(dict.fromkeys([text, json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]]))


class Scrubber:
    """Rewrites a string of an event's data: withheld texts (in any spelling) become their markers, a string still
    holding a withheld text's opening becomes a marker as a whole, and what is left is made loggable."""

    def __init__(self, withheld: Mapping[str, str], attachments: Mapping[str, str]) -> None:
        self.attachments = attachments
        pairs = [(spelling, marker) for text, marker in withheld.items() for spelling in _spellings(text)]
        self.replacements = sorted(dict(pairs).items(), key=lambda pair: len(pair[0]), reverse=True)
        self.fragments = [(text[:FRAGMENT_CHARS], _marker_categories(marker)) for text, marker in withheld.items()]

    def text(self, value: str) -> str:
        if value.startswith(ATTACHMENT_PREFIX):
            value = self.attachments.get(value[len(ATTACHMENT_PREFIX) :], value)
        for spelling, marker in self.replacements:
            if spelling in value:
                value = value.replace(spelling, marker)
        for fragment, categories in self.fragments:
            if fragment in value:
                return redaction_marker(value, categories or [UNJUDGED])
        return loggable_text(value)


def model_outputs(events: Iterable[Event]) -> list[str]:
    """Every text a model produced in these events: each choice's text and completion, and its reasoning (which our
    episodes never read, so it is never judged and never stored in clear)."""
    texts: list[str] = []
    for event in events:
        if not isinstance(event, ModelEvent):
            continue
        texts.append(event.output.completion)
        for choice in event.output.choices:
            texts.append(choice.message.text)
            if isinstance(choice.message.content, list):
                for part in choice.message.content:
                    if isinstance(part, ContentReasoning):
                        texts += [text for text in (part.reasoning, part.summary) if text]
    return list(dict.fromkeys(texts))


def redacted_events(captured: Transcript, withheld: Mapping[str, str]) -> list[Event]:
    """Copies of the captured events with every withheld text replaced (API payloads read back from the private
    transcript's attachments first, so they are scrubbed too)."""
    scrub = Scrubber(withheld, captured.attachments)
    copies: list[Event] = []
    for event in captured.events:
        data = map_strings(event.model_dump(mode="python", exclude={"uuid"}), scrub.text)
        copies.append(type(event).model_validate(data))
    return copies
