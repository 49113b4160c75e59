"""`secverify judges` (secverify_dagster/cli/judges.py): both hint modes, both splits, the source corrected rates
use, named, and the verdict flips on the manipulation set."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from secverify_dagster.cli import judges as cli_judges
from sv_shared.judging import measured
from sv_shared.judging.flips import manipulation_set_hash


def test_judges_command_prints_both_hint_modes_and_names_the_correction_source(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path))
    monkeypatch.setattr(measured, "find_reference", lambda: None)
    measured.reference_set.cache_clear()
    parser = argparse.ArgumentParser()
    cli_judges.register(parser.add_subparsers())
    args = parser.parse_args(["judges", "--judge", "local"])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if " local " in line and "(own rows)" in line]
    assert len(lines) == 4  # dev and test, with and without the hint
    starred = [line for line in lines if line.startswith("*")]
    assert len(starred) == 2 and all("shipped test" in line for line in starred)  # one per hint mode
    assert "corrected rates use: shipped judge-validation set" in out
    assert "reference: none present" in out
    # Beside each kappa, the refusal detector's on the same rows and hint mode (its kappa column, then its own).
    agreement = [line for line in out.splitlines() if line.startswith("  agreement: local κ")]
    assert len(agreement) == 2 and all("refusal-detector κ" in line and "own rows" in line for line in agreement)
    # the judge reads the exchange as data: no manipulation of the shipped honest pairs moves its verdict
    assert (
        f"verdict flips 0 of 450 (0 as pushed, refusal flips 0) on manipulation set {manipulation_set_hash()} " in out
    )
    assert list(tmp_path.glob("judges/local--*.json"))
    measured.reference_set.cache_clear()
