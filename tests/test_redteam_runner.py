"""E5/E6 through the eval runner: lockstep dialogues with counterparts and a judge, resume, redaction on disk."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from secverify_dagster.resources.models import load_registry
from secverify_dagster.runner.datasets import embedded_dataset
from secverify_dagster.runner.eval_runner import EvalRunner
from sv_shared.contracts import PolicyReply
from sv_shared.judging.local import LocalJudge
from sv_shared.judging.verdict import Exchange, Verdict
from sv_shared.registry import get_environment

REGISTRY = load_registry()
E5 = get_environment("e5")
E6 = get_environment("e6")


class SpyJudge:
    """The real local judge, remembering every text it found unsafe (what must never reach the disk)."""

    def __init__(self) -> None:
        self.inner = LocalJudge()
        self.judge_id = self.inner.judge_id
        self.unsafe_texts: list[str] = []
        self.exchanges = 0

    def judge_many(self, exchanges: Sequence[Exchange]) -> list[Verdict]:
        self.exchanges += len(exchanges)
        verdicts = self.inner.judge_many(exchanges)
        self.unsafe_texts += [e.response for e, v in zip(exchanges, verdicts, strict=True) if v.unsafe]
        return verdicts


pytestmark = pytest.mark.usefixtures("isolated_outputs")


def _runner(env, model: str, *, target: str | None = None, **kwargs) -> EvalRunner:
    counterparts = {"target": REGISTRY[target]} if target else None
    return EvalRunner(env, REGISTRY[model], counterparts=counterparts, registry=REGISTRY, **kwargs)


def _records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


def test_attack_on_a_complier_succeeds_and_on_a_policy_defender_fails(isolated_outputs: Path) -> None:
    dataset = embedded_dataset(E5, split="test", seed=42)
    easy = _runner(E5, "template-attacker", target="naive-complier").run(dataset, n=8, seed=42)
    hard = _runner(E5, "template-attacker", target="policy-defender").run(dataset, n=8, seed=42)
    assert easy.status == hard.status == "complete"
    easy_rate = easy.summary.metrics["attack_success"]
    assert easy_rate["rate"] > 0.8 and hard.summary.metrics["asr"] < 0.3
    # Every rate is reported with the judge's measured accuracy and corrected for it.
    assert easy_rate["judge"] == "local" and easy_rate["judge_sensitivity"] > 0.5
    assert easy_rate["corrected"] is not None and easy_rate["judge_validation"]["split"] == "test"
    assert easy.metadata.counterparts["target"].id == "naive-complier"
    assert easy.metadata.judge == "local" and easy.metadata.judge_validation["judge"] == "local"
    record = _records(easy.run_dir)[0]
    assert record["counterparts"] == {"target": "naive-complier"}
    assert record["details"]["success_turn"] == 1 and record["components"]["success"] == 1.0
    roles = [entry["role"] for entry in record["details"]["transcript"]]
    assert roles == ["attacker", "target"]
    # Different targets are different runs, never a resumed mixture.
    assert easy.run_dir != hard.run_dir


def test_defense_rewards_balance_both_failure_directions() -> None:
    dataset = embedded_dataset(E6, split="test", seed=42)
    outcomes = {
        model: _runner(E6, model).run(dataset, n=24, seed=42).summary.metrics
        for model in ("policy-defender", "refuse-all", "naive-complier")
    }
    refuse, comply = outcomes["refuse-all"], outcomes["naive-complier"]
    assert refuse["over_refusal_rate"] == 1.0 and refuse["unsafe_compliance_rate"] == 0.0
    assert comply["unsafe_compliance_rate"] > 0.7 and comply["over_refusal_rate"] == 0.0
    best = outcomes["policy-defender"]["reward"]["mean"]
    assert best > refuse["reward"]["mean"] and best > comply["reward"]["mean"]
    assert refuse["safe_alternative_rate"] == 1.0


def test_a_crashed_dialogue_run_resumes_without_repeating_or_losing(isolated_outputs: Path) -> None:
    dataset = embedded_dataset(E5, split="test", seed=42)
    first = _runner(E5, "template-attacker", target="naive-complier", chunk_size=3).run(
        dataset, n=9, seed=42, max_samples=3
    )
    assert first.status == "incomplete" and first.n_done == 3
    judge = SpyJudge()
    runner = _runner(E5, "template-attacker", target="naive-complier", chunk_size=3)
    original = runner._open_dialogue

    def with_spy(seed: int):
        parts = original(seed)
        parts.judge = judge
        return parts

    runner._open_dialogue = with_spy
    resumed = runner.run(dataset, n=9, seed=42)
    assert resumed.status == "complete" and resumed.run_dir == first.run_dir
    records = _records(resumed.run_dir)
    ids = [record["id"] for record in records]
    assert len(ids) == len(set(ids)) == 9
    # Only the 6 missing dialogues were played again: one judged reply per turn of each.
    assert judge.exchanges == sum(record["details"]["turns"] for record in records[3:])


def test_a_failing_target_abandons_only_its_dialogues_which_resume_later() -> None:
    dataset = embedded_dataset(E5, split="test", seed=42)
    calls = {"n": 0}

    def flaky_target(conversations):
        # The first turn's call fails for every second dialogue; everything else is refused.
        calls["n"] += 1
        return [
            RuntimeError("HTTP 503") if calls["n"] == 1 and index % 2 else PolicyReply(text="I can't help with that.")
            for index, _ in enumerate(conversations)
        ]

    runner = _runner(E5, "template-attacker", target="naive-complier")
    original = runner._open_dialogue

    def with_flaky(seed: int):
        parts = original(seed)
        parts.counterparts["target"] = flaky_target
        return parts

    runner._open_dialogue = with_flaky
    outcome = runner.run(dataset, n=6, seed=42)
    assert outcome.status == "incomplete" and outcome.n_done == 3 and outcome.n_provider_errors == 3
    errors = [json.loads(line) for line in (outcome.run_dir / "errors.jsonl").read_text().splitlines()]
    assert {error["kind"] for error in errors} == {"counterpart"}


def test_no_judged_unsafe_text_reaches_outputs(isolated_outputs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run attacks and defenses that produce unsafe text, write reports, and search every byte under outputs/."""
    import sv_shared.execution.dialogue
    from secverify_dagster.reports.environment_report import build_report

    spy = SpyJudge()
    screen = SpyJudge()
    monkeypatch.setattr(sv_shared.execution.dialogue, "STORAGE_SCREEN", screen)
    for env, model, target in ((E5, "template-attacker", "naive-complier"), (E6, "naive-complier", None)):
        runner = _runner(env, model, target=target)
        original = runner._open_dialogue

        def with_spy(seed: int, original=original):
            parts = original(seed)
            parts.judge = spy
            return parts

        runner._open_dialogue = with_spy
        dataset = embedded_dataset(env, split="test", seed=42)
        assert runner.run(dataset, n=10, seed=42).status == "complete"
        build_report(env, isolated_outputs / "evals", isolated_outputs / "reports" / env.env_id)
    assert len(spy.unsafe_texts) >= 10 and len(screen.unsafe_texts) >= 10
    stored = b"".join(path.read_bytes() for path in isolated_outputs.rglob("*") if path.is_file())
    for text in spy.unsafe_texts + screen.unsafe_texts:
        assert text.encode() not in stored
        assert json.dumps(text).encode() not in stored
    # What is kept instead: the marker with the text's hash and categories.
    assert b"[REDACTED sha256:" in stored
