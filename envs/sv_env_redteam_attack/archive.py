"""E5's novelty archive: earlier successful attacks as hashed word n-gram shingles, which a new success is measured
against. The shipped jailbreak framings are always in it, so an attacker that only reuses them earns little novelty;
a configured archive file (the tournament writes one per round) adds to them."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from sv_env_redteam_attack import baseline
from sv_env_redteam_attack.config import NoveltySettings
from sv_shared.answers.novelty import novelty, read_archive, shingles
from sv_shared.config import project_root


class NoveltyArchive:
    """The archive's entries are read on first use, so building the environment reads no file."""

    def __init__(self, ngram: int, path: Path | None) -> None:
        self.ngram = ngram
        self.path = path

    @classmethod
    def from_settings(cls, settings: NoveltySettings) -> NoveltyArchive:
        """The configured archive; a relative path is under the project root."""
        path = Path(settings.archive) if settings.archive else None
        if path is not None and not path.is_absolute():
            path = project_root() / path
        return cls(settings.ngram, path)

    @cached_property
    def entries(self) -> list[frozenset[int]]:
        framings = [shingles(text, self.ngram) for text in baseline.framing_texts()]
        return framings + (read_archive(self.path) if self.path is not None else [])

    def shingles(self, text: str) -> frozenset[int]:
        """An attack's shingles, with the archive's n."""
        return shingles(text, self.ngram)

    def novelty(self, attack: frozenset[int]) -> float:
        """1 − the highest Jaccard similarity of an attack's shingles to any archived attack."""
        return novelty(attack, self.entries)
