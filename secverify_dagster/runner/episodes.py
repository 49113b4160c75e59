"""The one interface the eval loop plays items through: an episode kind turns a chunk of items into scored records.

Three kinds implement it, each in its own module: a single turn (`single_turn.py`), a tool-using episode
(`tool_episode.py`) and a dialogue with counterparts and a judge (`dialogue.py`). The loop (`eval_runner.py`) picks
one per run and owns everything around it once: the run folder and its lock, resuming, retries and giving up,
the response cache (inside the model client), and the run's metadata.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from secverify_dagster.resources.models import ModelClient, ModelSpec
from sv_shared.contracts import Environment, Item, ScoredSample
from sv_shared.runs.schema import ErrorRecord, ResultRecord
from sv_shared.runs.unscored import silent_answer


@dataclass
class PlayedChunk:
    """A chunk's outcome: a record per scored sample, an error per failed one, and where the time went."""

    records: list[ResultRecord]
    errors: list[ErrorRecord]
    generate_s: float
    score_s: float


class EpisodeKind(ABC):
    """How one run plays its items with the model under evaluation; a failing sample is an error, never a raise."""

    mode: ClassVar[str]
    """Recorded in the run's fingerprint: "single", "tools" or "dialogue"."""

    def __init__(self, env: Environment, spec: ModelSpec, client: ModelClient) -> None:
        self.env = env
        self.spec = spec
        self.client = client

    def item_id(self, item: Item) -> str:
        return item[self.env.data.id_column]

    @abstractmethod
    def play(self, batch: Sequence[Item], params: Mapping[str, Any], seed: int) -> PlayedChunk:
        """Play and score every item of the batch."""

    def silent_sample(self, item: Item) -> ScoredSample | None:
        """The environment's verdict on an item whose model said nothing, without calling any model: what the run's
        metrics count for an item it could not score (sv_shared.runs.unscored); None when it cannot be counted.
        Completion environments score the empty answer (a bare failure when even that raises)."""
        return silent_answer(self.env.verifier, item, self.item_id(item))

    def judge_validation(self) -> dict[str, Any] | None:
        """The judge's measured agreement, for kinds that are judged (recorded in the run's metadata)."""
        return None

    def close(self) -> None:
        """Release what the kind opened besides the model client (counterparts, judge); most open nothing."""
        return None
