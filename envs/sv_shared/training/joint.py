"""The joint stage's schedule: E5 attacker and E6 defender co-trained in alternating rounds against a frozen other side.

Rounds are the tournament's (secverify_dagster/runner/tournament.py): round 1 plays the base models; before every later
round one side trains (attackers before even rounds, defenders before odd rounds from 3 on, as its `updated_side`
says) and the tournament then advances that side to its next checkpoint. So the k-th checkpoint a side trains is the
one the tournament plays from the round of that side's k-th update on: the joint stage registers its checkpoints as
the tournament's `checkpoints` map (base model id -> successive checkpoint ids), and both read the same lineup.

While a side trains, the other is frozen at its latest checkpoint so far (else its base model):
- the attacker trains on E5 dialogues whose target is the frozen defender (counterpart role "target");
- the defender trains on E6, whose user turns are scripted: the frozen attacker plays there through the probes E6
  synthesizes from its E5 attacks (E6's data feedback), so its role is named "attacker".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

Side = Literal["attacker", "defender"]
SIDES: tuple[Side, Side] = ("attacker", "defender")
SIDE_ENV: dict[str, str] = {"attacker": "e5", "defender": "e6"}
"""The environment each side trains on."""
COUNTERPART_ROLE: dict[str, str] = {"attacker": "target", "defender": "attacker"}
"""The role the frozen side plays for the training side (E5's counterpart role; E6's probe author)."""


@dataclass(frozen=True)
class JointRound:
    """One training round: the side that trains before tournament round `round`, against the frozen other side."""

    round: int
    trains: Side
    frozen: Side

    @property
    def env_id(self) -> str:
        """The environment the training side is trained on (E5 for the attacker, E6 for the defender)."""
        return SIDE_ENV[self.trains]

    @property
    def counterpart_role(self) -> str:
        """The role the frozen side plays (the key of `frozen_counterparts`)."""
        return COUNTERPART_ROLE[self.trains]


@dataclass(frozen=True)
class JointLineup:
    """The two entrants (registry model ids of their base models) and the checkpoints each side has registered so
    far, in training order: the tournament's `checkpoints` map (base model id -> successive checkpoint ids)."""

    attacker: str
    defender: str
    checkpoints: Mapping[str, Sequence[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.attacker or not self.defender:
            raise ValueError("a joint lineup needs an attacker and a defender model id")
        if self.attacker == self.defender:
            raise ValueError(
                f"attacker and defender are both {self.attacker!r}: their checkpoint chains would be one; "
                "register the co-trained copies under distinct ids"
            )

    def base(self, side: Side) -> str:
        return self.attacker if side == "attacker" else self.defender


def _check_side(side: str) -> Side:
    if side not in SIDES:
        raise ValueError(f"a side is 'attacker' or 'defender', got {side!r}")
    return side  # type: ignore[return-value]


def training_side(round_number: int, first_side: Side = "attacker") -> Side | None:
    """The side that trains before tournament round `round_number`: none before round 1, then `first_side` before
    even rounds and the other before odd rounds from 3 on (attacker-first is the tournament's `updated_side`)."""
    first = _check_side(first_side)
    if round_number < 1:
        raise ValueError(f"rounds are numbered from 1, got {round_number}")
    if round_number == 1:
        return None
    second: Side = "defender" if first == "attacker" else "attacker"
    return first if round_number % 2 == 0 else second


def joint_rounds(rounds: int, first_side: Side = "attacker") -> list[JointRound]:
    """The training rounds of a tournament of `rounds` rounds: one before each round from 2 to `rounds`, alternating
    sides from `first_side`. The tournament records attacker-first schedules (its `updated_side`); a defender-first
    schedule has no tournament record yet."""
    if rounds < 1:
        raise ValueError(f"a tournament has at least 1 round, got {rounds}")
    plan = []
    for number in range(2, rounds + 1):
        side = training_side(number, first_side)
        assert side is not None
        plan.append(JointRound(round=number, trains=side, frozen="defender" if side == "attacker" else "attacker"))
    return plan


def side_model(side: Side, round_number: int, lineup: JointLineup, first_side: Side = "attacker") -> str:
    """The registry model id `side` plays in tournament round `round_number`: its checkpoint from its latest update
    at or before that round, else its base (a side with fewer checkpoints than updates plays on its last one, as the
    tournament's lineup does)."""
    _check_side(side)
    updates = sum(1 for number in range(2, round_number + 1) if training_side(number, first_side) == side)
    chain = list(lineup.checkpoints.get(lineup.base(side), ()))
    reached = min(updates, len(chain))
    return chain[reached - 1] if reached else lineup.base(side)


def frozen_counterparts(round_number: int, lineup: JointLineup, first_side: Side = "attacker") -> dict[str, str]:
    """The frozen side's model in the training before round `round_number`, by the role it plays there:
    {"target": defender model} when the attacker trains (E5), {"attacker": attacker model} when the defender trains
    (E6's probes). It is the model the frozen side played in round `round_number - 1` (its latest checkpoint so far,
    else its base); the training side starts from `side_model(trains, round_number - 1, lineup)`."""
    side = training_side(round_number, first_side)
    if side is None:
        raise ValueError("no side trains before round 1: it plays the base models")
    frozen: Side = "defender" if side == "attacker" else "attacker"
    return {COUNTERPART_ROLE[side]: side_model(frozen, round_number - 1, lineup, first_side)}
