"""E2 sv-env-config-verification: find and fix misconfigurations in Kubernetes manifests and Terraform modules,
verified by re-running the scanners (the oracle) on the model's patch.

Single-turn: `messages` / `score` like every environment. Tool-using: `rollout` drives a policy through an episode
in which it may call the scanners within the configured budget, and `score_episode` scores its final answer with
the tool accounting and the transcript in the sample's details.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from sv_env_config_verification import baseline, data, prompts, rollout, schema, synth, verify
from sv_env_config_verification.data import Scanner
from sv_env_config_verification.tools import ALL, ToolBox
from sv_shared.config import outputs_dir
from sv_shared.contracts import Baseline, Environment, Item, Message, ParseResult, Policy, ScoredSample
from sv_shared.execution.cache import JsonCache
from sv_shared.execution.findings import Finding


class ConfigVerificationEnvironment(Environment):
    env_id = "e2"
    name = "sv-env-config-verification"
    verifier_version = "e2-verifier-1"
    id_column = "config_id"

    def __init__(self, config: Mapping[str, Any], *, oracle: Scanner | None = None) -> None:
        super().__init__(config)
        self.settings = verify.VerifierSettings.from_config(self.config)
        self.budget = rollout.Budget.from_config(self.config.get("tools", {}))
        self._oracle = oracle

    @property
    def oracle(self) -> Any:
        """The scanners, built on first use (with the persistent scanner cache unless the config turns it off)."""
        if self._oracle is None:
            from sv_env_config_verification.oracle import Oracle

            use_cache = bool(self.config.get("oracle", {}).get("persistent_cache", True))
            cache = JsonCache(outputs_dir() / "cache" / "scanners.sqlite") if use_cache else None
            self._oracle = Oracle(cache=cache)
        return self._oracle

    # --- data ---

    def sources(self) -> list[str]:
        return ["embedded", "genkubesec", "k8s_policy_samples", "terraform"]

    def load_source(self, source: str) -> pl.DataFrame:
        settings = self.config.get("data", {})
        if source == "embedded":
            return data.load_embedded()
        if source == "genkubesec":
            genkubesec = settings.get("genkubesec", {})
            return data.load_genkubesec(
                genkubesec.get("source", data.GENKUBESEC_HUB_ID),
                split=genkubesec.get("split", "train"),
                limit=genkubesec.get("limit"),
                oracle=self.oracle,
            )
        if source in ("k8s_policy_samples", "terraform"):
            path = settings.get(source, {}).get("path")
            if not path:
                raise FileNotFoundError(
                    f"{source} has no local mirror configured: set data.{source}.path in configs/envs/e2.yaml"
                )
            if source == "terraform":
                return data.load_terraform_dir(
                    Path(path), per=settings["terraform"].get("per", "file"), oracle=self.oracle
                )
            return data.load_manifest_dir(Path(path), oracle=self.oracle)
        raise KeyError(f"unknown E2 corpus {source!r}; known: {', '.join(self.sources())}")

    def validate(self, frame: pl.DataFrame) -> pl.DataFrame:
        return schema.validate_items(frame)

    def curate(self, frames: Sequence[pl.DataFrame], *, seed: int) -> dict[str, pl.DataFrame]:
        fractions = self.config.get("data", {}).get("split_fractions", data.DEFAULT_FRACTIONS)
        return data.curate(list(frames), seed=seed, fractions=fractions)

    def synthesize(self, n: int, *, seed: int, base: pl.DataFrame | None = None) -> pl.DataFrame:
        """n oracle-confirmed vulnerable variants of the secure configs in `base` (default: the embedded corpus)."""
        return synth.generate(base if base is not None else data.load_embedded(), n, seed, self.oracle)

    # --- posing and scoring ---

    def observation(self, item: Item) -> dict[str, Any]:
        return {column: item[column] for column in schema.OBSERVATION_COLUMNS}

    def messages(self, item: Item) -> list[Message]:
        return prompts.build_messages(self.observation(item))

    def parse(self, completion: str) -> ParseResult:
        return schema.parse_answer(completion)

    def score(self, item: Item, completion: str) -> ScoredSample:
        return verify.score_completion(item, completion, self.oracle, self.settings, id_column=self.id_column)

    def score_many(self, items: Sequence[Item], completions: Sequence[str]) -> list[ScoredSample]:
        """Scores of many answers, the same as `score` one by one, with their patches re-scanned in one batch."""
        verify.prescan(items, completions, self.oracle)
        return [self.score(item, completion) for item, completion in zip(items, completions, strict=True)]

    def aggregate(self, records: Sequence[Mapping[str, Any]], items: Mapping[str, Item]) -> dict[str, Any]:
        metrics = verify.aggregate(
            records, items, weights=self.settings.weights, seed=int(self.config.get("eval", {}).get("seed", 42))
        )
        metrics["oracle_versions"] = dict(sorted(self.oracle.versions().items()))
        return metrics

    def provenance(self) -> dict[str, Any]:
        status = self.oracle.tool_status()
        return {
            "scanners": dict(sorted(self.oracle.versions().items())),
            "rulesets": dict(sorted(self.oracle.ruleset_hashes().items())),
            "unavailable": {name: st.reason for name, st in sorted(status.items()) if not st.available},
        }

    def report_columns(self) -> list[tuple[str, str]]:
        return [
            ("F1 (severity-wtd)", "weighted.f1"),
            ("precision", "weighted.precision"),
            ("recall", "weighted.recall"),
            ("F1 (unwtd)", "unweighted.f1"),
            ("FPR clean", "fpr_clean"),
            ("patch applies", "patch.applies_rate"),
            ("fixes all", "patch.fixes_all_rate"),
            ("introduces new", "patch.introduces_new_rate"),
            ("tool calls/episode", "tools.tool_calls_per_episode"),
            ("format fail", "format_failure_rate"),
        ]

    def baselines(self) -> dict[str, Baseline]:
        return {"tool-oracle": baseline.tool_oracle(lambda: self.oracle)}

    # --- the tool-using mode ---

    def tool_names(self) -> list[str]:
        """The scanners a model may call here (those the oracle can run)."""
        return sorted(self.oracle.versions())

    def scan_tool(self, tool: str, filename: str, content: str) -> tuple[list[Finding], str | None]:
        """One scanner's canonical findings on a text ("all": the oracle's merged view), or the loader's error."""
        [result] = self.oracle.scan_many([(filename, content)])
        if result.error:
            return [], str(result.error_detail or result.error)
        findings = result.findings if tool == ALL else result.raw.get(tool, [])
        return [finding for finding in findings if finding.canonical_id], None

    def supports_tools(self) -> bool:
        return True

    def rollout(self, item: Item, policy: Policy, *, tool_protocol: str) -> ScoredSample:
        return self.score_episode(item, self.run_episode(item, policy, protocol=tool_protocol))

    def run_episode(
        self, item: Item, policy: rollout.Policy, *, protocol: str = "native", budget: rollout.Budget | None = None
    ) -> rollout.Episode:
        """One tool-using episode on an item (the budget defaults to configs/envs/e2.yaml `tools`)."""
        toolbox = ToolBox(self.scan_tool, self.tool_names(), item["filename"], item["content"])
        return rollout.run_episode(
            self.observation(item),
            policy,
            toolbox,
            budget=budget or self.budget,
            protocol=protocol,
        )

    def score_episode(self, item: Item, episode: rollout.Episode) -> ScoredSample:
        """The final answer scored like a single-turn completion, with the tool accounting and transcript added."""
        scored = self.score(item, episode.final)
        details = {**scored.details, "tools": episode.summary(), "transcript": episode.messages}
        return ScoredSample(
            item_id=scored.item_id,
            reward=scored.reward,
            components=scored.components,
            parsed=scored.parsed,
            error=scored.error,
            details=details,
        )
