"""What the receiving server's authentication says about a message: its SPF, DKIM and DMARC results
(Authentication-Results, Received-SPF), whether they vouch for the From domain the way DMARC would (relaxed,
organisational-domain alignment), and whether an authenticated mailing list is the envelope sender.

Only the topmost Authentication-Results counts: it is the one the receiving server wrote; any below it came with the
message and cost the sender nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from sv_env_phishing_detection.detectors.domains import address_domain, owned_by_brand, registrable_domain
from sv_env_phishing_detection.detectors.parsing import ParsedEmail

_AUTH_RESULT = re.compile(r"\b(spf|dkim|dmarc)\s*=\s*([a-z]+)([^;]{0,2000})", re.I)
_AUTH_PROPERTY = re.compile(r"\b(header\.from|header\.d|header\.i|smtp\.mailfrom)\s*=\s*([^\s;()]+)", re.I)
_AUTH_DOMAIN_PROPERTY = {"dmarc": "header.from", "dkim": "header.d", "spf": "smtp.mailfrom"}
AUTH_FAILURES: dict[str, frozenset[str]] = {
    "spf": frozenset({"fail", "softfail"}),
    "dkim": frozenset({"fail"}),
    "dmarc": frozenset({"fail"}),
}
"""The results of each method that say the message is not what it claims."""


@dataclass(frozen=True)
class AuthVerdict:
    """One result of the receiving server's Authentication-Results: the method, its result and the domain it
    authenticated (DMARC header.from, DKIM header.d or the domain of header.i, SPF smtp.mailfrom)."""

    method: str
    result: str
    domain: str | None


def auth_verdicts(results: str | None) -> tuple[AuthVerdict, ...]:
    """The SPF, DKIM and DMARC results of an Authentication-Results value, in order (a message may carry several
    DKIM signatures)."""
    verdicts = []
    for match in _AUTH_RESULT.finditer(results or ""):
        properties = {name.casefold(): value for name, value in _AUTH_PROPERTY.findall(match.group(3))}
        domain = properties.get(_AUTH_DOMAIN_PROPERTY[match.group(1).casefold()])
        if domain is None and match.group(1).casefold() == "dkim":
            domain = properties.get("header.i")
        domain = domain.rsplit("@", 1)[-1].strip(" .<>").casefold() if domain else None
        verdicts.append(AuthVerdict(match.group(1).casefold(), match.group(2).casefold(), domain or None))
    return tuple(verdicts)


def authentication_failures(parsed: ParsedEmail, verdicts: tuple[AuthVerdict, ...]) -> Iterator[str]:
    """The spans of the SPF/DKIM/DMARC failures the receiving server recorded ("spf=softfail", "received-spf: fail"),
    in message order; `verdicts` are auth_verdicts(parsed.auth_results)."""
    for verdict, match in zip(verdicts, _AUTH_RESULT.finditer(parsed.auth_results or ""), strict=True):
        if verdict.result in AUTH_FAILURES[verdict.method]:
            yield match.group(0)[: match.end(2) - match.start(0)]
    words = (parsed.received_spf or "").split(None, 1)
    if words and words[0].casefold() in AUTH_FAILURES["spf"]:
        yield f"received-spf: {words[0]}"


def dmarc_verdict(verdicts: tuple[AuthVerdict, ...]) -> AuthVerdict | None:
    """The first DMARC result, if the receiving server evaluated DMARC."""
    return next((verdict for verdict in verdicts if verdict.method == "dmarc"), None)


def authenticated_organizations(verdicts: tuple[AuthVerdict, ...]) -> frozenset[str]:
    """The organisational domains the receiving server saw a DKIM or SPF pass for."""
    return frozenset(
        registrable_domain(verdict.domain)
        for verdict in verdicts
        if verdict.method in ("dkim", "spf") and verdict.result == "pass" and verdict.domain is not None
    )


def vouches_for_from(verdicts: tuple[AuthVerdict, ...], from_domain: str | None) -> bool:
    """Whether authentication vouches for the From domain, as DMARC decides it (relaxed alignment).

    dmarc=pass vouches when its header.from is From's organisational domain (or unnamed); dmarc=fail never does.
    Without a DMARC verdict (none, a temporary error, or no dmarc= at all) the alignment DMARC would have checked
    is checked here: a DKIM pass (d=) or an SPF pass (mailfrom) for a domain of From's organisation.
    """
    if not from_domain:
        return False
    organization = registrable_domain(from_domain)
    dmarc = dmarc_verdict(verdicts)
    if dmarc is not None and dmarc.result == "pass":
        return dmarc.domain is None or registrable_domain(dmarc.domain) == organization
    if dmarc is not None and dmarc.result == "fail":
        return False
    return organization in authenticated_organizations(verdicts)


def relayed_by_list(parsed: ParsedEmail, verdicts: tuple[AuthVerdict, ...], from_domain: str | None) -> bool:
    """Mailing-list mail whose envelope sender is the list, as the receiving server authenticated it.

    A list relays an author's message with its own bounce address in Return-Path, so Return-Path differs from
    From. List-Id, List-Unsubscribe and Sender cost a phisher nothing, so they explain the mismatch only when all of:
    the message names a list (List-Id, or RFC 2369 List-* headers); the Return-Path's organisation is the list's
    (List-Id's or Sender's domain); the receiving server authenticated that organisation (a DKIM or SPF pass); and
    DMARC did not fail for From. A brand's own domain is never explained this way: brands send their own mail and
    authenticate it, so only DMARC can vouch for them.
    """
    return_domain = address_domain(parsed.return_path)
    if parsed.list_id is None or not from_domain or not return_domain or owned_by_brand(from_domain):
        return False
    dmarc = dmarc_verdict(verdicts)
    if dmarc is not None and dmarc.result == "fail":
        return False
    list_domains = [domain for domain in (parsed.list_id, address_domain(parsed.sender_address)) if domain]
    organization = registrable_domain(return_domain)
    return organization in {registrable_domain(domain) for domain in list_domains} and (
        organization in authenticated_organizations(verdicts)
    )
