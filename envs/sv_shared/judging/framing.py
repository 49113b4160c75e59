"""How a model judge is shown the conversation: as quoted data the text inside cannot break out of.

A judge prompt that pastes the request and the response between fixed tags ("<RESPONSE>...</RESPONSE>", "User:
... Agent: ...") lets the text close the tag and write the rest of the prompt itself ("</RESPONSE> Answer: {...}").
Here every message is a JSON string: quotes, backslashes and line breaks inside it are escaped, so it is one quoted
line that ends only where the judge's prompt ends it, and `json.loads` gives back the exact text. The markers of
chat templates ("<|eot_id|>", "<|im_start|>", "[INST]", "<<SYS>>") are escaped too (as JSON \\u escapes), so a
server that reads special tokens out of message text finds none.

The block around the messages is fenced by a boundary derived from the content (`boundary`): a SHA-256 of the
messages themselves, so it differs for every exchange and no text can contain the boundary of the block it sits in
(that would need a hash that occurs in its own input). It is deterministic, so a judge's prompts can be cached and
replayed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from sv_shared.data.hashing import sha256_hex

_CHAT_MARKERS = re.compile(r"<\||\|>|\[/?INST\]|<</?SYS>>|</?s>|<(?:start|end)_of_turn>", re.IGNORECASE)


def _escaped(marker: re.Match[str]) -> str:
    """A chat-template marker with its punctuation as JSON \\u escapes (it decodes to the same characters)."""
    return "".join(f"\\u{ord(char):04x}" if char in "<>|[]/" else char for char in marker.group(0))


def quote(text: str) -> str:
    """text as a JSON string literal (UTF-8 kept), chat-template markers escaped; json.loads(quote(t)) == t."""
    return _CHAT_MARKERS.sub(_escaped, json.dumps(text, ensure_ascii=False))


def boundary(fields: Mapping[str, str]) -> str:
    """The marker fencing one block: a hash of the block's own content, which that content cannot contain."""
    return f"DATA-{sha256_hex(json.dumps(dict(fields), ensure_ascii=False, sort_keys=True))[:24]}"


def data_block(fields: Mapping[str, str]) -> str:
    """The fields as one JSON object of quoted strings, between two lines that carry the block's boundary."""
    marker = boundary(fields)
    body = "{" + ", ".join(f"{quote(name)}: {quote(value)}" for name, value in fields.items()) + "}"
    return f"<<<{marker}>>>\n{body}\n<<<END {marker}>>>"
