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
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import quopri
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.header import Header
from email.utils import format_datetime, formataddr

import numpy as np
import polars as pl

from sv_env_phishing_detection import detectors
from sv_env_phishing_detection.baseline import PHISHING_THRESHOLD
from sv_env_phishing_detection.schema import (
    EMAIL_COLUMNS,
    EMAIL_SCHEMA,
    LANGUAGES,
    SYNTHETIC_CORPUS,
    validate_emails,
    with_content_hash,
)
from sv_shared.data.hashing import stable_json
from sv_shared.data.splits import allocate_counts

MAX_SEED = 2**62
EPOCH_2024 = datetime(2024, 1, 8, 7, 0, tzinfo=UTC)

# --- composing RFC 5322 messages ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mail:
    """Everything `compose` needs to write one message. Links are (shown text, href) pairs."""

    sender_name: str
    sender: str
    recipient_name: str
    recipient: str
    subject: str
    paragraphs: tuple[str, ...]
    sent_at: datetime
    cta: tuple[str, str] | None = None
    signature: str = ""
    footer: tuple[str, ...] = ()
    footer_links: tuple[tuple[str, str], ...] = ()
    reply_to: str | None = None
    return_path: str | None = None
    auth: str | None = "pass"
    """Authentication-Results profile: pass (aligned), spf_only, none, softfail, fail; None writes no header."""
    dkim_domain: str | None = None
    parts: str = "both"
    """Which bodies to write: both (multipart/alternative), text or html."""
    attachments: tuple[tuple[str, str, bytes], ...] = ()
    sender_ip: str = "203.0.113.25"


def _domain_of(address: str) -> str:
    return address.rsplit("@", 1)[1]


def _digest(*parts: object, length: int = 16) -> str:
    return hashlib.sha256("|".join(map(str, parts)).encode("utf-8")).hexdigest()[:length]


def _b64_digest(*parts: object, length: int = 44) -> str:
    raw = hashlib.sha512("|".join(map(str, parts)).encode("utf-8")).digest()
    return base64.b64encode(raw + raw).decode("ascii")[:length]


def _header(value: str) -> str:
    """A header value, RFC 2047-encoded when it is not ASCII."""
    return value if value.isascii() else Header(value, "utf-8").encode()


def _address(name: str, address: str) -> str:
    return formataddr((name, address), charset="utf-8") if name else address


def _body(text: str) -> tuple[str, str]:
    """(Content-Transfer-Encoding, encoded body) for a UTF-8 text: 7bit when ASCII, else quoted-printable."""
    if text.isascii() and all(len(line) <= 900 for line in text.splitlines()):
        return "7bit", text
    return "quoted-printable", quopri.encodestring(text.encode("utf-8")).decode("ascii")


def auth_results(profile: str, *, mx: str, from_domain: str, mailfrom_domain: str, dkim_domain: str) -> str:
    """An Authentication-Results value (folded like Gmail/Microsoft write them) for a profile name."""
    dkim, spf, dmarc = {
        "pass": ("pass", "pass", "pass"),
        "spf_only": ("none", "pass", "pass" if mailfrom_domain == from_domain else "fail"),
        "none": ("none", "none", "none"),
        "softfail": ("none", "softfail", "fail"),
        "fail": ("fail", "fail", "fail"),
    }[profile]
    dkim_part = f"dkim={dkim} header.i=@{dkim_domain} header.s=s1" if dkim != "none" else "dkim=none"
    return (
        f"{mx};\n       {dkim_part};\n       spf={spf} smtp.mailfrom={mailfrom_domain};\n"
        f"       dmarc={dmarc} (p=QUARANTINE sp=NONE dis=NONE) header.from={from_domain}"
    )


def _html(mail: Mail) -> str:
    paragraphs = "\n".join(
        f'<p style="margin:0 0 14px">{"<br>".join(_escape(line) for line in paragraph.splitlines())}</p>'
        for paragraph in mail.paragraphs
    )
    button = ""
    if mail.cta:
        text, href = mail.cta
        button = (
            f'<p style="margin:22px 0"><a href="{_escape(href)}" style="background:#0b5cad;color:#ffffff;'
            f'padding:10px 18px;border-radius:4px;text-decoration:none">{_escape(text)}</a></p>'
        )
    signature = ""
    if mail.signature:
        signature = (
            f'<p style="margin:0 0 14px">{"<br>".join(_escape(line) for line in mail.signature.splitlines())}</p>'
        )
    footer = " ".join(_escape(line) for line in mail.footer)
    links = " | ".join(
        f'<a href="{_escape(href)}" style="color:#777777">{_escape(text)}</a>' for text, href in mail.footer_links
    )
    return (
        '<!DOCTYPE html>\n<html><head><meta http-equiv="Content-Type" content="text/html; charset=utf-8">'
        f"<title>{_escape(mail.subject)}</title></head>\n"
        '<body style="font-family:Arial,Helvetica,sans-serif;font-size:14px;color:#222222">\n'
        f'<div style="max-width:600px;margin:0 auto">\n{paragraphs}\n{button}\n{signature}\n'
        f'<hr style="border:none;border-top:1px solid #dddddd">\n'
        f'<p style="font-size:11px;color:#777777">{footer}<br>{links}</p>\n</div>\n</body></html>\n'
    )


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _text(mail: Mail) -> str:
    lines = list(mail.paragraphs)
    if mail.cta:
        text, href = mail.cta
        lines.append(f"{text}: {href}")
    if mail.signature:
        lines.append(mail.signature)
    footer = list(mail.footer) + [f"{text}: {href}" for text, href in mail.footer_links]
    if footer:
        lines.append("--\n" + "\n".join(footer))
    return "\n\n".join(lines) + "\n"


def _part(content_type: str, body: str) -> str:
    encoding, encoded = _body(body)
    return f'Content-Type: {content_type}; charset="utf-8"\nContent-Transfer-Encoding: {encoding}\n\n' + encoded.rstrip(
        "\n"
    )


def _attachment(filename: str, content_type: str, data: bytes) -> str:
    encoded = base64.encodebytes(data).decode("ascii").rstrip("\n")
    name = _header(filename)
    return (
        f'Content-Type: {content_type}; name="{name}"\nContent-Disposition: attachment; filename="{name}"\n'
        f"Content-Transfer-Encoding: base64\n\n{encoded}"
    )


def compose(mail: Mail) -> str:
    """The message as RFC 5322 text (LF line ends, as mbox and most .eml tools store it); deterministic in its
    fields."""
    key = _digest(mail.sender, mail.recipient, mail.subject, mail.sent_at.isoformat(), length=24)
    from_domain = _domain_of(mail.sender)
    return_path = mail.return_path or mail.sender
    mailfrom_domain = _domain_of(return_path)
    mx = f"mx.{_domain_of(mail.recipient)}"
    date = format_datetime(mail.sent_at)
    headers = [
        f"Return-Path: <{return_path}>",
        f"Received: from mail-{key[:6]}.{mailfrom_domain} (mail-{key[:6]}.{mailfrom_domain} [{mail.sender_ip}])\n"
        f"        by {mx} with ESMTPS id {key[6:18]}\n        for <{mail.recipient}>; {date}",
    ]
    dkim_domain = mail.dkim_domain or from_domain
    if mail.auth is not None:
        results = auth_results(
            mail.auth, mx=mx, from_domain=from_domain, mailfrom_domain=mailfrom_domain, dkim_domain=dkim_domain
        )
        headers.append(f"Authentication-Results: {results}")
        if mail.auth in ("pass", "fail"):
            headers.append(
                f"DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d={dkim_domain}; s=s1;\n"
                f"        t={int(mail.sent_at.timestamp())}; h=from:to:subject:date:message-id;\n"
                f"        bh={_b64_digest('bh', key)};\n        b={_b64_digest('b', key, length=88)}"
            )
    headers.append(f"From: {_address(mail.sender_name, mail.sender)}")
    if mail.reply_to:
        headers.append(f"Reply-To: {mail.reply_to}")
    headers.extend(
        [
            f"To: {_address(mail.recipient_name, mail.recipient)}",
            f"Subject: {_header(mail.subject)}",
            f"Date: {date}",
            f"Message-ID: <{key}@{from_domain}>",
            "MIME-Version: 1.0",
        ]
    )
    bodies: list[str] = []
    if mail.parts in ("both", "text"):
        bodies.append(_part("text/plain", _text(mail)))
    if mail.parts in ("both", "html"):
        bodies.append(_part("text/html", _html(mail)))
    boundary = f"==sv_{key[:20]}"
    body = bodies[0] if len(bodies) == 1 else _multipart("alternative", f"{boundary}_alt", bodies)
    if mail.attachments:
        body = _multipart("mixed", boundary, [body, *(_attachment(*attachment) for attachment in mail.attachments)])
    return "\n".join(headers) + "\n" + body + "\n"


def _multipart(subtype: str, boundary: str, sections: Sequence[str]) -> str:
    lines = [f'Content-Type: multipart/{subtype}; boundary="{boundary}"', ""]
    for section in sections:
        lines.extend([f"--{boundary}", section])
    lines.append(f"--{boundary}--")
    return "\n".join(lines)


# --- localized material -------------------------------------------------------------------------------------------

PEOPLE: dict[str, tuple[tuple[str, str], ...]] = {
    language: tuple(tuple(person.split(" ", 1)) for person in people.split(", "))  # type: ignore[misc]
    for language, people in {
        "en": "Emily Carter, James Whitfield, Olivia Bennett, Daniel Hughes, Sophie Turner, Michael Reed",
        "de": "Lena Hoffmann, Jonas Becker, Anna Schröder, Felix Wagner, Marie Keller, Lukas Braun",
        "fr": "Camille Martin, Julien Lefèvre, Chloé Moreau, Antoine Girard, Manon Rousseau, Hugo Fontaine",
        "es": "Lucía García, Javier Martínez, Carmen López, Pablo Sánchez, Elena Romero, Diego Navarro",
    }.items()
}
RECIPIENT_DOMAINS = ("example.com", "example.net", "example.org")
BRAND_NAMES: dict[str, str] = {
    "paypal.com": "PayPal", "paypal.de": "PayPal", "paypal.fr": "PayPal", "paypal.es": "PayPal",
    "microsoft.com": "Microsoft", "netflix.com": "Netflix", "apple.com": "Apple", "sparkasse.de": "Sparkasse",
    "amazon.com": "Amazon", "amazon.de": "Amazon", "amazon.fr": "Amazon", "amazon.es": "Amazon",
    "credit-agricole.fr": "Crédit Agricole", "orange.fr": "Orange", "bbva.es": "BBVA", "movistar.es": "Movistar",
    "ups.com": "UPS", "fedex.com": "FedEx", "dhl.com": "DHL Express", "dhl.de": "DHL Paket", "dpd.de": "DPD",
    "deutschepost.de": "Deutsche Post", "laposte.fr": "La Poste", "colissimo.fr": "Colissimo", "dpd.fr": "DPD France",
    "correos.es": "Correos", "dhl.es": "DHL Express", "okta.com": "Okta", "google.com": "Google",
    "ebay.com": "eBay", "ebay.de": "eBay", "ebay.fr": "eBay", "ebay.es": "eBay", "dropbox.com": "Dropbox",
}  # fmt: skip
CREDENTIAL_BRANDS: dict[str, tuple[str, ...]] = {
    "en": ("paypal.com", "microsoft.com", "netflix.com", "apple.com"),
    "de": ("paypal.de", "microsoft.com", "sparkasse.de", "amazon.de"),
    "fr": ("paypal.fr", "microsoft.com", "credit-agricole.fr", "orange.fr"),
    "es": ("paypal.es", "microsoft.com", "bbva.es", "movistar.es"),
}
CARRIERS: dict[str, tuple[str, ...]] = {
    "en": ("ups.com", "fedex.com", "dhl.com"),
    "de": ("dhl.de", "dpd.de", "deutschepost.de"),
    "fr": ("laposte.fr", "colissimo.fr", "dpd.fr"),
    "es": ("correos.es", "dhl.es"),
}
MFA_BRANDS: tuple[str, ...] = ("microsoft.com", "okta.com", "google.com", "dropbox.com")
SHOPS: dict[str, tuple[str, ...]] = {
    "en": ("amazon.com", "ebay.com"),
    "de": ("amazon.de", "ebay.de"),
    "fr": ("amazon.fr", "ebay.fr"),
    "es": ("amazon.es", "ebay.es"),
}
VENDORS: dict[str, tuple[tuple[str, str], ...]] = {
    "en": (
        ("Harbor Line Logistics Ltd", "harborline-logistics.com"),
        ("Brightwell Office Supply", "brightwell-supply.com"),
    ),
    "de": (("Nordlicht Druck GmbH", "nordlicht-druck.de"), ("Weber Gebäudetechnik GmbH", "weber-gebaeudetechnik.de")),
    "fr": (("Atelier Durand SARL", "atelier-durand.fr"), ("Transports Lemaire", "transports-lemaire.fr")),
    "es": (("Suministros Iberia S.L.", "suministros-iberia.es"), ("Gráficas del Sur S.A.", "graficas-delsur.es")),
}
FREEMAIL = ("gmail.com", "outlook.com")
SHORTENERS = ("bit.ly", "tinyurl.com", "cutt.ly", "rb.gy", "is.gd")
PHISH_WORDS = ("secure", "verify", "account", "support", "login", "service", "help", "update", "portal")
PHISH_TLDS = ("com", "net", "info", "online", "top", "xyz", "site")
COMPROMISED_SITES = ("gardenstudio-tuin.nl", "bakery-lamarca.it", "hotel-alpenblick.at", "dentalcare-plus.co.za")
MONTHS: dict[str, tuple[str, ...]] = {
    "de": tuple(
        [
            "Januar",
            "Februar",
            "März",
            "April",
            "Mai",
            "Juni",
            "Juli",
            "August",
            "September",
            "Oktober",
            "November",
            "Dezember",
        ]
    ),
    "fr": tuple(
        [
            "janvier",
            "février",
            "mars",
            "avril",
            "mai",
            "juin",
            "juillet",
            "août",
            "septembre",
            "octobre",
            "novembre",
            "décembre",
        ]
    ),
    "es": tuple(
        [
            "enero",
            "febrero",
            "marzo",
            "abril",
            "mayo",
            "junio",
            "julio",
            "agosto",
            "septiembre",
            "octubre",
            "noviembre",
            "diciembre",
        ]
    ),
}


def local_date(moment: datetime, language: str) -> str:
    if language == "en":
        return moment.strftime("%B %-d, %Y")
    month = MONTHS[language][moment.month - 1]
    if language == "de":
        return f"{moment.day}. {month} {moment.year}"
    return f"{moment.day} {month} {moment.year}" if language == "fr" else f"{moment.day} de {month} de {moment.year}"


def money(amount: float, language: str) -> str:
    if language == "en":
        return f"${amount:,.2f}"
    text = f"{amount:,.2f}".replace(",", "\x00").replace(".", ",").replace("\x00", ".")
    return f"{text} €"


def ascii_fold(text: str) -> str:
    return "".join(char for char in unicodedata.normalize("NFKD", text) if not unicodedata.combining(char)).casefold()


# --- campaign and benign templates (subject, paragraphs, call to action, sign-off), per language ------------------

TEMPLATES: dict[str, dict[str, dict[str, object]]] = {
    "credential_harvest": {
        "en": {
            "subject": "Action required: confirm your {brand} account details",
            "body": (
                "Dear {name},",
                "We were unable to verify your recent sign-in to {brand}. To keep your account active, please confirm "
                "your account details within 24 hours.",
                "Until you do, some features of your account will be limited.",
            ),
            "cta": "Confirm account",
            "sign": "{brand} Account Services",
        },
        "de": {
            "subject": "Handlungsbedarf: Bestätigen Sie Ihr {brand}-Konto",
            "body": (
                "Guten Tag {fullname},",
                "bei Ihrer letzten Anmeldung bei {brand} konnten wir Ihre Identität nicht prüfen. Bitte bestätigen Sie "
                "Ihre Zugangsdaten innerhalb von 24 Stunden, damit Ihr Konto aktiv bleibt.",
                "Bis dahin ist Ihr Konto eingeschränkt.",
            ),
            "cta": "Konto bestätigen",
            "sign": "Ihr {brand} Kundenservice",
        },
        "fr": {
            "subject": "Action requise : confirmez votre compte {brand}",
            "body": (
                "Bonjour {name},",
                "Nous n'avons pas pu vérifier votre dernière connexion à {brand}. Afin de conserver l'accès à votre "
                "compte, confirmez vos informations sous 24 heures.",
                "Passé ce délai, votre compte sera suspendu.",
            ),
            "cta": "Confirmer mon compte",
            "sign": "Le service client {brand}",
        },
        "es": {
            "subject": "Acción requerida: confirme su cuenta de {brand}",
            "body": (
                "Estimado/a {name}:",
                "No hemos podido verificar su último inicio de sesión en {brand}. Para mantener su cuenta activa, "
                "confirme sus datos en las próximas 24 horas.",
                "Mientras tanto, su cuenta permanecerá limitada.",
            ),
            "cta": "Confirmar cuenta",
            "sign": "Atención al cliente de {brand}",
        },
    },
    "invoice_fraud": {
        "en": {
            "subject": "Updated remittance details - invoice {invoice}",
            "body": (
                "Hello {name},",
                "Please note that our bank details have changed following an audit. Kindly use the new bank details "
                "below for invoice {invoice} ({amount}) and all future payments.",
                "IBAN: {iban}\nBIC: {bic}",
                "The old account is no longer in use, so please confirm once the transfer has been scheduled. This is "
                "urgent as the invoice is overdue.",
            ),
            "sign": "{contact}\nAccounts Receivable, {vendor}",
        },
        "de": {
            "subject": "Geänderte Bankverbindung - Rechnung {invoice}",
            "body": (
                "Guten Tag {name},",
                "aufgrund eines Bankwechsels gilt ab sofort unser neues Konto. Bitte überweisen Sie den offenen Betrag "
                "von {amount} für Rechnung {invoice} auf die folgende Verbindung:",
                "IBAN: {iban}\nBIC: {bic}",
                "Zahlungen auf das alte Konto können nicht mehr zugeordnet werden. Bitte bestätigen Sie mir kurz die "
                "Ausführung, die Angelegenheit ist dringend.",
            ),
            "sign": "{contact}\nBuchhaltung, {vendor}",
        },
        "fr": {
            "subject": "Nouvelles coordonnées bancaires - facture {invoice}",
            "body": (
                "Bonjour {name},",
                "Suite à un changement de banque, nos coordonnées bancaires ont changé. Merci d'effectuer le règlement "
                "de la facture {invoice} ({amount}) sur notre nouveau compte bancaire :",
                "IBAN : {iban}\nBIC : {bic}",
                "Merci de ne plus utiliser l'ancien compte et de me confirmer le virement dès que possible.",
            ),
            "sign": "{contact}\nService comptabilité, {vendor}",
        },
        "es": {
            "subject": "Nuevos datos bancarios - factura {invoice}",
            "body": (
                "Hola {name}:",
                "Le informamos de que, por un cambio de entidad, nuestros datos bancarios han cambiado. Le rogamos que "
                "realice el pago de la factura {invoice} ({amount}) en nuestra nueva cuenta bancaria:",
                "IBAN: {iban}\nBIC: {bic}",
                "Por favor, no utilice la cuenta anterior y confírmeme la transferencia lo antes posible.",
            ),
            "sign": "{contact}\nDepartamento de contabilidad, {vendor}",
        },
    },
    "delivery_notice": {
        "en": {
            "subject": "Your parcel {tracking} is on hold",
            "body": (
                "Dear customer,",
                "Your parcel could not be delivered because a customs fee of {fee} is unpaid. Pay the fee within 48 "
                "hours, or the parcel will be returned to the sender.",
            ),
            "cta": "Pay {fee} now",
            "sign": "{brand} Customer Service",
        },
        "de": {
            "subject": "Ihre Sendung {tracking} wurde angehalten",
            "body": (
                "Sehr geehrte Kundin, sehr geehrter Kunde,",
                "Ihr Paket konnte nicht zugestellt werden, da eine Zollgebühr von {fee} offen ist. Bitte begleichen "
                "Sie die Gebühr innerhalb von 48 Stunden, sonst geht die Sendung an den Absender zurück.",
            ),
            "cta": "Jetzt {fee} bezahlen",
            "sign": "{brand} Kundenservice",
        },
        "fr": {
            "subject": "Votre colis {tracking} est en attente",
            "body": (
                "Cher client,",
                "Votre colis n'a pas pu être livré : des frais de douane de {fee} restent à régler. Réglez ces frais "
                "sous 48 heures, sinon le colis sera retourné à l'expéditeur.",
            ),
            "cta": "Payer {fee}",
            "sign": "Service client {brand}",
        },
        "es": {
            "subject": "Su paquete {tracking} está retenido",
            "body": (
                "Estimado cliente:",
                "No hemos podido entregar su paquete porque hay una tasa de aduana de {fee} pendiente de pago. Abone "
                "la tasa en las próximas 48 horas o el paquete será devuelto al remitente.",
            ),
            "cta": "Pagar {fee} ahora",
            "sign": "Atención al cliente de {brand}",
        },
    },
    "mfa_fatigue": {
        "en": {
            "subject": "Sign-in request waiting for your approval",
            "body": (
                "Hi {name},",
                "A sign-in to your {brand} account is waiting for approval. If you are trying to sign in, approve the "
                "sign-in request immediately on the page below.",
                "Requests that are not approved lock the account for security reasons.",
            ),
            "cta": "Approve sign-in",
            "sign": "{brand} Identity Protection",
        },
        "de": {
            "subject": "Anmeldeanfrage wartet auf Ihre Freigabe",
            "body": (
                "Hallo {name},",
                "eine Anmeldung bei Ihrem {brand}-Konto wartet auf Freigabe. Wenn Sie sich gerade anmelden, müssen Sie "
                "die Anmeldeanfrage bestätigen. Tun Sie dies umgehend über die folgende Seite.",
                "Nicht bestätigte Anfragen sperren das Konto aus Sicherheitsgründen.",
            ),
            "cta": "Anmeldung freigeben",
            "sign": "{brand} Identitätsschutz",
        },
        "fr": {
            "subject": "Demande de connexion en attente de votre approbation",
            "body": (
                "Bonjour {name},",
                "Une connexion à votre compte {brand} attend votre validation. Si vous êtes en train de vous "
                "connecter, approuvez la demande de connexion immédiatement via la page ci-dessous.",
                "Sans validation, votre compte sera bloqué par mesure de sécurité.",
            ),
            "cta": "Approuver la connexion",
            "sign": "Protection des identités {brand}",
        },
        "es": {
            "subject": "Solicitud de inicio de sesión pendiente de aprobación",
            "body": (
                "Hola {name}:",
                "Hay un inicio de sesión en su cuenta de {brand} pendiente de aprobación. Si está intentando acceder, "
                "apruebe la solicitud de inicio de sesión de inmediato en la página siguiente.",
                "Si no la aprueba, su cuenta será bloqueada por motivos de seguridad.",
            ),
            "cta": "Aprobar inicio de sesión",
            "sign": "Protección de identidad de {brand}",
        },
    },
    "gift_card": {
        "en": {
            "subject": "Quick favour",
            "body": (
                "Hi {name},",
                "Are you at your desk? I need you to pick up {count} gift cards of {value} each for a client "
                "appreciation event today. I am in meetings all afternoon and cannot call.",
                "Scratch off the back of each card and email me the codes as soon as possible. I will reimburse you "
                "this week.",
            ),
            "sign": "{ceo}\nSent from my phone",
        },
        "de": {
            "subject": "Kurze Bitte",
            "body": (
                "Hallo {name},",
                "bist du gerade am Platz? Ich brauche für eine Kundenaktion heute noch {count} Geschenkkarten zu je "
                "{value}. Ich bin den ganzen Nachmittag in Terminen und kann nicht telefonieren.",
                "Rubbel bitte die Codes frei und schick sie mir per Mail, es ist dringend. Ich erstatte dir den "
                "Betrag diese Woche.",
            ),
            "sign": "{ceo}\nVon meinem Smartphone gesendet",
        },
        "fr": {
            "subject": "Petit service",
            "body": (
                "Bonjour {name},",
                "Es-tu à ton bureau ? J'ai besoin que tu achètes aujourd'hui {count} cartes cadeaux de {value} chacune "
                "pour un client. Je suis en réunion tout l'après-midi et je ne peux pas appeler.",
                "Gratte le dos des cartes et envoie-moi les codes par e-mail au plus vite. Je te rembourse cette "
                "semaine.",
            ),
            "sign": "{ceo}\nEnvoyé de mon téléphone",
        },
        "es": {
            "subject": "Un favor rápido",
            "body": (
                "Hola {name}:",
                "¿Estás en tu puesto? Necesito que compres hoy {count} tarjetas regalo de {value} cada una para un "
                "cliente. Estoy en reuniones toda la tarde y no puedo llamar.",
                "Rasca el reverso de las tarjetas y envíame los códigos por correo lo antes posible. Te lo reembolso "
                "esta semana.",
            ),
            "sign": "{ceo}\nEnviado desde mi móvil",
        },
    },
    "order_confirmation": {
        "en": {
            "subject": "Your order {order} has been received",
            "body": (
                "Hello {name},",
                "Thank you for shopping with {brand}. We have received your order {order} and will let you know when "
                "it ships.",
                "Order total: {amount}\nEstimated delivery: {date}",
            ),
            "cta": "View your order",
            "sign": "{brand}",
        },
        "de": {
            "subject": "Ihre Bestellung {order} ist eingegangen",
            "body": (
                "Hallo {name},",
                "vielen Dank für Ihren Einkauf bei {brand}. Wir haben Ihre Bestellung {order} erhalten und informieren "
                "Sie, sobald sie versandt wird.",
                "Gesamtbetrag: {amount}\nVoraussichtliche Lieferung: {date}",
            ),
            "cta": "Bestellung ansehen",
            "sign": "{brand}",
        },
        "fr": {
            "subject": "Votre commande {order} a bien été reçue",
            "body": (
                "Bonjour {name},",
                "Merci pour votre achat chez {brand}. Nous avons bien reçu votre commande {order} et vous préviendrons "
                "dès son expédition.",
                "Montant total : {amount}\nLivraison estimée : {date}",
            ),
            "cta": "Voir ma commande",
            "sign": "{brand}",
        },
        "es": {
            "subject": "Hemos recibido tu pedido {order}",
            "body": (
                "Hola {name}:",
                "Gracias por comprar en {brand}. Hemos recibido tu pedido {order} y te avisaremos cuando se envíe.",
                "Importe total: {amount}\nEntrega estimada: {date}",
            ),
            "cta": "Ver mi pedido",
            "sign": "{brand}",
        },
    },
    "shipping_update": {
        "en": {
            "subject": "Your parcel {tracking} is on its way",
            "body": (
                "Hello {name},",
                "Good news: your parcel has left our hub and is expected on {date}.",
                "You can follow each step of the delivery with tracking number {tracking}.",
            ),
            "cta": "Track parcel",
            "sign": "{brand}",
        },
        "de": {
            "subject": "Ihre Sendung {tracking} ist unterwegs",
            "body": (
                "Hallo {name},",
                "gute Nachrichten: Ihr Paket hat unser Paketzentrum verlassen und kommt voraussichtlich am {date}.",
                "Mit der Sendungsnummer {tracking} können Sie die Zustellung verfolgen.",
            ),
            "cta": "Sendung verfolgen",
            "sign": "{brand}",
        },
        "fr": {
            "subject": "Votre colis {tracking} est en route",
            "body": (
                "Bonjour {name},",
                "Bonne nouvelle : votre colis a quitté notre centre de tri et devrait arriver le {date}.",
                "Suivez chaque étape de la livraison avec le numéro {tracking}.",
            ),
            "cta": "Suivre mon colis",
            "sign": "{brand}",
        },
        "es": {
            "subject": "Tu paquete {tracking} está en camino",
            "body": (
                "Hola {name}:",
                "Buenas noticias: tu paquete ha salido de nuestro centro logístico y llegará previsiblemente el "
                "{date}.",
                "Puedes seguir cada paso de la entrega con el número de seguimiento {tracking}.",
            ),
            "cta": "Seguir envío",
            "sign": "{brand}",
        },
    },
    "account_notice": {
        "en": {
            "subject": "Your {brand} password was changed",
            "body": (
                "Hi {name},",
                "The password for your {brand} account was changed on {date}.",
                "If you made this change, no further action is needed. If you did not, reset your password immediately "
                "from the {brand} app or website and review your recent activity.",
            ),
            "cta": "Review activity",
            "sign": "The {brand} team",
        },
        "de": {
            "subject": "Ihr {brand}-Passwort wurde geändert",
            "body": (
                "Hallo {name},",
                "das Passwort für Ihr {brand}-Konto wurde am {date} geändert.",
                "Wenn Sie das waren, ist nichts weiter zu tun. Falls nicht, ändern Sie Ihr Passwort sofort in der "
                "{brand}-App oder auf der Website und prüfen Sie Ihre letzten Aktivitäten.",
            ),
            "cta": "Aktivitäten prüfen",
            "sign": "Ihr {brand}-Team",
        },
        "fr": {
            "subject": "Votre mot de passe {brand} a été modifié",
            "body": (
                "Bonjour {name},",
                "Le mot de passe de votre compte {brand} a été modifié le {date}.",
                "Si vous êtes à l'origine de ce changement, vous n'avez rien à faire. Sinon, changez immédiatement "
                "votre mot de passe depuis l'application ou le site {brand} et vérifiez l'activité récente.",
            ),
            "cta": "Vérifier l'activité",
            "sign": "L'équipe {brand}",
        },
        "es": {
            "subject": "Se ha cambiado tu contraseña de {brand}",
            "body": (
                "Hola {name}:",
                "La contraseña de tu cuenta de {brand} se cambió el {date}.",
                "Si has sido tú, no tienes que hacer nada. Si no, restablece tu contraseña de inmediato desde la app o "
                "la web de {brand} y revisa la actividad reciente.",
            ),
            "cta": "Revisar actividad",
            "sign": "El equipo de {brand}",
        },
    },
}
FOOTERS: dict[str, tuple[str, str, str]] = {
    "en": ("You are receiving this email because you have an account with {brand}.", "Privacy", "Help"),
    "de": ("Sie erhalten diese E-Mail, weil Sie ein Konto bei {brand} haben.", "Datenschutz", "Hilfe"),
    "fr": ("Vous recevez cet e-mail car vous avez un compte {brand}.", "Confidentialité", "Aide"),
    "es": ("Recibes este correo porque tienes una cuenta de {brand}.", "Privacidad", "Ayuda"),
}

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


# --- obfuscations -------------------------------------------------------------------------------------------------

_ASCII_HOMOGLYPHS = (("l", "1"), ("o", "0"), ("m", "rn"), ("w", "vv"), ("i", "l"), ("e", "3"))
_CYRILLIC = {"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "y": "у"}


def homoglyph_domain(domain: str, rng: np.random.Generator) -> tuple[str, str]:
    """(ASCII form for addresses and hrefs, form as a reader sees it) of a look-alike of a brand domain.

    Either an ASCII substitution (paypa1.com, rnicrosoft.com) or an IDN homograph with one Cyrillic letter, written
    in punycode (xn--…) where a machine reads it and in Unicode where a person does.
    """
    label, _, suffix = domain.partition(".")
    ascii_options = [(old, new) for old, new in _ASCII_HOMOGLYPHS if old in label]
    cyrillic_options = [letter for letter in _CYRILLIC if letter in label]
    if cyrillic_options and (not ascii_options or rng.random() < 0.35):
        letter = cyrillic_options[int(rng.integers(0, len(cyrillic_options)))]
        position = label.index(letter)
        unicode_label = label[:position] + _CYRILLIC[letter] + label[position + 1 :]
        return f"{unicode_label.encode('idna').decode('ascii')}.{suffix}", f"{unicode_label}.{suffix}"
    old, new = ascii_options[int(rng.integers(0, len(ascii_options)))]
    positions = [index for index in range(len(label)) if label.startswith(old, index)]
    position = positions[int(rng.integers(0, len(positions)))]
    spoof = f"{label[:position]}{new}{label[position + len(old) :]}.{suffix}"
    return spoof, spoof


_ZW_CHARS = ("\u200b", "\u200c", "\u200d", "\u2060")


def insert_zero_width(text: str, rng: np.random.Generator, *, share: float = 0.5) -> str:
    """Hide invisible characters inside about `share` of the words of 6+ letters (at least one when any exists)."""
    words = text.split(" ")
    eligible = [index for index, word in enumerate(words) if sum(char.isalpha() for char in word) >= 6]
    if not eligible:
        return text
    chosen = [index for index in eligible if rng.random() < share] or [eligible[0]]
    for index in chosen:
        word = words[index]
        letters = [pos for pos in range(1, len(word)) if word[pos - 1].isalpha() and word[pos].isalpha()]
        cut = letters[int(rng.integers(0, len(letters)))]
        words[index] = word[:cut] + _ZW_CHARS[int(rng.integers(0, len(_ZW_CHARS)))] + word[cut:]
    return " ".join(words)


def _token(rng: np.random.Generator, length: int) -> str:
    alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    return "".join(alphabet[int(rng.integers(0, len(alphabet)))] for _ in range(length))


def _pick(rng: np.random.Generator, options: Sequence[object]) -> object:
    return options[int(rng.integers(0, len(options)))]


# --- rendering one message ----------------------------------------------------------------------------------------


def _person(rng: np.random.Generator, language: str) -> tuple[str, str]:
    first, last = _pick(rng, PEOPLE[language])  # type: ignore[misc]
    name = f"{first} {last}"
    domain = str(_pick(rng, RECIPIENT_DOMAINS))
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
        return f"{label}-{_pick(rng, PHISH_WORDS)}.{_pick(rng, PHISH_TLDS)}"
    return str(_pick(rng, COMPROMISED_SITES))


def _render_phish(campaign: str, rng: np.random.Generator, language: str, obfuscation: str) -> tuple[Mail, dict]:
    name, recipient = _person(rng, language)
    sent_at = _sent_at(rng)
    values = {"name": name.split()[0], "fullname": name, "date": local_date(sent_at + timedelta(days=3), language)}
    template = TEMPLATES[campaign][language]
    params: dict[str, object] = {}
    reply_to = None
    cta_url = None
    shown_url = None
    auth = _pick(rng, ("none", "softfail", "spf_only", None))
    if campaign in ("credential_harvest", "delivery_notice", "mfa_fatigue"):
        if campaign == "credential_harvest":
            brand_domain = str(_pick(rng, CREDENTIAL_BRANDS[language]))
        elif campaign == "delivery_notice":
            brand_domain = str(_pick(rng, CARRIERS[language]))
        else:
            brand_domain = str(_pick(rng, MFA_BRANDS))
        brand = BRAND_NAMES[brand_domain]
        values.update(
            brand=brand,
            tracking=f"{_pick(rng, ('JD', 'CX', 'LP', 'RR'))}{int(rng.integers(10**9, 10**10))}",
            fee=money(float(rng.choice([1.99, 2.49, 2.99, 3.45])), language),
        )
        path = f"/{_pick(rng, ('signin', 'verify', 'auth', 'track', 'pay', 'session'))}/{_token(rng, 10)}"
        if obfuscation == "homoglyph":
            spoof, _ = homoglyph_domain(brand_domain, rng)
            sender_domain = link_domain = spoof
            auth = "spf_only"  # the phisher's own domain authenticates: clean headers
        else:
            link_domain = _phish_domain(rng, brand_domain)
            sender_domain = str(_pick(rng, (f"notify-{_token(rng, 4).lower()}.{_pick(rng, PHISH_TLDS)}", link_domain)))
        cta_url = f"https://{link_domain}{path}"
        if obfuscation == "shortener":
            cta_url = f"https://{_pick(rng, SHORTENERS)}/{_token(rng, 7)}"
        if obfuscation == "html_only":
            shown_url = f"https://www.{brand_domain}/{_pick(rng, ('account', 'login', 'help'))}"
        sender = f"{_pick(rng, ('no-reply', 'service', 'security', 'info'))}@{sender_domain}"
        sender_name = brand if campaign != "mfa_fatigue" else f"{brand} Security"
        params["brand"] = brand_domain
    elif campaign == "invoice_fraud":
        vendor, vendor_domain = _pick(rng, VENDORS[language])  # type: ignore[misc]
        contact_name, _ = _person(rng, language)
        spoof_label = vendor_domain.split(".")[0]
        swap = int(rng.integers(1, len(spoof_label) - 2))
        spoof_label = spoof_label[:swap] + spoof_label[swap + 1] + spoof_label[swap] + spoof_label[swap + 2 :]
        sender_domain = f"{spoof_label}.{vendor_domain.split('.', 1)[1]}"
        sender = f"{ascii_fold(contact_name.split()[0])}.{ascii_fold(contact_name.split()[1])}@{sender_domain}"
        sender_name = contact_name
        reply_to = f"{ascii_fold(contact_name.split()[1])}.accounts@{_pick(rng, FREEMAIL)}"
        auth = "pass"  # a look-alike of a vendor (not a known brand) with its own valid DMARC: clean headers
        values.update(
            vendor=vendor,
            contact=contact_name,
            invoice=f"{_pick(rng, ('INV', 'RE', 'FA', 'FAC'))}-{int(rng.integers(2024000, 2024999))}",
            amount=money(float(rng.integers(1_800, 48_000)) + 0.5 * int(rng.integers(0, 2)), language),
            iban=f"{_pick(rng, ('GB29', 'DE44', 'FR76', 'ES91', 'LT12'))} {int(rng.integers(1000, 9999))} "
            f"{int(rng.integers(1000, 9999))} {int(rng.integers(1000, 9999))} {int(rng.integers(1000, 9999))}",
            bic=f"{_token(rng, 4).upper()}{_pick(rng, ('GB', 'DE', 'FR', 'ES', 'LT'))}2X",
        )
        params["vendor_domain"] = vendor_domain
    else:  # gift_card: the "CEO" writes from a free-mail account
        ceo_name, _ = _person(rng, language)
        first, last = ceo_name.split()
        sender = f"{ascii_fold(first)}.{ascii_fold(last)}.office@{_pick(rng, FREEMAIL)}"
        sender_name = ceo_name
        reply_to = f"{ascii_fold(first)}{int(rng.integers(10, 99))}@{_pick(rng, FREEMAIL)}"
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
        parts="html" if obfuscation == "html_only" else str(_pick(rng, ("both", "both", "text"))),
        sender_ip=f"198.51.100.{int(rng.integers(2, 254))}",
    )
    return mail, params


def _render_benign(kind: str, rng: np.random.Generator, language: str) -> tuple[Mail, dict]:
    name, recipient = _person(rng, language)
    sent_at = _sent_at(rng)
    if kind == "order_confirmation":
        brand_domain = str(_pick(rng, SHOPS[language]))
    elif kind == "shipping_update":
        brand_domain = str(_pick(rng, CARRIERS[language]))
    else:
        brand_domain = str(_pick(rng, CREDENTIAL_BRANDS[language]))
    brand = BRAND_NAMES[brand_domain]
    values = {
        "name": name.split()[0],
        "brand": brand,
        "date": local_date(sent_at + timedelta(days=int(rng.integers(1, 5))), language),
        "order": f"{int(rng.integers(100, 999))}-{int(rng.integers(1_000_000, 9_999_999))}",
        "tracking": f"{_pick(rng, ('1Z', 'JJD', 'CB', 'PQ'))}{int(rng.integers(10**9, 10**10))}",
        "amount": money(float(rng.integers(900, 25_000)) / 100, language),
    }
    subject, paragraphs, cta_text, sign = _fill(TEMPLATES[kind][language], values)
    path = {"order_confirmation": "/your-orders/", "shipping_update": "/tracking/", "account_notice": "/security/"}
    notice, privacy, help_ = FOOTERS[language]
    esp = _pick(rng, (None, "bounces.sparkpostmail.com", "sendgrid.net", "mktomail.com"))
    return_path = f"bounce-{_token(rng, 8).lower()}@{esp}" if esp else f"bounce@mail.{brand_domain}"
    mail = Mail(
        sender_name=brand,
        sender=f"{_pick(rng, ('no-reply', 'noreply', 'notifications', 'info'))}@{brand_domain}",
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
        parts=str(_pick(rng, ("both", "both", "html"))),
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
    if not 0 <= seed < MAX_SEED:
        raise ValueError(f"seed must be in [0, 2**62), got {seed}")
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


def _row(generator: str, language: str, obfuscation: str, seed: int) -> dict[str, object]:
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


# --- lures around feed URLs ---------------------------------------------------------------------------------------


def url_lure(url: str, brand: str | None, seed: int, *, feed: str) -> dict[str, object]:
    """A phishing row for a feed entry that has a URL but no email (APWG-style URL feeds): the real URL wrapped in
    the English credential-harvest template, sent in the brand's name. The message is synthetic (generator
    "url_lure", its parameters name the URL, brand and feed); the link is the feed's."""
    if not 0 <= seed < MAX_SEED:
        raise ValueError(f"seed must be in [0, 2**62), got {seed}")
    rng = np.random.default_rng(seed)
    name, recipient = _person(rng, "en")
    shown_brand = brand.strip() if brand and brand.strip() else "Account"
    values = {"name": name.split()[0], "brand": shown_brand}
    subject, paragraphs, cta_text, sign = _fill(TEMPLATES["credential_harvest"]["en"], values)
    sender_domain = f"notify-{_token(rng, 5).lower()}.{_pick(rng, PHISH_TLDS)}"
    mail = Mail(
        sender_name=shown_brand,
        sender=f"{_pick(rng, ('no-reply', 'service', 'security'))}@{sender_domain}",
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


# --- perturbation of real phishing emails -------------------------------------------------------------------------


def perturb(frame: pl.DataFrame, seed: int) -> pl.DataFrame:
    """Zero-width variants of real phishing emails: invisible characters hidden inside words of their text/plain
    bodies (re-encoded as quoted-printable UTF-8). Legitimate rows, and messages whose text cannot be rewritten
    faithfully (no plain-text part, parse warnings), are skipped, so the result can be shorter than the input."""
    if not 0 <= seed < MAX_SEED:
        raise ValueError(f"seed must be in [0, 2**62), got {seed}")
    rows = []
    rng = np.random.default_rng(seed)
    for row in validate_emails(frame, check_hashes=False).sort("email_id").iter_rows(named=True):
        if row["label"] != "Phishing" or json.loads(row["parse_warnings"]):
            continue
        rewritten = _zero_width_message(row["raw_email"], rng)
        if rewritten is None:
            continue
        analysis = detectors.analyze(rewritten)
        if "zero_width_obfuscation" not in analysis.types or analysis.warnings:
            continue
        rows.append(
            {
                **{column: row[column] for column in ("language", "label", "scenario")},
                "raw_email": rewritten,
                "source_corpus": SYNTHETIC_CORPUS,
                "generator": "perturb_zero_width",
                "generator_params": stable_json(
                    {"base_email_id": row["email_id"], "base_corpus": row["source_corpus"]}
                ),
                "generator_seed": seed,
                **detectors.item_fields(rewritten),
            }
        )
    return frame_from_rows(rows).unique("content_hash", keep="first", maintain_order=True)


def _zero_width_message(raw: str, rng: np.random.Generator) -> str | None:
    """The message with zero-width characters in its text/plain parts, or None when it has no rewritable part."""
    import email

    message = email.message_from_string(raw)
    changed = False
    for part in message.walk():
        if part.get_content_type() != "text/plain" or part.get_filename() is not None:
            continue
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes):
            continue
        try:
            text = payload.decode(part.get_content_charset() or "utf-8")
        except (LookupError, UnicodeDecodeError):
            return None
        new_text = "\n".join(insert_zero_width(line, rng, share=0.3) for line in text.split("\n"))
        if new_text == text:
            continue
        del part["Content-Transfer-Encoding"]
        part.set_payload(quopri.encodestring(new_text.encode("utf-8")).decode("ascii"))
        part["Content-Transfer-Encoding"] = "quoted-printable"
        part.set_param("charset", "utf-8")
        changed = True
    return message.as_string() if changed else None


# --- the balanced mix ---------------------------------------------------------------------------------------------


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
    if not 0 <= seed < MAX_SEED:
        raise ValueError(f"seed must be in [0, 2**62), got {seed}")
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
    generated = frame_from_rows([_row(*entry) for entry in plan])
    combined = pl.concat([perturbed.select(EMAIL_COLUMNS), generated]) if perturbed.height else generated
    if combined["content_hash"].is_duplicated().any():
        raise RuntimeError("generate produced duplicate messages; seeds collided")
    return validate_emails(combined)
