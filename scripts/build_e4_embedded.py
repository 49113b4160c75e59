"""Write the E4 embedded corpus and the offline reputation store, deterministically.

envs/sv_env_phishing_detection/data/embedded_emails.jsonl holds 320 complete RFC 5322 / MIME messages (one JSON
object a line: raw_email, label, language, scenario, case), 20 hand-written cases × 4 languages (en, de, fr, es) ×
4 variants (recipients, amounts, brands, domains and attachments drawn from a fixed seed). Half are phishing, half
legitimate transactional mail and correspondence, and the hard cases are deliberate: phish with clean
authentication (a vendor look-alike with its own valid DMARC, a compromised site sending malware, a document lure on
a cloud host), CEO gift-card requests from free-mail accounts, and legitimate mail that trips the rules (password
resets, sign-in alerts, click-tracked newsletters with shorteners, a genuine change of bank details, help-desk
Reply-To addresses). Every message is checked by the detectors against what its case promises (indicators that
must fire); a failed check stops the build.

The cases' texts and tables are data, in scripts/corpus_sources/e4_phishing_detection/: cases.yaml (per case: label,
scenario, expected indicators, its tables and its texts in the four languages) and tables.yaml (tables several cases
share). This script holds one function per case: what a variant draws, in which order (the order fixes the bytes),
and how the message is put together (sender, links, authentication, parts, attachments). The texts are written
separately from the synthetic templates (synth.TEMPLATES), so a model trained on synthetic data is not evaluated on
its own templates.

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import yaml

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
SOURCES = Path(__file__).resolve().parent / "corpus_sources" / "e4_phishing_detection"
DATA = Path(__file__).resolve().parents[1] / "envs" / "sv_env_phishing_detection" / "data"
EMAILS_FILE = DATA / "embedded_emails.jsonl"
STORE_FILE = DATA / "reputation.json"


def _source(name: str) -> Any:
    return yaml.safe_load((SOURCES / name).read_text(encoding="utf-8"))


class Texts(NamedTuple):
    subject: str
    body: tuple[str, ...]
    cta: str
    sign: str


@dataclass(frozen=True)
class Context:
    """What one variant of a case draws: its language, rng, recipient and send time; and the case's source entry."""

    language: str
    rng: np.random.Generator
    first: str
    full: str
    recipient: str
    sent_at: datetime
    case: Mapping[str, Any]
    """The case's entry in cases.yaml, its tables merged over the shared ones (tables.yaml)."""

    def pick(self, options: Sequence[Any]) -> Any:
        return options[int(self.rng.integers(0, len(options)))]

    def token(self, length: int) -> str:
        alphabet = "abcdefghijkmnopqrstuvwxyz23456789"
        return "".join(alphabet[int(self.rng.integers(0, len(alphabet)))] for _ in range(length))

    def number(self, low: int, high: int) -> int:
        return int(self.rng.integers(low, high))

    def day(self, days: int) -> str:
        return local_date(self.sent_at + timedelta(days=days), self.language)

    def table(self, name: str) -> Any:
        """A table of the case, in the variant's language where it has one entry per language."""
        value = self.case["tables"][name]
        return value[self.language] if isinstance(value, dict) and self.language in value else value

    def draw(self, name: str) -> Any:
        return self.pick(self.table(name))

    def person(self) -> str:
        return " ".join(self.pick(PEOPLE[self.language]))

    def texts(self, **values: object) -> Texts:
        """The case's texts in the variant's language, filled with the recipient's names and the values given."""
        chosen = self.case["texts"][self.language]
        fill = {"first": self.first, "full": self.full, **values}
        return Texts(
            chosen["subject"].format(**fill),
            tuple(paragraph.format(**fill) for paragraph in chosen["body"]),
            chosen.get("cta", "").format(**fill),
            chosen.get("sign", "").format(**fill),
        )

    def mail(self, texts: Texts, **fields: Any) -> Mail:
        """The message to the variant's recipient with the texts; fields add to (or override) those."""
        return Mail(
            **{
                "recipient_name": self.full,
                "recipient": self.recipient,
                "subject": texts.subject,
                "paragraphs": texts.body,
                "signature": texts.sign,
                "sent_at": self.sent_at,
                **fields,
            }
        )


def _ip(ctx: Context, net: str = "198.51.100") -> str:
    return f"{net}.{ctx.number(2, 254)}"


# --- phishing cases (every draw below happens in the order written: keyword arguments too) --------------------------


def m365_quota(ctx: Context) -> Mail:
    domain = ctx.draw("domains")
    t = ctx.texts(email=ctx.recipient)
    return ctx.mail(
        t,
        sender_name="Microsoft 365",
        sender=f"no-reply@{domain}",
        cta=(t.cta, f"https://{domain}/owa/release?u={ctx.token(16)}"),
        auth="spf_only",
        sender_ip=_ip(ctx),
    )


def bank_lock(ctx: Context) -> Mail:
    bank, bank_domain = ctx.draw("banks")
    relay, landing = ctx.draw("relays"), ctx.draw("landings")
    return ctx.mail(
        ctx.texts(bank=bank),
        sender_name=bank,
        sender=f"alert@{relay}",
        cta=(f"https://www.{bank_domain}/secure/restore", f"https://{landing}/{ctx.token(8)}/restore"),
        reply_to=f"support@{landing}",
        auth="softfail",
        parts="html",
        sender_ip=_ip(ctx),
    )


def parcel_fee(ctx: Context) -> Mail:
    carrier, sender_domain = ctx.draw("carriers"), ctx.draw("sender_domains")
    url = f"https://{ctx.draw('shorteners')}/{ctx.token(7)}"
    return ctx.mail(
        ctx.texts(carrier=carrier, fee=money(ctx.draw("fees"), ctx.language), url=url),
        sender_name=carrier,
        sender=f"info@{sender_domain}",
        recipient_name="",
        auth=None,
        parts="text",
        sender_ip=_ip(ctx, "203.0.113"),
    )


def supplier_bank_change(ctx: Context) -> Mail:
    vendor, _, spoof = ctx.draw("suppliers")
    contact = ctx.person()
    iban = f"{ctx.draw('iban_prefixes')} " + " ".join(str(ctx.number(1000, 9999)) for _ in range(4))
    t = ctx.texts(vendor=vendor, contact=contact, iban=iban, bic=f"{ctx.token(4).upper()}LT2X", date=ctx.day(5))
    return ctx.mail(
        t,
        sender_name=contact,
        sender=f"{ascii_fold(contact.split()[0])}@{spoof}",
        auth="pass",  # the fraudster's look-alike domain has valid SPF, DKIM and DMARC of its own
        parts="both",
        attachments=((f"{spoof.split('.')[0]}_bank_details.pdf", "application/pdf", _pdf(f"{vendor} bank details")),),
        sender_ip=_ip(ctx),
    )


def ceo_gift_cards(ctx: Context) -> Mail:
    ceo = ctx.person()
    provider = ctx.draw("free_mail")
    t = ctx.texts(ceo=ceo, count=ctx.number(4, 9), value=money(ctx.draw("card_values"), ctx.language))
    first, last = (ascii_fold(part) for part in ceo.split())
    return ctx.mail(
        t,
        sender_name=ceo,
        sender=f"{first}.{last}.ceo@{provider}",
        auth=ctx.pick(("pass", "spf_only")),
        parts="text",
        sender_ip=_ip(ctx, "192.0.2"),
    )


def mfa_push(ctx: Context) -> Mail:
    brand = ctx.draw("brands")
    t = ctx.texts(brand=brand)
    host = f"203.0.113.{ctx.number(2, 254)}"
    return ctx.mail(
        t,
        sender_name=f"{brand} Verify",
        sender=f"verify@{ctx.draw('sender_domains')}",
        cta=(t.cta, f"http://{host}/{brand.lower()}/verify?session={ctx.token(20)}"),
        auth=ctx.pick(("none", "softfail")),
        sender_ip=_ip(ctx),
    )


def malware_invoice(ctx: Context) -> Mail:
    company, domain = ctx.draw("compromised")
    contact = ctx.person()
    invoice = f"{ctx.number(10_000, 99_999)}"
    t = ctx.texts(
        invoice=invoice, amount=money(ctx.number(300, 4_000) + 0.9, ctx.language), contact=contact, company=company
    )
    suffix, content_type = ctx.draw("payloads")
    return ctx.mail(
        t,
        sender_name=contact,
        sender=f"{ascii_fold(contact.split()[1])}@{domain}",
        auth="pass",  # a compromised mailbox of a real small business: authentication passes
        parts="text",
        attachments=((f"{ctx.table('invoice_word')}_{invoice}{suffix}", content_type, _harmless(suffix)),),
        sender_ip=_ip(ctx, "192.0.2"),
    )


def paypal_zero_width(ctx: Context) -> Mail:
    brand_domain = ctx.table("brand_domains")
    spoof, _ = homoglyph_domain(brand_domain, ctx.rng)
    while not spoof.startswith("xn--"):
        spoof, _ = homoglyph_domain(brand_domain, ctx.rng)
    t = ctx.texts(amount=money(ctx.number(80, 900) + 0.99, ctx.language), merchant=ctx.draw("merchants"))
    body = tuple(insert_zero_width(paragraph, ctx.rng, share=0.4) for paragraph in t.body)
    return ctx.mail(
        t,
        sender_name="PayPal",
        sender=f"service@{ctx.draw('sender_domains')}",
        subject=insert_zero_width(t.subject, ctx.rng, share=0.6),
        paragraphs=body,
        cta=(t.cta, f"https://{spoof}/signin?country.x={ctx.language.upper()}&token={ctx.token(12)}"),
        auth=ctx.pick(("none", "spf_only")),
        parts="html",
        sender_ip=_ip(ctx),
    )


def shared_document(ctx: Context) -> Mail:
    colleague = ctx.person()
    _, domain = ctx.draw("compromised")
    t = ctx.texts(sender=colleague, title=ctx.draw("titles"))
    return ctx.mail(
        t,
        sender_name="DocuSign",
        sender=f"dse-notify@{domain}",
        cta=(t.cta, f"https://{ctx.draw('cloud_hosts')}/{ctx.token(10)}/index.html#{ascii_fold(ctx.first)}"),
        auth="pass",
        parts="both",
        sender_ip=_ip(ctx, "192.0.2"),
    )


def tax_refund(ctx: Context) -> Mail:
    sender = ctx.table("senders")
    domain = ctx.pick(sender["domains"])
    t = ctx.texts(amount=money(ctx.number(180, 900) + 0.42, ctx.language), date=ctx.day(4))
    return ctx.mail(
        t,
        sender_name=sender["name"],
        sender=f"noreply@{domain}",
        cta=(t.cta, f"https://{domain}/refund/{ctx.token(12)}"),
        auth=ctx.pick(("none", "spf_only")),
        sender_ip=_ip(ctx),
    )


# --- legitimate cases ---------------------------------------------------------------------------------------------


def order_shipped(ctx: Context) -> Mail:
    domain = ctx.table("domains")
    order = f"{ctx.number(100, 999)}-{ctx.number(1_000_000, 9_999_999)}-{ctx.number(1_000_000, 9_999_999)}"
    t = ctx.texts(order=order, item=ctx.draw("items"), date=ctx.day(2))
    return ctx.mail(
        t,
        sender_name=f"Amazon.{domain.split('.', 1)[1]}",
        sender=f"shipment-tracking@{domain}",
        cta=(t.cta, f"https://www.{domain}/gp/your-account/ship-track?orderId={order}"),
        footer_links=(("Your Orders", f"https://www.{domain}/gp/css/order-history"),),
        return_path=f"{ctx.token(24)}@{ctx.draw('ses_domains')}",
        auth="pass",
        dkim_domain=domain,
        sender_ip=_ip(ctx, "192.0.2"),
    )


def carrier_tracking(ctx: Context) -> Mail:
    domain = ctx.draw("domains")
    carrier = BRAND_NAMES[domain]
    tracking = f"{ctx.draw('tracking_prefixes')}{ctx.number(10**10, 10**11)}"
    t = ctx.texts(carrier=carrier, tracking=tracking, window=ctx.draw("windows"))
    return ctx.mail(
        t,
        sender_name=carrier,
        sender=f"noreply@{domain}",
        cta=(t.cta, f"https://www.{domain}/tracking?id={tracking}"),
        return_path=f"bounce@mailing.{domain}",
        auth="pass",
        sender_ip=_ip(ctx, "192.0.2"),
    )


def password_reset(ctx: Context) -> Mail:
    service, domain = ctx.draw("services")
    t = ctx.texts(service=service)
    return ctx.mail(
        t,
        sender_name=service,
        sender=f"noreply@{domain}",
        cta=(t.cta, f"https://{domain}/password_reset/{ctx.token(32)}"),
        return_path=f"bounces+{ctx.number(1000, 9999)}@{ctx.pick(('sendgrid.net', 'mail.' + domain))}",
        auth="pass",
        dkim_domain=domain,
        sender_ip=_ip(ctx, "192.0.2"),
    )


def signin_alert(ctx: Context) -> Mail:
    t = ctx.texts(device=ctx.draw("devices"), email=ctx.recipient)
    alert, follow = ctx.table("alert_url"), ctx.table("continue_url")
    return ctx.mail(
        t,
        sender_name="Google",
        sender="no-reply@accounts.google.com",
        cta=(t.cta, f"{alert}?Email={ctx.recipient}&continue={follow}/{ctx.number(10**12, 10**13)}"),
        auth="pass",
        dkim_domain="accounts.google.com",
        sender_ip=_ip(ctx, "192.0.2"),
    )


def saas_invoice(ctx: Context) -> Mail:
    vendor, domain = ctx.draw("saas")
    invoice = f"INV-{ctx.number(100_000, 999_999)}"
    t = ctx.texts(
        vendor=vendor,
        invoice=invoice,
        plan=ctx.draw("plans"),
        period=ctx.table("periods"),
        amount=money(ctx.number(29, 490) + 0.0, ctx.language),
        date=ctx.day(14),
    )
    return ctx.mail(
        t,
        sender_name=f"{vendor} Billing",
        sender=f"billing@{domain}",
        return_path=f"bounce-{ctx.token(10)}@mg.{domain}",
        auth="pass",
        attachments=((f"{invoice}.pdf", "application/pdf", _pdf(f"{vendor} invoice {invoice}")),),
        sender_ip=_ip(ctx, "192.0.2"),
    )


def newsletter(ctx: Context) -> Mail:
    shop, domain = ctx.table("shops")
    social = f"https://bit.ly/{ctx.token(7)}"
    t = ctx.texts(shop_domain=domain, social=social, amount=money(ctx.draw("discounts"), ctx.language))
    esp = ctx.draw("click_hosts")
    # A small shop whose mailing service signs for it (DMARC passes) or, for some, sends unauthenticated: then the
    # rules see tracking links and a shortener with nothing vouching for the sender (a false alarm for them).
    auth = ctx.pick(("pass", "pass", None))
    return ctx.mail(
        t,
        sender_name=shop,
        sender=f"news@{domain}",
        cta=(t.cta, f"https://{esp}/c/{ctx.token(24)}"),
        footer=(shop,),
        footer_links=(("Unsubscribe", f"https://{esp}/u/{ctx.token(24)}"),),
        return_path=f"bounce-{ctx.token(12)}@{esp.split('.', 1)[1]}",
        auth=auth,
        dkim_domain=domain,
        parts="html",
        sender_ip=_ip(ctx, "192.0.2"),
    )


def colleague_notes(ctx: Context) -> Mail:
    colleague = ctx.person()
    t = ctx.texts(colleague=colleague, date=ctx.day(7))
    first, last = (ascii_fold(part) for part in colleague.split())
    return ctx.mail(
        t,
        sender_name=colleague,
        sender=f"{first}.{last}@{ctx.recipient.split('@')[1]}",
        auth=None,  # internal mail never crosses the boundary MTA that stamps Authentication-Results
        parts="text",
        sender_ip="10.20.0.15",
    )


def vendor_bank_change(ctx: Context) -> Mail:
    vendor, domain, _ = ctx.draw("suppliers")
    contact = ctx.person()
    return ctx.mail(
        ctx.texts(vendor=vendor, contact=contact, date=ctx.day(30)),
        sender_name=contact,
        sender=f"finance@{domain}",
        auth="pass",
        parts="both",
        sender_ip=_ip(ctx, "192.0.2"),
    )


def support_ticket(ctx: Context) -> Mail:
    vendor, domain = ctx.draw("saas")
    agent = ctx.person()
    ticket = ctx.number(10_000, 99_999)
    t = ctx.texts(ticket=ticket, agent=agent, vendor=vendor)
    helpdesk = f"{domain.split('.')[0]}.zendesk.com"
    return ctx.mail(
        t,
        sender_name=f"{agent} ({vendor} Support)",
        sender=f"support@{domain}",
        reply_to=f"support+id{ticket}@{helpdesk}",
        return_path=f"bounce+{ctx.token(10)}@{helpdesk}",
        auth="pass",
        dkim_domain=domain,
        sender_ip=_ip(ctx, "192.0.2"),
    )


def bank_statement(ctx: Context) -> Mail:
    bank, domain = ctx.draw("banks")
    return ctx.mail(
        ctx.texts(bank=bank, month=ctx.table("months")),
        sender_name=bank,
        sender=f"service@{domain}",
        cta=(bank, f"https://www.{domain}/"),
        return_path=f"bounce@mail.{domain}",
        auth="pass",
        sender_ip=_ip(ctx, "192.0.2"),
    )


CASES: dict[str, Callable[[Context], Mail]] = {
    build.__name__: build
    for build in (
        m365_quota, bank_lock, parcel_fee, supplier_bank_change, ceo_gift_cards, mfa_push, malware_invoice,
        paypal_zero_width, shared_document, tax_refund, order_shipped, carrier_tracking, password_reset, signin_alert,
        saas_invoice, newsletter, colleague_notes, vendor_bank_change, support_ticket, bank_statement,
    )
}  # fmt: skip


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


# --- assembly -----------------------------------------------------------------------------------------------------


def _context(case_index: int, language: str, variant: int, case: Mapping[str, Any]) -> Context:
    rng = np.random.default_rng([SEED, case_index, LANGUAGES.index(language), variant])
    first, last = PEOPLE[language][int(rng.integers(0, len(PEOPLE[language])))]
    domain = ("example.com", "example.net", "example.org")[int(rng.integers(0, 3))]
    sent_at = START + timedelta(days=int(rng.integers(0, 240)), minutes=int(rng.integers(0, 14 * 60)))
    recipient = f"{ascii_fold(first)}.{ascii_fold(last)}@{domain}"
    return Context(language, rng, first, f"{first} {last}", recipient, sent_at, case)


def build(tables: Mapping[str, Any]) -> tuple[list[dict[str, str]], list[Mail], list[str]]:
    """(rows, their Mail specs, their labels) of the whole corpus, each message checked against its case."""
    cases: dict[str, dict[str, Any]] = _source("cases.yaml")
    if set(cases) != set(CASES):
        raise SystemExit(f"cases.yaml and this script's cases differ: {sorted(set(cases) ^ set(CASES))}")
    rows, mails, labels = [], [], []
    for case_index, (key, case) in enumerate(cases.items()):
        source = {**case, "tables": {**tables, **case.get("tables", {})}}
        expect = set(case.get("expect", ()))
        for language in LANGUAGES:
            for variant in range(VARIANTS):
                mail = CASES[key](_context(case_index, language, variant, source))
                raw = compose(mail)
                analysis = detectors.analyze(raw)
                missing = expect - analysis.types
                if missing or analysis.warnings:
                    raise RuntimeError(
                        f"{key}/{language}/{variant}: missing {sorted(missing)}, warnings {analysis.warnings}"
                    )
                rows.append(
                    {
                        "raw_email": raw,
                        "label": case["label"],
                        "language": language,
                        "scenario": case["scenario"],
                        "case": key,
                    }
                )
                mails.append(mail)
                labels.append(case["label"])
    return rows, mails, labels


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


def reputation_store(mails: list[Mail], labels: list[str], tables: Mapping[str, Any]) -> dict[str, object]:
    """The offline store: brands and mail services allow-listed and old, legitimate senders old and unlisted,
    phishing domains young (3 in 4 block-listed, the rest not yet), compromised small-business sites old."""
    rng = np.random.default_rng([SEED, 99])
    domains: dict[str, dict[str, object]] = {}
    for brand_domain in sorted(detectors.BRAND_DOMAINS):
        domains[brand_domain] = {"first_seen": "2001-01-01", "listed": "allow", "source": "brand-list"}
    for service in tables["allow_listed"]:
        domains[service] = {"first_seen": "2009-06-01", "listed": "allow", "source": "mail-services"}
    compromised = {domain for options in tables["compromised"].values() for _, domain in options}
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
    tables = _source("tables.yaml")
    rows, mails, labels = build(tables)
    emails = jsonl_text(rows)
    store = reputation_store(mails, labels, tables)
    return emails, json.dumps(store, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def files() -> dict[Path, str]:
    """The shipped files and their contents."""
    emails, store = render()
    return {EMAILS_FILE: emails, STORE_FILE: store}


def main(argv: Sequence[str] | None = None) -> int:
    return build_main(__doc__, files, script="scripts/build_e4_embedded.py", argv=argv)


if __name__ == "__main__":
    sys.exit(main())
