"""Items a run could not score still count: its metrics are intent-to-treat over every item.

An item without a scored sample (its scorer raised, its record could not be written, its provider refused it or was
down, it was never played) would otherwise drop out of the metrics, and a policy could leave out of its headline the
items it would fail, for instance with an answer that crashes the scorer. Instead every metric counts such an item as
the answer of a model that said nothing: the environment's own verdict on a silent answer, so each aggregate reads it
as the failure it reads every day, with that verdict's reward (a format failure's: 0, or E1's and E4's floor, -0.7,
never more than a wrong answer) and the error `not_scored`. The run summary names each such item and
why (`RunSummary.unscored`); results.jsonl keeps holding scored samples only, so a resume still retries them.

When even the silent answer cannot be scored, the item breaks the scorer whatever the answer. A completion verifier
then counts a bare failure (no answer, no components), which its aggregate reads as any format failure. A dialogue's
metrics need the judged dialogue, so such an item is named but not counted (`UnscoredItem.counted`); no answer could
have changed that, so a policy gains nothing by it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final

from sv_shared.contracts.types import Item, ScoredSample
from sv_shared.contracts.verifier import CompletionVerifier

NOT_SCORED: Final = "not_scored"
"""The error an item that could not be scored is counted under in the metrics (beside the format errors)."""

NOT_PLAYED: Final = "not_played"
"""The kind of an unscored item with no recorded failure: the run has not reached it yet."""


def silent_answer(verifier: CompletionVerifier, item: Item, item_id: str) -> ScoredSample:
    """The verifier's verdict on the empty answer to item; a bare failure when even that raises."""
    try:
        return verifier.score(item, "")
    except Exception:  # the item itself breaks the scorer, whatever the answer
        return ScoredSample(item_id=item_id, reward=0.0, components={}, parsed=None, error=NOT_SCORED)


def not_scored_record(item_id: str, silent: ScoredSample) -> dict[str, Any]:
    """The record the metrics count for an item that could not be scored: its silent answer's verdict with error
    not_scored, as results.jsonl would hold it, and its reward where that is at most 0 (E1's and E4's format failure
    earns -0.7), else 0: an unscored item never earns more than saying nothing."""
    # E2 and E3 also name a failure in details.format_error, which for the silent answer says empty_completion.
    details = {key: value for key, value in silent.details.items() if key != "format_error"}
    reward = min(silent.reward, 0.0)
    return replace(silent, item_id=item_id, reward=reward, error=NOT_SCORED, details=details).to_record()
