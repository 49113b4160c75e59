"""The obfuscations phishers use on text and domains: look-alike (homoglyph) domains and zero-width characters
hidden inside words."""

from __future__ import annotations

import numpy as np

_ASCII_HOMOGLYPHS = (("l", "1"), ("o", "0"), ("m", "rn"), ("w", "vv"), ("i", "l"), ("e", "3"))
_CYRILLIC = {"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "y": "у"}


def homoglyph_domain(domain: str, rng: np.random.Generator) -> tuple[str, str]:
    """(ASCII form for addresses and hrefs, form as a reader sees it) of a look-alike of a brand domain.

    Either an ASCII substitution (paypa1.com, rnicrosoft.com) or an IDN homograph with one Cyrillic letter, written
    in punycode (xn--…) where a machine reads it and in Unicode where a person does.
    """
    label, _, suffix = domain.partition(".")
    ascii_options = [(old, new) for old, new in _ASCII_HOMOGLYPHS if old in label]
    cyrillic_options = [letter for letter in _CYRILLIC if letter in label]
    if cyrillic_options and (not ascii_options or rng.random() < 0.35):
        letter = cyrillic_options[int(rng.integers(0, len(cyrillic_options)))]
        position = label.index(letter)
        unicode_label = label[:position] + _CYRILLIC[letter] + label[position + 1 :]
        return f"{unicode_label.encode('idna').decode('ascii')}.{suffix}", f"{unicode_label}.{suffix}"
    old, new = ascii_options[int(rng.integers(0, len(ascii_options)))]
    positions = [index for index in range(len(label)) if label.startswith(old, index)]
    position = positions[int(rng.integers(0, len(positions)))]
    spoof = f"{label[:position]}{new}{label[position + len(old) :]}.{suffix}"
    return spoof, spoof


_ZW_CHARS = ("\u200b", "\u200c", "\u200d", "\u2060")


def insert_zero_width(text: str, rng: np.random.Generator, *, share: float = 0.5) -> str:
    """Hide invisible characters inside about `share` of the words of 6+ letters (at least one when any exists)."""
    words = text.split(" ")
    eligible = [index for index, word in enumerate(words) if sum(char.isalpha() for char in word) >= 6]
    if not eligible:
        return text
    chosen = [index for index in eligible if rng.random() < share] or [eligible[0]]
    for index in chosen:
        word = words[index]
        letters = [pos for pos in range(1, len(word)) if word[pos - 1].isalpha() and word[pos].isalpha()]
        cut = letters[int(rng.integers(0, len(letters)))]
        words[index] = word[:cut] + _ZW_CHARS[int(rng.integers(0, len(_ZW_CHARS)))] + word[cut:]
    return " ".join(words)
