"""Content cues: phrase lexicons over the subject and text, words hiding zero-width characters, dangerous
attachment names, and the crude language guess that routes the lexicons."""

from __future__ import annotations

import re
from collections.abc import Iterator

from sv_env_phishing_detection.detectors.parsing import ParsedEmail
from sv_env_phishing_detection.detectors.text import SEGMENT_SEPARATOR, ZERO_WIDTH, Found, normalize
from sv_env_phishing_detection.lexicons import lexicon_matches
from sv_env_phishing_detection.schema import UNDETERMINED_LANGUAGE

_STOPWORDS: dict[str, frozenset[str]] = {
    language: frozenset(words.split())
    for language, words in {
        "en": "the and your you to of is please for this with are have our will",
        "de": "der die das und sie ihr ihre nicht bitte ist mit für wir den ein eine zu",
        "fr": "le les et vous votre vos des est pour une nous dans sur avec pas",
        "es": "el los y usted su sus para por una es que con del las nuestro",
    }.items()
}


def guess_language(text: str) -> str:
    """ISO 639-1 code of the covered language with the most stopwords (at least 3 and 1.5x the runner-up), else
    "und". Crude on purpose: it only has to route the four lexicon languages, offline and fast."""
    words = re.findall(r"\w+", normalize(text[:4000]))
    counts = {language: sum(1 for word in words if word in stop) for language, stop in _STOPWORDS.items()}
    ranked = sorted(counts.items(), key=lambda pair: -pair[1])
    (best, top), (_, second) = ranked[0], ranked[1]
    return best if top >= 3 and top >= 1.5 * second else UNDETERMINED_LANGUAGE


DANGEROUS_EXTENSIONS = frozenset(
    {
        "exe", "scr", "com", "bat", "cmd", "pif", "cpl", "msi", "js", "jse", "vbs", "vbe", "wsf", "wsh", "hta",
        "ps1", "jar", "lnk", "html", "htm", "shtml", "xhtml", "svg", "iso", "img", "vhd", "vhdx", "docm", "xlsm",
        "pptm", "dotm", "xlam", "xlsb", "one", "reg", "chm",
    }
)  # fmt: skip
DECOY_EXTENSIONS = frozenset({"pdf", "doc", "docx", "xls", "xlsx", "txt", "jpg", "jpeg", "png", "zip", "rtf", "csv"})
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def attachment_risk(filename: str) -> str | None:
    """Why an attachment name is dangerous (a reason string), or None."""
    name = filename.strip().casefold()
    if any(char in _BIDI_CONTROLS for char in name):
        return "bidirectional control character hides the real extension"
    parts = [part.strip() for part in name.split(".")]
    if len(parts) < 2:
        return None
    extension = parts[-1]
    if len(parts) >= 3 and parts[-2] in DECOY_EXTENSIONS and extension not in DECOY_EXTENSIONS:
        return f"double extension .{parts[-2]}.{extension}"
    if extension in DANGEROUS_EXTENSIONS:
        return f"dangerous extension .{extension}"
    return None


_ZERO_WIDTH_CHAR = re.compile(f"[{ZERO_WIDTH}]")
_WORD_CHAR = re.compile(f"[0-9A-Za-z\u00c0-\u024f{ZERO_WIDTH}]")
_LATIN = re.compile(r"[0-9A-Za-z\u00c0-\u024f]")
MAX_WORD_CHARS = 64
"""How far a hidden-character word is followed either way (keeps the scan linear on megabyte-long "words")."""


def _hidden_words(text: str) -> Iterator[str]:
    """Words with zero-width characters inside them (between two Latin letters or digits), at most 10 of them.

    Padding between words (newsletter preheaders) and byte-order marks are not inside a word, so they do not count.
    """
    found = 0
    for match in _ZERO_WIDTH_CHAR.finditer(text):
        start, end = match.start(), match.end()
        while end < len(text) and text[end] in ZERO_WIDTH:
            end += 1
        if start == 0 or end == len(text) or not _LATIN.match(text[start - 1]) or not _LATIN.match(text[end]):
            continue
        left, right = start, end
        while left > 0 and start - left < MAX_WORD_CHARS and _WORD_CHAR.match(text[left - 1]):
            left -= 1
        while right < len(text) and right - end < MAX_WORD_CHARS and _WORD_CHAR.match(text[right]):
            right += 1
        yield text[left:right]
        found += 1
        if found == 10:
            return


def content_cues(parsed: ParsedEmail, found: Found) -> None:
    """Record lexicon phrases (subject and text), words hiding zero-width characters and dangerous attachments."""
    text = SEGMENT_SEPARATOR.join(normalize(part) for part in (parsed.subject or "", parsed.text, parsed.html_text))
    for kind, span in lexicon_matches(text):
        found.add(kind, span)
    for source in (parsed.subject or "", parsed.from_name or "", parsed.text, parsed.html_text):
        for word in _hidden_words(source):
            found.add("zero_width_obfuscation", word)
    for attachment in parsed.attachments:
        if attachment_risk(attachment.filename):
            found.add("suspicious_attachment", attachment.filename)
