"""E4 synthetic data: campaign × language × obfuscation messages, checked by the detectors, balanced, reproducible."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sv_env_phishing_detection import data, detectors, schema, synth
from sv_shared.data.hashing import frame_hash

FIXTURES = Path(__file__).parent / "fixtures" / "e4"


@pytest.fixture(scope="module")
def mix() -> pl.DataFrame:
    return synth.generate(200, 42)


@pytest.mark.parametrize("campaign", synth.CAMPAIGNS)
@pytest.mark.parametrize("language", schema.LANGUAGES)
def test_every_campaign_language_and_obfuscation_fires_its_indicators(campaign: str, language: str) -> None:
    for obfuscation in synth.ALLOWED_OBFUSCATIONS[campaign]:
        raw = synth.render(campaign, 11, language, obfuscation)
        expected = synth.CAMPAIGN_INDICATORS[campaign] | synth.OBFUSCATION_INDICATORS[obfuscation]
        analysis = detectors.analyze(raw)
        assert expected <= analysis.types, (campaign, language, obfuscation)
        assert not analysis.warnings
        assert detectors.language_of(raw) in (language, "und")


@pytest.mark.parametrize("kind", synth.BENIGN_KINDS)
def test_benign_mail_stays_below_the_rules_threshold(kind: str) -> None:
    for language in schema.LANGUAGES:
        for seed in range(5):
            assert detectors.analyze(synth.render(kind, seed, language)).suspicion < 0.5


def test_render_is_a_pure_function_of_its_provenance(mix: pl.DataFrame) -> None:
    for row in mix.head(25).iter_rows(named=True):
        params = json.loads(row["generator_params"])
        raw = synth.render(row["generator"], row["generator_seed"], params["language"], params["obfuscation"])
        assert raw == row["raw_email"]
    assert synth.render("gift_card", 1, "fr") != synth.render("gift_card", 2, "fr")


def test_generate_balances_labels_campaigns_languages_and_obfuscations(mix: pl.DataFrame) -> None:
    assert mix.height == 200 and mix.filter(pl.col("label") == "Phishing").height == 100
    assert set(mix["source_corpus"]) == {schema.SYNTHETIC_CORPUS}
    by_generator = dict(mix.group_by("generator").len().iter_rows())
    assert [by_generator[campaign] for campaign in synth.CAMPAIGNS] == [20] * 5
    assert [by_generator[kind] for kind in synth.BENIGN_KINDS] == [34, 33, 33]
    assert set(mix.group_by("language").len()["len"]) == {50}
    obfuscations = [
        json.loads(text)["obfuscation"] for text in mix.filter(pl.col("generator") == "mfa_fatigue")["generator_params"]
    ]
    assert {name: obfuscations.count(name) for name in set(obfuscations)} == dict.fromkeys(synth.OBFUSCATIONS, 4)


@pytest.mark.parametrize(("n", "share", "phishing"), [(7, 0.5, 4), (10, 0.0, 0), (3, 1.0, 3), (0, 0.5, 0)])
def test_generate_takes_the_share_exactly(n: int, share: float, phishing: int) -> None:
    frame = synth.generate(n, 1, phishing_share=share)
    assert frame.height == n and frame.filter(pl.col("label") == "Phishing").height == phishing


def test_generate_is_deterministic_and_seed_sensitive(mix: pl.DataFrame) -> None:
    assert frame_hash(synth.generate(200, 42)) == frame_hash(mix)
    assert frame_hash(synth.generate(200, 43)) != frame_hash(mix)
    schema.validate_emails(mix, check_derived=True)


def test_perturb_hides_zero_width_characters_in_real_phish() -> None:
    base = data.load_zefang(FIXTURES / "zefang_Phishing_Email.csv")
    perturbed = synth.perturb(base, 5)
    assert perturbed.height == 3  # the three phishing rows; legitimate rows are never perturbed
    assert set(perturbed["generator"]) == {"perturb_zero_width"} and set(perturbed["label"]) == {"Phishing"}
    for row in perturbed.iter_rows(named=True):
        assert "zero_width_obfuscation" in detectors.analyze(row["raw_email"]).types
        assert json.loads(row["generator_params"])["base_email_id"] in base["email_id"].to_list()
    mixed = synth.generate(10, 3, base, perturb_share=0.4)
    assert dict(mixed.group_by("generator").len().iter_rows())["perturb_zero_width"] == 2


def test_url_lure_wraps_the_feed_url() -> None:
    row = synth.url_lure("https://login-example.top/a", "PayPal", 9, feed="apwg")
    assert "https://login-example.top/a" in row["raw_email"] and row["generator"] == "url_lure"
    assert json.loads(row["generator_params"])["url"] == "https://login-example.top/a"


def test_homoglyph_domains_read_like_the_brand() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        machine, human = synth.homoglyph_domain("paypal.com", rng)
        assert machine != "paypal.com" and detectors.lookalike(machine) is not None
        assert machine == human or machine.startswith("xn--")


def test_invalid_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="does not take obfuscation"):
        synth.render("gift_card", 1, "en", "homoglyph")
    with pytest.raises(ValueError, match="language"):
        synth.render("gift_card", 1, "it")
    with pytest.raises(KeyError, match="unknown generator"):
        synth.render("lottery", 1, "en")
    with pytest.raises(ValueError, match="phishing_share"):
        synth.generate(4, 1, phishing_share=1.5)
