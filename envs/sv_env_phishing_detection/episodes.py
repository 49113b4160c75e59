"""How E4 poses an email: one prompt for a single-turn answer, or an episode in which the model may consult the
offline URL-reputation tool within its budget before it answers."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from sv_env_phishing_detection import data, prompts, schema
from sv_env_phishing_detection.config import UrlReputation
from sv_env_phishing_detection.reputation import TOOL_NAME, TOOL_SPEC, ReputationStore, ReputationTool
from sv_env_phishing_detection.verify import PhishingVerifier
from sv_shared.contracts import Item, Message, Policy, ScoredSample, ToolUse


class PhishingEpisodes(ToolUse):
    def __init__(self, verifier: PhishingVerifier, settings: UrlReputation) -> None:
        self.verifier = verifier
        self.settings = settings
        self._store: ReputationStore | None = None

    def observation(self, item: Item) -> dict[str, Any]:
        return {column: item[column] for column in schema.OBSERVATION_COLUMNS}

    def messages(self, item: Item) -> list[Message]:
        return prompts.build_messages(self.observation(item))

    def reputation_tool(self) -> ReputationTool:
        """A fresh URL-reputation tool for one rollout (its transcript is that rollout's), configured from
        tools.url_reputation: the shipped store, plus the domains of an APWG feed file when one is configured."""
        if self._store is None:
            store = ReputationStore.load_default()
            feed = self.settings.apwg_blocklist
            if feed:
                store = store.with_blocklist(data.apwg_urls(Path(feed)), source="apwg")
            self._store = store
        return ReputationTool(store=self._store, budget=self.settings.budget)

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
        scored = self.verifier.score(item, text)
        tools = {"tool_calls": len(tool.transcript), "calls": tool.transcript}
        return dataclasses.replace(scored, details={**scored.details, "tools": tools, "transcript": messages})
