"""E4 detectors: safe parsing of bad input, and every indicator firing on a crafted email but not on its twin."""

from __future__ import annotations

import base64
import time

import pytest

from sv_env_phishing_detection import detectors
from sv_env_phishing_detection.detectors import analyze, lookalike, normalize, parse_email
from sv_env_phishing_detection.schema import EVIDENCE_TYPES


def mail(body: str = "Hello.", *, html: str | None = None, **headers: str) -> str:
    """A small RFC 5322 message: headers given as keyword arguments (underscores for hyphens)."""
    lines = [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    names = {line.split(":", 1)[0].casefold() for line in lines}
    if "from" not in names:
        lines.append("From: Jane Doe <jane@example-shop.com>")
    if "subject" not in names:
        lines.append("Subject: Hello")
    if html is None:
        return "\n".join([*lines, "Content-Type: text/plain; charset=utf-8", "", body, ""])
    return "\n".join(
        [
            *lines,
            'Content-Type: multipart/alternative; boundary="b1"',
            "",
            "--b1",
            "Content-Type: text/plain; charset=utf-8",
            "",
            body,
            "--b1",
            "Content-Type: text/html; charset=utf-8",
            "",
            html,
            "--b1--",
            "",
        ]
    )


def fired(raw: str) -> frozenset[str]:
    return analyze(raw).types


PASS = (
    "mx.example.org; spf=pass smtp.mailfrom=example-shop.com; dkim=pass header.d=example-shop.com; "
    "dmarc=pass header.from=example-shop.com"
)
UNALIGNED = "mx.example.org; spf=pass smtp.mailfrom=mailer-x.example.net; dkim=none; dmarc=none"


# --- one indicator at a time: (positive, negative twin) ---------------------------------------------------------


def with_attachment(filename: str) -> str:
    payload = base64.b64encode(b"inert test bytes").decode()
    return (
        "From: Jane Doe <jane@example-shop.com>\nSubject: Files\n"
        'Content-Type: multipart/mixed; boundary="m1"\n\n--m1\nContent-Type: text/plain\n\nSee attached.\n'
        f'--m1\nContent-Type: application/octet-stream; name="{filename}"\n'
        f'Content-Disposition: attachment; filename="{filename}"\nContent-Transfer-Encoding: base64\n\n'
        f"{payload}\n--m1--\n"
    )


TWINS: dict[str, tuple[str, str]] = {
    "sender_spoofing": (
        # A Return-Path of another organisation, which alone is weak, and only that organisation authenticated.
        mail(Return_Path="<bounce@mailer-x.example.net>", Authentication_Results=UNALIGNED),
        mail(Return_Path="<bounce@mailer-x.example.net>", Authentication_Results=PASS),
    ),
    "reply_to_mismatch": (
        mail(Reply_To="jane.doe.billing@gmail.com"),
        mail(Reply_To="billing@support.example-shop.com"),
    ),
    "display_name_mismatch": (
        mail(From="PayPal <service@account-help.example.net>"),
        mail(From="PayPal <service@paypal.com>"),
    ),
    "lookalike_domain": (
        mail("Log in at https://www.paypa1.com/signin today."),
        mail("Log in at https://www.paypal.com/signin today."),
    ),
    "link_mismatch": (
        mail(html='<p><a href="https://evil.example.net/x">https://www.chase.com/login</a></p>'),
        mail(html='<p><a href="https://secure.chase.com/x">https://www.chase.com/login</a></p>'),
    ),
    "ip_or_punycode_url": (
        mail("Open http://192.0.2.55/login now."),
        mail("Open https://portal.example-shop.com/login now."),
    ),
    "url_shortener": (
        mail("Details: https://bit.ly/3xYz12"),
        mail("Details: https://www.example-shop.com/3xYz12"),
    ),
    "urgency": (mail("Your account will be suspended within 24 hours."), mail("Your account statement is ready.")),
    "credential_request": (mail("Please confirm your password here."), mail("Your password was saved.")),
    "payment_change": (
        mail("Please note our new bank details for all future payments."),
        mail("Please pay invoice 42 to the account you already hold for us."),
    ),
    "gift_card_request": (mail("Buy five gift cards and send the codes."), mail("Buy five notebooks for the team.")),
    "suspicious_attachment": (with_attachment("invoice.pdf.exe"), with_attachment("invoice.pdf")),
    "auth_failure": (
        mail(Authentication_Results="mx.example.org; spf=fail smtp.mailfrom=x.example.net; dmarc=fail"),
        mail(Authentication_Results=PASS),
    ),
    "zero_width_obfuscation": (
        mail("Please verify your pass\u200bword."),
        mail("Preheader text \u200c \u200c \u200c and a hy\u00adphen."),
    ),
}


def test_every_evidence_type_has_a_twin_test() -> None:
    assert set(TWINS) == set(EVIDENCE_TYPES)


@pytest.mark.parametrize("kind", sorted(TWINS))
def test_indicator_fires_on_positive_and_not_on_negative_twin(kind: str) -> None:
    positive, negative = TWINS[kind]
    assert kind in fired(positive)
    assert kind not in fired(negative)


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("urgency", "Ihr Konto wird gesperrt, bitte handeln Sie umgehend."),
        ("urgency", "Votre compte sera suspendu sous 24 heures."),
        ("urgency", "Su cuenta será bloqueada de inmediato."),
        ("credential_request", "Bitte bestätigen Sie Ihre Zugangsdaten."),
        ("credential_request", "Merci de confirmer votre mot de passe : confirmez votre identité."),
        ("credential_request", "Confirme su contraseña en el enlace."),
        ("payment_change", "Bitte beachten Sie unsere neue Bankverbindung."),
        ("payment_change", "Voici nos nouvelles coordonnées bancaires."),
        ("payment_change", "Le enviamos nuestros nuevos datos bancarios."),
        ("gift_card_request", "Kauf bitte fünf Geschenkkarten."),
        ("gift_card_request", "Achète des cartes cadeaux pour le client."),
        ("gift_card_request", "Compra tarjetas regalo hoy."),
    ],
)
def test_lexicons_cover_german_french_and_spanish(kind: str, text: str) -> None:
    assert kind in fired(mail(text))


@pytest.mark.parametrize(
    "text",
    ["Ihr Kontoauszug ist verfügbar.", "Votre relevé est disponible.", "Su extracto está disponible.", "See you at 3."],
)
def test_neutral_text_fires_no_lexicon(text: str) -> None:
    assert not fired(mail(text)) & {"urgency", "credential_request", "payment_change", "gift_card_request"}


@pytest.mark.parametrize(
    ("host", "kind"),
    [
        ("paypa1.com", "homoglyph"),
        ("rnicrosoft.com", "homoglyph"),
        ("xn--pypal-4ve.com", "homoglyph"),  # Cyrillic а in punycode
        ("amazom.de", "typo"),
        ("paypal-secure-login.com", "combo"),
        ("www.paypal.com.account-check.net", "combo"),
    ],
)
def test_lookalikes_of_brand_domains(host: str, kind: str) -> None:
    found = lookalike(host)
    assert found is not None and found.kind == kind


@pytest.mark.parametrize(
    "host", ["paypal.com", "em.paypal.com", "amazon.co.uk", "mail.com", "sendgrid.net", "live-events.com", "192.0.2.1"]
)
def test_brand_domains_and_ordinary_domains_are_not_lookalikes(host: str) -> None:
    assert lookalike(host) is None


def test_only_the_receiving_servers_authentication_results_count() -> None:
    forged_below = mail(Authentication_Results=PASS).replace(
        "Subject: Hello", "Subject: Hello\nAuthentication-Results: evil.example.net; spf=fail; dmarc=fail"
    )
    analysis = analyze(forged_below)
    assert "auth_failure" not in analysis.types
    assert analysis.aligned_pass


def test_received_spf_failure_counts() -> None:
    assert "auth_failure" in fired(mail(Received_SPF="softfail (domain of x.example.net does not designate 192.0.2.1)"))


def test_brand_domain_failing_dmarc_is_spoofed() -> None:
    raw = mail(From="PayPal <service@paypal.com>", Authentication_Results="mx.example.org; spf=fail; dmarc=fail")
    assert {"sender_spoofing", "auth_failure"} <= fired(raw)


def test_suspicion_is_noisy_or_scaled_by_aligned_dmarc() -> None:
    assert detectors.suspicion_score([], aligned_pass=False) == 0.0
    assert detectors.suspicion_score(["urgency", "payment_change"], aligned_pass=False) == pytest.approx(0.4475)
    assert detectors.suspicion_score(["urgency", "payment_change"], aligned_pass=True) == pytest.approx(0.2685)
    assert detectors.is_mixed(0.4475, (0.3, 0.6)) and not detectors.is_mixed(0.2685, (0.3, 0.6))


def test_a_lookalike_sender_gets_no_dmarc_discount() -> None:
    raw = mail(
        "Please confirm your password.",
        From="Support <help@paypa1.com>",
        Authentication_Results="mx.example.org; spf=pass; dkim=pass; dmarc=pass header.from=paypa1.com",
    )
    analysis = analyze(raw)
    assert not analysis.aligned_pass
    assert analysis.suspicion == detectors.suspicion_score(analysis.types, aligned_pass=False)


@pytest.mark.parametrize("attachment", ["report.html", "setup.iso", "budget.xlsm", "photo.jpg.js", "cv\u202efdp.exe"])
def test_dangerous_attachment_names(attachment: str) -> None:
    assert detectors.attachment_risk(attachment) is not None


@pytest.mark.parametrize("attachment", ["report.pdf", "budget.xlsx", "invite.ics", "archive.tar.gz", "README"])
def test_ordinary_attachment_names(attachment: str) -> None:
    assert detectors.attachment_risk(attachment) is None


# --- safe parsing of bad input ------------------------------------------------------------------------------------


def test_multipart_without_boundary_is_read_as_text_with_a_warning() -> None:
    raw = "From: a@example.com\nContent-Type: multipart/mixed\n\nPlease confirm your password today.\n"
    analysis = analyze(raw)
    assert any("no boundary parameter" in warning for warning in analysis.warnings)
    assert "credential_request" in analysis.types


def test_boundary_that_never_occurs_and_missing_close_are_reported() -> None:
    never = 'From: a@example.com\nContent-Type: multipart/mixed; boundary="zz"\n\nplain words\n'
    assert any("never occurs" in warning for warning in parse_email(never).warnings)
    unclosed = (
        'From: a@example.com\nContent-Type: multipart/mixed; boundary="zz"\n\n--zz\nContent-Type: text/plain\n\nhi\n'
    )
    parsed = parse_email(unclosed)
    assert parsed.text == "hi\n" and any("closing boundary" in warning for warning in parsed.warnings)


def test_unknown_and_wrong_charsets_are_decoded_with_replacement_and_reported() -> None:
    latin1 = base64.b64encode("Café crème".encode("latin-1")).decode()
    wrong = (
        f"From: a@example.com\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n\n{latin1}\n"
    )
    parsed = parse_email(wrong)
    assert parsed.text.startswith("Caf\ufffd") and any("not valid utf-8" in warning for warning in parsed.warnings)
    unknown = wrong.replace("charset=utf-8", "charset=x-klingon")
    assert any("unknown charset 'x-klingon'" in warning for warning in parse_email(unknown).warnings)
    not_text = wrong.replace("charset=utf-8", "charset=zlib")
    assert any("not a text encoding" in warning for warning in parse_email(not_text).warnings)


def test_base64_garbage_is_decoded_as_far_as_it_goes() -> None:
    raw = "From: a@example.com\nContent-Type: text/plain\nContent-Transfer-Encoding: base64\n\n!!!!notbase64@@@\n"
    parsed = parse_email(raw)
    assert any("base64 body is damaged" in warning for warning in parsed.warnings)


def test_undecodable_encoded_word_is_kept_as_written() -> None:
    parsed = parse_email("Subject: =?x-unknown?b?zzzz?=\nFrom: a@example.com\n\nbody\n")
    assert parsed.subject == "=?x-unknown?b?zzzz?="
    assert any("header Subject" in warning for warning in parsed.warnings)


def test_huge_attachment_is_sized_not_decoded_and_huge_text_is_capped() -> None:
    blob = base64.encodebytes(b"\x00" * 12_000_000).decode()
    raw = (
        'From: a@example.com\nContent-Type: multipart/mixed; boundary="m"\n\n--m\nContent-Type: text/plain\n\n'
        + "urgent " * 60_000
        + '\n--m\nContent-Type: application/octet-stream\nContent-Disposition: attachment; filename="disk.iso"\n'
        + f"Content-Transfer-Encoding: base64\n\n{blob}--m--\n"
    )
    started = time.perf_counter()
    analysis = analyze(raw)
    assert time.perf_counter() - started < 5.0
    parsed = parse_email(raw)
    assert parsed.attachments[0].filename == "disk.iso" and parsed.attachments[0].size_bytes > 11_000_000
    assert any("'disk.iso'" in warning and "not decoded" in warning for warning in analysis.warnings)
    assert any("only the first 300,000 were scanned" in warning for warning in analysis.warnings)
    assert "suspicious_attachment" in analysis.types


def test_html_script_is_removed_never_run_and_reported() -> None:
    html = (
        "<html><body><script>document.write('confirm your password'); fetch('https://evil.example.net')</script>"
        '<p onclick="steal()">Hello</p></body></html>'
    )
    analysis = analyze(mail("Hi", html=html))
    parsed = parse_email(mail("Hi", html=html))
    assert "confirm your password" not in parsed.html_text and "Hello" in parsed.html_text
    assert "credential_request" not in analysis.types
    assert any("HTML carries script" in warning for warning in analysis.warnings)


def test_deep_nesting_and_too_many_parts_are_bounded() -> None:
    deep = "From: a@example.com\n"
    for level in range(60):
        deep += f'Content-Type: multipart/mixed; boundary="b{level}"\n\n--b{level}\n'
    deep += "Content-Type: text/plain\n\nbottom\n"
    assert any("nested deeper" in warning for warning in analyze(deep).warnings)
    many = 'From: a@example.com\nContent-Type: multipart/mixed; boundary="p"\n\n' + "".join(
        f"--p\nContent-Type: text/plain\n\npart {index}\n" for index in range(detectors.MAX_PARTS + 20)
    )
    parsed = parse_email(many + "--p--\n")
    assert parsed.text.count("part ") == detectors.MAX_PARTS
    assert any("more than 200 MIME parts" in warning for warning in parsed.warnings)


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "\x00\x01\x02 binary junk \xff",
        "no headers at all, just words",
        ": empty header name\n\nbody",
        "From: a@example.com\nContent-Type: multipart/mixed; boundary=\n\n--\n",
        "From: \udcff@example.com\n\nbody",
        "Content-Type: text/plain; charset*=utf-8''%ZZ\n\nbody",
        "Content-Disposition: attachment; filename*=x-bad''%E9.exe\n\nbody",
        "From: a@example.com\r\nSubject: crlf\r\n\r\nPlease confirm your password.\r\n",
    ],
)
def test_hostile_input_never_raises(raw: str) -> None:
    analysis = analyze(raw)
    assert 0.0 <= analysis.suspicion <= 1.0


@pytest.mark.parametrize(
    "raw",
    [
        "From: a@example.com\nContent-Type: text/html\n\n" + "<a " * 50_000,
        "From: a@example.com\nContent-Type: text/html\n\n" + "<" * 200_000,
        "From: a@example.com\n\n" + "a" * 200_000 + "\u200bb",
        "From: " + "(" * 100_000 + "\n\nx",
        "From: a@example.com\nContent-Type: text/html\n\n<a href='http://x.com'>" + "a." * 100_000 + "1</a>",
    ],
)
def test_pathological_input_stays_fast(raw: str) -> None:
    started = time.perf_counter()
    analyze(raw)
    assert time.perf_counter() - started < 2.0


def test_crlf_messages_read_like_lf_messages() -> None:
    raw = mail("Please confirm your password.", Reply_To="x@gmail.com")
    assert analyze(raw.replace("\n", "\r\n")).indicators == analyze(raw).indicators


# --- grounding ----------------------------------------------------------------------------------------------------


def test_normalize_ignores_case_whitespace_and_invisible_characters() -> None:
    assert normalize("  Pass\u200bWORD\n\tnow ") == "password now"
    assert normalize("Cafe\u0301") == normalize("Café")


def test_grounding_checks_length_and_segments() -> None:
    analysis = analyze(mail("Please confirm your password today.", Subject="Account notice"))
    assert analysis.grounded(normalize("CONFIRM your\n password"))
    assert not analysis.grounded(normalize("confirm your pin"))
    assert not analysis.grounded("ple")  # shorter than MIN_QUOTE_CHARS
    assert not analysis.grounded(normalize("x" * 301))
    assert not analysis.grounded(normalize("account notice content-type"))  # spans two headers


def test_every_anchor_of_every_indicator_is_grounded() -> None:
    for positive, _ in TWINS.values():
        analysis = analyze(positive)
        for kind, anchors in analysis.indicators.items():
            assert anchors, kind
            assert all(analysis.grounded(anchor) for anchor in anchors), (kind, anchors)


def test_language_guess() -> None:
    assert detectors.guess_language("Bitte bestätigen Sie Ihre Daten, die wir für das Konto brauchen") == "de"
    assert detectors.guess_language("Merci de vérifier votre compte pour les paiements de la semaine") == "fr"
    assert detectors.guess_language("Por favor confirme su cuenta para los pagos de la semana") == "es"
    assert detectors.guess_language("Please confirm your account for the payments of this week") == "en"
    assert detectors.guess_language("OK") == "und"
