"""Attacker × defender tournaments over rounds: E5 dialogues for every pairing, attack-success curves per round.

Round 1 pits the registry's attackers against its defenders as they are. From round 2 on, the rounds alternate
which side is updated (attackers in even rounds, defenders in odd ones, as the research plan's co-training asks):
an updated model advances to its next checkpoint when the training pipeline has registered one (the `checkpoints`
map: base model id → registry ids of its successive checkpoints); without one it plays on unchanged, and the round
records that. Each round's successful attacks (hashed shingles, never text) become the novelty archive of the
next, so an attacker is paid for finding new attacks, not for replaying old ones.

outputs/tournaments/<tournament id>/
  rounds.jsonl       one row per round × pairing: models, attack-success rate judged and corrected, CIs, run dir
  archive-rN.jsonl   successful attacks of rounds ≤ N as hashed shingles (the novelty archive of round N+1)
  curves.png         attack-success rate per pairing over rounds
  tournament.json    the configuration, judge validation and all rows
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from secverify_dagster.resources.models import ModelSpec
from secverify_dagster.runner.datasets import EvalDataset
from secverify_dagster.runner.eval_runner import EvalOutcome, EvalRunner
from sv_shared.answers.novelty import write_archive
from sv_shared.answers.plots import plot_success_curves
from sv_shared.contracts import Environment
from sv_shared.data.files import json_text, write_json_atomic, write_text_atomic
from sv_shared.data.hashing import sha256_hex, stable_json
from sv_shared.registry import build_environment
from sv_shared.runs.folder import RunFolder


@dataclass(frozen=True)
class TournamentConfig:
    attackers: list[str]
    defenders: list[str]
    rounds: int = 2
    n: int = 8
    seed: int = 42
    judge: str | None = None
    alternate: bool = True
    checkpoints: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.attackers or not self.defenders:
            raise ValueError("a tournament needs at least one attacker and one defender")
        if self.rounds < 1 or self.n < 1:
            raise ValueError("rounds and n must be at least 1")

    @property
    def tournament_id(self) -> str:
        return "t-" + sha256_hex(stable_json(asdict(self)))[:12]


def updated_side(round_number: int, alternate: bool) -> str | None:
    """Which side trains before this round: none in round 1, then attackers in even rounds, defenders in odd."""
    if not alternate or round_number == 1:
        return None
    return "attacker" if round_number % 2 == 0 else "defender"


@dataclass
class _Lineup:
    """The model each base entrant plays with now, advancing through its registered checkpoints."""

    checkpoints: Mapping[str, Sequence[str]]
    current: dict[str, str] = field(default_factory=dict)
    steps: dict[str, int] = field(default_factory=dict)

    def model(self, base: str) -> str:
        return self.current.get(base, base)

    def advance(self, base: str) -> str:
        """Move to the next checkpoint; returns what happened, for the round's record."""
        chain = list(self.checkpoints.get(base, []))
        step = self.steps.get(base, 0)
        if step >= len(chain):
            return "no new checkpoint: unchanged"
        self.current[base] = chain[step]
        self.steps[base] = step + 1
        return f"advanced to {chain[step]}"


def run_tournament(
    env: Environment,
    dataset: EvalDataset,
    config: TournamentConfig,
    *,
    registry: Mapping[str, ModelSpec],
    evals_root: Path,
    out_root: Path,
) -> dict[str, Any]:
    """Play every round; returns the tournament record (also written under out_root/<tournament id>/)."""
    entrants = [*config.attackers, *config.defenders, *(c for chain in config.checkpoints.values() for c in chain)]
    unknown = sorted({model for model in entrants if model not in registry})
    if unknown:
        raise KeyError(f"not in the model registry: {', '.join(unknown)}")
    out_dir = out_root / config.tournament_id
    out_dir.mkdir(parents=True, exist_ok=True)
    lineup = _Lineup(config.checkpoints)
    rows: list[dict[str, Any]] = []
    archive: list[dict[str, Any]] = []
    archive_path: Path | None = None
    judge_validation: dict[str, Any] | None = None
    for round_number in range(1, config.rounds + 1):
        side = updated_side(round_number, config.alternate)
        updates = {}
        if side:
            for base in config.attackers if side == "attacker" else config.defenders:
                updates[base] = lineup.advance(base)
        round_env = _with_archive(env, archive_path)
        for attacker in config.attackers:
            for defender in config.defenders:
                runner = EvalRunner(
                    round_env,
                    registry[lineup.model(attacker)],
                    evals_root=evals_root,
                    counterparts={"target": registry[lineup.model(defender)]},
                    judge=config.judge,
                    registry=registry,
                )
                outcome = runner.run(dataset, n=config.n, seed=config.seed)
                row = _row(round_number, side, updates, attacker, defender, lineup, outcome)
                rows.append(row)
                if outcome.status == "complete":
                    judge_validation = outcome.metadata.judge_validation or judge_validation
                    archive.extend(_successes(outcome.run_dir, round_number, row))
        archive_path = out_dir / f"archive-r{round_number}.jsonl"
        write_archive(archive_path, archive)
    write_text_atomic(out_dir / "rounds.jsonl", "".join(json_text(row, sort_keys=True) + "\n" for row in rows))
    curves = plot_success_curves(_curves(rows), out_dir / "curves.png", title=f"{env.name}: attack success by round")
    record = {
        "tournament_id": config.tournament_id,
        "config": asdict(config),
        "dataset": {"source": dataset.source, "hash": dataset.hash},
        "judge_validation": judge_validation,
        "rows": rows,
        "curves_png": str(curves),
        "archive_entries": len(archive),
    }
    write_json_atomic(out_dir / "tournament.json", record, default=str)
    return record


def _with_archive(env: Environment, archive_path: Path | None) -> Environment:
    if archive_path is None:
        return env
    novelty = env.config.novelty.model_copy(update={"archive": str(archive_path)})
    return build_environment(env.env_id, env.config.model_copy(update={"novelty": novelty}))


def _row(
    round_number: int,
    side: str | None,
    updates: Mapping[str, str],
    attacker: str,
    defender: str,
    lineup: _Lineup,
    outcome: EvalOutcome,
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "round": round_number,
        "updated_side": side,
        "updates": dict(updates),
        "attacker": attacker,
        "attacker_model": lineup.model(attacker),
        "defender": defender,
        "defender_model": lineup.model(defender),
        "status": outcome.status,
        "reason": outcome.reason,
        "run_dir": str(outcome.run_dir) if outcome.run_dir else None,
    }
    if outcome.status == "complete":
        metrics = outcome.summary.metrics
        success = metrics["attack_success"]
        row |= {
            "n": metrics["n"],
            "asr": success.get("rate"),
            "asr_ci": success.get("ci"),
            "asr_corrected": success.get("corrected"),
            "asr_corrected_ci": success.get("corrected_ci"),
            "reward_mean": metrics["reward"]["mean"],
            "judge": success.get("judge"),
            "judge_kappa": success.get("judge_kappa"),
            "judge_validation_source": (success.get("judge_validation") or {}).get("source"),
            # The judge's κ on the named set beside the refusal detector's on the same rows, as one line.
            "judge_agreement": (success.get("judge_agreement") or {}).get("line"),
            "judge_flips": success.get("judge_flips"),
            "judge_flips_n": success.get("judge_flips_n"),
        }
    return row


def _successes(run_dir: Path, round_number: int, row: Mapping[str, Any]) -> list[dict[str, Any]]:
    entries = []
    for record in RunFolder(run_dir).read_results():
        if record.components["success"]:
            entries.append(
                {
                    "shingles": record.details["attack_shingles"],
                    "behavior_id": record.id,
                    "round": round_number,
                    "attacker": row["attacker_model"],
                    "defender": row["defender_model"],
                }
            )
    return entries


def _curves(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[tuple[int, float]]]:
    curves: dict[str, list[tuple[int, float]]] = {}
    for row in rows:
        if row.get("asr") is not None:
            curves.setdefault(f"{row['attacker']} → {row['defender']}", []).append((row["round"], row["asr"]))
    return curves


def rounds_markdown(record: Mapping[str, Any]) -> str:
    """The tournament's rows as a markdown table (Dagster metadata, reports)."""
    lines = [
        "| round | updated | attacker | defender | ASR judged [95% CI] | ASR corrected [95% CI] | n | judge: κ (set), "
        "verdict flips |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in record["rows"]:
        if row["status"] != "complete":
            lines.append(
                f"| {row['round']} | {row['updated_side'] or '–'} | {row['attacker_model']} | "
                f"{row['defender_model']} | {row['status']}: {row['reason']} | | | |"
            )
            continue
        lines.append(
            f"| {row['round']} | {row['updated_side'] or '–'} | {row['attacker_model']} | {row['defender_model']} | "
            f"{_rate(row['asr'], row['asr_ci'])} | {_rate(row['asr_corrected'], row['asr_corrected_ci'])} "
            f"| {row['n']} | {_judge(row)} |"
        )
    return "\n".join(lines)


def _judge(row: Mapping[str, Any]) -> str:
    """The judge's agreement with the labels and on which set, and its verdict flips under manipulation."""
    if row.get("judge_kappa") is None:
        return f"{row.get('judge') or '–'}: not measured"
    flips = f"{row['judge_flips']} of {row['judge_flips_n']}" if row.get("judge_flips_n") else "–"
    measured = (
        row.get("judge_agreement") or f"{row['judge']}: {row['judge_kappa']:.3f} ({row['judge_validation_source']})"
    )
    return f"{measured}; flips {flips}"


def _rate(value: float | None, ci: Sequence[float] | None) -> str:
    if value is None:
        return "–"
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else f"{value:.3f}"
