"""The environment contract, split by job: data, verifier, episode kinds, and the records they exchange."""

from sv_shared.contracts.data import EnvironmentData
from sv_shared.contracts.environment import Environment
from sv_shared.contracts.episodes import Dialogue, EpisodeKind, SingleTurn, ToolUse
from sv_shared.contracts.types import (
    Baseline,
    BatchPolicy,
    Item,
    Message,
    ParseResult,
    Policy,
    PolicyReply,
    ScoredSample,
)
from sv_shared.contracts.verifier import CompletionVerifier, DialogueVerifier, RewardFunction, Verifier

__all__ = [
    "Baseline",
    "BatchPolicy",
    "CompletionVerifier",
    "Dialogue",
    "DialogueVerifier",
    "Environment",
    "EnvironmentData",
    "EpisodeKind",
    "Item",
    "Message",
    "ParseResult",
    "Policy",
    "PolicyReply",
    "RewardFunction",
    "ScoredSample",
    "SingleTurn",
    "ToolUse",
    "Verifier",
]
