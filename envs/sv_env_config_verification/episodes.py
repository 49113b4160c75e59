"""How E2 poses an item: one prompt for a single-turn answer, or a tool-using episode in which the model may call
the scanners within the configured budget before it answers."""

from __future__ import annotations

from typing import Any

from sv_env_config_verification import prompts, rollout, schema
from sv_env_config_verification.tools import ALL, ToolBox
from sv_env_config_verification.verify import ConfigVerifier
from sv_shared.contracts import Item, Message, Policy, ScoredSample, ToolUse
from sv_shared.execution.findings import Finding


class ConfigEpisodes(ToolUse):
    """Single turn: `messages`. Tool use: `rollout` = `run_episode` with the oracle's scanners as the tools, then
    `score_episode`, which scores the final answer with the tool accounting and transcript in the details."""

    def __init__(self, verifier: ConfigVerifier, budget: rollout.Budget) -> None:
        self.verifier = verifier
        self.budget = budget

    def observation(self, item: Item) -> dict[str, Any]:
        return {column: item[column] for column in schema.OBSERVATION_COLUMNS}

    def messages(self, item: Item) -> list[Message]:
        return prompts.build_messages(self.observation(item))

    def tool_names(self) -> list[str]:
        """The scanners a model may call here (those the oracle can run)."""
        return sorted(self.verifier.oracle.versions())

    def scan_tool(self, tool: str, filename: str, content: str) -> tuple[list[Finding], str | None]:
        """One scanner's canonical findings on a text ("all": the oracle's merged view), or the loader's error."""
        [result] = self.verifier.oracle.scan_many([(filename, content)])
        if result.error:
            return [], str(result.error_detail or result.error)
        findings = result.findings if tool == ALL else result.raw.get(tool, [])
        return [finding for finding in findings if finding.canonical_id], None

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
        scored = self.verifier.score(item, episode.final)
        details = {**scored.details, "tools": episode.summary(), "transcript": episode.messages}
        return ScoredSample(
            item_id=scored.item_id,
            reward=scored.reward,
            components=scored.components,
            parsed=scored.parsed,
            error=scored.error,
            details=details,
        )
