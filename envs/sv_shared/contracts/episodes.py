"""Episode kinds: how an item is posed to the model under evaluation and played out. The runner dispatches on the
kind (a type), so an environment declares what it can do instead of raising on what it cannot."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sv_shared.contracts.types import Baseline, BatchPolicy, Item, Message, Policy, ScoredSample

if TYPE_CHECKING:
    from sv_shared.judging.verdict import Judge


class SingleTurn(ABC):
    """One prompt, one completion: the runner sends `messages(item)` and the verifier scores the reply."""

    @abstractmethod
    def observation(self, item: Item) -> dict[str, Any]:
        """The part of an item a model may see (never the label); rule baselines read only this."""

    @abstractmethod
    def messages(self, item: Item) -> list[Message]:
        """The chat messages that pose the item to a model."""


class ToolUse(SingleTurn):
    """Single-turn items that may also be played as multi-turn episodes with tools (E2 scanners, E4 URL
    reputation): `--include-tools` runs `rollout`, the default the single turn."""

    @abstractmethod
    def rollout(self, item: Item, policy: Policy, *, tool_protocol: str) -> ScoredSample:
        """Run one tool-using episode with the policy and score its final answer; the transcript goes in `details`.

        tool_protocol is "native" (OpenAI function calling) or "text" (tool calls written as text lines, for
        models without function calling)."""


class Dialogue(ABC):
    """Dialogues with counterparts (a target model, a judge), run in lockstep: one batched call per role and turn.

    Model text here may be harmful: nothing unjudged is cached, and judged-unsafe text is redacted before storage."""

    policy_role: str
    """What the model under evaluation is (attacker, defender): its usage is the record's usage."""

    @abstractmethod
    def observation(self, item: Item) -> dict[str, Any]:
        """What the model under evaluation is given about the item (rule baselines read only this)."""

    @abstractmethod
    def messages(self, item: Item) -> list[Message]:
        """The opening messages of the model under evaluation (stored as the record's prompt)."""

    transcript_roles: tuple[str, str]
    """The roles a stored transcript alternates, in speaking order (E5: attacker, target; E6: user, defender)."""

    @abstractmethod
    def policy_view(self, item: Item, before: Sequence[Mapping[str, Any]]) -> list[Message]:
        """The messages the model under evaluation saw at one of its turns, rebuilt from the stored transcript
        entries before that turn (an SFT example's prompt)."""

    @abstractmethod
    def policy_turn_completion(self, entry: Mapping[str, Any]) -> str:
        """A stored turn of the model under evaluation, written as the completion its prompt asks for."""

    @abstractmethod
    def judge_spec(self) -> str:
        """The judge used by default (see sv_shared.judging.factory for the forms)."""

    def counterpart_roles(self) -> dict[str, str]:
        """Roles a dialogue needs besides the model under evaluation, with the registry model each defaults to."""
        return {}

    def counterpart_generation_params(self, role: str) -> dict[str, Any]:
        """Generation parameters for a counterpart role, under the counterpart model's own."""
        return {}

    def counterpart_baselines(self) -> Mapping[str, Baseline]:
        """Rule baselines that may play a counterpart role (E6's defenders as E5's target), by registry id."""
        return {}

    @abstractmethod
    def run(
        self, items: Sequence[Item], policy: BatchPolicy, *, counterparts: Mapping[str, BatchPolicy], judge: Judge
    ) -> list[ScoredSample | Exception]:
        """Run one dialogue per item in lockstep and score each with the environment's verifier.

        A dialogue whose model or judge call failed gives that exception in its place (it is retried on resume).
        Transcripts in the samples are already redacted."""


EpisodeKind = SingleTurn | Dialogue
"""What an environment's `episodes` is: SingleTurn (or its ToolUse refinement) or Dialogue."""
