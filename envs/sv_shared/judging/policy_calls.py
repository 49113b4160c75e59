"""One batched call to a judge model, with failures kept per conversation.

Model-backed judges (Llama Guard, the LLM judge) share this so a provider error becomes an UNAVAILABLE verdict for
the conversations it hit, never an exception that loses the whole batch.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from sv_shared.contracts.types import BatchPolicy, Message, PolicyReply

log = logging.getLogger(__name__)


def ask_all(policy: BatchPolicy, conversations: Sequence[list[Message]]) -> list[str | Exception]:
    """The reply text of each conversation, or the exception that took its place, in order.

    A policy that raises fails every conversation of the batch; one that returns the wrong number of replies is a
    broken policy, so that raises.
    """
    if not conversations:
        return []
    try:
        replies = policy(list(conversations))
    except Exception as error:  # any provider failure means "not judged", never a crash
        log.warning("judge model call failed for %d conversations: %s", len(conversations), error)
        return [error] * len(conversations)
    if len(replies) != len(conversations):
        raise ValueError(f"judge policy returned {len(replies)} replies for {len(conversations)} conversations")
    results: list[str | Exception] = []
    for reply in replies:
        if isinstance(reply, Exception):
            results.append(reply)
        elif isinstance(reply, PolicyReply):
            results.append(reply.text or "")
        else:
            results.append(TypeError(f"judge policy returned {type(reply).__name__}, not PolicyReply"))
    return results
