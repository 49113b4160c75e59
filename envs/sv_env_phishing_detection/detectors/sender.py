"""Sender evidence: whether the From address is forged (sender_spoofing), weighed rather than decided by one header,
and the Reply-To and display-name indicators.

A Return-Path that differs from From is weak evidence on its own. Bulk senders bounce to their mail service (VERP),
lists to themselves, forwarders rewrite it (SRS), and mail stored without its receiver's verdicts says nothing more;
a phisher, for their part, can set Return-Path to match a forged From at no cost. So each clue below weighs
SPOOFING_WEIGHT or less, and From counts as forged only when the clues together reach it:

- return_path_mismatch (1): the envelope sender's organisation is not From's, and no authenticated mailing-list relay
  or SRS-rewriting forwarder of From's organisation explains it;
- unaligned_authentication (1): the receiving server authenticated (DKIM or SPF pass) other organisations, none of
  them From's, and nothing vouches for From;
- authentication_failed (1): the receiving server recorded an SPF, DKIM or DMARC failure;
- unauthenticated_brand (1): From is a brand's own domain (brands authenticate their mail) and nothing vouches for it;
- conflicting_from (2): the headers disagree about who From is: several From fields naming different organisations,
  or a DMARC verdict the receiving server reached for another From domain than the one shown.

When authentication vouches for From (DMARC pass, or without a DMARC verdict an aligned DKIM/SPF pass) only
conflicting_from is weighed: the receiver checked the From it judged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.utils import parseaddr

from sv_env_phishing_detection.detectors.authentication import (
    AuthVerdict,
    authenticated_organizations,
    authentication_failures,
    dmarc_verdict,
    relayed_by_list,
)
from sv_env_phishing_detection.detectors.domains import (
    BRAND_NAME,
    BRANDS_BY_NAME,
    address_domain,
    owned_by_brand,
    registrable_domain,
)
from sv_env_phishing_detection.detectors.parsing import MAX_ADDRESS_CHARS, ParsedEmail
from sv_env_phishing_detection.detectors.text import Found, normalize

SPOOFING_WEIGHT = 2
"""The weight of clues at which From counts as forged: two weak clues, or one clue a phisher cannot explain away."""
CLUE_WEIGHTS: dict[str, int] = {
    "return_path_mismatch": 1,
    "unaligned_authentication": 1,
    "authentication_failed": 1,
    "unauthenticated_brand": 1,
    "conflicting_from": 2,
}
"""How much each clue says that From is forged (see the module docstring)."""

_SRS_LOCAL = re.compile(r"srs[01][=+-]", re.I)
_DOMAIN = re.compile(r"[a-z0-9-]+(?:\.[a-z0-9-]+)+", re.I)


@dataclass(frozen=True)
class SenderClue:
    """One clue that From is forged: its name (a CLUE_WEIGHTS key), its weight and what in the message shows it."""

    name: str
    weight: int
    detail: str


@dataclass(frozen=True)
class SenderVerdict:
    """The weighed sender evidence of one message: the clues found, the spans that show a forgery (Return-Path
    and/or From; empty when the clues stay below SPOOFING_WEIGHT) and why a Return-Path that differs from From was
    not held against the sender (None when it was, or when the two agree)."""

    clues: tuple[SenderClue, ...]
    anchors: tuple[str, ...]
    explained_mismatch: str | None = None

    @property
    def weight(self) -> int:
        return sum(clue.weight for clue in self.clues)

    @property
    def spoofed(self) -> bool:
        return self.weight >= SPOOFING_WEIGHT


def srs_original_domain(address: str | None) -> str | None:
    """The original envelope domain a forwarder encoded with the Sender Rewriting Scheme
    (SRS0=hash=tt=example.com=user@forwarder.net, SRS1=hash=forwarder==hash=tt=example.com=user@...), else None."""
    if not address or "@" not in address:
        return None
    local = address.rsplit("@", 1)[0]
    if not _SRS_LOCAL.match(local):
        return None
    fields = local.split("=")
    candidate = fields[-2] if len(fields) >= 4 else ""
    return candidate.casefold() if _DOMAIN.fullmatch(candidate) else None


def _mismatch_explanation(
    parsed: ParsedEmail, verdicts: tuple[AuthVerdict, ...], from_domain: str, from_org: str
) -> str | None:
    """Why the envelope sender may differ from From without forgery, or None.

    An SRS address costs a phisher no more than a Return-Path that simply matches From, so accepting it opens no
    hole a matching Return-Path does not already open; it only stops forwarded mail from counting against its author.
    """
    if relayed_by_list(parsed, verdicts, from_domain):
        return "an authenticated mailing list relays it"
    original = srs_original_domain(parsed.return_path)
    if original is not None and registrable_domain(original) == from_org:
        return f"a forwarder rewrote the envelope of {original} (SRS)"
    return None


def _conflicting_from(parsed: ParsedEmail, verdicts: tuple[AuthVerdict, ...], from_org: str) -> str | None:
    """What makes the From a reader sees differ from the From the receiving server judged, or None."""
    for value in [value for name, value in parsed.headers if name == "from"][1:]:
        other = address_domain(parseaddr(value[:MAX_ADDRESS_CHARS])[1])
        if other and registrable_domain(other) != from_org:
            return f"a second From header names {other}"
    dmarc = dmarc_verdict(verdicts)
    if dmarc is not None and dmarc.domain and registrable_domain(dmarc.domain) != from_org:
        return f"DMARC was evaluated for header.from={dmarc.domain}"
    return None


def weigh_sender(
    parsed: ParsedEmail, verdicts: tuple[AuthVerdict, ...], from_domain: str | None, *, vouched: bool
) -> SenderVerdict:
    """The sender evidence of a parsed message (see the module docstring); `verdicts` are its auth_verdicts and
    `vouched` whether authentication vouches for From (vouches_for_from; False for a domain imitating a brand)."""
    if not from_domain:
        return SenderVerdict((), ())
    from_org = registrable_domain(from_domain)
    found: list[tuple[str, str]] = []
    conflict = _conflicting_from(parsed, verdicts, from_org)
    if conflict is not None:
        found.append(("conflicting_from", conflict))
    explained = None
    if not vouched:
        return_domain = address_domain(parsed.return_path)
        if return_domain and registrable_domain(return_domain) != from_org:
            explained = _mismatch_explanation(parsed, verdicts, from_domain, from_org)
            if explained is None:
                found.append(("return_path_mismatch", f"Return-Path {return_domain}, From {from_domain}"))
        authenticated = authenticated_organizations(verdicts)
        if authenticated and from_org not in authenticated:
            found.append(("unaligned_authentication", f"only {', '.join(sorted(authenticated))} authenticated"))
        failures = list(authentication_failures(parsed, verdicts))
        if failures:
            found.append(("authentication_failed", ", ".join(failures)))
        if owned_by_brand(from_domain):
            found.append(("unauthenticated_brand", f"{from_domain} belongs to a brand"))
    clues = tuple(SenderClue(name, CLUE_WEIGHTS[name], detail) for name, detail in found)
    anchors: list[str] = []
    if sum(clue.weight for clue in clues) >= SPOOFING_WEIGHT:
        names = {clue.name for clue in clues}
        if "return_path_mismatch" in names and parsed.return_path:
            anchors.append(parsed.return_path)
        if names - {"return_path_mismatch"}:
            anchors.append(parsed.from_address or from_domain)
    return SenderVerdict(clues, tuple(anchors), explained)


def sender_cues(
    parsed: ParsedEmail, verdicts: tuple[AuthVerdict, ...], from_domain: str | None, aligned_pass: bool, found: Found
) -> None:
    """Record sender_spoofing (weigh_sender), reply_to_mismatch and display_name_mismatch."""
    for anchor in weigh_sender(parsed, verdicts, from_domain, vouched=aligned_pass).anchors:
        found.add("sender_spoofing", anchor)
    from_org = registrable_domain(from_domain) if from_domain else None
    reply_domain = address_domain(parsed.reply_to)
    if from_org and reply_domain and registrable_domain(reply_domain) != from_org:
        found.add("reply_to_mismatch", parsed.reply_to or reply_domain)
    if parsed.from_name and from_domain:
        display = normalize(parsed.from_name)
        embedded = re.search(r"[\w.+-]+@([\w-]+(?:\.[\w-]+)+)", display)
        if embedded and registrable_domain(embedded.group(1)) != from_org:
            found.add("display_name_mismatch", embedded.group(0))
        for match in BRAND_NAME.finditer(display):
            if all(from_org not in brand.domains for brand in BRANDS_BY_NAME[match.group(0)]):
                # Brand names can be shorter than a quotable span ("DHL"): the whole From value is an anchor too.
                found.add("display_name_mismatch", parsed.from_name)
                found.add("display_name_mismatch", next(value for name, value in parsed.headers if name == "from"))
                break
