"""How new an attack is: word n-gram shingles, hashed, compared by Jaccard distance to an archive.

The documented choice for E5's novelty bonus. Shingles are stored as hashes, never as text, so an archive of earlier
successful attacks can be kept and shared without keeping the attacks themselves. n-grams (not embeddings) because
they need no model, are exact to reproduce, and reward a new framing rather than a paraphrase of an old one only
in proportion to the words it changes.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from sv_shared.data.files import json_text, write_text_atomic

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
DEFAULT_N = 3


def _grams(text: str, n: int) -> list[str]:
    """The text's lower-cased word n-grams in order (a text shorter than n words is its one whole-text gram)."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    words = _WORD.findall(text.casefold())
    if not words:
        return []
    return [" ".join(words[i : i + n]) for i in range(max(1, len(words) - n + 1))]


def shingles(text: str, n: int = DEFAULT_N) -> frozenset[int]:
    """Hashes of the text's lower-cased word n-grams (texts shorter than n words give their one whole-text gram)."""
    digests = (hashlib.blake2b(gram.encode(), digest_size=8).digest() for gram in _grams(text, n))
    return frozenset(int.from_bytes(digest, "big") for digest in digests)


def distinct_share(text: str, n: int = DEFAULT_N) -> float:
    """Share of the text's word n-grams that are distinct: 1 for ordinary prose, about 1/k for a text said k times.

    Repeating an attack adds the seams between its copies as shingles no archive holds: without this share, saying
    the same message twice measured as more novel than saying it once (reward search, issue 25)."""
    grams = _grams(text, n)
    return len(set(grams)) / len(grams) if grams else 1.0


def jaccard_similarity(a: frozenset[int], b: frozenset[int]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def novelty(candidate: frozenset[int], archive: Iterable[frozenset[int]]) -> float:
    """1 − the highest Jaccard similarity to any archived attack; 1.0 against an empty archive."""
    best = 0.0
    for entry in archive:
        best = max(best, jaccard_similarity(candidate, entry))
        if best == 1.0:
            break
    return 1.0 - best


def mean_pairwise_distance(sets: Sequence[frozenset[int]]) -> float | None:
    """Diversity of a set of attacks: mean Jaccard distance over all pairs (None for fewer than two)."""
    if len(sets) < 2:
        return None
    total, pairs = 0.0, 0
    for i, a in enumerate(sets):
        for b in sets[i + 1 :]:
            total += 1.0 - jaccard_similarity(a, b)
            pairs += 1
    return total / pairs


def read_archive(path: Path) -> list[frozenset[int]]:
    """An archive file: JSON lines with a "shingles" list of integers each (other fields are provenance)."""
    entries = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                values = json.loads(line)["shingles"]
                entries.append(frozenset(int(v) for v in values))
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{number}: not an archive entry with a 'shingles' list ({exc})") from exc
    return entries


def write_archive(path: Path, entries: Iterable[dict]) -> int:
    """Write archive entries (dicts with "shingles" plus provenance fields); returns how many were written."""
    lines = [json_text({**entry, "shingles": sorted(entry["shingles"])}, sort_keys=True) + "\n" for entry in entries]
    write_text_atomic(path, "".join(lines))
    return len(lines)
