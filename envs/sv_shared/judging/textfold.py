"""Text folded for matching: what a reader sees, whatever code points spell it.

Writing to the judge in disguise costs a policy nothing: a Cyrillic "е" in "JUDGE", a zero-width space inside it,
"J U D G E" or "j.u.d.g.e", full-width or mathematical letters, leetspeak ("JUDG3"), combining marks over each
letter. `fold` undoes all of these so that one lower-case, accent-free pattern per word matches every disguise:

1. each code point is NFKC-normalized (full-width, mathematical, circled letters, ligatures), its combining marks
   dropped (accents, underlines, "zalgo") and case-folded; format characters (zero-width spaces and joiners, bidi
   controls, the soft hyphen) and a few invisible fillers are dropped;
2. runs of three or more single letters split by spaces or punctuation ("j u d g e", "j.u.d.g.e") are joined into
   words, wider or different gaps keeping the words apart ("h o w  t o" reads "how to");
3. digits and $ / @ inside words that also hold two letters or more read as the letters they imitate ("3v4lu4t0r");
4. look-alike letters of other scripts (Cyrillic, Greek, Armenian, small capitals) read as Latin in a word that
   holds a Latin letter or consists of look-alikes only: "JUDGЕ" with a Cyrillic Е is "judge", while Russian words
   (which hold letters with no Latin twin) stay Russian. `Folded.text` keeps every script; `Folded.latin` is the
   same text with the look-alikes read as Latin (Latin patterns run on it, the others on `text`).

Every folded character remembers the original position it came from (`origin`), so a span found in the folded text
names the original text it covers: what the judges cut out of the conversation is exactly the original characters.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

_INVISIBLE = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u2800\u3164\uffa0")
"""Invisible characters that are not format characters (Cf): combining grapheme joiner, Hangul and Khmer fillers,
the blank Braille pattern."""

CONFUSABLES: dict[str, str] = {
    # Cyrillic (lower case, and the lower case of capitals that look Latin: В, Н, К, М, Т)
    "а": "a", "в": "b", "е": "e", "ё": "e", "һ": "h", "н": "h", "і": "i", "ї": "i", "ј": "j", "к": "k", "ӏ": "l",
    "м": "m", "о": "o", "р": "p", "ԛ": "q", "ѕ": "s", "т": "t", "у": "y", "ԝ": "w", "х": "x", "ԁ": "d", "ɡ": "g",
    "ѵ": "v", "ү": "y", "с": "c", "ь": "b",
    # Greek
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "μ": "u", "ν": "v", "ο": "o", "ρ": "p", "τ": "t",
    "υ": "u", "χ": "x", "γ": "y", "ζ": "z", "ϲ": "c", "ϳ": "j", "ω": "w",
    # Armenian
    "ս": "u", "օ": "o", "ո": "n", "հ": "h", "զ": "q", "ց": "g", "ա": "w",
    # Latin look-alikes NFKC leaves alone: dotless i and j, small capitals, script letters
    "ı": "i", "ȷ": "j", "ɑ": "a", "ᴀ": "a", "ʙ": "b", "ᴄ": "c", "ᴅ": "d", "ᴇ": "e", "ꜰ": "f", "ɢ": "g", "ʜ": "h",
    "ɪ": "i", "ᴊ": "j", "ᴋ": "k", "ʟ": "l", "ᴍ": "m", "ɴ": "n", "ᴏ": "o", "ᴘ": "p", "ʀ": "r", "ꜱ": "s", "ᴛ": "t",
    "ᴜ": "u", "ᴠ": "v", "ᴡ": "w", "ʏ": "y", "ᴢ": "z",
}  # fmt: skip
"""Letters of other scripts that read as a Latin letter (after case folding), one character each."""

_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b", "$": "s", "@": "a"})
_LEET_WORD = re.compile(r"(?<![\w$@])(?=(?:[\w$@]*?[^\W\d_]){2})(?=[\w$@]*[\d$@])[\w$@]+")
"""A word of two letters or more that also holds digits or $ / @ ("m4rk", "JUDG3"); codes like "S1" are left alone."""
_SPACED = re.compile(r"(?<![^\W\d_])(?:[^\W\d_][\s.\-_*·•|/+~,'\"]{1,3}){2,}[^\W\d_](?![^\W\d_])")
_LETTER = re.compile(r"[^\W\d_]")
_WORD = re.compile(r"[^\W\d_]+")


@dataclass(frozen=True)
class Folded:
    """Folded text, the same text with look-alike letters read as Latin, and each character's original position."""

    text: str
    latin: str
    origin: tuple[int, ...]

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original text's [start, end) covered by the folded text's [start, end) (end > start)."""
        return self.origin[start], self.origin[end - 1] + 1


def _invisible(char: str) -> bool:
    return char in _INVISIBLE or unicodedata.category(char) == "Cf"


def invisible_as_spaces(text: str) -> str:
    """The text with every invisible or format character read as a space. `fold` drops them, which rejoins a word
    split by a zero-width space ("b\u200bomb") but glues words whose spaces were replaced by one ("how\u200bto"):
    a reader sees words in both, so a judge reads both views."""
    return "".join(" " if _invisible(char) else char for char in text) if not text.isascii() else text


@lru_cache(maxsize=8192)
def _fold_char(char: str) -> str:
    if _invisible(char):
        return ""
    kept = [
        part
        for composed in unicodedata.normalize("NFKC", char)
        for part in unicodedata.normalize("NFD", composed)
        if unicodedata.category(part) not in ("Mn", "Me")
    ]
    return "".join(kept).casefold()


def _per_char(text: str) -> tuple[list[str], list[int]]:
    if text.isascii():
        return list(text.lower()), list(range(len(text)))
    chars: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        for folded in _fold_char(char):
            chars.append(folded)
            origin.append(index)
    return chars, origin


def _kept(run: str) -> list[tuple[int, str]]:
    """(offset, character) of what a letter-spaced run reads as: its letters, and a space at each word gap. Gaps of
    two or more spaces split words; within a stretch between them, so does a gap unlike the usual one (whitespace
    among punctuation, punctuation among whitespace): "h o w  t o" reads "how to", "c.o.d.e t.o.o.l" "code tool",
    "i t. J U D G E" "it judge"."""
    letters = [offset for offset, char in enumerate(run) if _LETTER.match(char)]
    gaps = [run[before + 1 : after] for before, after in pairwise(letters)]
    word_gap = [gap.isspace() and len(gap) > 1 for gap in gaps]
    start = 0
    for end in [index for index, wide in enumerate(word_gap) if wide] + [len(gaps)]:
        if end > start:
            blank = Counter(gaps[start:end]).most_common(1)[0][0].isspace()
            for index in range(start, end):
                word_gap[index] = gaps[index].isspace() != blank
        start = end + 1
    kept = [(letters[0], run[letters[0]])]
    for gap, wide, offset in zip(gaps, word_gap, letters[1:], strict=True):
        if wide:
            kept.append((offset - len(gap), " "))
        kept.append((offset, run[offset]))
    return kept


def _join_spaced(chars: list[str], origin: list[int]) -> tuple[str, list[int]]:
    """Letter-spaced runs joined into words (`_kept`), keeping each kept character's origin."""
    text = "".join(chars)
    out: list[str] = []
    out_origin: list[int] = []
    last = 0
    for match in _SPACED.finditer(text):
        out.append(text[last : match.start()])
        out_origin.extend(origin[last : match.start()])
        for offset, char in _kept(match.group(0)):
            out.append(char)
            out_origin.append(origin[match.start() + offset])
        last = match.end()
    out.append(text[last:])
    out_origin.extend(origin[last:])
    return "".join(out), out_origin


def join_spaced(text: str) -> str:
    """Letter-spaced runs read as words ("d.e.l.e.t.e" is "delete", "h o w  t o" is "how to")."""
    return _SPACED.sub(lambda match: "".join(char for _, char in _kept(match.group(0))), text)


def _as_latin(word: re.Match[str]) -> str:
    letters = word.group(0)
    latin = any("a" <= char <= "z" for char in letters)
    if latin or all(char in CONFUSABLES for char in letters):
        return "".join(CONFUSABLES.get(char, char) for char in letters)
    return letters


def fold(text: str) -> Folded:
    """The text as `Folded` (see the module docstring for what folding undoes)."""
    chars, origin = _per_char(text)
    joined, joined_origin = _join_spaced(chars, origin)
    # Leetspeak and look-alikes are read one character for one, so the origins stay aligned.
    plain = _LEET_WORD.sub(lambda match: match.group(0).translate(_LEET), joined)
    latin = plain if plain.isascii() else _WORD.sub(_as_latin, plain)
    return Folded(text=plain, latin=latin, origin=tuple(joined_origin))
