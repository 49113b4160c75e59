"""`secverify scan` on user files: the evals' persistent scanner cache, --no-cache, and skipped entries named."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from secverify_dagster.cli import scan as cli_scan
from sv_shared.config import SCANNER_CACHE_VARIABLE

MANIFEST = """\
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Pod
    metadata:
      name: debug
    spec:
      hostNetwork: true
      containers:
        - name: shell
          image: busybox:latest
  -
"""

TERRAFORM = (
    'resource "aws_iam_policy" "admin" {\n  policy = <<EOT\n'
    '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}\n'
    "EOT   \n}\n"  # the terminator's trailing spaces: Terraform accepts them
)


def _scan(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    parser = argparse.ArgumentParser()
    cli_scan.register(parser.add_subparsers())
    args = parser.parse_args(["scan", *argv])
    status = args.func(args)
    return status, json.loads(capsys.readouterr().out)


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path / "outputs"))
    monkeypatch.delenv(SCANNER_CACHE_VARIABLE)  # the default place, cold: not the session's shared cache
    (tmp_path / "exported.yaml").write_text(MANIFEST, encoding="utf-8")
    (tmp_path / "iam.tf").write_text(TERRAFORM, encoding="utf-8")
    return [str(tmp_path / "exported.yaml"), str(tmp_path / "iam.tf")]


def test_a_second_scan_reads_the_persistent_cache_and_finds_the_same(files: list[str], capsys) -> None:
    status, cold = _scan(files, capsys)
    assert status == 0
    assert cold["cache"]["persistent"] and cold["cache"]["hits"] == 0 and cold["cache"]["misses"] > 0
    assert (Path(files[0]).parent / "outputs" / "cache" / "scanners.sqlite").is_file()
    status, warm = _scan(files, capsys)
    assert status == 0
    assert warm["cache"]["misses"] == 0 and warm["cache"]["hits"] == cold["cache"]["misses"]
    assert [r["findings"] for r in warm["results"]] == [r["findings"] for r in cold["results"]]
    manifest, module = warm["results"]
    assert {f["canonical_id"] for f in manifest["findings"]} >= {"K8S_HOST_NAMESPACE", "K8S_LATEST_TAG"}
    assert manifest["skipped"] == [
        {
            "reason": "invalid_manifest",
            "where": "item 2 of the List in document 1",
            "problem": "is empty (null)",
            "line": 13,
        }
    ]
    assert [f["canonical_id"] for f in module["findings"]] == ["TF_IAM_WILDCARD"]


def test_no_cache_scans_afresh_and_stores_nothing(files: list[str], capsys) -> None:
    status, result = _scan(["--no-cache", *files], capsys)
    assert status == 0
    assert result["cache"] == {"persistent": False, "hits": 0, "misses": result["cache"]["misses"]}
    assert result["cache"]["misses"] > 0
    assert not (Path(files[0]).parent / "outputs" / "cache" / "scanners.sqlite").exists()
