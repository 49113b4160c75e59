"""Async retry with exponential backoff and jitter, honouring a server's Retry-After when it gives one."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """attempts counts the first call: attempts=5 means one call and up to four retries.

    The n-th retry waits min(max_delay_s, base_delay_s * 2**n) scaled by a random factor in
    [1 - jitter, 1 + jitter];
    a Retry-After from the server replaces that delay: it is waited as given, up to max_retry_after_s.
    """

    attempts: int = 5
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    jitter: float = 0.1
    max_retry_after_s: float = 120.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"RetryPolicy.attempts must be >= 1, got {self.attempts}")
        if self.base_delay_s < 0 or self.max_delay_s < 0 or self.max_retry_after_s < 0:
            raise ValueError("RetryPolicy delays must be >= 0")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"RetryPolicy.jitter must be in [0, 1], got {self.jitter}")

    def delay(self, retry_index: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number retry_index (0 = the first retry)."""
        if retry_after is not None and retry_after >= 0:
            return min(float(retry_after), self.max_retry_after_s)
        backoff = min(self.max_delay_s, self.base_delay_s * (2**retry_index))
        factor = 1.0 + random.uniform(-self.jitter, self.jitter) if self.jitter else 1.0
        return max(0.0, min(self.max_delay_s, backoff * factor))


def _never(_exc: BaseException) -> float | None:
    return None


async def retry_async(
    call: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    is_retryable: Callable[[BaseException], bool],
    retry_after: Callable[[BaseException], float | None] = _never,
    on_retry: Callable[[BaseException, int, float], None] | None = None,
) -> T:
    """Await call() until it succeeds, the error is not retryable, or attempts run out (then re-raise).

    on_retry(exc, retry_number, delay_s) is called before each wait; retry_number starts at 1.
    """
    retry_index = 0
    while True:
        try:
            return await call()
        except Exception as exc:
            if retry_index + 1 >= policy.attempts or not is_retryable(exc):
                raise
            delay = policy.delay(retry_index, retry_after(exc))
            retry_index += 1
            if on_retry is not None:
                on_retry(exc, retry_index, delay)
            await asyncio.sleep(delay)
