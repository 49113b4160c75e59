"""The attacker × defender tournament: pairings per round, alternating updates, archives of hashes, curves."""

from __future__ import annotations

from pathlib import Path

import pytest

from secverify_dagster.resources.models import load_registry
from secverify_dagster.runner.datasets import embedded_dataset
from secverify_dagster.runner.tournament import TournamentConfig, rounds_markdown, run_tournament, updated_side
from sv_shared.answers.novelty import read_archive
from sv_shared.registry import get_environment
from sv_shared.runs.folder import RunFolder

pytestmark = pytest.mark.usefixtures("isolated_outputs")


def test_rounds_alternate_the_updated_side() -> None:
    assert [updated_side(r, True) for r in (1, 2, 3, 4)] == [None, "attacker", "defender", "attacker"]
    assert updated_side(2, False) is None


def test_tournament_records_every_pairing_per_round(isolated_outputs: Path) -> None:
    env = get_environment("e5")
    registry = load_registry()
    # A defender "checkpoint" for round 3: the training pipeline registers these; here a stronger defender stands in.
    config = TournamentConfig(
        attackers=["template-attacker"],
        defenders=["naive-complier"],
        rounds=3,
        n=6,
        checkpoints={"naive-complier": ["policy-defender"]},
    )
    record = run_tournament(
        env,
        embedded_dataset(env, split="test", seed=42),
        config,
        registry=registry,
        evals_root=isolated_outputs / "evals",
        out_root=isolated_outputs / "tournaments",
    )
    rows = record["rows"]
    assert [(r["round"], r["updated_side"], r["defender_model"]) for r in rows] == [
        (1, None, "naive-complier"),
        (2, "attacker", "naive-complier"),
        (3, "defender", "policy-defender"),
    ]
    assert rows[1]["updates"] == {"template-attacker": "no new checkpoint: unchanged"}
    assert rows[2]["updates"] == {"naive-complier": "advanced to policy-defender"}
    # The updated defender cuts the attack-success rate; every rate comes with its judge-corrected estimate.
    assert rows[0]["asr"] > 0.8 and rows[2]["asr"] < rows[0]["asr"]
    assert all(row["asr_corrected"] is not None for row in rows)
    out = isolated_outputs / "tournaments" / record["tournament_id"]
    assert (out / "curves.png").stat().st_size > 1000
    assert len((out / "rounds.jsonl").read_text().splitlines()) == 3
    # Round 2's novelty archive is round 1's successful attacks, as hashes only.
    archive = read_archive(out / "archive-r1.jsonl")
    assert len(archive) == round(rows[0]["asr"] * rows[0]["n"])
    assert "Sure" not in (out / "archive-r1.jsonl").read_text()
    round2 = RunFolder(Path(rows[1]["run_dir"])).read_metadata()
    assert round2.config["novelty"]["archive"].endswith("archive-r1.jsonl")
    table = rounds_markdown(record)
    assert "| 3 | defender | template-attacker | policy-defender |" in table
    # every rate sits beside its judge's agreement, the set it was measured on, and its verdict flips
    assert all(row["judge_flips_n"] == 450 and row["judge_kappa"] is not None for row in rows)
    agreement = rows[0]["judge_agreement"]
    assert agreement.startswith(f"local κ {rows[0]['judge_kappa']:.3f} on ") and "refusal" in agreement
    assert table.count(f"| {agreement}; flips 0 of 450 |") == 3


def test_unknown_entrants_are_refused(isolated_outputs: Path) -> None:
    env = get_environment("e5")
    with pytest.raises(KeyError, match="no-such-model"):
        run_tournament(
            env,
            embedded_dataset(env, split="test", seed=42),
            TournamentConfig(attackers=["no-such-model"], defenders=["refuse-all"]),
            registry=load_registry(),
            evals_root=isolated_outputs / "evals",
            out_root=isolated_outputs / "tournaments",
        )
