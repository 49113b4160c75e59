"""E4's tool-using mode: URL-reputation look-ups within budget, in both protocols, recorded in the transcript."""

import json

from sv_env_phishing_detection.reputation import TOOL_NAME
from sv_shared.contracts import PolicyReply
from sv_shared.registry import get_environment

ENV = get_environment("e4")
ITEM = next(item for item in ENV.data.load_source("embedded").to_dicts() if item["label"] == "Phishing")
ANSWER = json.dumps({"label": "Phishing", "confidence": 0.9, "evidence": []})


def test_native_calls_are_answered_and_recorded() -> None:
    seen_tools: list = []

    def policy(messages, tools):
        seen_tools.append(tools)
        if len(seen_tools) == 1:
            call = {
                "id": "c1",
                "type": "function",
                "function": {"name": TOOL_NAME, "arguments": json.dumps({"target": "paypa1-secure.com"})},
            }
            return PolicyReply(text="", tool_calls=[call])
        assert messages[-1]["role"] == "tool" and messages[-1]["tool_call_id"] == "c1"
        return PolicyReply(text=ANSWER)

    scored = ENV.episodes.rollout(ITEM, policy, tool_protocol="native")
    assert seen_tools[0][0]["function"]["name"] == TOOL_NAME
    assert scored.details["tools"]["tool_calls"] == 1
    assert scored.details["tools"]["calls"][0]["arguments"] == {"target": "paypa1-secure.com"}
    assert scored.parsed is not None and scored.parsed["label"] == "Phishing"


def test_text_protocol_budget_is_enforced() -> None:
    budget = ENV.episodes.reputation_tool().budget
    replies: list[str] = []

    def policy(messages, tools):
        assert tools is None and "LOOKUP url_reputation" in messages[0]["content"]
        replies.append(messages[-1]["content"])
        return PolicyReply(text="LOOKUP url_reputation example.com")

    scored = ENV.episodes.rollout(ITEM, policy, tool_protocol="text")
    calls = scored.details["tools"]["calls"]
    assert len(replies) == budget + 1  # the turn budget ends the episode
    assert all("error" not in call["result"] for call in calls[:budget])
    assert all("exhausted" in call["result"]["error"] for call in calls[budget:])
    assert scored.error is not None  # the last reply was a look-up, not an answer
