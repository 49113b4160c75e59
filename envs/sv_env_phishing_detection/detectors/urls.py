"""URL evidence: where the message's links really go (IP or punycode hosts, shorteners, look-alike domains) and
link text that shows one domain while the link goes to another."""

from __future__ import annotations

import re

from sv_env_phishing_detection.detectors.domains import SHORTENERS, is_ip_host, lookalike, registrable_domain
from sv_env_phishing_detection.detectors.parsing import ParsedEmail
from sv_env_phishing_detection.detectors.text import MAX_QUOTE_CHARS, Found, normalize

_ANCHOR_DOMAIN = re.compile(r"^(?:https?://)?(?:www\.)?((?:[\w-]+\.)+[^\W\d_]{2,})(?:[/:?#]\S*)?$")
"""Link text that reads as a URL or a bare domain (the domain a reader believes they are going to)."""


def url_cues(parsed: ParsedEmail, found: Found) -> None:
    """Record the link indicators: ip_or_punycode_url, url_shortener, lookalike_domain and link_mismatch."""
    for link in parsed.links:
        host = link.host
        if host is None:
            continue
        shown = normalize(host) if normalize(host) in normalize(link.href) else normalize(link.href)
        if is_ip_host(host) or "xn--" in host or not host.isascii():
            found.add("ip_or_punycode_url", shown)
        if host in SHORTENERS or registrable_domain(host) in SHORTENERS:
            found.add("url_shortener", shown)
        if lookalike(host):
            found.add("lookalike_domain", shown)
        if link.text and len(link.text) <= MAX_QUOTE_CHARS:  # a URL shown as link text is short
            match = _ANCHOR_DOMAIN.match(link.text.strip().casefold())
            if match and not is_ip_host(host):
                shown_domain = registrable_domain(match.group(1))
                if shown_domain != registrable_domain(host.casefold()):
                    found.add("link_mismatch", link.text)
                    found.add("link_mismatch", shown)
            elif match:
                found.add("link_mismatch", link.text)
