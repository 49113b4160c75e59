"""Every shipped embedded corpus is exactly what its source renders (scripts/render_corpora.py --check), so an edit
to scripts/corpus_sources/ (or to a shipped file) that is not rendered fails here."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from file_modules import load_file_module

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ("e1", "e2", "e3", "e3-synthetic", "e4", "e5", "e6", "judge", "judge-templated")
# E2 and E3 re-run the scanners (and E3 the sandbox) over every shipped item, generated variants included: minutes.
# e3-synthetic is also the harness validation of every generated repair item (each candidate is validated again).
SLOW_CORPORA = ("e2", "e3", "e3-synthetic")
CORPUS_CASES = [pytest.param(name, marks=pytest.mark.slow) if name in SLOW_CORPORA else name for name in CORPORA]


@pytest.fixture(scope="module")
def render_corpora() -> ModuleType:
    return load_file_module(ROOT / "scripts" / "render_corpora.py")


def _skip_without_tools(corpus: str) -> None:
    """E2's labels need the oracle's scanners at the versions that labelled the corpus; E3's validation needs
    bandit and semgrep (the tools environment)."""
    if corpus == "e2":
        from sv_env_config_verification.data import embedded_oracle_versions
        from sv_env_config_verification.oracle import Oracle

        here, recorded = Oracle().versions(), embedded_oracle_versions()
        if here != recorded:
            pytest.skip(f"scanners here {here} differ from those that labelled the corpus {recorded}")
    if corpus in ("e3", "e3-synthetic"):
        from sv_env_code_vulnerability.scanners import CodeScanners

        if not all(scanner.status().available for scanner in CodeScanners().scanners):
            pytest.skip("bandit/semgrep tools environment not built")


@pytest.mark.parametrize("corpus", CORPUS_CASES)
def test_shipped_corpus_is_what_its_source_renders(
    corpus: str,
    render_corpora: ModuleType,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    _skip_without_tools(corpus)
    if corpus == "e2":
        # The build script's own default (the full oracle), with the session's scan cache the label check shares.
        oracle = request.getfixturevalue("e2_full_oracle")
        monkeypatch.setattr(render_corpora.builder("e2"), "default_oracle", lambda: oracle)
    assert render_corpora.main(["--check", corpus]) == 0, capsys.readouterr().err


def test_render_corpora_runs_every_build_script(render_corpora: ModuleType) -> None:
    assert tuple(render_corpora.CORPORA) == CORPORA
    assert set(render_corpora.CORPORA.values()) == {path.stem for path in (ROOT / "scripts").glob("build_*.py")}
    with pytest.raises(SystemExit):
        render_corpora.main(["--check", "e9"])


def test_a_source_edit_that_is_not_rendered_fails_the_check(
    render_corpora: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    build = render_corpora.builder("e5")
    edited = tmp_path / "behaviors.yaml"
    text = build.SOURCE.read_text(encoding="utf-8")
    edited.write_text(text.replace("help plan a physical attack", "help plan an attack", 1), encoding="utf-8")
    monkeypatch.setattr(build, "SOURCE", edited)
    assert render_corpora.main(["--check", "e5"]) == 1
    assert "out of date" in capsys.readouterr().err
