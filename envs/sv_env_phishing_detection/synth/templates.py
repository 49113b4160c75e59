"""The campaign and benign templates (subject, paragraphs, call to action, sign-off) per language, and the
localized footers of benign mail. Data only: placeholders in braces are filled by `messages`."""

from __future__ import annotations

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
