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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np
import polars as pl

from sv_env_config_verification.config_model import ConfigParseError, decode_config
from sv_env_config_verification.loading import parse_config
from sv_env_config_verification.schema import (
    EXTENSIONS,
    HASH_COLUMNS,
    ITEM_COLUMNS,
    ITEM_SCHEMA,
    MAX_CONTENT_BYTES,
    SYNTHETIC_CORPUS,
    empty_frame,
    findings_to_json,
    label_of,
    validate_items,
    with_content_hash,
)
from sv_shared.data.errors import CorpusValidationError
from sv_shared.data.hashing import content_hash, sha256_hex, stable_json
from sv_shared.data.loading import TABLE_SUFFIXES, dedupe, is_hub_id, load_from_hub, read_table
from sv_shared.data.loading import LoadReport as _LoadReport
from sv_shared.data.splits import validate_fractions
from sv_shared.execution.findings import Finding

logger = logging.getLogger(__name__)

GENKUBESEC_HUB_ID = "substratusai/the-stack-yaml-k8s"
DEFAULT_FRACTIONS: dict[str, float] = {"train": 0.7, "dev": 0.15, "test": 0.15}
EMBEDDED_CORPUS = "sv-embedded"
LABELS_FILE = "labels.json"
SYNTHETIC_FILE = "synthetic.jsonl"
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
    skipped_entries: dict[str, list[str]] = field(default_factory=dict)
    """Kept files that hold entries that are not Kubernetes objects (a null List item): file -> what was skipped."""

    @property
    def files_read(self) -> int:
        return self.rows_read

    @property
    def items_loaded(self) -> int:
        return self.rows_loaded

    def _summary_extras(self) -> str:
        extras = ""
        if self.skipped_entries:
            count = sum(len(entries) for entries in self.skipped_entries.values())
            extras += f", {count} entries that are not Kubernetes objects skipped in {len(self.skipped_entries)} files"
        if self.source_labels_ignored:
            extras += f", {self.source_labels_ignored} source labels ignored (oracle relabels)"
        return extras


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
    if parsed.skipped:
        report.skipped_entries[filename] = [str(entry) for entry in parsed.skipped]
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


def labelled_frame(files: Mapping[str, tuple[str, str]], labels: Mapping[str, Any]) -> pl.DataFrame:
    """The hand-written corpus as items: {relative path: (kind, text)} with labels.json's "files" entries."""
    rows = []
    for relative in sorted(files):
        kind, text = files[relative]
        entry = labels[relative]
        if _sha256(text) != entry["sha256"]:
            raise CorpusValidationError(f"{relative} changed since it was labelled; run scripts/build_e2_embedded.py")
        findings = [Finding.from_dict(finding) for finding in entry["findings"]]
        rows.append(
            {
                "kind": kind,
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


def synthetic_records(variants: pl.DataFrame, bases: pl.DataFrame, base_paths: Mapping[str, str]) -> list[dict]:
    """SYNTHETIC_FILE's records for oracle-confirmed variants of the hand-written `bases` (their config id ->
    relative path): text, provenance and findings, the base named by its path. The bases are canonical, so a
    vulnerable variant's secure twin is its base."""
    known = set(bases["config_id"].to_list())
    records = []
    for row in variants.sort("config_id").iter_rows(named=True):
        params = json.loads(row["generator_params"])
        base_id = params.get("base_id")
        if base_id not in known or row["secure_variant_id"] not in (None, base_id):
            raise CorpusValidationError(f"variant {row['config_id']} is not a variant of a shipped base")
        records.append(
            {
                "base": base_paths[base_id],
                "kind": row["kind"],
                "content": row["content"],
                "sha256": _sha256(row["content"]),
                "generator": row["generator"],
                "generator_params": params,
                "generator_seed": row["generator_seed"],
                "findings": json.loads(row["oracle_findings"]),
            }
        )
    return records


def _synthetic_frame(records: list[dict[str, Any]], bases: pl.DataFrame, base_paths: Mapping[str, str]) -> pl.DataFrame:
    """SYNTHETIC_FILE's records as items; a record whose base or text changed since the build is refused."""
    ids = {path: config_id for config_id, path in base_paths.items()}
    filenames = dict(zip(bases["config_id"].to_list(), bases["filename"].to_list(), strict=True))
    rows = []
    for number, record in enumerate(records, 1):
        base_id = ids.get(record["base"])
        if base_id is None or record["generator_params"].get("base_id") != base_id:
            raise CorpusValidationError(
                f"{SYNTHETIC_FILE} line {number}: its base {record['base']} changed; run scripts/build_e2_embedded.py"
            )
        if _sha256(record["content"]) != record["sha256"]:
            raise CorpusValidationError(f"{SYNTHETIC_FILE} line {number} was edited; run scripts/build_e2_embedded.py")
        findings = [Finding.from_dict(finding) for finding in record["findings"]]
        label = label_of(findings)
        rows.append(
            {
                "kind": record["kind"],
                "filename": filenames[base_id],
                "content": record["content"],
                "label": label,
                "oracle_findings": findings_to_json(findings),
                "source_corpus": SYNTHETIC_CORPUS,
                "generator": record["generator"],
                "generator_params": stable_json(record["generator_params"]),
                "generator_seed": record["generator_seed"],
                "secure_variant_id": base_id if label == "vulnerable" else None,
            }
        )
    frame = pl.DataFrame(rows, schema={c: t for c, t in ITEM_SCHEMA.items() if c not in ("config_id", "content_hash")})
    return validate_items(with_content_hash(frame).select(ITEM_COLUMNS))


def corpus_paths(files: Mapping[str, tuple[str, str]]) -> dict[str, str]:
    """{config id: relative path} of the hand-written files."""
    return {content_hash({"kind": kind, "content": text}, HASH_COLUMNS): path for path, (kind, text) in files.items()}


def _read_corpus_files(root: Path) -> dict[str, tuple[str, str]]:
    return {
        f"{kind}/{file.name}": (kind, file.read_text(encoding="utf-8"))
        for kind in ("kubernetes", "terraform")
        for file in sorted((root / kind).iterdir())
        if file.is_file()
    }


def load_embedded() -> pl.DataFrame:
    """The shipped corpus: data/kubernetes/*.yaml and data/terraform/*.tf with the findings in data/labels.json,
    and data/synthetic.jsonl, their oracle-confirmed synthetic variants (all written by
    scripts/build_e2_embedded.py). No scanner runs here; a file whose text no longer matches its label entry is a
    build error, not data to relabel silently."""
    root = embedded_dir()
    labels = json.loads((root / LABELS_FILE).read_text(encoding="utf-8"))["files"]
    files = _read_corpus_files(root)
    if sorted(files) != sorted(labels):
        raise CorpusValidationError(
            f"embedded corpus and {LABELS_FILE} disagree: only on disk {sorted(set(files) - set(labels))}, "
            f"only labelled {sorted(set(labels) - set(files))}; run scripts/build_e2_embedded.py"
        )
    bases = labelled_frame(files, labels)
    base_paths = corpus_paths(files)
    lines = (root / SYNTHETIC_FILE).read_text(encoding="utf-8").splitlines()
    synthetic = _synthetic_frame([json.loads(line) for line in lines if line.strip()], bases, base_paths)
    return validate_items(pl.concat([bases, synthetic]))


def embedded_oracle_versions() -> dict[str, Any]:
    return json.loads((embedded_dir() / LABELS_FILE).read_text(encoding="utf-8"))["oracle"]


# --- dedup and curation ---


def curate(
    frames: Sequence[pl.DataFrame],
    *,
    seed: int = 42,
    fractions: Mapping[str, float] | None = None,
) -> dict[str, pl.DataFrame]:
    """Concatenate, deduplicate and split items, whole templates at a time.

    Duplicates across corpora keep the row that sorts first on all columns, so the result does not depend on the
    order of frames or rows. Every row of a template (template_ids: a secure base, its secure edits, its vulnerable
    variants and their twins) lands in one split, so no template leaks from train to test. Templates are
    stratified by kind and the labels they hold, and each stratum's templates are dealt, in a seeded order, to the
    split furthest below its share of the stratum's items. Splits come back in the order of `fractions`, each
    sorted by config_id.
    """
    checked = validate_fractions(fractions if fractions is not None else DEFAULT_FRACTIONS)
    if not frames:
        raise ValueError("curate needs at least one frame")
    combined = dedupe(pl.concat([validate_items(frame) for frame in frames]).sort(ITEM_COLUMNS, nulls_last=True))
    combined = combined.sort("config_id")
    combined = combined.with_columns(pl.Series("__template", template_ids(combined), dtype=pl.Utf8))
    names = list(checked)
    split_of: dict[str, str] = {}
    for stratum, templates in _template_strata(combined).items():
        total = sum(size for _, size in templates)
        filled = dict.fromkeys(names, 0)
        for index in _stratum_rng(seed, stratum).permutation(len(templates)).tolist():
            template, size = templates[index]
            behind = {split: checked[split] * total - filled[split] for split in names}
            chosen = max(names, key=lambda split: (behind[split], -names.index(split)))
            filled[chosen] += size
            split_of[template] = chosen
    assigned = combined.with_columns(pl.col("__template").replace_strict(split_of).alias("__split"))
    return {
        name: validate_items(
            assigned.filter(pl.col("__split") == name).drop("__template", "__split").sort("config_id"),
            check_hashes=False,
        )
        for name in names
    }


def template_ids(frame: pl.DataFrame) -> list[str]:
    """The template each row was made from: the root of its chain of bases (a synthetic row's
    generator_params.base_id, else the secure twin it names), followed through the frame, so a variant of a
    variant belongs to the first base; a row made from nothing is its own template."""
    parent: dict[str, str] = {}
    for params, twin, config_id in frame.select("generator_params", "secure_variant_id", "config_id").iter_rows():
        base = json.loads(params).get("base_id") if params else None
        made_from = base if isinstance(base, str) and base else twin
        if made_from and made_from != config_id:
            parent[config_id] = made_from
    templates = []
    for config_id in frame["config_id"].to_list():
        seen = {config_id}
        while config_id in parent and parent[config_id] not in seen:
            config_id = parent[config_id]
            seen.add(config_id)
        templates.append(config_id)
    return templates


def _stratum_rng(seed: int, stratum: tuple[str, ...]) -> np.random.Generator:
    """Each stratum shuffled by its own seed, so a new stratum never reshuffles the others."""
    return np.random.default_rng([seed, int(sha256_hex(stable_json(list(stratum)))[:16], 16)])


def _template_strata(frame: pl.DataFrame) -> dict[tuple[str, ...], list[tuple[str, int]]]:
    """(kind, labels held) -> [(template, item count)], templates in id order."""
    groups = (
        frame.group_by("__template")
        .agg(pl.col("kind").first(), pl.col("label").unique().sort().str.join("+").alias("labels"), pl.len())
        .sort("__template")
    )
    strata: dict[tuple[str, ...], list[tuple[str, int]]] = {}
    for template, kind, labels, size in groups.iter_rows():
        strata.setdefault((kind, labels), []).append((template, size))
    return dict(sorted(strata.items()))


def value_counts(frame: pl.DataFrame) -> dict[str, int]:
    """Items per kind/label (for asset metadata and checks)."""
    counts = Counter(f"{kind}/{label}" for kind, label in frame.select("kind", "label").iter_rows())
    return dict(sorted(counts.items()))
