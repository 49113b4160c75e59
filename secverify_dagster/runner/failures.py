"""A sample's failures: how they are recorded, counted, and when a sample is given up.

Failures that say something about the sample (ITEM_FAILURES) count towards giving it up after MAX_ITEM_ATTEMPTS, over
any number of sessions; failures that say something about the service are retried on every resume without bound.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from secverify_dagster.resources.models import ProviderError
from sv_shared.runs.schema import ErrorRecord, ResultRecord

MAX_ITEM_ATTEMPTS = 3
"""Failed attempts (ITEM_FAILURES, over all sessions) after which a sample is given up and the run completes (its
metrics counting the sample as not scored, sv_shared.runs.unscored)."""

ITEM_FAILURES = frozenset(
    {"scoring", "episode", "unwritable", "counterpart", "bad_request", "bad_response", "baseline"}
)
"""Error kinds that are about the sample, so retrying it forever cannot help: the runner's own (scoring, episode,
unwritable), a counterpart raising on it, a provider refusing (bad_request) or garbling (bad_response) that request, a
rule baseline raising on it. Every other kind (rate_limit, quota, server, timeout, unreachable, auth, local, internal,
and kinds added later) is retried on every resume."""

RUNNER_FAILURES = frozenset({"scoring", "episode", "unwritable"})
"""The kinds of the runner's own failures (the others come from the model, a counterpart or the judge)."""


def provider_failure(item_id: str, error: ProviderError) -> ErrorRecord:
    """A sample whose model (or counterpart, or judge) call failed after the client's retries."""
    return ErrorRecord(
        id=item_id, kind=error.kind, status=error.status, message=str(error), at=datetime.now(UTC).isoformat()
    )


def runner_failure(item_id: str, kind: str, error: BaseException | str) -> ErrorRecord:
    """A sample the runner could not finish: kind is "scoring", "episode" or "unwritable"."""
    message = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    return ErrorRecord(id=item_id, kind=kind, status=None, message=message, at=datetime.now(UTC).isoformat())


def counted_failures(errors: Sequence[ErrorRecord]) -> Counter[str]:
    """Failed attempts per sample that count towards giving it up (ITEM_FAILURES)."""
    return Counter(error.id for error in errors if error.kind in ITEM_FAILURES)


def number_attempts(errors: Sequence[ErrorRecord], failures: Counter[str]) -> list[ErrorRecord]:
    """Errors with their attempt number where they count (failures is updated); the last one says it gave up."""
    numbered = []
    for error in errors:
        if error.kind not in ITEM_FAILURES:
            numbered.append(error)
            continue
        failures[error.id] += 1
        attempt = failures[error.id]
        note = "; given up, the run completes counting it as not scored" if attempt >= MAX_ITEM_ATTEMPTS else ""
        numbered.append(error.replace(message=f"{error.message} (attempt {attempt} of {MAX_ITEM_ATTEMPTS}{note})"))
    return numbered


def given_up(failures: Counter[str], done: Mapping[str, ResultRecord]) -> set[str]:
    """Samples given up: failed MAX_ITEM_ATTEMPTS times and never scored. None while the run has scored nothing, so a
    failure every sample shares (a misconfigured request) leaves the run incomplete instead of complete and empty."""
    if not done:
        return set()
    return {item_id for item_id, count in failures.items() if count >= MAX_ITEM_ATTEMPTS and item_id not in done}
