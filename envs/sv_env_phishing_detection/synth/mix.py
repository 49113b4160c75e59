"""The synthetic set: `generate` plans a balanced mix (labels, campaigns, languages, obfuscations), renders it,
adds zero-width variants of base phish when asked, and checks that no two messages are the same."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import polars as pl

from sv_env_phishing_detection.schema import EMAIL_COLUMNS, EMAIL_SCHEMA, LANGUAGES, validate_emails
from sv_env_phishing_detection.synth.kinds import ALLOWED_OBFUSCATIONS, BENIGN_KINDS, CAMPAIGNS
from sv_env_phishing_detection.synth.messages import frame_from_rows, message_row
from sv_env_phishing_detection.synth.perturb import perturb
from sv_shared.data.seeds import MAX_SEED, check_seed
from sv_shared.data.splits import allocate_counts


def _plan(kinds: Sequence[str], quota: int, rng: np.random.Generator) -> list[tuple[str, str, str, int]]:
    """(generator, language, obfuscation, seed) for `quota` messages spread evenly over kinds, languages and each
    kind's obfuscations (largest remainder), each with its own seed from rng."""
    plan = []
    counts = allocate_counts(quota, dict.fromkeys(kinds, 1 / len(kinds)))
    for kind in kinds:
        obfuscations = ALLOWED_OBFUSCATIONS[kind]
        for index in range(counts[kind]):
            language = LANGUAGES[len(plan) % len(LANGUAGES)]  # cycled over the whole plan: totals balance too
            obfuscation = obfuscations[(index // len(LANGUAGES)) % len(obfuscations)]
            plan.append((kind, language, obfuscation, int(rng.integers(0, MAX_SEED))))
    return plan


def generate(
    n: int,
    seed: int,
    base: pl.DataFrame | None = None,
    *,
    phishing_share: float = 0.5,
    perturb_share: float = 0.0,
) -> pl.DataFrame:
    """n synthetic emails with exactly round(n * phishing_share) phishing rows (halves round up).

    Phishing rows come from the five campaigns in equal shares (languages and obfuscations cycled within each), of
    which round(share * perturb_share) are instead zero-width variants of base phishing rows when base has any;
    legitimate rows from the benign kinds in equal shares. The same arguments give the same frame.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    check_seed(seed)
    for name, share in (("phishing_share", phishing_share), ("perturb_share", perturb_share)):
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {share}")
    rng = np.random.default_rng(seed)
    n_phishing = math.floor(n * phishing_share + 0.5)
    perturbed = pl.DataFrame(schema=EMAIL_SCHEMA)
    if base is not None and perturb_share > 0 and n_phishing:
        wanted = math.floor(n_phishing * perturb_share + 0.5)
        perturbed = perturb(base, int(rng.integers(0, MAX_SEED))).head(wanted)
    plan = _plan(CAMPAIGNS, n_phishing - perturbed.height, rng) + _plan(BENIGN_KINDS, n - n_phishing, rng)
    generated = frame_from_rows([message_row(*entry) for entry in plan])
    combined = pl.concat([perturbed.select(EMAIL_COLUMNS), generated]) if perturbed.height else generated
    if combined["content_hash"].is_duplicated().any():
        raise RuntimeError("generate produced duplicate messages; seeds collided")
    return validate_emails(combined)
