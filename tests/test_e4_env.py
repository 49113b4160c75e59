"""E4 environment contract: sources, observation without the label, prompts, the reputation tool, and an
end-to-end EvalRunner run of the phish-rules baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from secverify_dagster.resources.models import load_registry
from secverify_dagster.runner.datasets import embedded_dataset
from secverify_dagster.runner.eval_runner import EvalRunner
from sv_env_phishing_detection import baseline, prompts, reputation
from sv_env_phishing_detection.config import ToolSettings, UrlReputation
from sv_env_phishing_detection.env import build
from sv_env_phishing_detection.episodes import PhishingEpisodes
from sv_env_phishing_detection.verify import PhishingVerifier
from sv_shared.registry import get_environment, implemented_env_ids

ENV = get_environment("e4")

FIXTURES = Path(__file__).parent / "fixtures" / "e4"


@pytest.fixture(scope="module")
def dataset():
    return embedded_dataset(ENV, split="test", seed=42)


def test_registered_with_its_config() -> None:
    assert "e4" in implemented_env_ids()
    assert isinstance(ENV.verifier, PhishingVerifier) and isinstance(ENV.episodes, PhishingEpisodes)
    assert (ENV.env_id, ENV.name, ENV.data.id_column) == ("e4", "sv-env-phishing-detection", "email_id")
    assert ENV.data.sources() == ["embedded", "zefang", "enron", "apwg"]
    weights = ENV.config.reward_weights.as_mapping()
    assert ENV.config.reward_penalties == ["asymmetric_cost"] and weights["asymmetric_cost"] == 0.7
    assert sum(weight for name, weight in weights.items() if name != "asymmetric_cost") == pytest.approx(1.0)
    with pytest.raises(FileNotFoundError, match=r"data\.enron\.path"):
        ENV.data.load_source("enron")
    with pytest.raises(KeyError, match="unknown E4 corpus"):
        ENV.data.load_source("spamassassin")


def test_observation_and_messages_never_carry_the_label(dataset) -> None:
    for row in dataset.frame.head(20).iter_rows(named=True):
        observation = ENV.episodes.observation(row)
        assert list(observation) == ["raw_email"]
        system, user = ENV.episodes.messages(row)
        assert system["role"] == "system" and "lookalike_domain" in system["content"]
        assert user["content"].startswith("Email:\nReturn-Path:")
        for hidden in ("scenario", "indicators", "source_corpus", "generator_params"):
            assert row[hidden] is None or str(row[hidden]) not in user["content"]


def test_prompt_shows_decoded_text_links_and_attachments() -> None:
    frame = ENV.data.load_source("embedded")
    malware = frame.filter(frame["raw_email"].str.contains(r"\.pdf\.exe")).row(0, named=True)
    shown = ENV.episodes.messages(malware)[1]["content"]
    assert "Attachments:\n- " in shown and ".pdf.exe (application/octet-stream" in shown
    bank = frame.filter(frame["raw_email"].str.contains("secure/restore")).row(0, named=True)
    assert "-> https://" in ENV.episodes.messages(bank)[1]["content"]


def test_synthesize_and_curate_follow_the_config() -> None:
    frame = ENV.data.synthesize(12, seed=3)
    assert frame.height == 12 and frame.filter(frame["label"] == "Phishing").height == 6
    splits = ENV.data.curate([ENV.data.load_source("embedded")], seed=42)
    assert list(splits) == ["train", "dev", "test"]


def test_rules_baseline_answers_in_the_schema_with_grounded_evidence() -> None:
    frame = ENV.data.load_source("embedded")
    for item in frame.head(30).iter_rows(named=True):
        completion = baseline.rules_answer(ENV.episodes.observation(item))
        parsed = ENV.verifier.parse(completion)
        assert parsed.ok and parsed.output["label"] in ("Phishing", "Legitimate")
        scored = ENV.verifier.score(item, completion)
        assert scored.components["grounding"] == 1.0 and scored.components["evidence_precision"] == 1.0
        assert scored.components["evidence_recall"] == 1.0


def test_end_to_end_eval_of_the_rules_baseline(tmp_path: Path, dataset) -> None:
    spec = load_registry()["phish-rules"]
    outcome = EvalRunner(ENV, spec, evals_root=tmp_path).run(dataset, n=30, seed=42)
    assert outcome.status == "complete" and outcome.run_dir is not None
    assert outcome.run_dir.parent == tmp_path / "sv-env-phishing-detection--phish-rules"
    records = [json.loads(line) for line in (outcome.run_dir / "results.jsonl").read_text().splitlines()]
    assert len(records) == 30 and all(record["error"] is None for record in records)
    assert {"mixed", "suspicion", "indicators", "covered"} <= set(records[0]["details"])
    assert outcome.summary is not None
    metrics = outcome.summary.metrics
    assert metrics["n"] == 30 and metrics["format_failure_rate"] == 0.0
    assert metrics["grounding_rate"] == 1.0 and metrics["evidence_recall"] == 1.0
    assert 0.5 < metrics["accuracy"] < 1.0  # the hard cases keep the rules honest
    for _, key in ENV.verifier.report_columns():
        value = metrics
        for part in key.split("."):  # a dotted key names a nested metric ("rates.itt.fpr")
            assert part in value, key
            value = value[part]
    metadata = json.loads((outcome.run_dir / "metadata.json").read_text())
    assert metadata["verifier_version"] == ENV.verifier.version and metadata["dataset"]["rows"] == dataset.frame.height


# --- the URL-reputation tool --------------------------------------------------------------------------------------


def test_store_lookup_is_offline_and_deterministic() -> None:
    store = reputation.ReputationStore.load_default()
    paypal = store.lookup("https://www.paypal.com/signin")
    assert paypal["listed"] == "allow" and paypal["lookalike_of"] is None and paypal["age_days"] > 8000
    spoof = store.lookup("http://paypa1.com/login")
    assert spoof["lookalike_of"] == "paypal.com" and spoof["lookalike_score"] == 1.0 and not spoof["known"]
    listed = store.lookup("acces-restaurer.top")
    assert listed["listed"] == "block" and 0 < listed["age_days"] < 400
    assert store.lookup("https://bit.ly/abc")["shortener"] and store.lookup("http://192.0.2.7/x")["ip_literal"]
    assert store.lookup("not a url")["error"] == "not a URL or domain name"
    assert store.lookup("http://paypa1.com/login") == spoof


def test_blocklist_from_an_apwg_feed() -> None:
    feed = UrlReputation(budget=2, apwg_blocklist=str(FIXTURES / "apwg_ecx_phish.json"))
    tool = build(ENV.config.model_copy(update={"tools": ToolSettings(url_reputation=feed)})).episodes.reputation_tool()
    result = tool({"target": "https://paypal-account-review.top/x"})
    assert result["listed"] == "block" and result["list_source"] == "apwg"
    assert tool.store.lookup("https://login-micros0ft.com/")["listed"] is None  # below the confidence cut


def test_tool_call_protocols_budget_and_transcript() -> None:
    tool = ENV.episodes.reputation_tool()
    assert json.loads(json.dumps(reputation.TOOL_SPEC))["function"]["name"] == "url_reputation"
    assert tool('{"target": "paypa1.com"}')["lookalike_of"] == "paypal.com"
    assert "error" in tool("not json")
    lines = tool.respond_text("Let me check.\nLOOKUP url_reputation https://bit.ly/x\nLOOKUP url_reputation a.com\n")
    assert lines[0].startswith("RESULT url_reputation {") and '"shortener": true' in lines[0]
    assert "budget of 3 exhausted" in json.loads(lines[1].split(" ", 2)[2])["error"]
    assert [call["arguments"] for call in tool.transcript] == [
        {"target": "paypa1.com"},
        None,
        {"target": "https://bit.ly/x"},
        {"target": "a.com"},
    ]
    assert "LOOKUP url_reputation" in tool.instructions() and "up to 3" in tool.instructions()
    assert ENV.episodes.reputation_tool().transcript == []  # one tool (and transcript) per rollout
    system = prompts.build_messages({"raw_email": "Subject: hi\n\nhello"}, tool_instructions=tool.instructions())[0]
    assert system["content"].endswith(tool.instructions())
