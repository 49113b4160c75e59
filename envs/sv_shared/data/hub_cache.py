"""Reading the `datasets` / `huggingface_hub` caches without any request to a hub.

Both libraries read their offline switches (HF_HUB_OFFLINE, HF_DATASETS_OFFLINE) once, when first imported, and
check the values they read before each request. Setting the environment variables later does nothing in a process
that already imported them (a training step, a loader), and a lookup that only means to read the cache would then
ask the hub first. This switches both libraries to cache-only for one block and restores them afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cache_only() -> Iterator[None]:
    """Within the block, `datasets` and `huggingface_hub` use their local caches only (a request raises instead of
    leaving the machine). Process-wide while it lasts: another thread's hub download waits for no one and fails."""
    import datasets.config
    import huggingface_hub.constants

    saved = (datasets.config.HF_HUB_OFFLINE, huggingface_hub.constants.HF_HUB_OFFLINE)
    datasets.config.HF_HUB_OFFLINE = huggingface_hub.constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        datasets.config.HF_HUB_OFFLINE, huggingface_hub.constants.HF_HUB_OFFLINE = saved
