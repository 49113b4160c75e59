"""Synthetic E4 emails, following the seed's recipe: campaign templates (credential harvest, invoice/BEC fraud,
delivery notice, MFA fatigue, gift cards) × localization (en, de, fr, es) × obfuscation (homoglyph domains,
zero-width characters, URL shorteners, HTML-only links with a misleading text), plus benign transactional mail.

Every message is a complete RFC 5322 / MIME text written by `compose` (headers with Received, Authentication-Results
and DKIM-Signature lines, multipart/alternative bodies in quoted-printable, base64 attachments), and every one is
checked by the detectors before it is returned: a phish must fire its campaign's and its obfuscation's indicators, a
benign message must stay below the rules' phishing threshold. A failed check is a generator bug and raises.

Every generated row records how it was made: `generator` (campaign or benign kind), `generator_params` (canonical
JSON: language, obfuscation, brand) and `generator_seed`; `render(generator, seed, language, obfuscation)` returns
the same message again. generate() as a whole is a pure function of its arguments (numpy.random.default_rng).

One module per job: `compose` (writing a message), `material` (localized people, brands and domains), `templates`
(campaign and benign texts), `kinds` (the generators and the indicators they promise), `obfuscation` (homoglyphs,
zero-width characters), `messages` (one message and its row), `perturb` (zero-width variants of real phish) and
`mix` (the balanced synthetic set). This package re-exports what callers use.
"""

from sv_env_phishing_detection.synth.compose import Mail, auth_results, compose
from sv_env_phishing_detection.synth.kinds import (
    ALLOWED_OBFUSCATIONS,
    BENIGN_KINDS,
    CAMPAIGN_INDICATORS,
    CAMPAIGNS,
    OBFUSCATION_INDICATORS,
    OBFUSCATIONS,
    SCENARIO_OF,
    check,
)
from sv_env_phishing_detection.synth.material import (
    BRAND_NAMES,
    CARRIERS,
    COMPROMISED_SITES,
    CREDENTIAL_BRANDS,
    FREEMAIL,
    MFA_BRANDS,
    MONTHS,
    PEOPLE,
    PHISH_TLDS,
    PHISH_WORDS,
    RECIPIENT_DOMAINS,
    SHOPS,
    SHORTENERS,
    VENDORS,
    ascii_fold,
    local_date,
    money,
)
from sv_env_phishing_detection.synth.messages import EPOCH_2024, frame_from_rows, render, url_lure
from sv_env_phishing_detection.synth.mix import generate
from sv_env_phishing_detection.synth.obfuscation import homoglyph_domain, insert_zero_width
from sv_env_phishing_detection.synth.perturb import perturb
from sv_env_phishing_detection.synth.templates import FOOTERS, TEMPLATES
from sv_shared.data.seeds import MAX_SEED

__all__ = [
    "ALLOWED_OBFUSCATIONS",
    "BENIGN_KINDS",
    "BRAND_NAMES",
    "CAMPAIGNS",
    "CAMPAIGN_INDICATORS",
    "CARRIERS",
    "COMPROMISED_SITES",
    "CREDENTIAL_BRANDS",
    "EPOCH_2024",
    "FOOTERS",
    "FREEMAIL",
    "MAX_SEED",
    "MFA_BRANDS",
    "MONTHS",
    "OBFUSCATIONS",
    "OBFUSCATION_INDICATORS",
    "PEOPLE",
    "PHISH_TLDS",
    "PHISH_WORDS",
    "RECIPIENT_DOMAINS",
    "SCENARIO_OF",
    "SHOPS",
    "SHORTENERS",
    "TEMPLATES",
    "VENDORS",
    "Mail",
    "ascii_fold",
    "auth_results",
    "check",
    "compose",
    "frame_from_rows",
    "generate",
    "homoglyph_domain",
    "insert_zero_width",
    "local_date",
    "money",
    "perturb",
    "render",
    "url_lure",
]
