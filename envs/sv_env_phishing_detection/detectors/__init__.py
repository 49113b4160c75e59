"""Safe email parsing and the rule-based phishing detectors (the seed's "heuristics and rule-based detectors").

`analyze(raw)` parses one RFC 5322 / MIME message (the MIME tree is split here; headers, parameters, RFC 2047/2231
words, transfer encodings and charsets are read with the stdlib `email` package, compat32 policy) and runs one
detector per evidence type. It never raises and never touches the network: no DNS, no URL fetching, no script
execution. HTML is read with bounded regular expressions (script, style and template bodies are removed, not
interpreted), text parts are decoded under a size cap, attachments are only named and sized, never decoded. Whatever
was wrong with a message (malformed MIME, unknown charsets, base64 garbage, oversized parts, scripts) is reported in
`Analysis.warnings`, one clear line per problem, and the rest of the message is still analysed.

Every indicator carries anchors: normalized spans that occur in the message, so a model's quote can be checked
against them (grounding) and the rules baseline can quote them.

One module per job: `text` (normalization, anchors), `mime` (the MIME tree), `parsing` (ParsedEmail), `domains`
(brands, registrable domains, look-alikes), `authentication` (SPF/DKIM/DMARC results and alignment), `sender`
(weighed sender evidence), `urls` (link evidence), `content` (lexicons, hidden characters, attachments) and
`analysis` (the verdict on a message). This package re-exports what callers use.
"""

from sv_env_phishing_detection.detectors.analysis import (
    AUTH_PASS_FACTOR,
    INDICATOR_WEIGHTS,
    Analysis,
    analyze,
    is_mixed,
    item_fields,
    language_of,
    suspicion_score,
)
from sv_env_phishing_detection.detectors.authentication import (
    AuthVerdict,
    auth_verdicts,
    authentication_failures,
    relayed_by_list,
    vouches_for_from,
)
from sv_env_phishing_detection.detectors.content import (
    DANGEROUS_EXTENSIONS,
    DECOY_EXTENSIONS,
    attachment_risk,
    guess_language,
)
from sv_env_phishing_detection.detectors.domains import (
    BRAND_DOMAINS,
    BRANDS,
    SHORTENERS,
    TWO_LEVEL_SUFFIXES,
    Brand,
    Lookalike,
    is_ip_host,
    lookalike,
    registrable_domain,
    skeleton,
)
from sv_env_phishing_detection.detectors.mime import (
    MAX_DEPTH,
    MAX_PART_CHARS,
    MAX_PARTS,
    decode_text,
    split_entity,
    split_multipart,
)
from sv_env_phishing_detection.detectors.parsing import (
    MAX_ADDRESS_CHARS,
    Attachment,
    Link,
    ParsedEmail,
    href_host,
    parse_email,
)
from sv_env_phishing_detection.detectors.sender import (
    CLUE_WEIGHTS,
    SPOOFING_WEIGHT,
    SenderClue,
    SenderVerdict,
    srs_original_domain,
    weigh_sender,
)
from sv_env_phishing_detection.detectors.text import (
    MAX_ANCHORS,
    MAX_QUOTE_CHARS,
    MIN_QUOTE_CHARS,
    SEGMENT_SEPARATOR,
    ZERO_WIDTH,
    normalize,
)
from sv_env_phishing_detection.lexicons import LEXICONS

__all__ = [
    "AUTH_PASS_FACTOR",
    "BRANDS",
    "BRAND_DOMAINS",
    "CLUE_WEIGHTS",
    "DANGEROUS_EXTENSIONS",
    "DECOY_EXTENSIONS",
    "INDICATOR_WEIGHTS",
    "LEXICONS",
    "MAX_ADDRESS_CHARS",
    "MAX_ANCHORS",
    "MAX_DEPTH",
    "MAX_PARTS",
    "MAX_PART_CHARS",
    "MAX_QUOTE_CHARS",
    "MIN_QUOTE_CHARS",
    "SEGMENT_SEPARATOR",
    "SHORTENERS",
    "SPOOFING_WEIGHT",
    "TWO_LEVEL_SUFFIXES",
    "ZERO_WIDTH",
    "Analysis",
    "Attachment",
    "AuthVerdict",
    "Brand",
    "Link",
    "Lookalike",
    "ParsedEmail",
    "SenderClue",
    "SenderVerdict",
    "analyze",
    "attachment_risk",
    "auth_verdicts",
    "authentication_failures",
    "decode_text",
    "guess_language",
    "href_host",
    "is_ip_host",
    "is_mixed",
    "item_fields",
    "language_of",
    "lookalike",
    "normalize",
    "parse_email",
    "registrable_domain",
    "relayed_by_list",
    "skeleton",
    "split_entity",
    "split_multipart",
    "srs_original_domain",
    "suspicion_score",
    "vouches_for_from",
    "weigh_sender",
]
