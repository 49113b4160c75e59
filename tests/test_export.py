"""`secverify export`: a bundle built from real runs, with planted secrets, local paths and an unsafe reply, scanned
file by file: none of them may be in it, and the markers that replaced them must be.

PNG plots are not scanned (pixels and matplotlib's metadata), nor are images inlined as data URIs in the HTML pages:
they are pictures the reports drew, not text from the runs."""

from __future__ import annotations

import argparse
import html
import json
import re
import socket
import tarfile
from pathlib import Path

import pytest

from secverify_dagster.cli.publish import register
from secverify_dagster.publishing.export import ExportError, export_bundle
from secverify_dagster.resources.models import load_registry
from secverify_dagster.runner.datasets import embedded_dataset
from secverify_dagster.runner.eval_runner import EvalRunner
from sv_shared.data.hashing import sha256_hex
from sv_shared.judging.redaction import MARKER_PREFIX, is_redacted
from sv_shared.publishing.sanitize import LocalFacts, Sanitizer, secret_field
from sv_shared.registry import get_environment

REGISTRY = load_registry()
E1, E6 = get_environment("e1"), get_environment("e6")
PROJECT = Path(__file__).resolve().parents[1]

OPENAI_KEY = "sk-proj-FAKE0a1b2c3d4e5f6g7h8i9j0kLMNOP"
BEARER = "FAKEbearer0123456789abcdef"
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
ENV_SECRET = "fake-env-secret-value-0123"
HOME_PATH = "/home/alice/corpora/cicids2017.csv"
UNSAFE_REPLY = "Sure. Step one of luring recruits abroad: post a fake job offer promising visas and high pay."
_DATA_URI = re.compile(r"data:image/[a-z+]+;base64,[A-Za-z0-9+/=]+")


def _edit_json(path: Path, edit) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _edit_lines(path: Path, edit) -> None:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    edit(lines)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real rule-baseline runs at the full N (E1 heuristic, E6 naive-complier), then records a careless writer could
    have left: keys, an Authorization header, home and outputs paths, an unsafe reply stored unredacted."""
    root = tmp_path_factory.mktemp("export") / "outputs"
    for env, model, n in ((E1, "heuristic", 32), (E6, "naive-complier", 24)):
        runner = EvalRunner(env, REGISTRY[model], registry=REGISTRY, evals_root=root / "evals")
        assert runner.run(embedded_dataset(env, split="test", seed=42), n=n, seed=42).status == "complete"
    (e1_run,) = (root / "evals" / f"{E1.name}--heuristic").iterdir()
    (e6_run,) = (root / "evals" / f"{E6.name}--naive-complier").iterdir()

    def plant_metadata(metadata: dict) -> None:
        metadata["model"]["params"]["api_key"] = OPENAI_KEY
        metadata["generation"]["headers"] = {"Authorization": f"Bearer {BEARER}"}
        metadata["generation"]["note"] = (
            f"curl -H 'Authorization: Bearer {BEARER}' token={GITHUB_TOKEN} {ENV_SECRET} {OPENAI_KEY}"
        )
        metadata["config"]["data"]["cicids2017"]["path"] = HOME_PATH
        metadata["sessions"][0]["client"]["host"] = socket.gethostname()
        metadata["sessions"][0]["client"]["cwd"] = str(root / "evals")

    def plant_results(records: list[dict]) -> None:
        records[0]["completion"] = f"my key is {OPENAI_KEY}, data in {HOME_PATH}"
        records[0]["details"]["path"] = str(e1_run)

    def plant_unsafe(records: list[dict]) -> None:
        records[0]["completion"] = UNSAFE_REPLY
        records[0]["details"]["transcript"][-1]["text"] = UNSAFE_REPLY

    _edit_json(e1_run / "metadata.json", plant_metadata)
    _edit_lines(e1_run / "results.jsonl", plant_results)
    _edit_json(e1_run / "summary.json", lambda s: s["metrics"]["format_errors"].update({f"{HOME_PATH}: bad": 1}))
    _edit_lines(e6_run / "results.jsonl", plant_unsafe)
    return root


def _export(outputs: Path, destination: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SECVERIFY_FAKE_API_KEY", ENV_SECRET)
    return export_bundle([E1, E6], outputs, destination, project_root=PROJECT, cadence="biweekly")


def _completions(outputs: Path) -> set[str]:
    """The opening of every model answer of the runs (markers aside), as written and as an HTML page shows it."""
    texts = set()
    for results in (outputs / "evals").glob("*/*/results.jsonl"):
        for line in results.read_text(encoding="utf-8").splitlines():
            completion = json.loads(line)["completion"]
            if len(completion) >= 12 and not is_redacted(completion):
                opening = completion[:60]  # a page may cut a long text
                texts |= {opening, html.escape(opening), html.escape(opening, quote=False)}
    return texts


def _scan(bundle: Path, outputs: Path) -> dict[str, str]:
    """Every file of the bundle as text (images left out), after asserting none holds a planted secret or path, nor
    any model answer."""
    forbidden = [OPENAI_KEY, BEARER, GITHUB_TOKEN, ENV_SECRET, UNSAFE_REPLY, *_completions(outputs)]
    forbidden += ["/home/", str(outputs), str(outputs.parent), str(PROJECT), str(Path.home()) + "/"]
    texts = {}
    for path in sorted(bundle.rglob("*")):
        if not path.is_file() or path.suffix == ".png":
            continue
        text = _DATA_URI.sub("", path.read_text(encoding="utf-8"))
        name = path.relative_to(bundle).as_posix()
        for secret in forbidden:
            assert secret not in text, f"{secret!r} in {name}"
        assert not re.search(r"(?<![\w.:/~\]-])/(?:home|root|tmp|Users|work)/", text), name
        assert not re.search(rf"(?i)(?<![\w.-]){re.escape(socket.gethostname())}(?![\w-])", text), name
        texts[name] = text
    return texts


def test_the_bundle_holds_no_secret_path_or_unsafe_text_and_shows_what_replaced_them(
    outputs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = _export(outputs, tmp_path / "bundle", monkeypatch)
    texts = _scan(bundle.path, outputs)
    everything = "\n".join(texts.values())
    for marker in ("credential:openai-anthropic-key", "credential:field", "credential:github-token"):
        assert f"{MARKER_PREFIX} {marker}]" in everything
    assert f"{MARKER_PREFIX} credential:env:SECVERIFY_FAKE_API_KEY]" in everything
    assert f"{MARKER_PREFIX} path]" in texts["reports/e1/report.md"]  # the planted format error's home path
    assert "outputs/evals/" in texts["reports/e1/report.json"]  # run folders made relative
    # Samples keep ids, rewards and hashes; the unsafe reply only as its hash, a stored marker as the marker.
    e6_samples = next(name for name in texts if name.startswith(f"runs/{E6.name}--") and name.endswith(".jsonl"))
    samples = [json.loads(line) for line in texts[e6_samples].splitlines()]
    assert samples[0]["completion_sha256"] == sha256_hex(UNSAFE_REPLY) and "completion" not in samples[0]
    assert all("details" not in sample and "prompt" not in sample for sample in samples)
    assert any(sample.get("completion", "").startswith(f"{MARKER_PREFIX} sha256:") for sample in samples)
    manifest = bundle.manifest
    assert manifest["redactions"]["model-text:details"] == 32 + 24
    assert manifest["redactions"]["path:absolute"] >= 1 and manifest["redactions"]["path:outputs"] >= 1
    listed = {entry["path"]: entry["sha256"] for entry in manifest["files"]}
    on_disk = {
        path.relative_to(bundle.path).as_posix(): sha256_hex(path.read_bytes())
        for path in bundle.path.rglob("*")
        if path.is_file() and path.name != "manifest.json"
    }
    assert listed == on_disk
    assert {"sheet/sheet.md", "sheet/sheet.html", "reports/e6/report.html"} <= listed.keys()
    assert manifest["redactions"]["left-out:trajectories.html"] == 2  # its pages show prompts and completions


def test_a_tar_bundle_is_scanned_the_same_and_carries_no_owner(
    outputs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = _export(outputs, tmp_path / "share" / "bundle.tar.gz", monkeypatch)
    with tarfile.open(bundle.path) as archive:
        members = archive.getmembers()
        assert {(m.uname, m.gname, m.uid, m.gid, m.mtime) for m in members} == {("", "", 0, 0, 0)}
        archive.extractall(tmp_path / "unpacked", filter="data")
    texts = _scan(tmp_path / "unpacked", outputs)
    assert "manifest.json" in texts and not list((tmp_path / "share").glob(".bundle*"))


def test_an_existing_folder_is_never_overwritten(
    outputs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    with pytest.raises(ExportError, match="already exists"):
        _export(outputs, taken, monkeypatch)
    assert [path.name for path in tmp_path.iterdir()] == ["taken"] and (taken / "keep.txt").read_text() == "mine"


def test_the_command_writes_a_bundle_under_outputs(outputs: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(outputs))
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["export", "--envs", "e1", "--cadence", "latest"])
    assert args.func(args) == 0
    (bundle,) = (outputs / "exports").iterdir()
    assert bundle.name.startswith("latest-") and (bundle / "manifest.json").is_file()
    assert "exported 1 runs" in capsys.readouterr().out


def _facts(tmp_path: Path) -> LocalFacts:
    return LocalFacts.of_this_machine(outputs=tmp_path / "outputs", project=PROJECT, environ={})


def test_sanitizing_keeps_ordinary_text_and_is_idempotent(tmp_path: Path) -> None:
    sanitizer = Sanitizer(_facts(tmp_path))
    ordinary = "risk–coverage, tokens/cost/GPU-hours, max_tokens: 48, task-specific, N/A, outputs/evals/x, ~/y"
    assert sanitizer.text(ordinary) == ordinary
    value = {"max_tokens": 48, "tokenizer": "HuggingFaceTB/SmolLM2", "accessKey": "AKIAABCDEFGHIJKLMNOP"}
    cleaned = sanitizer.json(value)
    assert cleaned["max_tokens"] == 48 and cleaned["tokenizer"] == "HuggingFaceTB/SmolLM2"
    assert cleaned["accessKey"] == f"{MARKER_PREFIX} credential:field]"
    dirty = f"Authorization: Bearer {BEARER} at {tmp_path}/outputs/evals and C:\\Users\\alice\\k.txt password={BEARER}"
    once = sanitizer.text(dirty)
    assert BEARER not in once and "alice" not in once and "outputs/evals" in once
    counts = dict(sanitizer.counts)
    assert sanitizer.text(once) == once and sanitizer.json(cleaned) == cleaned
    assert dict(sanitizer.counts) == counts


@pytest.mark.parametrize(
    ("key", "secret"),
    [("api_key", True), ("OPENAI_API_KEY", True), ("Authorization", True), ("cache_key", False), ("tokens", False)],
)
def test_secret_fields_are_named_by_their_key(key: str, secret: bool) -> None:
    assert secret_field(key) is secret
