"""Domains as the detectors see them: organisational (registrable) domains, the brands phishers imitate, and
look-alikes of those brands' domains (homoglyphs, typos, combo-squats), all decided offline."""

from __future__ import annotations

import contextlib
import ipaddress
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

TWO_LEVEL_SUFFIXES = frozenset(
    {
        "co.uk", "org.uk", "ac.uk", "gov.uk", "me.uk", "com.au", "net.au", "org.au", "co.nz", "co.jp", "ne.jp",
        "or.jp", "com.br", "com.mx", "com.ar", "com.tr", "co.in", "co.za", "com.cn", "com.hk", "com.sg", "co.kr",
        "gouv.fr", "asso.fr", "gob.es", "com.es", "org.es", "nom.es", "com.pl", "co.il", "com.co",
    }
)  # fmt: skip
"""Public suffixes of two labels the registrable-domain rule knows (no public-suffix list ships offline)."""


@dataclass(frozen=True)
class Brand:
    """A brand phishers imitate: display-name words, the registrable domains it owns, and whether its name is
    distinctive enough that finding it inside another domain ("paypal-secure-login.com") is a look-alike."""

    key: str
    names: tuple[str, ...]
    domains: tuple[str, ...]
    distinctive: bool = True


BRANDS: tuple[Brand, ...] = (
    Brand("paypal", ("paypal",), ("paypal.com", "paypal.de", "paypal.fr", "paypal.es", "paypal-community.com")),
    Brand(
        "microsoft",
        ("microsoft", "office 365", "microsoft 365", "outlook", "onedrive", "sharepoint"),
        (
            "microsoft.com",
            "office.com",
            "office365.com",
            "outlook.com",
            "live.com",
            "microsoftonline.com",
            "sharepoint.com",
            "onedrive.com",
            "hotmail.com",
        ),
    ),
    Brand("apple", ("apple", "icloud", "itunes"), ("apple.com", "icloud.com", "me.com"), distinctive=False),
    Brand(
        "amazon",
        ("amazon", "prime video"),
        (
            "amazon.com",
            "amazon.de",
            "amazon.fr",
            "amazon.es",
            "amazon.co.uk",
            "amazon.it",
            "amazonses.com",
            "amazonaws.com",
            "primevideo.com",
        ),
    ),
    Brand("google", ("google", "gmail"), ("google.com", "gmail.com", "googlemail.com", "youtube.com")),
    Brand("netflix", ("netflix",), ("netflix.com",)),
    Brand("dropbox", ("dropbox",), ("dropbox.com", "dropboxmail.com")),
    Brand("docusign", ("docusign",), ("docusign.com", "docusign.net")),
    Brand("adobe", ("adobe",), ("adobe.com",)),
    Brand("linkedin", ("linkedin",), ("linkedin.com",)),
    Brand("facebook", ("facebook", "meta"), ("facebook.com", "facebookmail.com", "meta.com")),
    Brand("instagram", ("instagram",), ("instagram.com",)),
    Brand("wetransfer", ("wetransfer",), ("wetransfer.com",)),
    Brand("dhl", ("dhl",), ("dhl.com", "dhl.de", "dhl.fr", "dhl.es")),
    Brand("ups", ("ups",), ("ups.com",)),
    Brand("fedex", ("fedex",), ("fedex.com",)),
    Brand("dpd", ("dpd",), ("dpd.com", "dpd.de", "dpd.fr")),
    Brand("deutschepost", ("deutsche post",), ("deutschepost.de",)),
    Brand("laposte", ("la poste", "colissimo"), ("laposte.fr", "laposte.net", "colissimo.fr")),
    Brand("correos", ("correos",), ("correos.es",)),
    Brand("chase", ("chase",), ("chase.com",), distinctive=False),
    Brand("wellsfargo", ("wells fargo",), ("wellsfargo.com",)),
    Brand("bankofamerica", ("bank of america",), ("bankofamerica.com",)),
    Brand("sparkasse", ("sparkasse",), ("sparkasse.de",)),
    Brand("deutschebank", ("deutsche bank",), ("deutsche-bank.de", "db.com")),
    Brand("commerzbank", ("commerzbank",), ("commerzbank.de",)),
    Brand("postbank", ("postbank",), ("postbank.de",)),
    Brand("ing", ("ing",), ("ing.de", "ing.com", "ing.es", "ing.fr"), distinctive=False),
    Brand("santander", ("santander",), ("santander.com", "bancosantander.es", "santander.de")),
    Brand("bbva", ("bbva",), ("bbva.es", "bbva.com")),
    Brand("caixabank", ("caixabank",), ("caixabank.es", "caixabank.com")),
    Brand("societegenerale", ("société générale", "societe generale"), ("societegenerale.fr",)),
    Brand("creditagricole", ("crédit agricole", "credit agricole"), ("credit-agricole.fr",)),
    Brand("bnpparibas", ("bnp paribas",), ("bnpparibas.com",)),
    Brand("ameli", ("ameli", "assurance maladie"), ("ameli.fr",)),
    Brand("impots", ("impots.gouv", "finances publiques", "dgfip"), ("impots.gouv.fr",)),
    Brand("hmrc", ("hmrc", "hm revenue"), ("hmrc.gov.uk",)),
    Brand("agenciatributaria", ("agencia tributaria",), ("agenciatributaria.gob.es", "agenciatributaria.es")),
    Brand("elster", ("elster",), ("elster.de",)),
    Brand("orange", ("orange",), ("orange.fr",), distinctive=False),
    Brand("ebay", ("ebay",), ("ebay.com", "ebay.de", "ebay.fr", "ebay.es")),
    Brand("booking", ("booking.com",), ("booking.com",)),
    Brand("airbnb", ("airbnb",), ("airbnb.com",)),
    Brand("github", ("github",), ("github.com",)),
    Brand("okta", ("okta",), ("okta.com",)),
    Brand("coinbase", ("coinbase",), ("coinbase.com",)),
    Brand("steam", ("steam",), ("steampowered.com", "steamcommunity.com"), distinctive=False),
    Brand("spotify", ("spotify",), ("spotify.com",)),
    Brand("vodafone", ("vodafone",), ("vodafone.com", "vodafone.de", "vodafone.es")),
    Brand("telekom", ("telekom",), ("telekom.de",)),
    Brand("movistar", ("movistar",), ("movistar.es",)),
)
BRAND_DOMAINS: dict[str, Brand] = {domain: brand for brand in BRANDS for domain in brand.domains}
BRANDS_BY_NAME: dict[str, tuple[Brand, ...]] = {
    name: tuple(brand for brand in BRANDS if name in brand.names) for brand in BRANDS for name in brand.names
}
"""The brands each display-name word belongs to."""
BRAND_NAME = re.compile(
    r"(?<!\w)(?:" + "|".join(re.escape(name) for name in sorted(BRANDS_BY_NAME, key=len, reverse=True)) + r")(?!\w)"
)
"""A brand's display-name word as a whole word of normalized text."""

SHORTENERS = frozenset(
    {
        "bit.ly", "bitly.com", "tinyurl.com", "t.co", "goo.gl", "ow.ly", "is.gd", "buff.ly", "rebrand.ly",
        "cutt.ly", "shorturl.at", "rb.gy", "t.ly", "tiny.cc", "s.id", "bit.do", "lnkd.in", "v.gd", "qrco.de",
        "tiny.one", "shorturl.com",
    }
)  # fmt: skip

# Characters that render like Latin letters (Unicode confusables that phishers use), then digit and letter-pair
# substitutions. NFKC first folds fullwidth and mathematical letters.
_CONFUSABLES = str.maketrans(
    {
        "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j", "ԁ": "d",
        "ѕ": "s", "һ": "h", "ӏ": "l", "ԛ": "q", "ԝ": "w", "ɡ": "g", "ɑ": "a", "ı": "i", "ł": "l", "ο": "o",
        "α": "a", "ν": "v", "ρ": "p", "ι": "i", "κ": "k", "τ": "t", "υ": "u", "χ": "x", "0": "o", "1": "l",
        "3": "e", "5": "s", "$": "s", "@": "a",
    }
)  # fmt: skip
_PAIRS = (("rn", "m"), ("vv", "w"), ("cl", "d"))


def skeleton(label: str) -> str:
    """What a domain label looks like to a reader: confusables, look-alike digits and letter pairs folded."""
    folded = unicodedata.normalize("NFKC", label).casefold().translate(_CONFUSABLES)
    for pair, single in _PAIRS:
        folded = folded.replace(pair, single)
    return folded


def registrable_domain(host: str) -> str:
    """The organization's domain (eTLD+1) under the built-in suffix rule; IP literals are their own domain."""
    labels = host.rstrip(".").split(".")
    if len(labels) <= 2:
        return host
    keep = 3 if ".".join(labels[-2:]) in TWO_LEVEL_SUFFIXES else 2
    return ".".join(labels[-keep:])


def _public_suffix(domain: str) -> str:
    labels = domain.split(".")
    return ".".join(labels[-2:]) if ".".join(labels[-2:]) in TWO_LEVEL_SUFFIXES else labels[-1]


def _label(domain: str) -> str:
    """The registrable domain without its public suffix: "paypal" for paypal.co.uk."""
    suffix = _public_suffix(domain)
    return domain[: -len(suffix) - 1] if domain.endswith("." + suffix) else domain


def _unicode_host(host: str) -> str:
    """A host with its punycode labels decoded (stdlib IDNA codec, offline); undecodable labels stay as they are."""
    if "xn--" not in host:
        return host
    labels = []
    for label in host.split("."):
        if label.startswith("xn--"):
            with contextlib.suppress(UnicodeError):  # not valid punycode: keep the label as written
                label = label.encode("ascii").decode("idna")
        labels.append(label)
    return ".".join(labels)


def _within_distance_one(a: str, b: str) -> bool:
    """True when a and b differ by exactly one edit (insert, delete, substitute or swap adjacent characters)."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diffs = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        if len(diffs) == 1:
            return True
        return (
            len(diffs) == 2 and diffs[1] == diffs[0] + 1 and a[diffs[0]] == b[diffs[1]] and a[diffs[1]] == b[diffs[0]]
        )
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


_COMMON_LABELS = frozenset({"office", "live", "outlook", "orange", "chase", "steam", "meta", "booking"})
"""Brand labels that are everyday words: only an exact homoglyph of them counts, not a typo or a token."""
_BRAND_LABELS: tuple[tuple[str, str, Brand], ...] = tuple(
    (skeleton(_label(domain)), domain, brand) for brand in BRANDS for domain in brand.domains
)


@dataclass(frozen=True)
class Lookalike:
    """A domain imitating a brand domain: how (homoglyph, typo, combo) and how closely (0..1)."""

    brand_domain: str
    kind: str
    score: float


def owned_by_brand(host: str) -> bool:
    """Whether the host belongs to a brand's own registrable domain."""
    return registrable_domain(host) in BRAND_DOMAINS


@lru_cache(maxsize=65_536)
def lookalike(host: str) -> Lookalike | None:
    """The brand domain `host` imitates, if any; a brand's own domains and their subdomains imitate nothing.

    - homoglyph (1.0): the registrable label reads exactly like a brand's (paypa1, rnicrosoft, Cyrillic а);
    - typo (0.9): one edit away from a brand label, both at least 5 characters (paypall, amazom; not mail.com);
    - combo (0.8): a distinctive brand name is a whole hyphen/dot token of another host (paypal-secure.com,
      www.paypal.com.account-check.net).
    """
    host = _unicode_host(host.casefold().rstrip("."))
    if not host or is_ip_host(host) or owned_by_brand(host):
        return None
    domain = registrable_domain(host)
    label = skeleton(_label(domain))
    for brand_label, brand_domain, _ in _BRAND_LABELS:
        if label == brand_label:
            return Lookalike(brand_domain, "homoglyph", 1.0)
    for brand_label, brand_domain, _ in _BRAND_LABELS:
        if (
            min(len(label), len(brand_label)) >= 5
            and brand_label not in _COMMON_LABELS
            and _within_distance_one(label, brand_label)
        ):
            return Lookalike(brand_domain, "typo", 0.9)
    tokens = f"-{skeleton(host).replace('.', '-')}-"
    for brand_label, brand_domain, brand in _BRAND_LABELS:
        if (
            brand.distinctive
            and brand_label not in _COMMON_LABELS
            and len(brand_label) >= 3
            and f"-{brand_label}-" in tokens
        ):
            return Lookalike(brand_domain, "combo", 0.8)
    return None


def is_ip_host(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return host.isdigit() or bool(re.fullmatch(r"0x[0-9a-f]+", host))  # decimal/hex IPv4 forms browsers accept
    return True


def address_domain(address: str | None) -> str | None:
    """The lowercased domain of an address (None for a missing one or one without "@")."""
    if not address or "@" not in address:
        return None
    domain = address.rsplit("@", 1)[1].strip(" .>").casefold()
    return domain or None
