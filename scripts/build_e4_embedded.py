"""Write the E4 embedded corpus and the offline reputation store, deterministically.

envs/sv_env_phishing_detection/data/embedded_emails.jsonl holds 320 complete RFC 5322 / MIME messages (one JSON
object a line: raw_email, label, language, scenario, case), 20 hand-written cases × 4 languages (en, de, fr, es) ×
4 variants (recipients, amounts, brands, domains and attachments drawn from a fixed seed). Half are phishing, half
legitimate transactional mail and correspondence, and the hard cases are deliberate: phish with clean
authentication (a vendor look-alike with its own valid DMARC, a compromised site sending malware, a document lure on
a cloud host), CEO gift-card requests from free-mail accounts, and legitimate mail that trips the rules (password
resets, sign-in alerts, click-tracked newsletters with shorteners, a genuine change of bank details, help-desk
Reply-To addresses). Its texts are written separately from the synthetic templates (synth.TEMPLATES), so a model
trained on synthetic data is not evaluated on its own templates. Every message is checked by the detectors against
what its case promises (indicators that must fire); a failed check stops the build.

envs/sv_env_phishing_detection/data/reputation.json is the URL-reputation tool's offline store: brand and
mail-service domains (allow-listed), the corpus's legitimate domains (known for years, unlisted) and its phishing
domains (young; most block-listed, some not yet). Its dates are synthetic, counted to a fixed as_of date.

Names are fictitious; recipients use RFC 2606 example domains and sending addresses RFC 5737 documentation ranges.

    python scripts/build_e4_embedded.py           # rewrite both files
    python scripts/build_e4_embedded.py --check   # exit 1 if a file differs from what this script writes
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np

from sv_env_phishing_detection import detectors
from sv_env_phishing_detection.synth import (
    BRAND_NAMES,
    PEOPLE,
    Mail,
    ascii_fold,
    compose,
    homoglyph_domain,
    insert_zero_width,
    local_date,
    money,
)
from sv_shared.data.embedded import build_main, jsonl_text

SEED = 20240301
VARIANTS = 4
LANGUAGES = ("en", "de", "fr", "es")
START = datetime(2024, 3, 4, 6, 30, tzinfo=UTC)
AS_OF = date(2024, 12, 1)
DATA = Path(__file__).resolve().parents[1] / "envs" / "sv_env_phishing_detection" / "data"
EMAILS_FILE = DATA / "embedded_emails.jsonl"
STORE_FILE = DATA / "reputation.json"

Texts = dict[str, dict[str, object]]


@dataclass(frozen=True)
class Context:
    """What one variant of a case draws: its language, rng, recipient and send time."""

    language: str
    rng: np.random.Generator
    first: str
    full: str
    recipient: str
    sent_at: datetime

    def pick(self, options: tuple) -> object:
        return options[int(self.rng.integers(0, len(options)))]

    def token(self, length: int) -> str:
        alphabet = "abcdefghijkmnopqrstuvwxyz23456789"
        return "".join(alphabet[int(self.rng.integers(0, len(alphabet)))] for _ in range(length))

    def number(self, low: int, high: int) -> int:
        return int(self.rng.integers(low, high))

    def day(self, days: int) -> str:
        return local_date(self.sent_at + timedelta(days=days), self.language)


@dataclass(frozen=True)
class Case:
    key: str
    label: str
    scenario: str
    build: Callable[[Context], Mail]
    expect: frozenset[str] = frozenset()
    """Indicator types the detectors must find in every variant (the case's point); others may fire too."""


def _texts(texts: Texts, ctx: Context, **values: object) -> tuple[str, tuple[str, ...], str, str]:
    """(subject, paragraphs, call-to-action text, signature) of a case in the variant's language."""
    chosen = texts[ctx.language]
    fill = {"first": ctx.first, "full": ctx.full, **values}
    paragraphs = tuple(str(p).format(**fill) for p in chosen["body"])  # type: ignore[attr-defined]
    return (
        str(chosen["subject"]).format(**fill),
        paragraphs,
        str(chosen.get("cta", "")).format(**fill),
        str(chosen.get("sign", "")).format(**fill),
    )


def _by_language(ctx: Context, options: dict[str, tuple]) -> object:
    return ctx.pick(options[ctx.language])


def _ip(ctx: Context, net: str = "198.51.100") -> str:
    return f"{net}.{ctx.number(2, 254)}"


# --- phishing cases ---------------------------------------------------------------------------------------------

M365: Texts = {
    "en": {
        "subject": "Your mailbox storage is full (99%)",
        "body": (
            "Hello {first},",
            "Your mailbox {email} has reached 99% of its storage limit. Incoming messages are being held and will be "
            "deleted after 48 hours.",
            "To release held messages and upgrade your storage free of charge, sign in to verify your account.",
        ),
        "cta": "Release messages",
        "sign": "Microsoft 365 Admin Center",
    },
    "de": {
        "subject": "Ihr Postfach ist voll (99 %)",
        "body": (
            "Hallo {first},",
            "Ihr Postfach {email} hat 99 % des Speichers erreicht. Eingehende Nachrichten werden zurückgehalten und "
            "nach 48 Stunden gelöscht.",
            "Um die Nachrichten freizugeben und den Speicher kostenlos zu erweitern, melden Sie sich an, um Ihr Konto "
            "zu bestätigen.",
        ),
        "cta": "Nachrichten freigeben",
        "sign": "Microsoft 365 Admin Center",
    },
    "fr": {
        "subject": "Votre boîte aux lettres est pleine (99 %)",
        "body": (
            "Bonjour {first},",
            "Votre boîte {email} a atteint 99 % de son espace de stockage. Les messages entrants sont retenus et "
            "seront supprimés après 48 heures.",
            "Pour libérer vos messages et augmenter gratuitement votre espace, connectez-vous pour vérifier votre "
            "compte.",
        ),
        "cta": "Libérer mes messages",
        "sign": "Centre d'administration Microsoft 365",
    },
    "es": {
        "subject": "Su buzón está lleno (99 %)",
        "body": (
            "Hola {first}:",
            "Su buzón {email} ha alcanzado el 99 % de su capacidad. Los mensajes entrantes están retenidos y se "
            "eliminarán en 48 horas.",
            "Para liberar los mensajes y ampliar gratis su espacio, inicie sesión para verificar su cuenta.",
        ),
        "cta": "Liberar mensajes",
        "sign": "Centro de administración de Microsoft 365",
    },
}


def m365_quota(ctx: Context) -> Mail:
    domain = str(ctx.pick(("microsoft-mailadmin.com", "microsoft-storage-alert.net", "rnicrosoft-365.com")))
    subject, body, cta, sign = _texts(M365, ctx, email=ctx.recipient)
    return Mail(
        sender_name="Microsoft 365",
        sender=f"no-reply@{domain}",
        recipient_name=ctx.full,
        recipient=ctx.recipient,
        subject=subject,
        paragraphs=body,
        signature=sign,
        cta=(cta, f"https://{domain}/owa/release?u={ctx.token(16)}"),
        sent_at=ctx.sent_at,
        auth="spf_only",
        sender_ip=_ip(ctx),
    )


BANK_LOCK: Texts = {
    "en": {
        "subject": "Unusual activity: your online banking access has been restricted",
        "body": (
            "Dear customer,",
            "We detected an unusual sign-in attempt on your online banking. As a precaution, your access has been "
            "restricted.",
            "To restore access, confirm your identity using the secure link below. If we do not hear from you, your "
            "card will be suspended.",
        ),
        "sign": "{bank} Fraud Prevention",
    },
    "de": {
        "subject": "Ungewöhnliche Aktivität: Ihr Online-Banking wurde eingeschränkt",
        "body": (
            "Sehr geehrte Kundin, sehr geehrter Kunde,",
            "wir haben einen ungewöhnlichen Anmeldeversuch in Ihrem Online-Banking festgestellt. Zu Ihrer Sicherheit "
            "wurde der Zugang eingeschränkt.",
            "Bitte bestätigen Sie Ihre Identität über den folgenden sicheren Link. Ohne Ihre Bestätigung wird Ihre "
            "Karte gesperrt.",
        ),
        "sign": "{bank} Betrugsprävention",
    },
    "fr": {
        "subject": "Activité inhabituelle : votre accès en ligne a été restreint",
        "body": (
            "Chère cliente, cher client,",
            "Nous avons détecté une tentative de connexion inhabituelle à votre espace client. Par précaution, votre "
            "accès a été restreint.",
            "Pour rétablir l'accès, confirmez votre identité via le lien sécurisé ci-dessous. Sans réponse de votre "
            "part, votre carte sera bloquée.",
        ),
        "sign": "{bank} - Prévention de la fraude",
    },
    "es": {
        "subject": "Actividad inusual: se ha restringido su acceso a la banca online",
        "body": (
            "Estimado cliente:",
            "Hemos detectado un intento de acceso inusual a su banca online. Por precaución, hemos restringido el "
            "acceso.",
            "Para restablecerlo, confirme su identidad a través del enlace seguro. Si no recibimos respuesta, su "
            "tarjeta será bloqueada.",
        ),
        "sign": "{bank} - Prevención del fraude",
    },
}
BANKS: dict[str, tuple[tuple[str, str], ...]] = {
    "en": (("Chase", "chase.com"), ("Wells Fargo", "wellsfargo.com")),
    "de": (("Sparkasse", "sparkasse.de"), ("Commerzbank", "commerzbank.de")),
    "fr": (("Crédit Agricole", "credit-agricole.fr"), ("Société Générale", "societegenerale.fr")),
    "es": (("BBVA", "bbva.es"), ("Santander", "bancosantander.es")),
}


def bank_lock(ctx: Context) -> Mail:
    bank, bank_domain = _by_language(ctx, BANKS)  # type: ignore[misc]
    relay = str(ctx.pick(("secure-notice-center.com", "kundenservice-mitteilung.net", "alerte-client.info")))
    landing = str(ctx.pick(("verification-portal.online", "acces-restaurer.top", "banca-segura.site")))
    subject, body, _, sign = _texts(BANK_LOCK, ctx, bank=bank)
    return Mail(
        sender_name=bank,
        sender=f"alert@{relay}",
        recipient_name=ctx.full,
        recipient=ctx.recipient,
        subject=subject,
        paragraphs=body,
        signature=sign,
        cta=(f"https://www.{bank_domain}/secure/restore", f"https://{landing}/{ctx.token(8)}/restore"),
        sent_at=ctx.sent_at,
        reply_to=f"support@{landing}",
        auth="softfail",
        parts="html",
        sender_ip=_ip(ctx),
    )


PARCEL: Texts = {
    "en": {
        "subject": "{carrier}: Delivery attempt failed",
        "body": (
            "Your package could not be delivered due to an incomplete address. Update your address and pay the "
            "redelivery fee of {fee} within 24 hours: {url}",
        ),
    },
    "de": {
        "subject": "{carrier}: Zustellung fehlgeschlagen",
        "body": (
            "Ihr Paket konnte wegen einer unvollständigen Adresse nicht zugestellt werden. Bitte aktualisieren Sie "
            "Ihre Adresse und zahlen Sie die Gebühr von {fee} für die erneute Zustellung innerhalb von 24 Stunden: "
            "{url}",
        ),
    },
    "fr": {
        "subject": "{carrier} : échec de livraison",
        "body": (
            "Votre colis n'a pas pu être livré, l'adresse étant incomplète. Mettez à jour votre adresse et réglez les "
            "frais de nouvelle présentation de {fee} sous 24 h : {url}",
        ),
    },
    "es": {
        "subject": "{carrier}: entrega fallida",
        "body": (
            "No hemos podido entregar su envío porque la dirección está incompleta. Actualice su dirección y abone "
            "{fee} por la nueva entrega en 24 horas: {url}",
        ),
    },
}
CARRIER_BRANDS: dict[str, tuple[str, ...]] = {
    "en": ("UPS", "FedEx"),
    "de": ("DHL", "DPD"),
    "fr": ("Colissimo", "La Poste"),
    "es": ("Correos",),
}


def parcel_fee(ctx: Context) -> Mail:
    carrier = str(_by_language(ctx, CARRIER_BRANDS))
    sender_domain = str(ctx.pick(("parcel-redelivery.info", "zustellung-service.top", "suivi-colis.site")))
    url = f"https://{ctx.pick(('bit.ly', 'tinyurl.com', 'cutt.ly'))}/{ctx.token(7)}"
    subject, body, _, _ = _texts(
        PARCEL, ctx, carrier=carrier, fee=money(ctx.pick((1.99, 2.99, 1.45)), ctx.language), url=url
    )
    return Mail(
        sender_name=carrier,
        sender=f"info@{sender_domain}",
        recipient_name="",
        recipient=ctx.recipient,
        subject=subject,
        paragraphs=body,
        sent_at=ctx.sent_at,
        auth=None,
        parts="text",
        sender_ip=_ip(ctx, "203.0.113"),
    )


SUPPLIER: Texts = {
    "en": {
        "subject": "Supplier master data update - {vendor}",
        "body": (
            "Dear {first},",
            "Following our migration to a new banking partner, please update our supplier record before the next "
            "payment run. Our new account details are attached on company letterhead and summarised below:",
            "Account name: {vendor}\nIBAN: {iban}\nBIC: {bic}",
            "Payments sent to the previous account after {date} will be returned. Could you confirm once the change "
            "has been made?",
        ),
        "sign": "Kind regards,\n{contact}\nCredit Control, {vendor}",
    },
    "de": {
        "subject": "Aktualisierung Lieferantenstammdaten - {vendor}",
        "body": (
            "Guten Tag {full},",
            "nach dem Wechsel zu einer neuen Hausbank bitten wir Sie, unsere Stammdaten vor dem nächsten Zahlungslauf "
            "zu aktualisieren. Die neue Bankverbindung finden Sie im Anhang auf unserem Briefpapier:",
            "Kontoinhaber: {vendor}\nIBAN: {iban}\nBIC: {bic}",
            "Zahlungen auf die bisherige Verbindung nach dem {date} werden zurückgebucht. Können Sie mir die Änderung "
            "kurz bestätigen?",
        ),
        "sign": "Mit freundlichen Grüßen\n{contact}\nDebitorenbuchhaltung, {vendor}",
    },
    "fr": {
        "subject": "Mise à jour de nos coordonnées fournisseur - {vendor}",
        "body": (
            "Bonjour {first},",
            "Suite au changement de notre partenaire bancaire, merci de mettre à jour notre fiche fournisseur avant "
            "votre prochain cycle de paiement. Vous trouverez notre nouveau RIB en pièce jointe :",
            "Titulaire : {vendor}\nIBAN : {iban}\nBIC : {bic}",
            "Les paiements envoyés sur l'ancien compte après le {date} nous seront retournés. Pouvez-vous me confirmer "
            "la modification ?",
        ),
        "sign": "Cordialement,\n{contact}\nService recouvrement, {vendor}",
    },
    "es": {
        "subject": "Actualización de datos de proveedor - {vendor}",
        "body": (
            "Hola {first}:",
            "Tras el cambio de nuestra entidad bancaria, le rogamos que actualice nuestra ficha de proveedor antes de "
            "la próxima remesa de pagos. Adjuntamos el certificado de titularidad con los nuevos datos bancarios:",
            "Titular: {vendor}\nIBAN: {iban}\nBIC: {bic}",
            "Los pagos enviados a la cuenta anterior después del {date} serán devueltos. ¿Podría confirmarme el "
            "cambio?",
        ),
        "sign": "Un saludo,\n{contact}\nDepartamento de cobros, {vendor}",
    },
}
SUPPLIERS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "en": (
        ("Carrow & Finch Packaging Ltd", "carrowfinch.co.uk", "carrowfinch-uk.com"),
        ("Lakeside Industrial Supply", "lakeside-supply.com", "lakeside-suppIy.com"),
    ),
    "de": (
        ("Hansen Verpackungen GmbH", "hansen-verpackungen.de", "hansen-verpackung.de"),
        ("Krüger Elektrotechnik AG", "krueger-elektro.de", "krueger-eletkro.de"),
    ),
    "fr": (
        ("Imprimerie Vasseur", "imprimerie-vasseur.fr", "imprimerie-vaseur.fr"),
        ("Bâtiment Morel SAS", "batiment-morel.fr", "batiment-morel-sas.fr"),
    ),
    "es": (
        ("Envases Mediterráneo S.L.", "envases-mediterraneo.es", "envases-mediteraneo.es"),
        ("Talleres Ortega S.A.", "talleresortega.es", "talleres-ortega.es"),
    ),
}
IBAN_PREFIXES = ("GB33", "DE89", "FR14", "ES79", "LT60", "PT50")


def _iban(ctx: Context) -> str:
    return f"{ctx.pick(IBAN_PREFIXES)} " + " ".join(str(ctx.number(1000, 9999)) for _ in range(4))


def supplier_bank_change(ctx: Context) -> Mail:
    vendor, _, spoof = _by_language(ctx, SUPPLIERS)  # type: ignore[misc]
    contact = " ".join(_by_language(ctx, PEOPLE))  # type: ignore[arg-type]
    subject, body, _, sign = _texts(
        SUPPLIER,
        ctx,
        vendor=vendor,
        contact=contact,
        iban=_iban(ctx),
        bic=f"{ctx.token(4).upper()}LT2X",
        date=ctx.day(5),
    )
    slug = spoof.split(".")[0]
    return Mail(
        sender_name=contact,
        sender=f"{ascii_fold(contact.split()[0])}@{spoof}",
        recipient_name=ctx.full,
        recipient=ctx.recipient,
        subject=subject,
        paragraphs=body,
        signature=sign,
        sent_at=ctx.sent_at,
        auth="pass",  # the fraudster's look-alike domain has valid SPF, DKIM and DMARC of its own
        parts="both",
        attachments=((f"{slug}_bank_details.pdf", "application/pdf", _pdf(f"{vendor} bank details")),),
        sender_ip=_ip(ctx),
    )


CEO: Texts = {
    "en": {
        "subject": "Are you available?",
        "body": (
            "{first}, are you available right now? I need a quick favour. We are surprising a few clients today and I "
            "need you to purchase {count} Apple gift cards ({value} each). Keep this between us for now.",
            "Once you have them, send me photos of the codes. Let me know how soon you can do this.",
        ),
        "sign": "{ceo}\nCEO",
    },
    "de": {
        "subject": "Bist du erreichbar?",
        "body": (
            "{first}, bist du gerade erreichbar? Ich brauche kurz deine Hilfe. Wir wollen heute einige Kunden "
            "überraschen, dafür brauche ich {count} Google-Play-Geschenkkarten zu je {value}. Behalte das bitte "
            "vorerst für dich.",
            "Wenn du sie hast, schick mir Fotos der Codes. Sag mir, wie schnell das geht.",
        ),
        "sign": "{ceo}\nGeschäftsführung",
    },
    "fr": {
        "subject": "Es-tu disponible ?",
        "body": (
            "{first}, es-tu disponible tout de suite ? J'ai besoin d'un service rapide. Nous voulons faire une "
            "surprise à quelques clients aujourd'hui : achète {count} cartes cadeaux Amazon de {value} chacune. Garde "
            "ça pour toi pour l'instant.",
            "Dès que tu les as, envoie-moi une photo des codes. Dis-moi dans combien de temps c'est possible.",
        ),
        "sign": "{ceo}\nDirecteur général",
    },
    "es": {
        "subject": "¿Estás disponible?",
        "body": (
            "{first}, ¿estás disponible ahora? Necesito un favor rápido. Queremos sorprender hoy a algunos clientes y "
            "necesito que compres {count} tarjetas de regalo de Amazon de {value} cada una. De momento, que quede "
            "entre nosotros.",
            "Cuando las tengas, envíame fotos de los códigos. Dime cuánto tardarás.",
        ),
        "sign": "{ceo}\nDirector general",
    },
}


def ceo_gift_cards(ctx: Context) -> Mail:
    ceo = " ".join(_by_language(ctx, PEOPLE))  # type: ignore[arg-type]
    provider = str(ctx.pick(("gmail.com", "outlook.com")))
    subject, body, _, sign = _texts(
        CEO, ctx, ceo=ceo, count=ctx.number(4, 9), value=money(ctx.pick((100, 200, 250)), ctx.language)
    )
    first, last = (ascii_fold(part) for part in ceo.split())
    return Mail(
        sender_name=ceo,
        sender=f"{first}.{last}.ceo@{provider}",
        recipient_name=ctx.full,
        recipient=ctx.recipient,
        subject=subject,
        paragraphs=body,
        signature=sign,
        sent_at=ctx.sent_at,
        auth=str(ctx.pick(("pass", "spf_only"))),
        parts="text",
        sender_ip=_ip(ctx, "192.0.2"),
    )


MFA: Texts = {
    "en": {
        "subject": "Security alert: repeated sign-in approvals pending",
        "body": (
            "Hi {first},",
            "We have sent several sign-in requests to your authenticator app that are still unanswered. To stop "
            "further prompts, approve this sign-in request from the verification portal within the next 2 hours.",
        ),
        "cta": "Open verification portal",
        "sign": "{brand} Security",
    },
    "de": {
        "subject": "Sicherheitshinweis: ausstehende Anmeldebestätigungen",
        "body": (
            "Hallo {first},",
            "an Ihre Authenticator-App wurden mehrere Anmeldeanfragen gesendet, die noch offen sind. Um weitere "
            "Anfragen zu stoppen, müssen Sie die Anmeldeanfrage genehmigen, und zwar innerhalb der nächsten 2 Stunden "
            "über das Verifizierungsportal.",
        ),
        "cta": "Verifizierungsportal öffnen",
        "sign": "{brand} Sicherheit",
    },
    "fr": {
        "subject": "Alerte de sécurité : validations de connexion en attente",
        "body": (
            "Bonjour {first},",
            "Plusieurs demandes de connexion envoyées à votre application d'authentification sont restées sans "
            "réponse. Pour arrêter ces notifications, approuvez la demande de connexion depuis le portail de "
            "vérification dans les 2 heures.",
        ),
        "cta": "Ouvrir le portail",
        "sign": "Sécurité {brand}",
    },
    "es": {
        "subject": "Alerta de seguridad: aprobaciones de inicio de sesión pendientes",
        "body": (
            "Hola {first}:",
            "Hemos enviado varias solicitudes de inicio de sesión a su aplicación de autenticación que siguen sin "
            "respuesta. Para detener los avisos, apruebe la solicitud de inicio de sesión desde el portal de "
            "verificación en las próximas 2 horas.",
        ),
        "cta": "Abrir el portal",
        "sign": "Seguridad de {brand}",
    },
}


def mfa_push(ctx: Context) -> Mail:
    brand = str(ctx.pick(("Okta", "Microsoft")))
    subject, body, cta, sign = _texts(MFA, ctx, brand=brand)
    host = f"203.0.113.{ctx.number(2, 254)}"
    return Mail(
        sender_name=f"{brand} Verify",
        sender=f"verify@{ctx.pick(('idp-notify.com', 'mfa-alerts.net'))}",
        recipient_name=ctx.full,
        recipient=ctx.recipient,
        subject=subject,
        paragraphs=body,
        signature=sign,
        cta=(cta, f"http://{host}/{brand.lower()}/verify?session={ctx.token(20)}"),
        sent_at=ctx.sent_at,
        auth=str(ctx.pick(("none", "softfail"))),
        sender_ip=_ip(ctx),
    )


MALWARE: Texts = {
    "en": {
        "subject": "Invoice {invoice} - overdue",
        "body": (
            "Hello,",
            "Please find attached invoice {invoice} for the services delivered last month. Kindly settle the balance "
            "of {amount} at your earliest convenience.",
        ),
        "sign": "Best regards,\n{contact}\n{company}",
    },
    "de": {
        "subject": "Rechnung {invoice} - Zahlungserinnerung",
        "body": (
            "Guten Tag,",
            "anbei erhalten Sie die Rechnung {invoice} für die im letzten Monat erbrachten Leistungen. Bitte "
            "begleichen Sie den offenen Betrag von {amount} zeitnah.",
        ),
        "sign": "Mit freundlichen Grüßen\n{contact}\n{company}",
    },
    "fr": {
        "subject": "Facture {invoice} - relance",
        "body": (
            "Bonjour,",
            "Veuillez trouver ci-joint la facture {invoice} pour les prestations du mois dernier. Merci de régler le "
            "solde de {amount} dans les meilleurs délais.",
        ),
        "sign": "Cordialement,\n{contact}\n{company}",
    },
    "es": {
        "subject": "Factura {invoice} - recordatorio",
        "body": (
            "Buenos días:",
            "Adjuntamos la factura {invoice} correspondiente a los servicios del mes pasado. Le rogamos que abone el "
            "importe de {amount} a la mayor brevedad.",
        ),
        "sign": "Un saludo,\n{contact}\n{company}",
    },
}
COMPROMISED: dict[str, tuple[tuple[str, str], ...]] = {
    "en": (("Riverside Dental Practice", "riverside-dental.co.uk"), ("Oakmont Plumbing", "oakmontplumbing.com")),
    "de": (("Bäckerei Schulte", "baeckerei-schulte.de"), ("Autohaus Lindner", "autohaus-lindner.de")),
    "fr": (("Cabinet Berthier", "cabinet-berthier.fr"), ("Garage du Centre", "garageducentre.fr")),
    "es": (("Clínica Dental Sol", "clinicadentalsol.es"), ("Reformas Castillo", "reformascastillo.es")),
}
INVOICE_WORD = {"en": "Invoice", "de": "Rechnung", "fr": "Facture", "es": "Factura"}
PAYLOADS = (
    (".pdf.exe", "application/octet-stream"),
    (".html", "text/html"),
    (".iso", "application/x-iso9660-image"),
    (".docm", "application/vnd.ms-word.document.macroEnabled.12"),
)


def malware_invoice(ctx: Context) -> Mail:
    company, domain = _by_language(ctx, COMPROMISED)  # type: ignore[misc]
    contact = " ".join(_by_language(ctx, PEOPLE))  # type: ignore[arg-type]
    invoice = f"{ctx.number(10_000, 99_999)}"
    subject, body, _, sign = _texts(
        MALWARE,
        ctx,
        invoice=invoice,
        amount=money(ctx.number(300, 4_000) + 0.9, ctx.language),
        contact=contact,
        company=company,
    )
    suffix, content_type = PAYLOADS[ctx.number(0, len(PAYLOADS))]
    return Mail(
        sender_name=contact,
        sender=f"{ascii_fold(contact.split()[1])}@{domain}",
        recipient_name=ctx.full,
        recipient=ctx.recipient,
        subject=subject,
        paragraphs=body,
        signature=sign,
        sent_at=ctx.sent_at,
        auth="pass",  # a compromised mailbox of a real small business: authentication passes
        parts="text",
        attachments=((f"{INVOICE_WORD[ctx.language]}_{invoice}{suffix}", content_type, _harmless(suffix)),),
        sender_ip=_ip(ctx, "192.0.2"),
    )


PAYMENT_HOLD: Texts = {
    "en": {
        "subject": "Your payment of {amount} is on hold",
        "body": (
            "Hello {first},",
            "A payment of {amount} to {merchant} is on hold because we noticed unusual activity on your account.",
            "To release the payment and avoid suspension, log in to confirm your account information.",
        ),
        "cta": "Log in",
        "sign": "PayPal",
    },
    "de": {
        "subject": "Ihre Zahlung über {amount} wurde angehalten",
        "body": (
            "Hallo {first},",
            "eine Zahlung über {amount} an {merchant} wurde angehalten, da wir ungewöhnliche Aktivitäten in Ihrem "
            "Konto festgestellt haben.",
            "Um die Zahlung freizugeben, bestätigen Sie Ihre Daten sofort über den folgenden Link.",
        ),
        "cta": "Einloggen",
        "sign": "PayPal",
    },
    "fr": {
        "subject": "Votre paiement de {amount} est en attente",
        "body": (
            "Bonjour {first},",
            "Un paiement de {amount} à {merchant} est en attente, car nous avons remarqué une activité inhabituelle "
            "sur votre compte.",
            "Pour débloquer le paiement, vérifiez vos informations immédiatement via le lien ci-dessous.",
        ),
        "cta": "Connexion",
        "sign": "PayPal",
    },
    "es": {
        "subject": "Su pago de {amount} está retenido",
        "body": (
            "Hola {first}:",
            "Un pago de {amount} a {merchant} está retenido porque hemos detectado actividad inusual en su cuenta.",
            "Para liberar el pago, verifique sus datos de inmediato a través del siguiente enlace.",
        ),
        "cta": "Iniciar sesión",
        "sign": "PayPal",
    },
}
MERCHANTS = ("Steam Games", "Zalando", "Booking Holdings", "Apple Services", "Decathlon")


def paypal_zero_width(ctx: Context) -> Mail:
    local_brand = {"en": "paypal.com", "de": "paypal.de", "fr": "paypal.fr", "es": "paypal.es"}[ctx.language]
    spoof, _ = homoglyph_domain(local_brand, ctx.rng)
    while not spoof.startswith("xn--"):
        spoof, _ = homoglyph_domain(local_brand, ctx.rng)
    subject, body, cta, sign = _texts(
        PAYMENT_HOLD, ctx, amount=money(ctx.number(80, 900) + 0.99, ctx.language), merchant=ctx.pick(MERCHANTS)
    )
    body = tuple(insert_zero_width(paragraph, ctx.rng, share=0.4) for paragraph in body)
    return Mail(
        sender_name="PayPal",
        sender=f"service@{ctx.pick(('pp-resolution.com', 'account-notices.net'))}",
        recipient_name=ctx.full,
        recipient=ctx.recipient,
        subject=insert_zero_width(subject, ctx.rng, share=0.6),
        paragraphs=body,
        signature=sign,
        cta=(cta, f"https://{spoof}/signin?country.x={ctx.language.upper()}&token={ctx.token(12)}"),
        sent_at=ctx.sent_at,
        auth=str(ctx.pick(("none", "spf_only"))),
        parts="html",
        sender_ip=_ip(ctx),
    )


DOC: Texts = {
    "en": {
        "subject": "{sender} sent you a document to review and sign",
        "body": (
            "{sender} sent you a document to review and sign.",
            "Document: {title}\nPages: 3",
            "Please review the document at your earliest convenience. The link is valid for 5 days.",
        ),
        "cta": "REVIEW DOCUMENT",
        "sign": "Do not share this email. It contains a secure link to DocuSign.",
    },
    "de": {
        "subject": "{sender} hat Ihnen ein Dokument zur Unterschrift gesendet",
        "body": (
            "{sender} hat Ihnen ein Dokument zur Prüfung und Unterschrift gesendet.",
            "Dokument: {title}\nSeiten: 3",
            "Bitte prüfen Sie das Dokument zeitnah. Der Link ist 5 Tage gültig.",
        ),
        "cta": "DOKUMENT PRÜFEN",
        "sign": "Leiten Sie diese E-Mail nicht weiter. Sie enthält einen sicheren Link zu DocuSign.",
    },
    "fr": {
        "subject": "{sender} vous a envoyé un document à signer",
        "body": (
            "{sender} vous a envoyé un document à examiner et à signer.",
            "Document : {title}\nPages : 3",
            "Merci d'examiner le document dès que vous le pouvez. Le lien est valable 5 jours.",
        ),
        "cta": "EXAMINER LE DOCUMENT",
        "sign": "Ne partagez pas cet e-mail. Il contient un lien sécurisé vers DocuSign.",
    },
    "es": {
        "subject": "{sender} le ha enviado un documento para firmar",
        "body": (
            "{sender} le ha enviado un documento para revisar y firmar.",
            "Documento: {title}\nPáginas: 3",
            "Revise el documento cuando pueda. El enlace es válido durante 5 días.",
        ),
        "cta": "REVISAR DOCUMENTO",
        "sign": "No comparta este correo. Contiene un enlace seguro a DocuSign.",
    },
}
DOC_TITLES = {
    "en": ("Q2 Compensation Adjustment.pdf", "Updated Employee Handbook.pdf", "Settlement Agreement.pdf"),
    "de": ("Gehaltsanpassung Q2.pdf", "Aktualisierte Betriebsvereinbarung.pdf", "Aufhebungsvertrag.pdf"),
    "fr": ("Revalorisation salariale T2.pdf", "Règlement intérieur mis à jour.pdf", "Protocole d'accord.pdf"),
    "es": ("Ajuste salarial T2.pdf", "Manual del empleado actualizado.pdf", "Acuerdo de conciliación.pdf"),
}
CLOUD_HOSTS = ("storage.googleapis.com", "docs-share.web.app", "files.pages.dev")


def shared_document(ctx: Context) -> Mail:
    colleague = " ".join(_by_language(ctx, PEOPLE))  # type: ignore[arg-type]
    _, domain = _by_language(ctx, COMPROMISED)  # type: ignore[misc]
    subject, body, cta, sign = _texts(DOC, ctx, sender=colleague, title=ctx.pick(DOC_TITLES[ctx.language]))
    return Mail(
        sender_name="DocuSign",
        sender=f"dse-notify@{domain}",
        recipient_name=ctx.full,
        recipient=ctx.recipient,
        subject=subject,
        paragraphs=body,
        signature=sign,
        cta=(cta, f"https://{ctx.pick(CLOUD_HOSTS)}/{ctx.token(10)}/index.html#{ascii_fold(ctx.first)}"),
        sent_at=ctx.sent_at,
        auth="pass",
        parts="both",
        sender_ip=_ip(ctx, "192.0.2"),
    )


REFUND: Texts = {
    "en": {
        "subject": "Tax refund notification: you are eligible for a refund of {amount}",
        "body": (
            "Dear taxpayer,",
            "After the annual calculation of your tax activity, we have determined that you are eligible to receive a "
            "tax refund of {amount}.",
            "To receive your refund, submit the refund request and confirm your details before {date}.",
        ),
        "cta": "Claim refund",
        "sign": "HM Revenue & Customs",
    },
    "de": {
        "subject": "Steuererstattung: Ihnen steht eine Rückzahlung von {amount} zu",
        "body": (
            "Sehr geehrte Steuerpflichtige, sehr geehrter Steuerpflichtiger,",
            "nach der jährlichen Berechnung Ihrer Steuerdaten steht Ihnen eine Erstattung von {amount} zu.",
            "Um die Erstattung zu erhalten, bestätigen Sie Ihre Daten bis zum {date} über das Online-Formular.",
        ),
        "cta": "Erstattung beantragen",
        "sign": "ELSTER - Ihr Online-Finanzamt",
    },
    "fr": {
        "subject": "Avis de remboursement : vous êtes éligible à un remboursement de {amount}",
        "body": (
            "Madame, Monsieur,",
            "Après le calcul annuel de votre impôt, vous êtes éligible à un remboursement de {amount}.",
            "Pour recevoir votre remboursement, vérifiez vos coordonnées avant le {date} via le formulaire en ligne.",
        ),
        "cta": "Demander le remboursement",
        "sign": "Direction générale des Finances publiques",
    },
    "es": {
        "subject": "Aviso de devolución: tiene derecho a una devolución de {amount}",
        "body": (
            "Estimado contribuyente:",
            "Tras el cálculo anual de su actividad fiscal, tiene derecho a una devolución de {amount}.",
            "Para recibirla, verifique sus datos antes del {date} mediante el formulario en línea.",
        ),
        "cta": "Solicitar devolución",
        "sign": "Agencia Tributaria",
    },
}
TAX_SENDERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "en": ("HMRC", ("hmrc-refund-portal.com", "hmrc-taxrefund.net")),
    "de": ("ELSTER Finanzamt", ("elster-erstattung.com", "elster-online-service.net")),
    "fr": ("Finances Publiques", ("impots-gouv-remboursement.com", "impots-remboursement.info")),
    "es": ("Agencia Tributaria", ("agenciatributaria-devoluciones.com", "agenciatributaria-online.net")),
}


def tax_refund(ctx: Context) -> Mail:
    name, domains = TAX_SENDERS[ctx.language]
    domain = str(ctx.pick(domains))
    subject, body, cta, sign = _texts(
        REFUND, ctx, amount=money(ctx.number(180, 900) + 0.42, ctx.language), date=ctx.day(4)
    )
    return Mail(
        sender_name=name,
        sender=f"noreply@{domain}",
        recipient_name=ctx.full,
        recipient=ctx.recipient,
        subject=subject,
        paragraphs=body,
        signature=sign,
        cta=(cta, f"https://{domain}/refund/{ctx.token(12)}"),
        sent_at=ctx.sent_at,
        auth=str(ctx.pick(("none", "spf_only"))),
        sender_ip=_ip(ctx),
    )


# --- legitimate cases -------------------------------------------------------------------------------------------

SHIPPED: Texts = {
    "en": {
        "subject": "Your Amazon.com order #{order} has shipped",
        "body": (
            "Hello {first},",
            'Your package with "{item}" has shipped and is on its way. Estimated delivery: {date}.',
            "You can track your package and manage your order in Your Orders.",
        ),
        "cta": "Track package",
        "sign": "Thank you for shopping with us.\nAmazon.com",
    },
    "de": {
        "subject": "Ihre Amazon.de Bestellung #{order} wurde versandt",
        "body": (
            "Hallo {first},",
            'Ihr Paket mit "{item}" wurde versandt und ist unterwegs. Voraussichtliche Zustellung: {date}.',
            'Unter "Meine Bestellungen" können Sie Ihre Sendung verfolgen.',
        ),
        "cta": "Sendung verfolgen",
        "sign": "Vielen Dank für Ihren Einkauf.\nAmazon.de",
    },
    "fr": {
        "subject": "Votre commande Amazon.fr n° {order} a été expédiée",
        "body": (
            "Bonjour {first},",
            "Votre colis contenant « {item} » a été expédié. Livraison prévue : {date}.",
            "Vous pouvez suivre votre colis dans Vos commandes.",
        ),
        "cta": "Suivre votre colis",
        "sign": "Merci pour votre achat.\nAmazon.fr",
    },
    "es": {
        "subject": "Se ha enviado tu pedido de Amazon.es n.º {order}",
        "body": (
            "Hola {first}:",
            "Tu paquete con «{item}» se ha enviado y está en camino. Entrega estimada: {date}.",
            "Puedes seguir el envío en Mis pedidos.",
        ),
        "cta": "Seguir el paquete",
        "sign": "Gracias por tu compra.\nAmazon.es",
    },
}
ITEMS = {
    "en": ("Anker USB-C charger", "Kindle Paperwhite", "Stainless steel water bottle"),
    "de": ("Tchibo Kaffeemühle", "Kindle Paperwhite", "Bosch Akkuschrauber"),
    "fr": ("Bouilloire électrique Moulinex", "Kindle Paperwhite", "Sac à dos Quechua"),
    "es": ("Auriculares inalámbricos", "Kindle Paperwhite", "Sartén antiadherente"),
}
AMAZON = {"en": "amazon.com", "de": "amazon.de", "fr": "amazon.fr", "es": "amazon.es"}


def order_shipped(ctx: Context) -> Mail:
    domain = AMAZON[ctx.language]
    order = f"{ctx.number(100, 999)}-{ctx.number(1_000_000, 9_999_999)}-{ctx.number(1_000_000, 9_999_999)}"
    subject, body, cta, sign = _texts(SHIPPED, ctx, order=order, item=ctx.pick(ITEMS[ctx.language]), date=ctx.day(2))
    return Mail(
        sender_name=f"Amazon.{domain.split('.', 1)[1]}",
        sender=f"shipment-tracking@{domain}",
        recipient_name=ctx.full,
        recipient=ctx.recipient,
        subject=subject,
        paragraphs=body,
        signature=sign,
        cta=(cta, f"https://www.{domain}/gp/your-account/ship-track?orderId={order}"),
        footer_links=(("Your Orders", f"https://www.{domain}/gp/css/order-history"),),
        sent_at=ctx.sent_at,
        return_path=f"{ctx.token(24)}@{ctx.pick(('eu-west-1.amazonses.com', 'us-east-1.amazonses.com'))}",
        auth="pass",
        dkim_domain=domain,
        sender_ip=_ip(ctx, "192.0.2"),
    )


DELIVERY_TODAY: Texts = {
    "en": {
        "subject": "Your {carrier} package arrives today",
        "body": (
            "Hello {first},",
            "Your package {tracking} is scheduled for delivery today between {window}.",
            "No signature is required. You can change the delivery options in the tracking page.",
        ),
        "cta": "Track your package",
        "sign": "{carrier}",
    },
    "de": {
        "subject": "Ihr {carrier} Paket kommt heute",
        "body": (
            "Hallo {first},",
            "Ihr Paket {tracking} wird heute voraussichtlich zwischen {window} Uhr zugestellt.",
            "Sie sind nicht zu Hause? Sie können einen Ablageort oder Nachbarn in der Sendungsverfolgung wählen.",
        ),
        "cta": "Sendung verfolgen",
        "sign": "{carrier}",
    },
    "fr": {
        "subject": "Votre colis {carrier} arrive aujourd'hui",
        "body": (
            "Bonjour {first},",
            "Votre colis {tracking} sera livré aujourd'hui entre {window}.",
            "Vous êtes absent ? Choisissez un point de retrait depuis la page de suivi.",
        ),
        "cta": "Suivre mon colis",
        "sign": "{carrier}",
    },
    "es": {
        "subject": "Tu envío de {carrier} llega hoy",
        "body": (
            "Hola {first}:",
            "Tu envío {tracking} se entregará hoy entre {window}.",
            "¿No estarás en casa? Puedes elegir una oficina o un punto de recogida en la página de seguimiento.",
        ),
        "cta": "Seguir mi envío",
        "sign": "{carrier}",
    },
}
CARRIER_DOMAINS = {
    "en": ("ups.com", "fedex.com"),
    "de": ("dhl.de", "dpd.de"),
    "fr": ("laposte.fr", "colissimo.fr"),
    "es": ("correos.es", "dhl.es"),
}


def carrier_tracking(ctx: Context) -> Mail:
    domain = str(_by_language(ctx, CARRIER_DOMAINS))
    carrier = BRAND_NAMES[domain]
    tracking = f"{ctx.pick(('1Z', 'JJD', 'CB', 'PQ'))}{ctx.number(10**10, 10**11)}"
    window = str(ctx.pick(("10:00 - 14:00", "13:00 - 17:00", "8:30 - 12:30")))
    subject, body, cta, sign = _texts(DELIVERY_TODAY, ctx, carrier=carrier, tracking=tracking, window=window)
    return Mail(
        sender_name=carrier,
        sender=f"noreply@{domain}",
        recipient_name=ctx.full,
        recipient=ctx.recipient,
        subject=subject,
        paragraphs=body,
        signature=sign,
        cta=(cta, f"https://www.{domain}/tracking?id={tracking}"),
        sent_at=ctx.sent_at,
        return_path=f"bounce@mailing.{domain}",
        auth="pass",
        sender_ip=_ip(ctx, "192.0.2"),
    )


RESET: Texts = {
    "en": {
        "subject": "[{service}] Please reset your password",
        "body": (
            "Hi {first},",
            "We received a request to reset your password for your {service} account. Use the link below to choose a "
            "new password. The link expires in one hour.",
            "If you did not request a password reset, you can ignore this email. Your password will not change.",
        ),
        "cta": "Reset your password",
        "sign": "Thanks,\nThe {service} Team",
    },
    "de": {
        "subject": "[{service}] Passwort zurücksetzen",
        "body": (
            "Hallo {first},",
            "wir haben eine Anfrage erhalten, das Passwort für Ihr {service}-Konto zurückzusetzen. Über den folgenden "
            "Link können Sie ein neues Passwort wählen. Der Link ist eine Stunde gültig.",
            "Wenn Sie das nicht angefordert haben, ignorieren Sie diese E-Mail einfach. Ihr Passwort bleibt "
            "unverändert.",
        ),
        "cta": "Passwort zurücksetzen",
        "sign": "Ihr {service}-Team",
    },
    "fr": {
        "subject": "[{service}] Réinitialisation de votre mot de passe",
        "body": (
            "Bonjour {first},",
            "Nous avons reçu une demande pour réinitialiser votre mot de passe {service}. Utilisez le lien ci-dessous "
            "pour en choisir un nouveau. Le lien expire dans une heure.",
            "Si vous n'êtes pas à l'origine de cette demande, ignorez cet e-mail : votre mot de passe ne changera pas.",
        ),
        "cta": "Réinitialiser votre mot de passe",
        "sign": "L'équipe {service}",
    },
    "es": {
        "subject": "[{service}] Restablece tu contraseña",
        "body": (
            "Hola {first}:",
            "Hemos recibido una solicitud para restablecer tu contraseña de {service}. Usa el enlace siguiente para "
            "elegir una nueva. El enlace caduca en una hora.",
            "Si no lo has solicitado, ignora este correo: tu contraseña no cambiará.",
        ),
        "cta": "Restablecer tu contraseña",
        "sign": "El equipo de {service}",
    },
}
RESET_SERVICES = (("GitHub", "github.com"), ("Netflix", "netflix.com"), ("Dropbox", "dropbox.com"))


def password_reset(ctx: Context) -> Mail:
    service, domain = ctx.pick(RESET_SERVICES)  # type: ignore[misc]
    subject, body, cta, sign = _texts(RESET, ctx, service=service)
    return Mail(
        sender_name=service,
        sender=f"noreply@{domain}",
        recipient_name=ctx.full,
        recipient=ctx.recipient,
        subject=subject,
        paragraphs=body,
        signature=sign,
        cta=(cta, f"https://{domain}/password_reset/{ctx.token(32)}"),
        sent_at=ctx.sent_at,
        return_path=f"bounces+{ctx.number(1000, 9999)}@{ctx.pick(('sendgrid.net', 'mail.' + domain))}",
        auth="pass",
        dkim_domain=domain,
        sender_ip=_ip(ctx, "192.0.2"),
    )


SIGNIN: Texts = {
    "en": {
        "subject": "Security alert: new sign-in to your Google Account",
        "body": (
            "New sign-in on {device}",
            "We noticed a new sign-in to your Google Account ({email}) on {device}. If this was you, you don't need to "
            "do anything.",
            "If not, we'll help you secure your account. Check the activity immediately.",
        ),
        "cta": "Check activity",
        "sign": "The Google Accounts team",
    },
    "de": {
        "subject": "Sicherheitswarnung: Neue Anmeldung in Ihrem Google-Konto",
        "body": (
            "Neue Anmeldung auf {device}",
            "Wir haben eine neue Anmeldung in Ihrem Google-Konto ({email}) auf {device} festgestellt. Wenn Sie das "
            "waren, müssen Sie nichts weiter tun.",
            "Falls nicht, helfen wir Ihnen, Ihr Konto zu schützen. Prüfen Sie die Aktivität sofort.",
        ),
        "cta": "Aktivität prüfen",
        "sign": "Ihr Google-Konten-Team",
    },
    "fr": {
        "subject": "Alerte de sécurité : nouvelle connexion à votre compte Google",
        "body": (
            "Nouvelle connexion sur {device}",
            "Nous avons détecté une nouvelle connexion à votre compte Google ({email}) sur {device}. Si c'était vous, "
            "vous n'avez rien à faire.",
            "Sinon, nous vous aiderons à sécuriser votre compte. Vérifiez l'activité immédiatement.",
        ),
        "cta": "Vérifier l'activité",
        "sign": "L'équipe Comptes Google",
    },
    "es": {
        "subject": "Alerta de seguridad: nuevo inicio de sesión en tu cuenta de Google",
        "body": (
            "Nuevo inicio de sesión en {device}",
            "Hemos detectado un nuevo inicio de sesión en tu cuenta de Google ({email}) desde {device}. Si has sido "
            "tú, no tienes que hacer nada.",
            "Si no, te ayudaremos a proteger tu cuenta. Revisa la actividad de inmediato.",
        ),
        "cta": "Revisar actividad",
        "sign": "El equipo de Cuentas de Google",
    },
}
DEVICES = ("Windows", "iPhone", "Mac", "Android")
GOOGLE_ALERT = "https://accounts.google.com/AccountChooser"
GOOGLE_CONTINUE = "https://myaccount.google.com/alert/nt"


def signin_alert(ctx: Context) -> Mail:
    subject, body, cta, sign = _texts(SIGNIN, ctx, device=ctx.pick(DEVICES), email=ctx.recipient)
    return Mail(
        sender_name="Google",
        sender="no-reply@accounts.google.com",
        recipient_name=ctx.full,
        recipient=ctx.recipient,
        subject=subject,
        paragraphs=body,
        signature=sign,
        cta=(
            cta,
            f"{GOOGLE_ALERT}?Email={ctx.recipient}&continue={GOOGLE_CONTINUE}/{ctx.number(10**12, 10**13)}",
        ),
        sent_at=ctx.sent_at,
        auth="pass",
        dkim_domain="accounts.google.com",
        sender_ip=_ip(ctx, "192.0.2"),
    )


SAAS_INVOICE: Texts = {
    "en": {
        "subject": "Your {vendor} invoice {invoice}",
        "body": (
            "Hello {first},",
            "Thank you for your business. Your invoice {invoice} for the {plan} plan ({period}) is attached.",
            "Amount due: {amount}\nDue date: {date}\nPayment by card on file - no action needed.",
        ),
        "sign": "{vendor} Billing",
    },
    "de": {
        "subject": "Ihre {vendor} Rechnung {invoice}",
        "body": (
            "Hallo {first},",
            "vielen Dank für Ihr Vertrauen. Im Anhang finden Sie Ihre Rechnung {invoice} für den Tarif {plan} "
            "({period}).",
            "Rechnungsbetrag: {amount}\nFällig am: {date}\nDer Betrag wird per SEPA-Lastschrift von Ihrem hinterlegten "
            "Konto eingezogen.",
        ),
        "sign": "{vendor} Buchhaltung",
    },
    "fr": {
        "subject": "Votre facture {vendor} {invoice}",
        "body": (
            "Bonjour {first},",
            "Merci pour votre confiance. Vous trouverez ci-joint votre facture {invoice} pour l'offre {plan} "
            "({period}).",
            "Montant : {amount}\nÉchéance : {date}\nLe prélèvement sera effectué sur votre moyen de paiement "
            "enregistré.",
        ),
        "sign": "Service facturation {vendor}",
    },
    "es": {
        "subject": "Tu factura de {vendor} {invoice}",
        "body": (
            "Hola {first}:",
            "Gracias por confiar en nosotros. Adjuntamos tu factura {invoice} del plan {plan} ({period}).",
            "Importe: {amount}\nVencimiento: {date}\nSe cargará en el método de pago registrado.",
        ),
        "sign": "Facturación de {vendor}",
    },
}
SAAS: dict[str, tuple[tuple[str, str], ...]] = {
    "en": (("Nimbus Cloud", "nimbuscloud.io"), ("Ledgerly", "ledgerly.com")),
    "de": (("Wolkenwerk", "wolkenwerk.de"), ("Nimbus Cloud", "nimbuscloud.io")),
    "fr": (("Factorio SaaS", "factorio-saas.fr"), ("Nimbus Cloud", "nimbuscloud.io")),
    "es": (("Nubaria", "nubaria.es"), ("Nimbus Cloud", "nimbuscloud.io")),
}
PERIODS = {"en": "March 2024", "de": "März 2024", "fr": "mars 2024", "es": "marzo de 2024"}


def saas_invoice(ctx: Context) -> Mail:
    vendor, domain = _by_language(ctx, SAAS)  # type: ignore[misc]
    invoice = f"INV-{ctx.number(100_000, 999_999)}"
    subject, body, _, sign = _texts(
        SAAS_INVOICE,
        ctx,
        vendor=vendor,
        invoice=invoice,
        plan=ctx.pick(("Team", "Business", "Pro")),
        period=PERIODS[ctx.language],
        amount=money(ctx.number(29, 490) + 0.0, ctx.language),
        date=ctx.day(14),
    )
    return Mail(
        sender_name=f"{vendor} Billing",
        sender=f"billing@{domain}",
        recipient_name=ctx.full,
        recipient=ctx.recipient,
        subject=subject,
        paragraphs=body,
        signature=sign,
        sent_at=ctx.sent_at,
        return_path=f"bounce-{ctx.token(10)}@mg.{domain}",
        auth="pass",
        attachments=((f"{invoice}.pdf", "application/pdf", _pdf(f"{vendor} invoice {invoice}")),),
        sender_ip=_ip(ctx, "192.0.2"),
    )


NEWSLETTER: Texts = {
    "en": {
        "subject": "Last chance: 30% off garden furniture",
        "body": (
            "Hi {first},",
            "Our spring sale ends on Sunday. Save 30% on garden furniture, planters and outdoor lighting, online and "
            "in store.",
            "Free delivery on orders over {amount}.",
        ),
        "cta": "www.{shop_domain}/sale",
        "sign": "Follow us: {social}",
    },
    "de": {
        "subject": "Nur noch heute: 30 % auf Gartenmöbel",
        "body": (
            "Hallo {first},",
            "unser Frühlingsverkauf endet am Sonntag. Sparen Sie 30 % auf Gartenmöbel, Pflanzkübel und Außenleuchten, "
            "online und im Markt. Letzte Chance!",
            "Kostenlose Lieferung ab {amount}.",
        ),
        "cta": "www.{shop_domain}/sale",
        "sign": "Folgen Sie uns: {social}",
    },
    "fr": {
        "subject": "Dernier rappel : -30 % sur le mobilier de jardin",
        "body": (
            "Bonjour {first},",
            "Nos soldes de printemps se terminent dimanche. Profitez de -30 % sur le mobilier de jardin, les "
            "jardinières et l'éclairage extérieur, en ligne et en magasin.",
            "Livraison offerte dès {amount} d'achat.",
        ),
        "cta": "www.{shop_domain}/soldes",
        "sign": "Suivez-nous : {social}",
    },
    "es": {
        "subject": "Último aviso: 30 % en muebles de jardín",
        "body": (
            "Hola {first}:",
            "Nuestras rebajas de primavera terminan el domingo. Ahorra un 30 % en muebles de jardín, maceteros e "
            "iluminación exterior, online y en tienda.",
            "Envío gratis a partir de {amount}.",
        ),
        "cta": "www.{shop_domain}/rebajas",
        "sign": "Síguenos: {social}",
    },
}
SHOP_SITES = {
    "en": ("Greenleaf Home", "greenleafhome.com"),
    "de": ("Gartenwelt Krause", "gartenwelt-krause.de"),
    "fr": ("Maison Jardin Durance", "maisonjardin-durance.fr"),
    "es": ("Casa Verde Hogar", "casaverdehogar.es"),
}
ESP_CLICK = ("click.mlsend.com", "links.mktomail.com", "t.sidekickopen.net")


def newsletter(ctx: Context) -> Mail:
    shop, domain = SHOP_SITES[ctx.language]
    social = f"https://bit.ly/{ctx.token(7)}"
    subject, body, cta, sign = _texts(
        NEWSLETTER, ctx, shop_domain=domain, social=social, amount=money(ctx.pick((50, 75, 99)), ctx.language)
    )
    esp = str(ctx.pick(ESP_CLICK))
    # A small shop whose mailing service signs for it (DMARC passes) or, for some, sends unauthenticated: then the
    # rules see tracking links and a shortener with nothing vouching for the sender (a false alarm for them).
    auth = ctx.pick(("pass", "pass", None))
    return Mail(
        sender_name=shop,
        sender=f"news@{domain}",
        recipient_name=ctx.full,
        recipient=ctx.recipient,
        subject=subject,
        paragraphs=body,
        signature=sign,
        cta=(cta, f"https://{esp}/c/{ctx.token(24)}"),
        footer=(f"{shop}",),
        footer_links=(("Unsubscribe", f"https://{esp}/u/{ctx.token(24)}"),),
        sent_at=ctx.sent_at,
        return_path=f"bounce-{ctx.token(12)}@{esp.split('.', 1)[1]}",
        auth=None if auth is None else str(auth),
        dkim_domain=domain,
        parts="html",
        sender_ip=_ip(ctx, "192.0.2"),
    )


COLLEAGUE: Texts = {
    "en": {
        "subject": "Notes from Tuesday's planning meeting",
        "body": (
            "Hi {first},",
            "Thanks for joining on Tuesday. Quick summary: we keep the launch date, Priya owns the customer FAQ, and I "
            "will send the revised budget by Friday.",
            "Could you check the open questions in the shared document before our next call on {date}?",
        ),
        "sign": "Cheers,\n{colleague}",
    },
    "de": {
        "subject": "Notizen aus dem Planungstermin am Dienstag",
        "body": (
            "Hallo {first},",
            "danke fürs Dabeisein am Dienstag. Kurz zusammengefasst: Der Starttermin bleibt, Jana übernimmt die "
            "Kunden-FAQ und ich schicke das überarbeitete Budget bis Freitag.",
            "Kannst du dir vor unserem nächsten Termin am {date} die offenen Fragen im gemeinsamen Dokument ansehen?",
        ),
        "sign": "Viele Grüße\n{colleague}",
    },
    "fr": {
        "subject": "Compte rendu de la réunion de mardi",
        "body": (
            "Bonjour {first},",
            "Merci pour ta participation mardi. En résumé : la date de lancement est maintenue, Inès prend en charge "
            "la FAQ client et j'envoie le budget révisé d'ici vendredi.",
            "Peux-tu regarder les questions ouvertes dans le document partagé avant notre point du {date} ?",
        ),
        "sign": "Bonne journée,\n{colleague}",
    },
    "es": {
        "subject": "Notas de la reunión de planificación del martes",
        "body": (
            "Hola {first}:",
            "Gracias por participar el martes. En resumen: mantenemos la fecha de lanzamiento, Marta se encarga de las "
            "preguntas frecuentes y yo enviaré el presupuesto revisado el viernes.",
            "¿Puedes revisar las preguntas abiertas del documento compartido antes de la reunión del {date}?",
        ),
        "sign": "Un abrazo,\n{colleague}",
    },
}


def colleague_notes(ctx: Context) -> Mail:
    colleague = " ".join(_by_language(ctx, PEOPLE))  # type: ignore[arg-type]
    subject, body, _, sign = _texts(COLLEAGUE, ctx, colleague=colleague, date=ctx.day(7))
    first, last = (ascii_fold(part) for part in colleague.split())
    return Mail(
        sender_name=colleague,
        sender=f"{first}.{last}@{ctx.recipient.split('@')[1]}",
        recipient_name=ctx.full,
        recipient=ctx.recipient,
        subject=subject,
        paragraphs=body,
        signature=sign,
        sent_at=ctx.sent_at,
        auth=None,  # internal mail never crosses the boundary MTA that stamps Authentication-Results
        parts="text",
        sender_ip="10.20.0.15",
    )


BANK_CHANGE: Texts = {
    "en": {
        "subject": "Notice of change of bank details - {vendor}",
        "body": (
            "Dear {first},",
            "As announced in our letter of last month, {vendor} has moved its accounts to a new bank. Our new account "
            "details apply to invoices issued from {date}; invoices already paid are not affected.",
            "For your security, please verify this change by calling your usual contact on the number you already "
            "hold for us, not a number from this email. The signed notice is available in the supplier portal.",
        ),
        "sign": "Kind regards,\n{contact}\nFinance Director, {vendor}",
    },
    "de": {
        "subject": "Mitteilung: Änderung unserer Bankverbindung - {vendor}",
        "body": (
            "Guten Tag {full},",
            "wie in unserem Schreiben vom letzten Monat angekündigt, führt {vendor} seine Konten künftig bei einer "
            "anderen Bank. Die neue Bankverbindung gilt für Rechnungen ab dem {date}; bereits bezahlte Rechnungen sind "
            "nicht betroffen.",
            "Bitte prüfen Sie diese Änderung zu Ihrer Sicherheit telefonisch über die Ihnen bekannte Nummer Ihres "
            "Ansprechpartners, nicht über eine Nummer aus dieser E-Mail. Die unterschriebene Mitteilung finden Sie im "
            "Lieferantenportal.",
        ),
        "sign": "Mit freundlichen Grüßen\n{contact}\nLeitung Finanzen, {vendor}",
    },
    "fr": {
        "subject": "Information : changement de coordonnées bancaires - {vendor}",
        "body": (
            "Bonjour {first},",
            "Comme annoncé dans notre courrier du mois dernier, {vendor} a transféré ses comptes dans une nouvelle "
            "banque. Nos nouvelles coordonnées bancaires s'appliquent aux factures émises à partir du {date} ; les "
            "factures déjà réglées ne sont pas concernées.",
            "Par sécurité, merci de vérifier ce changement en appelant votre interlocuteur habituel au numéro que vous "
            "connaissez déjà, et non à un numéro figurant dans cet e-mail. Le courrier signé est disponible sur le "
            "portail fournisseurs.",
        ),
        "sign": "Cordialement,\n{contact}\nDirection financière, {vendor}",
    },
    "es": {
        "subject": "Comunicación de cambio de datos bancarios - {vendor}",
        "body": (
            "Hola {first}:",
            "Como anunciamos en nuestra carta del mes pasado, {vendor} ha trasladado sus cuentas a otra entidad. Los "
            "nuevos datos bancarios se aplican a las facturas emitidas a partir del {date}; las facturas ya pagadas no "
            "se ven afectadas.",
            "Por seguridad, verifique este cambio llamando a su contacto habitual al número que ya conoce, no a un "
            "número de este correo. La comunicación firmada está disponible en el portal de proveedores.",
        ),
        "sign": "Atentamente,\n{contact}\nDirección financiera, {vendor}",
    },
}


def vendor_bank_change(ctx: Context) -> Mail:
    vendor, domain, _ = _by_language(ctx, SUPPLIERS)  # type: ignore[misc]
    contact = " ".join(_by_language(ctx, PEOPLE))  # type: ignore[arg-type]
    subject, body, _, sign = _texts(BANK_CHANGE, ctx, vendor=vendor, contact=contact, date=ctx.day(30))
    return Mail(
        sender_name=contact,
        sender=f"finance@{domain}",
        recipient_name=ctx.full,
        recipient=ctx.recipient,
        subject=subject,
        paragraphs=body,
        signature=sign,
        sent_at=ctx.sent_at,
        auth="pass",
        parts="both",
        sender_ip=_ip(ctx, "192.0.2"),
    )


TICKET: Texts = {
    "en": {
        "subject": "[Ticket #{ticket}] Re: Export to CSV fails",
        "body": (
            "Hi {first},",
            "Thanks for your patience. The CSV export problem was caused by a date format setting and is fixed in "
            "today's release. Please try the export again and let us know if it works.",
            "You can reply to this email to add a comment to your ticket.",
        ),
        "sign": "{agent}\n{vendor} Support",
    },
    "de": {
        "subject": "[Ticket #{ticket}] Re: CSV-Export schlägt fehl",
        "body": (
            "Hallo {first},",
            "danke für Ihre Geduld. Der Fehler beim CSV-Export lag an einer Einstellung für das Datumsformat und ist "
            "mit dem heutigen Release behoben. Bitte versuchen Sie den Export erneut und geben Sie uns Bescheid.",
            "Sie können auf diese E-Mail antworten, um Ihrem Ticket einen Kommentar hinzuzufügen.",
        ),
        "sign": "{agent}\n{vendor} Support",
    },
    "fr": {
        "subject": "[Ticket #{ticket}] Re : l'export CSV échoue",
        "body": (
            "Bonjour {first},",
            "Merci pour votre patience. Le problème d'export CSV venait d'un réglage du format de date ; il est "
            "corrigé dans la version publiée aujourd'hui. Pouvez-vous réessayer l'export et nous dire si cela "
            "fonctionne ?",
            "Vous pouvez répondre à cet e-mail pour ajouter un commentaire à votre ticket.",
        ),
        "sign": "{agent}\nSupport {vendor}",
    },
    "es": {
        "subject": "[Ticket #{ticket}] Re: falla la exportación a CSV",
        "body": (
            "Hola {first}:",
            "Gracias por tu paciencia. El problema de la exportación a CSV se debía a un ajuste del formato de fecha y "
            "está corregido en la versión de hoy. Prueba de nuevo la exportación y dinos si funciona.",
            "Puedes responder a este correo para añadir un comentario a tu ticket.",
        ),
        "sign": "{agent}\nSoporte de {vendor}",
    },
}


def support_ticket(ctx: Context) -> Mail:
    vendor, domain = _by_language(ctx, SAAS)  # type: ignore[misc]
    agent = " ".join(_by_language(ctx, PEOPLE))  # type: ignore[arg-type]
    ticket = ctx.number(10_000, 99_999)
    subject, body, _, sign = _texts(TICKET, ctx, ticket=ticket, agent=agent, vendor=vendor)
    helpdesk = f"{domain.split('.')[0]}.zendesk.com"
    return Mail(
        sender_name=f"{agent} ({vendor} Support)",
        sender=f"support@{domain}",
        recipient_name=ctx.full,
        recipient=ctx.recipient,
        subject=subject,
        paragraphs=body,
        signature=sign,
        sent_at=ctx.sent_at,
        reply_to=f"support+id{ticket}@{helpdesk}",
        return_path=f"bounce+{ctx.token(10)}@{helpdesk}",
        auth="pass",
        dkim_domain=domain,
        sender_ip=_ip(ctx, "192.0.2"),
    )


STATEMENT: Texts = {
    "en": {
        "subject": "Your {month} statement is ready",
        "body": (
            "Hello {first},",
            "Your account statement for {month} is now available in online banking under Documents.",
            "We will never ask you for your password or one-time codes by email or phone.",
        ),
        "sign": "{bank}",
    },
    "de": {
        "subject": "Ihr Kontoauszug für {month} ist verfügbar",
        "body": (
            "Hallo {first},",
            "Ihr Kontoauszug für {month} steht ab sofort im Online-Banking im Postfach bereit.",
            "Wir fragen Sie niemals per E-Mail oder Telefon nach Ihren Zugangsdaten oder TANs.",
        ),
        "sign": "Ihre {bank}",
    },
    "fr": {
        "subject": "Votre relevé de {month} est disponible",
        "body": (
            "Bonjour {first},",
            "Votre relevé de compte de {month} est disponible dans votre espace client, rubrique e-Documents.",
            "Nous ne vous demanderons jamais vos identifiants ni vos codes par e-mail ou par téléphone.",
        ),
        "sign": "{bank}",
    },
    "es": {
        "subject": "Tu extracto de {month} ya está disponible",
        "body": (
            "Hola {first}:",
            "Tu extracto de {month} ya está disponible en la banca online, en el apartado Documentos.",
            "Nunca te pediremos tus credenciales ni códigos de un solo uso por correo o por teléfono.",
        ),
        "sign": "{bank}",
    },
}
MONTH_NAMES = {"en": "February", "de": "Februar", "fr": "février", "es": "febrero"}


def bank_statement(ctx: Context) -> Mail:
    bank, domain = _by_language(ctx, BANKS)  # type: ignore[misc]
    subject, body, _, sign = _texts(STATEMENT, ctx, bank=bank, month=MONTH_NAMES[ctx.language])
    return Mail(
        sender_name=bank,
        sender=f"service@{domain}",
        recipient_name=ctx.full,
        recipient=ctx.recipient,
        subject=subject,
        paragraphs=body,
        signature=sign,
        cta=(str(bank), f"https://www.{domain}/"),
        sent_at=ctx.sent_at,
        return_path=f"bounce@mail.{domain}",
        auth="pass",
        sender_ip=_ip(ctx, "192.0.2"),
    )


# --- attachments (harmless stand-ins: names and types are what matter) --------------------------------------------


def _pdf(title: str) -> bytes:
    return (
        b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [] /Count 0 >> "
        b"endobj\n% " + title.encode("utf-8") + b"\ntrailer << /Root 1 0 R >>\n%%EOF\n"
    )


def _harmless(suffix: str) -> bytes:
    """Inert bytes with the magic number of the claimed type (a test stand-in, not a payload)."""
    note = b"secverify test attachment: inert stand-in, not executable content\n"
    if suffix.endswith(".exe"):
        return b"MZ" + b"\x00" * 58 + note
    if suffix == ".html":
        return b"<!DOCTYPE html><html><body><p>Loading document...</p></body></html>\n" + note
    if suffix == ".iso":
        return b"\x00" * 64 + b"CD001" + note
    return b"PK\x03\x04" + note


CASES: tuple[Case, ...] = (
    Case(
        "m365_quota",
        "Phishing",
        "credential_harvest",
        m365_quota,
        frozenset({"credential_request", "lookalike_domain", "display_name_mismatch"}),
    ),
    Case(
        "bank_lock",
        "Phishing",
        "credential_harvest",
        bank_lock,
        frozenset({"link_mismatch", "display_name_mismatch", "auth_failure"}),
    ),
    Case(
        "parcel_fee",
        "Phishing",
        "delivery_notice",
        parcel_fee,
        frozenset({"url_shortener", "display_name_mismatch", "urgency"}),
    ),
    Case("supplier_bank_change", "Phishing", "invoice_fraud", supplier_bank_change, frozenset({"payment_change"})),
    Case("ceo_gift_cards", "Phishing", "gift_card", ceo_gift_cards, frozenset({"gift_card_request"})),
    Case("mfa_push", "Phishing", "mfa_fatigue", mfa_push, frozenset({"credential_request", "ip_or_punycode_url"})),
    Case("malware_invoice", "Phishing", "malware_attachment", malware_invoice, frozenset({"suspicious_attachment"})),
    Case(
        "paypal_zero_width",
        "Phishing",
        "credential_harvest",
        paypal_zero_width,
        frozenset({"zero_width_obfuscation", "ip_or_punycode_url", "lookalike_domain"}),
    ),
    Case("shared_document", "Phishing", "credential_harvest", shared_document, frozenset({"display_name_mismatch"})),
    Case(
        "tax_refund",
        "Phishing",
        "credential_harvest",
        tax_refund,
        frozenset({"lookalike_domain", "display_name_mismatch", "credential_request"}),
    ),
    Case("order_shipped", "Legitimate", "transactional", order_shipped),
    Case("carrier_tracking", "Legitimate", "transactional", carrier_tracking),
    Case("password_reset", "Legitimate", "transactional", password_reset, frozenset({"credential_request"})),
    Case("signin_alert", "Legitimate", "transactional", signin_alert, frozenset({"urgency"})),
    Case("saas_invoice", "Legitimate", "transactional", saas_invoice),
    Case("newsletter", "Legitimate", "newsletter", newsletter, frozenset({"link_mismatch", "url_shortener"})),
    Case("colleague_notes", "Legitimate", "correspondence", colleague_notes),
    Case("vendor_bank_change", "Legitimate", "correspondence", vendor_bank_change, frozenset({"payment_change"})),
    Case("support_ticket", "Legitimate", "transactional", support_ticket, frozenset({"reply_to_mismatch"})),
    Case("bank_statement", "Legitimate", "transactional", bank_statement),
)


def _context(case_index: int, language: str, variant: int) -> Context:
    rng = np.random.default_rng([SEED, case_index, LANGUAGES.index(language), variant])
    first, last = PEOPLE[language][int(rng.integers(0, len(PEOPLE[language])))]
    domain = ("example.com", "example.net", "example.org")[int(rng.integers(0, 3))]
    sent_at = START + timedelta(days=int(rng.integers(0, 240)), minutes=int(rng.integers(0, 14 * 60)))
    return Context(language, rng, first, f"{first} {last}", f"{ascii_fold(first)}.{ascii_fold(last)}@{domain}", sent_at)


def build() -> tuple[list[dict[str, str]], list[Mail], list[str]]:
    """(rows, their Mail specs, their labels) of the whole corpus, each message checked against its case."""
    rows, mails, labels = [], [], []
    for case_index, case in enumerate(CASES):
        for language in LANGUAGES:
            for variant in range(VARIANTS):
                mail = case.build(_context(case_index, language, variant))
                raw = compose(mail)
                analysis = detectors.analyze(raw)
                missing = case.expect - analysis.types
                if missing or analysis.warnings:
                    raise RuntimeError(
                        f"{case.key}/{language}/{variant}: missing {sorted(missing)}, warnings {analysis.warnings}"
                    )
                rows.append(
                    {
                        "raw_email": raw,
                        "label": case.label,
                        "language": language,
                        "scenario": case.scenario,
                        "case": case.key,
                    }
                )
                mails.append(mail)
                labels.append(case.label)
    return rows, mails, labels


ALLOW_LISTED = (
    "amazonses.com", "sendgrid.net", "sparkpostmail.com", "mktomail.com", "mlsend.com", "zendesk.com",
    "sidekickopen.net", "googleapis.com",
)  # fmt: skip


def _hosts(mail: Mail) -> set[str]:
    hosts = {mail.sender.rsplit("@", 1)[1], (mail.return_path or mail.sender).rsplit("@", 1)[1]}
    if mail.reply_to:
        hosts.add(mail.reply_to.rsplit("@", 1)[1])
    links = ([mail.cta] if mail.cta else []) + list(mail.footer_links)
    for _, href in links:
        host = detectors.href_host(href)
        if host:
            hosts.add(host)
    return hosts


def reputation_store(mails: list[Mail], labels: list[str]) -> dict[str, object]:
    """The offline store: brands and mail services allow-listed and old, legitimate senders old and unlisted,
    phishing domains young (3 in 4 block-listed, the rest not yet), compromised small-business sites old."""
    rng = np.random.default_rng([SEED, 99])
    domains: dict[str, dict[str, object]] = {}
    for brand_domain in sorted(detectors.BRAND_DOMAINS):
        domains[brand_domain] = {"first_seen": "2001-01-01", "listed": "allow", "source": "brand-list"}
    for service in ALLOW_LISTED:
        domains[service] = {"first_seen": "2009-06-01", "listed": "allow", "source": "mail-services"}
    compromised = {domain for options in COMPROMISED.values() for _, domain in options}
    phishing: set[str] = set()
    legitimate: set[str] = set()
    for mail, label in zip(mails, labels, strict=True):
        registrable = {detectors.registrable_domain(host) for host in _hosts(mail) if not detectors.is_ip_host(host)}
        (phishing if label == "Phishing" else legitimate).update(registrable)
    for domain in sorted(legitimate | compromised):
        if domain not in domains and not domain.startswith("example."):
            year = int(rng.integers(2008, 2020))
            domains[domain] = {
                "first_seen": f"{year}-0{int(rng.integers(1, 10))}-15",
                "listed": None,
                "source": "sv-embedded",
            }
    for domain in sorted(phishing - legitimate - compromised - set(domains)):
        seen = AS_OF - timedelta(days=int(rng.integers(20, 280)))
        listed = "block" if rng.random() < 0.75 else None
        domains[domain] = {"first_seen": seen.isoformat(), "listed": listed, "source": "sv-embedded"}
    return {"as_of": AS_OF.isoformat(), "domains": dict(sorted(domains.items()))}


def render() -> tuple[str, str]:
    """(embedded_emails.jsonl, reputation.json) contents."""
    rows, mails, labels = build()
    emails = jsonl_text(rows)
    store = json.dumps(reputation_store(mails, labels), ensure_ascii=False, indent=1, sort_keys=True) + "\n"
    return emails, store


def files() -> dict[Path, str]:
    """The shipped files and their contents."""
    emails, store = render()
    return {EMAILS_FILE: emails, STORE_FILE: store}


def main() -> int:
    return build_main(__doc__, files, script="scripts/build_e4_embedded.py")


if __name__ == "__main__":
    sys.exit(main())
