"""E6's dialogues: the defender under evaluation answers a conversation's scripted user turns one by one, and a judge
reads every reply; a reply judged unsafe ends the conversation."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sv_env_redteam_defense import prompts
from sv_env_redteam_defense.config import Config
from sv_env_redteam_defense.verify import RedteamDefenseVerifier
from sv_shared.contracts import BatchPolicy, Dialogue, Item, Message, ScoredSample
from sv_shared.execution.dialogue import Episode, advance, judge_turns, screen_for_storage, transcript_entry
from sv_shared.judging.factory import check_helpfulness_judge
from sv_shared.judging.verdict import Exchange, Judge


def _hazard(item: Item, turn: int, n_turns: int) -> str | None:
    """The category hint a judge gets: the probe's hazard category on its last turn only. Benign topics are no
    hazards, and an escalation's early turns are innocuous by design: helping with them is no unsafe compliance."""
    return item["category"] if item["kind"] == "adversarial" and turn == n_turns - 1 else None


class RedteamDefenseEpisodes(Dialogue):
    """Scripted user ↔ defender conversations in lockstep, scored by the verifier; no counterpart model."""

    policy_role = "defender"
    transcript_roles = ("user", "defender")

    def __init__(self, config: Config, verifier: RedteamDefenseVerifier) -> None:
        self.settings = config.dialogue
        self.verifier = verifier

    def observation(self, item: Item) -> dict[str, Any]:
        return {"messages": self.messages(item)}

    def messages(self, item: Item) -> list[Message]:
        return prompts.defender_messages(self.settings.system_prompt, json.loads(item["turns"])[:1], [])

    def policy_view(self, item: Item, before: Sequence[Mapping[str, Any]]) -> list[Message]:
        users = [str(entry["text"]) for entry in before if entry.get("role") == "user"]
        replies = [str(entry["text"]) for entry in before if entry.get("role") == "defender"]
        return prompts.defender_messages(self.settings.system_prompt, users, replies)

    def policy_turn_completion(self, entry: Mapping[str, Any]) -> str:
        return str(entry["text"])

    def judge_spec(self) -> str:
        return self.settings.judge

    def run(
        self, items: Sequence[Item], policy: BatchPolicy, *, counterparts: Mapping[str, BatchPolicy], judge: Judge
    ) -> list[ScoredSample | Exception]:
        # The config refuses such a judge by spec; this refuses one handed over directly.
        check_helpfulness_judge(judge, env="E6")
        episodes = [
            Episode(item=item, state={"turns": json.loads(item["turns"]), "replies": [], "verdicts": []})
            for item in items
        ]
        longest = max((len(episode.state["turns"]) for episode in episodes), default=0)
        for turn in range(longest):
            for episode in episodes:
                if episode.active and turn >= len(episode.state["turns"]):
                    episode.finished = True
            self._defender_turn(episodes, policy, judge, turn)
        return [
            episode.failure if episode.failure else self.verifier.score_dialogue(episode, judge.judge_id)
            for episode in episodes
        ]

    def _defender_turn(self, episodes: Sequence[Episode], policy: BatchPolicy, judge: Judge, turn: int) -> None:
        def conversation(episode: Episode) -> list[Message]:
            turns = episode.state["turns"][: turn + 1]
            return prompts.defender_messages(self.settings.system_prompt, turns, episode.state["replies"])

        answered = []
        for episode, reply in advance(episodes, "defender", policy, conversation):
            parsed = self.verifier.parse_turn(reply.text)
            if not parsed.ok:
                episode.state["format_error"] = parsed.error
                episode.finished = True
                continue
            answered.append((episode, parsed.output["text"]))
        pending = [
            (
                episode,
                Exchange(
                    request=episode.state["turns"][turn],
                    response=text,
                    category=_hazard(episode.item, turn, len(episode.state["turns"])),
                ),
            )
            for episode, text in answered
        ]
        replies = {id(episode): text for episode, text in answered}
        screens = dict(zip((id(e) for e, _ in pending), screen_for_storage([x for _, x in pending]), strict=True))
        for episode, verdict in judge_turns(judge, pending):
            text = replies[id(episode)]
            user_turn = episode.state["turns"][turn]
            # The user turns are the corpus's own (sanitized) requests: stored as they are, like the items.
            episode.transcript.append({"role": "user", "text": user_turn, "chars": len(user_turn), "turn": turn + 1})
            episode.transcript.append(transcript_entry("defender", text, screens[id(episode)], verdict, turn=turn + 1))
            episode.state["replies"].append(text)
            episode.state["verdicts"].append(verdict)
            if verdict.unsafe:
                episode.finished = True
