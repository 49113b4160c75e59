"""Zero-width variants of real phishing emails: a base corpus's phish rewritten with invisible characters inside
words of its text/plain parts, kept only when the detectors see the obfuscation and the message still parses
cleanly."""

from __future__ import annotations

import email
import json
import quopri

import numpy as np
import polars as pl

from sv_env_phishing_detection import detectors
from sv_env_phishing_detection.schema import SYNTHETIC_CORPUS, validate_emails
from sv_env_phishing_detection.synth.messages import frame_from_rows
from sv_env_phishing_detection.synth.obfuscation import insert_zero_width
from sv_shared.data.hashing import stable_json
from sv_shared.data.seeds import check_seed


def perturb(frame: pl.DataFrame, seed: int) -> pl.DataFrame:
    """Zero-width variants of real phishing emails: invisible characters hidden inside words of their text/plain
    bodies (re-encoded as quoted-printable UTF-8). Legitimate rows, and messages whose text cannot be rewritten
    faithfully (no plain-text part, parse warnings), are skipped, so the result can be shorter than the input."""
    check_seed(seed)
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
