"""One generated message and its row: `render` writes a campaign or benign message from its provenance (generator,
seed, language, obfuscation), `url_lure` wraps a feed's URL in a lure, and `frame_from_rows` turns rows into a
validated frame. Every message is checked (`kinds.check`) before it is returned."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl

from sv_env_phishing_detection import detectors
from sv_env_phishing_detection.schema import (
    EMAIL_COLUMNS,
    EMAIL_SCHEMA,
    LANGUAGES,
    SYNTHETIC_CORPUS,
    validate_emails,
    with_content_hash,
)
from sv_env_phishing_detection.synth.compose import Mail, compose
from sv_env_phishing_detection.synth.kinds import ALLOWED_OBFUSCATIONS, CAMPAIGNS, SCENARIO_OF, check
from sv_env_phishing_detection.synth.material import (
    BRAND_NAMES,
    CARRIERS,
    COMPROMISED_SITES,
    CREDENTIAL_BRANDS,
    FREEMAIL,
    MFA_BRANDS,
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
from sv_env_phishing_detection.synth.obfuscation import homoglyph_domain, insert_zero_width
from sv_env_phishing_detection.synth.templates import FOOTERS, TEMPLATES
from sv_shared.data.hashing import stable_json
from sv_shared.data.seeds import check_seed, pick

EPOCH_2024 = datetime(2024, 1, 8, 7, 0, tzinfo=UTC)


def _token(rng: np.random.Generator, length: int) -> str:
    alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    return "".join(alphabet[int(rng.integers(0, len(alphabet)))] for _ in range(length))


def _person(rng: np.random.Generator, language: str) -> tuple[str, str]:
    first, last = pick(rng, PEOPLE[language])
    name = f"{first} {last}"
    domain = str(pick(rng, RECIPIENT_DOMAINS))
    return name, f"{ascii_fold(first)}.{ascii_fold(last)}@{domain}"


def _fill(template: dict[str, object], values: dict[str, str]) -> tuple[str, tuple[str, ...], str | None, str]:
    subject = str(template["subject"]).format(**values)
    body = tuple(str(paragraph).format(**values) for paragraph in template["body"])  # type: ignore[attr-defined]
    cta = str(template["cta"]).format(**values) if "cta" in template else None
    return subject, body, cta, str(template["sign"]).format(**values)


def _sent_at(rng: np.random.Generator) -> datetime:
    return EPOCH_2024 + timedelta(seconds=int(rng.integers(0, 300 * 86_400)))


def _phish_domain(rng: np.random.Generator, brand_domain: str) -> str:
    """A domain phishers register for a brand (combo-squat) or a compromised unrelated site."""
    if rng.random() < 0.5:
        label = brand_domain.split(".")[0]
        return f"{label}-{pick(rng, PHISH_WORDS)}.{pick(rng, PHISH_TLDS)}"
    return str(pick(rng, COMPROMISED_SITES))


def _render_phish(campaign: str, rng: np.random.Generator, language: str, obfuscation: str) -> tuple[Mail, dict]:
    name, recipient = _person(rng, language)
    sent_at = _sent_at(rng)
    values = {"name": name.split()[0], "fullname": name, "date": local_date(sent_at + timedelta(days=3), language)}
    template = TEMPLATES[campaign][language]
    params: dict[str, object] = {}
    reply_to = None
    cta_url = None
    shown_url = None
    auth = pick(rng, ("none", "softfail", "spf_only", None))
    if campaign in ("credential_harvest", "delivery_notice", "mfa_fatigue"):
        if campaign == "credential_harvest":
            brand_domain = str(pick(rng, CREDENTIAL_BRANDS[language]))
        elif campaign == "delivery_notice":
            brand_domain = str(pick(rng, CARRIERS[language]))
        else:
            brand_domain = str(pick(rng, MFA_BRANDS))
        brand = BRAND_NAMES[brand_domain]
        values.update(
            brand=brand,
            tracking=f"{pick(rng, ('JD', 'CX', 'LP', 'RR'))}{int(rng.integers(10**9, 10**10))}",
            fee=money(float(rng.choice([1.99, 2.49, 2.99, 3.45])), language),
        )
        path = f"/{pick(rng, ('signin', 'verify', 'auth', 'track', 'pay', 'session'))}/{_token(rng, 10)}"
        if obfuscation == "homoglyph":
            spoof, _ = homoglyph_domain(brand_domain, rng)
            sender_domain = link_domain = spoof
            auth = "spf_only"  # the phisher's own domain authenticates: clean headers
        else:
            link_domain = _phish_domain(rng, brand_domain)
            sender_domain = str(pick(rng, (f"notify-{_token(rng, 4).lower()}.{pick(rng, PHISH_TLDS)}", link_domain)))
        cta_url = f"https://{link_domain}{path}"
        if obfuscation == "shortener":
            cta_url = f"https://{pick(rng, SHORTENERS)}/{_token(rng, 7)}"
        if obfuscation == "html_only":
            shown_url = f"https://www.{brand_domain}/{pick(rng, ('account', 'login', 'help'))}"
        sender = f"{pick(rng, ('no-reply', 'service', 'security', 'info'))}@{sender_domain}"
        sender_name = brand if campaign != "mfa_fatigue" else f"{brand} Security"
        params["brand"] = brand_domain
    elif campaign == "invoice_fraud":
        vendor, vendor_domain = pick(rng, VENDORS[language])
        contact_name, _ = _person(rng, language)
        spoof_label = vendor_domain.split(".")[0]
        swap = int(rng.integers(1, len(spoof_label) - 2))
        spoof_label = spoof_label[:swap] + spoof_label[swap + 1] + spoof_label[swap] + spoof_label[swap + 2 :]
        sender_domain = f"{spoof_label}.{vendor_domain.split('.', 1)[1]}"
        sender = f"{ascii_fold(contact_name.split()[0])}.{ascii_fold(contact_name.split()[1])}@{sender_domain}"
        sender_name = contact_name
        reply_to = f"{ascii_fold(contact_name.split()[1])}.accounts@{pick(rng, FREEMAIL)}"
        auth = "pass"  # a look-alike of a vendor (not a known brand) with its own valid DMARC: clean headers
        values.update(
            vendor=vendor,
            contact=contact_name,
            invoice=f"{pick(rng, ('INV', 'RE', 'FA', 'FAC'))}-{int(rng.integers(2024000, 2024999))}",
            amount=money(float(rng.integers(1_800, 48_000)) + 0.5 * int(rng.integers(0, 2)), language),
            iban=f"{pick(rng, ('GB29', 'DE44', 'FR76', 'ES91', 'LT12'))} {int(rng.integers(1000, 9999))} "
            f"{int(rng.integers(1000, 9999))} {int(rng.integers(1000, 9999))} {int(rng.integers(1000, 9999))}",
            bic=f"{_token(rng, 4).upper()}{pick(rng, ('GB', 'DE', 'FR', 'ES', 'LT'))}2X",
        )
        params["vendor_domain"] = vendor_domain
    else:  # gift_card: the "CEO" writes from a free-mail account
        ceo_name, _ = _person(rng, language)
        first, last = ceo_name.split()
        sender = f"{ascii_fold(first)}.{ascii_fold(last)}.office@{pick(rng, FREEMAIL)}"
        sender_name = ceo_name
        reply_to = f"{ascii_fold(first)}{int(rng.integers(10, 99))}@{pick(rng, FREEMAIL)}"
        auth = "pass"
        values.update(
            ceo=ceo_name,
            count=str(int(rng.integers(3, 9))),
            value=money(float(rng.choice([50, 100, 200])), language),
        )
    subject, paragraphs, cta_text, sign = _fill(template, values)
    if obfuscation == "zero_width":
        subject = insert_zero_width(subject, rng, share=0.6)
        paragraphs = (paragraphs[0], insert_zero_width(paragraphs[1], rng), *paragraphs[2:])
    mail = Mail(
        sender_name=sender_name,
        sender=sender,
        recipient_name=name,
        recipient=recipient,
        subject=subject,
        paragraphs=paragraphs,
        signature=sign,
        sent_at=sent_at,
        cta=((shown_url or cta_text or ""), cta_url) if cta_url else None,
        reply_to=reply_to,
        auth=None if auth is None else str(auth),
        parts="html" if obfuscation == "html_only" else str(pick(rng, ("both", "both", "text"))),
        sender_ip=f"198.51.100.{int(rng.integers(2, 254))}",
    )
    return mail, params


def _render_benign(kind: str, rng: np.random.Generator, language: str) -> tuple[Mail, dict]:
    name, recipient = _person(rng, language)
    sent_at = _sent_at(rng)
    if kind == "order_confirmation":
        brand_domain = str(pick(rng, SHOPS[language]))
    elif kind == "shipping_update":
        brand_domain = str(pick(rng, CARRIERS[language]))
    else:
        brand_domain = str(pick(rng, CREDENTIAL_BRANDS[language]))
    brand = BRAND_NAMES[brand_domain]
    values = {
        "name": name.split()[0],
        "brand": brand,
        "date": local_date(sent_at + timedelta(days=int(rng.integers(1, 5))), language),
        "order": f"{int(rng.integers(100, 999))}-{int(rng.integers(1_000_000, 9_999_999))}",
        "tracking": f"{pick(rng, ('1Z', 'JJD', 'CB', 'PQ'))}{int(rng.integers(10**9, 10**10))}",
        "amount": money(float(rng.integers(900, 25_000)) / 100, language),
    }
    subject, paragraphs, cta_text, sign = _fill(TEMPLATES[kind][language], values)
    path = {"order_confirmation": "/your-orders/", "shipping_update": "/tracking/", "account_notice": "/security/"}
    notice, privacy, help_ = FOOTERS[language]
    esp = pick(rng, (None, "bounces.sparkpostmail.com", "sendgrid.net", "mktomail.com"))
    return_path = f"bounce-{_token(rng, 8).lower()}@{esp}" if esp else f"bounce@mail.{brand_domain}"
    mail = Mail(
        sender_name=brand,
        sender=f"{pick(rng, ('no-reply', 'noreply', 'notifications', 'info'))}@{brand_domain}",
        recipient_name=name,
        recipient=recipient,
        subject=subject,
        paragraphs=paragraphs,
        signature=sign,
        sent_at=sent_at,
        cta=(cta_text or "", f"https://www.{brand_domain}{path[kind]}{_token(rng, 12)}"),
        footer=(notice.format(brand=brand),),
        footer_links=((privacy, f"https://www.{brand_domain}/privacy"), (help_, f"https://www.{brand_domain}/help")),
        return_path=return_path,
        auth="pass",
        dkim_domain=brand_domain,
        parts=str(pick(rng, ("both", "both", "html"))),
        sender_ip=f"192.0.2.{int(rng.integers(2, 254))}",
    )
    return mail, {"brand": brand_domain}


def _build(generator: str, seed: int, language: str, obfuscation: str) -> tuple[str, dict[str, object]]:
    """(raw message, provenance parameters) of one generated message, checked by the detectors."""
    if generator not in TEMPLATES:
        raise KeyError(f"unknown generator {generator!r}; known: {', '.join(TEMPLATES)}")
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, got {language!r}")
    if obfuscation not in ALLOWED_OBFUSCATIONS[generator]:
        raise ValueError(f"{generator} does not take obfuscation {obfuscation!r}: {ALLOWED_OBFUSCATIONS[generator]}")
    check_seed(seed)
    rng = np.random.default_rng(seed)
    if generator in CAMPAIGNS:
        mail, params = _render_phish(generator, rng, language, obfuscation)
    else:
        mail, params = _render_benign(generator, rng, language)
    raw = compose(mail)
    check(generator, obfuscation, raw, seed=seed)
    return raw, {"language": language, "obfuscation": obfuscation, **params}


def render(generator: str, seed: int, language: str, obfuscation: str = "none") -> str:
    """One message of a campaign or benign kind: a pure function of its arguments (its provenance), so a stored
    row is reproduced by render(row.generator, row.generator_seed, params["language"], params["obfuscation"])."""
    return _build(generator, seed, language, obfuscation)[0]


def message_row(generator: str, language: str, obfuscation: str, seed: int) -> dict[str, object]:
    """The row of one generated message: its text, label, scenario, provenance and the detectors' fields."""
    raw, params = _build(generator, seed, language, obfuscation)
    return {
        "raw_email": raw,
        "language": language,
        "label": "Phishing" if generator in CAMPAIGNS else "Legitimate",
        "scenario": SCENARIO_OF[generator],
        "source_corpus": SYNTHETIC_CORPUS,
        "generator": generator,
        "generator_params": stable_json(params),
        "generator_seed": seed,
        **detectors.item_fields(raw),
    }


def frame_from_rows(rows: Sequence[dict[str, object]]) -> pl.DataFrame:
    """Rows with every column but the ids as a validated frame (ids from the content hash)."""
    schema = {column: EMAIL_SCHEMA[column] for column in EMAIL_COLUMNS if column not in ("email_id", "content_hash")}
    frame = pl.DataFrame(list(rows), schema=schema) if rows else pl.DataFrame(schema=schema)
    return validate_emails(with_content_hash(frame).select(EMAIL_COLUMNS))


def url_lure(url: str, brand: str | None, seed: int, *, feed: str) -> dict[str, object]:
    """A phishing row for a feed entry that has a URL but no email (APWG-style URL feeds): the real URL wrapped in
    the English credential-harvest template, sent in the brand's name. The message is synthetic (generator
    "url_lure", its parameters name the URL, brand and feed); the link is the feed's."""
    check_seed(seed)
    rng = np.random.default_rng(seed)
    name, recipient = _person(rng, "en")
    shown_brand = brand.strip() if brand and brand.strip() else "Account"
    values = {"name": name.split()[0], "brand": shown_brand}
    subject, paragraphs, cta_text, sign = _fill(TEMPLATES["credential_harvest"]["en"], values)
    sender_domain = f"notify-{_token(rng, 5).lower()}.{pick(rng, PHISH_TLDS)}"
    mail = Mail(
        sender_name=shown_brand,
        sender=f"{pick(rng, ('no-reply', 'service', 'security'))}@{sender_domain}",
        recipient_name=name,
        recipient=recipient,
        subject=subject,
        paragraphs=paragraphs,
        signature=sign,
        sent_at=_sent_at(rng),
        cta=(cta_text or "", url),
        auth=None,
        sender_ip=f"198.51.100.{int(rng.integers(2, 254))}",
    )
    raw = compose(mail)
    check("credential_harvest", "none", raw, seed=seed)
    return {
        "raw_email": raw,
        "language": "en",
        "label": "Phishing",
        "scenario": "credential_harvest",
        "source_corpus": SYNTHETIC_CORPUS,
        "generator": "url_lure",
        "generator_params": stable_json({"url": url, "brand": brand, "feed": feed, "language": "en"}),
        "generator_seed": seed,
        **detectors.item_fields(raw),
    }
