"""Loaders mapping config corpora into E2 items, labelled by the oracle, and the shipped embedded corpus.

Every corpus becomes rows of (kind, filename, content, source_corpus) first; `label_with_oracle` then scans them
all in one batch and attaches the findings and the label, so a corpus's own labels never decide what is
"vulnerable" (they name different rule sets; the oracle is the single reference). A file is dropped, never
coerced, when it cannot be trusted as an item: not UTF-8, too large, not a parseable manifest or module (a Helm
template, a YAML bomb), or rejected by the oracle. Drops are counted by reason in a LoadReport.

Corpora:
- GenKubeSec (Malul et al., 2024): its KCFs are The Stack's Kubernetes YAML subset, released on the HF hub as
  `substratusai/the-stack-yaml-k8s` (parquet; The Stack's columns: hexsha, max_stars_repo_path, content, ...).
  The public GenKubeSec reproductions keep the manifests as instruction records (instruction / input / output,
  output = "name+UMI-id, ..." or "safe"); both layouts load here (`content` or `input` holds the manifest).
  The UMI labels are not used: they are rule ids of Checkov/KubeLinter/Terrascan, the oracle relabels.
- Kubernetes policy samples (Datree's and Kubesec's example directories): a directory tree of YAML files.
- Terraform corpora: a directory tree of .tf files, one item per file or per module directory.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

import polars as pl

from sv_env_config_verification.loading import ConfigParseError, decode_config, parse_config
from sv_env_config_verification.schema import (
    EXTENSIONS,
    ITEM_COLUMNS,
    ITEM_SCHEMA,
    MAX_CONTENT_BYTES,
    empty_frame,
    findings_to_json,
    label_of,
    validate_items,
    with_content_hash,
)
from sv_shared.data.errors import CorpusValidationError
from sv_shared.data.loading import TABLE_SUFFIXES, dedupe, is_hub_id, load_from_hub, read_table
from sv_shared.data.loading import LoadReport as _LoadReport
from sv_shared.data.splits import stratified_split, validate_fractions
from sv_shared.execution.findings import Finding

logger = logging.getLogger(__name__)

GENKUBESEC_HUB_ID = "substratusai/the-stack-yaml-k8s"
DEFAULT_FRACTIONS: dict[str, float] = {"train": 0.7, "dev": 0.15, "test": 0.15}
EMBEDDED_CORPUS = "sv-embedded"
LABELS_FILE = "labels.json"
_TEXT_COLUMNS = ("content", "input")
_SOURCE_LABEL_COLUMNS = ("output", "umi_errors", "misconfig_labels", "labels")


class Scanner(Protocol):
    """What labelling needs from the oracle: one batch scan with per-file findings or an error."""

    def scan_many(self, files: Sequence[tuple[str, str]]) -> list[Any]: ...

    def versions(self) -> dict[str, str]: ...


@dataclass
class LoadReport(_LoadReport):
    """What a load read, kept and dropped (by reason). A row here is a config file: files_read counts them,
    items_loaded the items left after labelling and deduplication. E2 has no strict mode (drops never raise)."""

    unit: ClassVar[str] = "files"
    source_labels_ignored: int = 0

    @property
    def files_read(self) -> int:
        return self.rows_read

    @property
    def items_loaded(self) -> int:
        return self.rows_loaded

    def _summary_extras(self) -> str:
        if not self.source_labels_ignored:
            return ""
        return f", {self.source_labels_ignored} source labels ignored (oracle relabels)"


# --- raw rows: (kind, filename, content, source_corpus) ---


def safe_filename(name: str, kind: str, fallback: str) -> str:
    """A bare file name the item schema accepts: basename, safe characters, the kind's extension."""
    base = re.split(r"[\\/]", name or "")[-1]
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-.") or fallback
    if not base.lower().endswith(EXTENSIONS[kind]):
        base = f"{base}{EXTENSIONS[kind][0]}"
    return base[-200:].lstrip("-.") or f"{fallback}{EXTENSIONS[kind][0]}"


def _accept(kind: str, filename: str, raw: str | bytes, report: LoadReport) -> str | None:
    """The decoded text when it is a config an item may hold, else None (the drop is counted by reason)."""
    report.rows_read += 1
    try:
        text = decode_config(raw)
        if len(text.encode("utf-8")) > MAX_CONTENT_BYTES:
            raise ConfigParseError("too_large", f"over the item limit of {MAX_CONTENT_BYTES} bytes")
        parsed = parse_config(kind, text)
    except ConfigParseError as error:
        report.drop(error.reason, filename, strict=False)
        return None
    if not text.strip() or not parsed.resources:
        report.drop("no_resources", filename, strict=False)
        return None
    return text


def _raw_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows, schema={"kind": pl.Utf8, "filename": pl.Utf8, "content": pl.Utf8, "source_corpus": pl.Utf8}
    )


def _files(path: Path, suffixes: tuple[str, ...]) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"corpus path {path} does not exist")
    found = sorted(p for p in path.rglob("*") if p.is_file() and p.name.lower().endswith(suffixes))
    if not found:
        raise FileNotFoundError(f"{path}: no files ending in {', '.join(suffixes)} inside")
    return found


def _read_bytes(path: Path) -> bytes:
    """At most one byte more than the item limit: a huge file is rejected without being read whole."""
    with path.open("rb") as handle:
        return handle.read(MAX_CONTENT_BYTES + 1)


# --- labelling ---


def label_with_oracle(frame: pl.DataFrame, oracle: Scanner, *, report: LoadReport | None = None) -> pl.DataFrame:
    """Scan every row's content in one batch and attach oracle_findings and label; rows the oracle rejects are
    dropped (counted under "oracle:<error>"). Provenance columns a frame lacks are added as null."""
    if frame.height == 0:
        return empty_frame()
    results = oracle.scan_many(list(zip(frame["filename"].to_list(), frame["content"].to_list(), strict=True)))
    keep: list[bool] = []
    findings_json: list[str | None] = []
    labels: list[str | None] = []
    for filename, result in zip(frame["filename"].to_list(), results, strict=True):
        if result.error:
            keep.append(False)
            findings_json.append(None)
            labels.append(None)
            if report is not None:
                report.drop(f"oracle:{str(result.error).split(':', 1)[0]}", filename, strict=False)
            continue
        findings = list(result.findings)
        keep.append(True)
        findings_json.append(findings_to_json(findings))
        labels.append(label_of(findings))
    labelled = frame.with_columns(
        pl.Series("oracle_findings", findings_json, dtype=pl.Utf8), pl.Series("label", labels, dtype=pl.Utf8)
    ).filter(pl.Series(keep))
    missing = {
        column: pl.lit(None, dtype=ITEM_SCHEMA[column]) for column in ITEM_COLUMNS if column not in labelled.columns
    }
    labelled = labelled.with_columns(**missing)
    return with_content_hash(labelled).select(ITEM_COLUMNS)


def _finish(raw: pl.DataFrame, oracle: Scanner, report: LoadReport) -> pl.DataFrame:
    labelled = label_with_oracle(raw, oracle, report=report)
    deduped = dedupe(labelled)
    report.record_load(labelled, deduped, logger)
    return validate_items(deduped, check_hashes=False)


def default_oracle() -> Scanner:
    from sv_env_config_verification.oracle import Oracle  # scanners are heavy; only labelling needs them

    return Oracle()


# --- GenKubeSec (The Stack's Kubernetes YAML subset) ---


def _genkubesec_rows(table: pl.DataFrame, source: str, corpus: str, report: LoadReport, offset: int) -> list[dict]:
    text_column = next((column for column in _TEXT_COLUMNS if column in table.columns), None)
    if text_column is None:
        raise CorpusValidationError(
            f"{source}: not a GenKubeSec / The Stack layout: no {' or '.join(_TEXT_COLUMNS)} column; found "
            f"{table.columns[:30]}"
        )
    report.source_labels_ignored += sum(
        table[column].drop_nulls().len() for column in _SOURCE_LABEL_COLUMNS if column in table.columns
    )
    names = (
        table["max_stars_repo_path"]
        if "max_stars_repo_path" in table.columns
        else table.get_column("filename", default=pl.Series([None] * table.height))
    )
    hexsha = table.get_column("hexsha", default=pl.Series([None] * table.height))
    rows = []
    for index, (content, name, sha) in enumerate(zip(table[text_column], names, hexsha, strict=True)):
        fallback = f"kcf-{(sha or '')[:12] or offset + index}"
        filename = safe_filename(str(name) if name else "", "kubernetes", fallback)
        if content is None:
            report.rows_read += 1
            report.drop("empty_content", filename, strict=False)
            continue
        text = _accept("kubernetes", filename, str(content), report)
        if text is not None:
            rows.append({"kind": "kubernetes", "filename": filename, "content": text, "source_corpus": corpus})
    return rows


def load_genkubesec(
    source: str | Path = GENKUBESEC_HUB_ID,
    *,
    split: str = "train",
    limit: int | None = None,
    oracle: Scanner | None = None,
    report: LoadReport | None = None,
) -> pl.DataFrame:
    """GenKubeSec's KCF corpus from the hub id or a local mirror (a file or a directory of table files)."""
    report = report if report is not None else LoadReport(source=str(source))
    path = Path(source)
    rows: list[dict] = []
    if path.exists():
        remaining = limit
        for file in _files(path, TABLE_SUFFIXES):
            if remaining is not None and remaining <= 0:
                break
            # Strict UTF-8: manifest bytes are what the oracle scans, so a CSV that is not UTF-8 fails, never coerced.
            table = read_table(file, limit=remaining, encoding="utf8")
            rows.extend(_genkubesec_rows(table, str(file), "genkubesec", report, len(rows)))
            remaining = None if remaining is None else remaining - table.height
    elif is_hub_id(source):
        hint = (
            "load_genkubesec('/data/the-stack-yaml-k8s/') (parquet, JSONL, JSON or CSV files with a `content` or "
            "`input` column, or a directory of them)"
        )
        table = load_from_hub(source, split=split, limit=limit, mirror_hint=hint)
        rows = _genkubesec_rows(table, source, "genkubesec", report, 0)
    else:
        raise FileNotFoundError(f"GenKubeSec source {source!r} is neither an existing path nor a hub dataset id")
    return _finish(_raw_frame(rows), oracle or default_oracle(), report)


# --- directories of manifests (Datree / Kubesec samples) and of Terraform files ---


def load_manifest_dir(
    path: str | Path,
    *,
    corpus: str = "k8s-policy-samples",
    oracle: Scanner | None = None,
    report: LoadReport | None = None,
) -> pl.DataFrame:
    """Every .yaml/.yml file under `path` (Datree's examples/, Kubesec's test assets, ...), one item per file."""
    root = Path(path)
    report = report if report is not None else LoadReport(source=str(root))
    rows = []
    for file in _files(root, EXTENSIONS["kubernetes"]):
        relative = file.relative_to(root) if root.is_dir() else Path(file.name)
        filename = safe_filename("-".join(relative.parts), "kubernetes", "manifest")
        text = _accept("kubernetes", filename, _read_bytes(file), report)
        if text is not None:
            rows.append({"kind": "kubernetes", "filename": filename, "content": text, "source_corpus": corpus})
    return _finish(_raw_frame(rows), oracle or default_oracle(), report)


def load_terraform_dir(
    path: str | Path,
    *,
    corpus: str = "terraform-corpus",
    per: str = "file",
    oracle: Scanner | None = None,
    report: LoadReport | None = None,
) -> pl.DataFrame:
    """Every .tf file under `path`, one item per file, or with per="module" one item per directory (its .tf files
    joined in name order), so a bucket and its encryption resource in sibling files are judged together."""
    if per not in ("file", "module"):
        raise ValueError(f"per must be 'file' or 'module', got {per!r}")
    root = Path(path)
    report = report if report is not None else LoadReport(source=str(root))
    files = _files(root, EXTENSIONS["terraform"])
    groups: dict[Path, list[Path]] = {}
    for file in files:
        groups.setdefault(file.parent if per == "module" else file, []).append(file)
    rows = []
    for key, members in groups.items():
        relative = key.relative_to(root) if root.is_dir() and key != root else Path(key.name)
        filename = safe_filename("-".join(relative.parts) or root.name, "terraform", "module")
        chunks = [_read_bytes(member) for member in members]
        if per == "module" and len(members) > 1:
            chunks = [
                b"# file: " + member.name.encode() + b"\n" + chunk
                for member, chunk in zip(members, chunks, strict=True)
            ]
        text = _accept("terraform", filename, b"\n".join(chunks), report)
        if text is not None:
            rows.append({"kind": "terraform", "filename": filename, "content": text, "source_corpus": corpus})
    return _finish(_raw_frame(rows), oracle or default_oracle(), report)


# --- the embedded corpus ---


def embedded_dir() -> Path:
    """Where the shipped corpus lives, next to this module (package data in a wheel)."""
    return Path(__file__).resolve().parent / "data"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def label_files(files: Mapping[str, tuple[str, str]], oracle: Scanner | None = None) -> dict[str, Any]:
    """labels.json for {relative path: (kind, text)}: each file's sha256 and oracle findings, and the tool versions."""
    scanner = oracle or default_oracle()
    paths = sorted(files)
    results = scanner.scan_many([(Path(path).name, files[path][1]) for path in paths])
    labels: dict[str, Any] = {}
    for path, result in zip(paths, results, strict=True):
        if result.error:
            raise CorpusValidationError(f"the oracle rejects embedded file {path}: {result.error}")
        labels[path] = {
            "kind": files[path][0],
            "sha256": _sha256(files[path][1]),
            "findings": json.loads(findings_to_json(list(result.findings))),
        }
    return {"oracle": dict(sorted(scanner.versions().items())), "files": labels}


def load_embedded() -> pl.DataFrame:
    """The shipped corpus: data/kubernetes/*.yaml and data/terraform/*.tf with the findings in data/labels.json
    (written by scripts/build_e2_embedded.py). No scanner runs here; a file whose text no longer matches its
    label entry is a build error, not data to relabel silently."""
    root = embedded_dir()
    labels = json.loads((root / LABELS_FILE).read_text(encoding="utf-8"))["files"]
    rows = []
    on_disk = sorted(
        f"{folder}/{file.name}"
        for folder in ("kubernetes", "terraform")
        for file in (root / folder).iterdir()
        if file.is_file()
    )
    if on_disk != sorted(labels):
        raise CorpusValidationError(
            f"embedded corpus and {LABELS_FILE} disagree: only on disk {sorted(set(on_disk) - set(labels))}, "
            f"only labelled {sorted(set(labels) - set(on_disk))}; run scripts/build_e2_embedded.py"
        )
    for relative in on_disk:
        entry = labels[relative]
        text = (root / relative).read_text(encoding="utf-8")
        if _sha256(text) != entry["sha256"]:
            raise CorpusValidationError(f"{relative} changed since it was labelled; run scripts/build_e2_embedded.py")
        findings = [Finding.from_dict(finding) for finding in entry["findings"]]
        rows.append(
            {
                "kind": entry["kind"],
                "filename": Path(relative).name,
                "content": text,
                "source_corpus": EMBEDDED_CORPUS,
                "oracle_findings": findings_to_json(findings),
                "label": label_of(findings),
            }
        )
    frame = pl.DataFrame(rows).with_columns(
        **{column: pl.lit(None, dtype=ITEM_SCHEMA[column]) for column in ITEM_COLUMNS if column not in rows[0]}
    )
    return validate_items(with_content_hash(frame).select(ITEM_COLUMNS))


def embedded_oracle_versions() -> dict[str, Any]:
    return json.loads((embedded_dir() / LABELS_FILE).read_text(encoding="utf-8"))["oracle"]


# --- dedup and curation ---


def curate(
    frames: Sequence[pl.DataFrame],
    *,
    seed: int = 42,
    fractions: Mapping[str, float] | None = None,
) -> dict[str, pl.DataFrame]:
    """Concatenate, deduplicate and split items, stratified by kind and label.

    Duplicates across corpora keep the row that sorts first on all columns, so the result does not depend on the
    order of frames or rows. A vulnerable row whose secure twin is present goes to its twin's split, so a diff
    pair never straddles train and test. Splits come back in the order of `fractions`, each sorted by config_id.
    """
    checked = validate_fractions(fractions if fractions is not None else DEFAULT_FRACTIONS)
    if not frames:
        raise ValueError("curate needs at least one frame")
    combined = dedupe(pl.concat([validate_items(frame) for frame in frames]).sort(ITEM_COLUMNS, nulls_last=True))
    present = set(combined["config_id"].to_list())
    twinned = combined["secure_variant_id"].is_in(list(present)).fill_null(False) & (
        combined["secure_variant_id"] != combined["config_id"]
    ).fill_null(False)
    parts = stratified_split(
        combined.filter(~twinned), by=["kind", "label"], fractions=checked, seed=seed, id_column="config_id"
    )
    split_of = {config_id: name for name, part in parts.items() for config_id in part["config_id"].to_list()}
    followers = combined.filter(twinned)
    result = {}
    for name, part in parts.items():
        joined = followers.filter(pl.col("secure_variant_id").replace_strict(split_of, default=None) == name)
        result[name] = validate_items(pl.concat([part, joined]).sort("config_id"), check_hashes=False)
    return result


def value_counts(frame: pl.DataFrame) -> dict[str, int]:
    """Items per kind/label (for asset metadata and checks)."""
    counts = Counter(f"{kind}/{label}" for kind, label in frame.select("kind", "label").iter_rows())
    return dict(sorted(counts.items()))
