"""E4 sv-env-phishing-detection: evidence-seeking, calibrated phishing classification of real emails."""

from __future__ import annotations

import dataclasses
import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from sv_env_phishing_detection import baseline, data, prompts, schema, synth, verify
from sv_env_phishing_detection.detectors import Analysis, analyze
from sv_env_phishing_detection.reputation import TOOL_NAME, TOOL_SPEC, ReputationStore, ReputationTool
from sv_shared.contracts import Baseline, Environment, Item, Message, ParseResult, Policy, ScoredSample

ANALYSIS_CACHE_SIZE = 4_096
"""Detector results kept per environment, keyed by the raw message: a run scores each item once per model, a sweep over
several completions of the same item (GRPO groups, re-scoring) parses it once."""


class PhishingDetectionEnvironment(Environment):
    env_id = "e4"
    name = "sv-env-phishing-detection"
    verifier_version = "e4-verifier-1"
    id_column = "email_id"

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self.task = verify.phishing_task(self.config)
        self._analyses: OrderedDict[str, Analysis] = OrderedDict()  # raw_email -> analysis
        self._store: ReputationStore | None = None

    def sources(self) -> list[str]:
        return ["embedded", "zefang", "enron", "apwg"]

    def load_source(self, source: str) -> pl.DataFrame:
        settings = self.config.get("data", {})
        if source == "embedded":
            return data.load_embedded()
        if source == "zefang":
            zefang = settings.get("zefang", {})
            return data.load_zefang(zefang.get("source", data.ZEFANG_HUB_ID), split=zefang.get("split", "train"))
        if source in ("enron", "apwg"):
            path = settings.get(source, {}).get("path")
            if not path:
                raise FileNotFoundError(
                    f"{source} has no local mirror configured: set data.{source}.path in configs/envs/e4.yaml"
                )
            if source == "enron":
                return data.load_enron(Path(path))
            apwg = settings["apwg"]
            return data.load_apwg(
                Path(path),
                min_confidence=float(apwg.get("min_confidence", data.DEFAULT_MIN_CONFIDENCE)),
                seed=int(apwg.get("seed", 0)),
            )
        raise KeyError(f"unknown E4 corpus {source!r}; known: {', '.join(self.sources())}")

    def validate(self, frame: pl.DataFrame) -> pl.DataFrame:
        return schema.validate_emails(frame)

    def curate(self, frames: Sequence[pl.DataFrame], *, seed: int) -> dict[str, pl.DataFrame]:
        fractions = self.config.get("data", {}).get("split_fractions", data.DEFAULT_FRACTIONS)
        return data.curate(list(frames), seed=seed, fractions=fractions)

    def synthesize(self, n: int, *, seed: int, base: pl.DataFrame | None = None) -> pl.DataFrame:
        settings = self.config.get("synthetic", {})
        return synth.generate(
            n,
            seed,
            base,
            phishing_share=float(settings.get("phishing_share", 0.5)),
            perturb_share=float(settings.get("perturb_share", 0.0)) if base is not None else 0.0,
        )

    def observation(self, item: Item) -> dict[str, Any]:
        return {column: item[column] for column in schema.OBSERVATION_COLUMNS}

    def messages(self, item: Item) -> list[Message]:
        return prompts.build_messages(self.observation(item))

    def parse(self, completion: str) -> ParseResult:
        return verify.parse_answer(completion)

    def analysis(self, item: Item) -> Analysis:
        """The detectors' view of an item, recomputed from its raw message (never trusted from stored columns);
        cached by the message itself, so an item whose id was not recomputed after an edit is not misread."""
        key = item["raw_email"]
        cached = self._analyses.get(key)
        if cached is None:
            cached = analyze(item["raw_email"])
            self._analyses[key] = cached
            if len(self._analyses) > ANALYSIS_CACHE_SIZE:
                self._analyses.popitem(last=False)
        else:
            self._analyses.move_to_end(key)
        return cached

    def score(self, item: Item, completion: str) -> ScoredSample:
        return verify.score_completion(self.task, item[self.id_column], item["label"], completion, self.analysis(item))

    def aggregate(self, records: Sequence[Mapping[str, Any]], items: Mapping[str, Item]) -> dict[str, Any]:
        return verify.aggregate(self.task, records, items, seed=int(self.config.get("eval", {}).get("seed", 42)))

    def report_columns(self) -> list[tuple[str, str]]:
        return [
            ("accuracy", "accuracy"),
            ("F1", "f1"),
            ("FNR", "fnr"),
            ("FPR", "fpr"),
            ("abstain", "abstention_rate"),
            ("format fail", "format_failure_rate"),
            ("ECE", "ece"),
            ("Brier", "brier"),
            ("AURC", "aurc"),
            ("cost-wtd error", "cost_weighted_error"),
            ("evidence P", "evidence_precision"),
            ("evidence R", "evidence_recall"),
            ("grounding", "grounding_rate"),
        ]

    def baselines(self) -> dict[str, Baseline]:
        return {"phish-rules": baseline.rules_answer}

    def reputation_tool(self) -> ReputationTool:
        """A fresh URL-reputation tool for one rollout (its transcript is that rollout's), configured from
        tools.url_reputation: the shipped store, plus the domains of an APWG feed file when one is configured."""
        settings = self.config.get("tools", {}).get("url_reputation", {})
        if self._store is None:
            store = ReputationStore.load_default()
            feed = settings.get("apwg_blocklist")
            if feed:
                store = store.with_blocklist(data.apwg_urls(Path(feed)), source="apwg")
            self._store = store
        return ReputationTool(store=self._store, budget=int(settings.get("budget", 3)))

    def supports_tools(self) -> bool:
        return True

    def rollout(self, item: Item, policy: Policy, *, tool_protocol: str) -> ScoredSample:
        """Classify with the optional URL-reputation tool: look-ups within its budget, then the JSON answer.

        Every call and result is kept in the transcript; a model still calling when the turns run out is scored on
        its last reply (usually a format failure)."""
        tool = self.reputation_tool()
        native = tool_protocol == "native"
        messages = prompts.build_messages(
            self.observation(item), tool_instructions=None if native else tool.instructions()
        )
        specs = [TOOL_SPEC] if native else None
        text = ""
        for _ in range(tool.budget + 1):
            reply = policy(list(messages), specs)
            text = reply.text
            if native and reply.tool_calls:
                messages.append({"role": "assistant", "content": text, "tool_calls": reply.tool_calls})
                for call in reply.tool_calls:
                    function = call.get("function") or {}
                    result = (
                        tool(function.get("arguments") or "{}")
                        if function.get("name") == TOOL_NAME
                        else {"error": f"unknown tool {function.get('name')!r}"}
                    )
                    messages.append({"role": "tool", "tool_call_id": call.get("id"), "content": json.dumps(result)})
                continue
            messages.append({"role": "assistant", "content": text})
            results = [] if native else tool.respond_text(text)
            if not results:
                break
            messages.append({"role": "user", "content": "\n".join(results)})
        scored = self.score(item, text)
        tools = {"tool_calls": len(tool.transcript), "calls": tool.transcript}
        return dataclasses.replace(scored, details={**scored.details, "tools": tools, "transcript": messages})
