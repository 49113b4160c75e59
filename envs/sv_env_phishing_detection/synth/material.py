"""The localized material messages are made of: people, recipient domains, brands and their domains, carriers,
shops, vendors, the domains phishers use, month names, and how dates and amounts are written per language."""

from __future__ import annotations

import unicodedata
from datetime import datetime

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
