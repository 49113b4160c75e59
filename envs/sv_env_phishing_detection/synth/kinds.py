"""The generators the recipe knows (five phishing campaigns, three benign kinds), the obfuscations each takes, the
indicators each promises and the scenario it records; `check` holds a generated message to those promises."""

from __future__ import annotations

from sv_env_phishing_detection import detectors
from sv_env_phishing_detection.baseline import PHISHING_THRESHOLD

CAMPAIGNS: tuple[str, ...] = ("credential_harvest", "invoice_fraud", "delivery_notice", "mfa_fatigue", "gift_card")
BENIGN_KINDS: tuple[str, ...] = ("order_confirmation", "shipping_update", "account_notice")
OBFUSCATIONS: tuple[str, ...] = ("none", "homoglyph", "zero_width", "shortener", "html_only")
ALLOWED_OBFUSCATIONS: dict[str, tuple[str, ...]] = {
    "credential_harvest": OBFUSCATIONS,
    "delivery_notice": OBFUSCATIONS,
    "mfa_fatigue": OBFUSCATIONS,
    "invoice_fraud": ("none", "zero_width"),
    "gift_card": ("none", "zero_width"),
    **dict.fromkeys(BENIGN_KINDS, ("none",)),
}
CAMPAIGN_INDICATORS: dict[str, frozenset[str]] = {
    "credential_harvest": frozenset({"credential_request"}),
    "invoice_fraud": frozenset({"payment_change", "reply_to_mismatch"}),
    "delivery_notice": frozenset({"urgency"}),
    "mfa_fatigue": frozenset({"credential_request"}),
    "gift_card": frozenset({"gift_card_request"}),
}
OBFUSCATION_INDICATORS: dict[str, frozenset[str]] = {
    "none": frozenset(),
    "homoglyph": frozenset({"lookalike_domain"}),
    "zero_width": frozenset({"zero_width_obfuscation"}),
    "shortener": frozenset({"url_shortener"}),
    "html_only": frozenset({"link_mismatch"}),
}
SCENARIO_OF: dict[str, str] = {
    **{campaign: campaign for campaign in CAMPAIGNS},
    **dict.fromkeys(BENIGN_KINDS, "transactional"),
}


def check(generator: str, obfuscation: str, raw: str, *, seed: int) -> None:
    """The detectors' check of a generated message: a phish fires the indicators its campaign and obfuscation
    promise; benign mail stays below the rules baseline's phishing threshold. Raises on a generator bug."""
    analysis = detectors.analyze(raw)
    if generator in CAMPAIGNS:
        missing = (CAMPAIGN_INDICATORS[generator] | OBFUSCATION_INDICATORS[obfuscation]) - analysis.types
        if missing:
            raise RuntimeError(
                f"{generator}/{obfuscation} seed {seed}: detectors missed {sorted(missing)} "
                f"(found {sorted(analysis.types)})"
            )
    elif analysis.suspicion >= PHISHING_THRESHOLD:
        raise RuntimeError(
            f"benign {generator} seed {seed} looks like phishing "
            f"(suspicion {analysis.suspicion}, {sorted(analysis.types)})"
        )
