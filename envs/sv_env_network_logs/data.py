"""Loaders mapping real flow corpora (IoT-23, CIC-IDS-2017, UNSW-NB15) and the shipped corpus to E1 flows.

Each loader keeps the corpus's real layout (hub id, column names, missing-value markers) and returns a
validated, deduplicated frame. A row whose mapped cells cannot be trusted (text in a numeric field, an
infinite or negative count, a port above 65535, an unknown label) is dropped, never coerced: drops are counted
by reason in a LoadReport (pass one to see them) and logged as a warning; with strict=True they raise instead.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import polars as pl

from sv_env_network_logs.schema import (
    FLOW_COLUMNS,
    FLOW_SCHEMA,
    MAX_EPOCH_S,
    validate_flows,
    with_content_hash,
)
from sv_env_network_logs.templates import template_split
from sv_shared.data.errors import CorpusValidationError
from sv_shared.data.loading import MAX_EXAMPLES, dedupe, is_hub_id, load_from_hub, read_table
from sv_shared.data.loading import LoadReport as _LoadReport
from sv_shared.data.splits import validate_fractions

logger = logging.getLogger(__name__)

IOT23_HUB_ID = "19kmunz/iot-23-preprocessed"
DEFAULT_FRACTIONS: dict[str, float] = {"train": 0.6, "dev": 0.2, "test": 0.2}
EMBEDDED_FILE = "embedded_flows.csv"

MISSING_TOKENS: tuple[str, ...] = ("", "-", "(empty)")
"""Cells that mean "not recorded": Zeek's unset (-) and empty-set ((empty)) markers and blank CSV cells."""

_TABLE_SUFFIXES = (".csv", ".parquet", ".jsonl", ".ndjson")
_ZEEK_SUFFIXES = (".labeled", ".log")
_MAX_FOUND = 30

# IoT-23 (Zeek conn.log.labeled). The HF preprocessed export keeps these columns and drops ts, uid, the hosts
# and detailed-label; the raw logs and their CSV exports have them all.
IOT23_REQUIRED: tuple[str, ...] = (
    "id.orig_p",
    "id.resp_p",
    "proto",
    "service",
    "duration",
    "orig_bytes",
    "resp_bytes",
    "conn_state",
    "history",
    "orig_pkts",
    "resp_pkts",
    "label",
)
IOT23_OPTIONAL: tuple[str, ...] = ("ts", "id.orig_h", "id.resp_h", "detailed-label")

# IoT-23 detailed-label -> scenario (keys lowercased). Labels from the IoT-23 documentation, plus three
# secverify extensions (PortScan, BruteForce, Exfiltration) the embedded corpus uses where IoT-23 has none.
IOT23_SCENARIOS: dict[str, str] = {
    "partofahorizontalportscan": "port_scan",
    "partofahorizontalportscan-attack": "port_scan",
    "c&c-partofahorizontalportscan": "port_scan",
    "portscan": "port_scan",
    "c&c": "c2_beaconing",
    "c&c-heartbeat": "c2_beaconing",
    "c&c-heartbeat-attack": "c2_beaconing",
    "c&c-heartbeat-filedownload": "c2_beaconing",
    "c&c-filedownload": "c2_beaconing",
    "c&c-torii": "c2_beaconing",
    "c&c-mirai": "c2_beaconing",
    "ddos": "ddos",
    "attack": "other_attack",
    "okiru": "other_attack",
    "okiru-attack": "other_attack",
    "filedownload": "other_attack",
    "bruteforce": "brute_force",
    "exfiltration": "exfiltration",
}
UNSPECIFIED_FAMILY = "unspecified"
"""attack_family of a malicious row whose corpus does not name the attack (e.g. the HF IoT-23 export)."""

# CIC-IDS-2017 (CICFlowMeter CSVs); names are matched after stripping the real files' leading spaces.
CICIDS_REQUIRED: tuple[str, ...] = (
    "Destination Port",
    "Flow Duration",
    "Total Fwd Packets",
    "Total Backward Packets",
    "Total Length of Fwd Packets",
    "Total Length of Bwd Packets",
    "Label",
)
CICIDS_OPTIONAL: tuple[str, ...] = ("Source IP", "Source Port", "Destination IP", "Protocol", "Timestamp")
CICIDS_SCENARIOS: dict[str, str] = {
    "ddos": "ddos",
    "dos hulk": "ddos",
    "dos goldeneye": "ddos",
    "dos slowloris": "ddos",
    "dos slowhttptest": "ddos",
    "portscan": "port_scan",
    "ftp-patator": "brute_force",
    "ssh-patator": "brute_force",
    "web attack - brute force": "brute_force",
    "bot": "c2_beaconing",
    "infiltration": "other_attack",
    "heartbleed": "other_attack",
    "web attack - xss": "other_attack",
    "web attack - sql injection": "other_attack",
}
# CIC timestamps are local capture times, day first, some files on a 12-hour clock without AM/PM; they are
# read as given (as UTC), so ts orders flows within a file but is not an exact wall-clock time.
CICIDS_TIME_FORMATS: tuple[str, ...] = (
    "%d/%m/%Y %H:%M:%S",
    "%d/%m/%Y %H:%M",
    "%d/%m/%Y %I:%M:%S %p",
    "%d/%m/%Y %I:%M %p",
    "%Y-%m-%d %H:%M:%S",
)
IP_PROTOCOLS: dict[int, str] = {
    1: "icmp",
    2: "igmp",
    6: "tcp",
    17: "udp",
    47: "gre",
    50: "esp",
    58: "ipv6-icmp",
}

# UNSW-NB15 training/testing-set CSVs (no hosts, ports or times in this layout).
UNSW_REQUIRED: tuple[str, ...] = (
    "dur",
    "proto",
    "service",
    "state",
    "spkts",
    "dpkts",
    "sbytes",
    "dbytes",
    "attack_cat",
    "label",
)
UNSW_SCENARIOS: dict[str, str] = {"reconnaissance": "port_scan", "dos": "ddos"}
# Argus flow states -> the Zeek conn_state with the same meaning. Only unambiguous ones are mapped; the rest
# (RST, which does not say who reset, and ICMP/ARP states such as ECO, ECR, ACC, CLO, PAR, URN) stay as given.
UNSW_STATES: dict[str, str] = {"FIN": "SF", "CON": "S1", "INT": "S0", "REQ": "S0"}


@dataclass
class LoadReport(_LoadReport):
    """What a load read, kept and dropped, with example rows. Untrusted cells are found column-wise, so `dropped`
    counts rows per reason (a source column, "label" or "blank row"; a row may count under several) and rows_dropped
    counts rows; strict mode raises for the whole table (see _finish)."""

    absent: list[str] = field(default_factory=list)
    """Optional source columns a file lacked (null in the schema there), e.g. ts in the HF export."""

    def _summary_extras(self) -> str:
        return f"; absent columns {self.absent}" if self.absent else ""


@dataclass
class _Mapped:
    """One raw table mapped to schema columns, with a boolean column per reason a row cannot be trusted."""

    frame: pl.DataFrame
    reasons: list[str]
    absent: list[str]


Mapper = Callable[[pl.DataFrame, str], _Mapped]


# --- reading ---


def _read_zeek(path: Path, limit: int | None) -> pl.DataFrame:
    """A Zeek TSV log: names from the #fields line, every value as text, comment lines (#close...) skipped."""
    names: list[str] | None = None
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if not line.startswith("#"):
                break
            if line.startswith("#fields"):
                names = line.rstrip("\r\n").split("\t")[1:]
                break
    if not names:
        raise CorpusValidationError(f"{path}: Zeek log without a #fields header line")
    return pl.read_csv(
        path,
        separator="\t",
        comment_prefix="#",
        has_header=False,
        new_columns=names,
        infer_schema=False,
        quote_char=None,
        n_rows=limit,
        truncate_ragged_lines=True,
        encoding="utf8-lossy",
    )


def _is_zeek(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(10).startswith((b"#separator", b"#fields"))


def _read_table(path: Path, limit: int | None) -> pl.DataFrame:
    """One file as a frame: a Zeek log (known by its header, whatever its name) here, the rest through read_table.

    CSV cells come as text (parsed per column later), invalid UTF-8 replaced (CIC-IDS-2017 stores "Web Attack – Brute
    Force" in cp1252) and ragged rows cut; parquet/JSONL keep their types.
    """
    suffix = path.suffix.lower()
    if suffix not in (".parquet", ".jsonl", ".ndjson") and _is_zeek(path):
        return _read_zeek(path, limit)
    if suffix in _ZEEK_SUFFIXES:
        raise CorpusValidationError(f"{path}: not a Zeek log: no #separator or #fields header line")
    return read_table(path, limit=limit, formats=_TABLE_SUFFIXES, ragged=True)


def _corpus_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if path.is_dir():
        files = sorted(
            candidate
            for candidate in path.rglob("*")
            if candidate.is_file() and candidate.name.lower().endswith(_TABLE_SUFFIXES + _ZEEK_SUFFIXES)
        )
        if files:
            return files
        raise FileNotFoundError(f"{path}: no corpus files ({', '.join(_TABLE_SUFFIXES + _ZEEK_SUFFIXES)}) inside")
    raise FileNotFoundError(f"corpus path {path} does not exist")


def _read_files(path: Path, limit: int | None) -> list[tuple[str, pl.DataFrame]]:
    """Every corpus file under path, read in name order, at most `limit` rows in total."""
    tables: list[tuple[str, pl.DataFrame]] = []
    remaining = limit
    for file in _corpus_files(path):
        if remaining is not None and remaining <= 0:
            break
        table = _read_table(file, remaining)
        tables.append((str(file), table))
        if remaining is not None:
            remaining -= table.height
    return tables


def _strip_names(frame: pl.DataFrame) -> pl.DataFrame:
    """Strip the whitespace CIC-IDS-2017 puts before most column names; the first of two equal names wins."""
    renames: dict[str, str] = {}
    taken = set(frame.columns)
    for name in frame.columns:
        stripped = name.strip()
        if stripped != name and stripped not in taken:
            renames[name] = stripped
            taken.add(stripped)
    return frame.rename(renames)


def _require(frame: pl.DataFrame, source: str, layout: str, required: Iterable[str]) -> None:
    missing = [column for column in required if column not in frame.columns]
    if missing:
        found = frame.columns[:_MAX_FOUND] + (["..."] if frame.width > _MAX_FOUND else [])
        raise CorpusValidationError(f"{source}: not the {layout} layout: missing column(s) {missing}; found {found}")


# --- cell parsing ---


def _text(frame: pl.DataFrame, column: str) -> pl.Expr:
    """A text column, stripped, with missing markers as null; an absent column is all null."""
    if column not in frame.columns:
        return pl.lit(None, dtype=pl.Utf8)
    text = pl.col(column).cast(pl.Utf8).str.strip_chars()
    return pl.when(text.is_in(MISSING_TOKENS)).then(None).otherwise(text)


def _number(
    frame: pl.DataFrame,
    column: str,
    *,
    integer: bool,
    low: float = 0.0,
    high: float = math.inf,
    micros: bool = False,
) -> tuple[pl.Expr, pl.Expr]:
    """(value, bad) for a numeric column: missing markers and NaN become null; text, infinities, values
    outside [low, high] and fractions in integer fields are bad (the row is dropped), never clipped.

    micros converts microseconds to seconds, rounded to 6 decimals so 119302728 µs reads as 119.302728 s
    (a vectorized division alone lands one ulp off the decimal value).
    """
    if column not in frame.columns:
        return pl.lit(None, dtype=pl.Int64 if integer else pl.Float64), pl.lit(False)
    if frame.schema[column].is_numeric():
        value = pl.col(column).cast(pl.Float64)
        missing = value.is_null() | value.is_nan()
    else:
        text = pl.col(column).cast(pl.Utf8).str.strip_chars()
        missing = text.is_null() | text.is_in(MISSING_TOKENS) | (text.str.to_lowercase() == "nan")
        value = text.cast(pl.Float64, strict=False)
    invalid = value.is_null() | value.is_infinite() | (value < low) | (value > high)
    if integer:
        invalid = invalid | (value != value.floor())
    bad = (~missing & invalid).fill_null(True)
    scaled = pl.when(missing | bad).then(None).otherwise((value / 1e6).round(6) if micros else value)
    return scaled.cast(pl.Int64 if integer else pl.Float64), bad


def _scenario(family: pl.Expr, mapping: Mapping[str, str]) -> pl.Expr:
    """Scenario of a malicious row from its family (case-insensitive); unknown families are other_attack."""
    return family.str.to_lowercase().replace_strict(dict(mapping), default="other_attack", return_dtype=pl.Utf8)


def _assemble(
    frame: pl.DataFrame, columns: dict[str, pl.Expr], bad: dict[str, pl.Expr], optional: Iterable[str] = ()
) -> _Mapped:
    """Evaluate the schema columns and the per-reason bad flags; provenance columns start null.

    A row with no value at all (the blank lines some CIC-IDS-2017 files end with) counts as "blank row" only.
    """
    blank = pl.all_horizontal([_text(frame, column).is_null() for column in frame.columns])
    exprs = [columns.get(name, pl.lit(None)).cast(FLOW_SCHEMA[name]).alias(name) for name in FLOW_COLUMNS]
    flags = {"blank row": blank, **{reason: flag & ~blank for reason, flag in bad.items()}}
    named = [flag.alias(f"__bad:{reason}") for reason, flag in flags.items()]
    absent = [column for column in optional if column not in frame.columns]
    return _Mapped(frame.with_row_index("__row").select(pl.col("__row"), *exprs, *named), list(flags), absent)


def _label_columns(label: pl.Expr, family: pl.Expr, mapping: Mapping[str, str]) -> dict[str, pl.Expr]:
    malicious = label == "Malicious"
    return {
        "label": label,
        "attack_family": pl.when(malicious).then(family.fill_null(UNSPECIFIED_FAMILY)).otherwise(None),
        "scenario": pl.when(malicious)
        .then(_scenario(family.fill_null(UNSPECIFIED_FAMILY), mapping))
        .otherwise(pl.lit("benign")),
    }


# --- corpus mappers ---


def _split_combined_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """IoT-23 logs join "tunnel_parents   label   detailed-label" with three spaces, header and rows alike."""
    for name in frame.columns:
        if "   " in name:
            parts = name.split()
            frame = frame.with_columns(
                pl.col(name).cast(pl.Utf8).str.split_exact("   ", len(parts) - 1).struct.rename_fields(parts)
            ).unnest(name)
    return frame


def _map_iot23(frame: pl.DataFrame, source: str) -> _Mapped:
    frame = _split_combined_columns(frame)
    _require(frame, source, "IoT-23 conn.log.labeled", IOT23_REQUIRED)
    columns: dict[str, pl.Expr] = {}
    bad: dict[str, pl.Expr] = {}
    numeric = {
        "ts": ("ts", False, 0.0, MAX_EPOCH_S),  # later times are unit errors (ms), not flows
        "src_port": ("id.orig_p", True, 0, 65535),
        "dst_port": ("id.resp_p", True, 0, 65535),
        "duration_s": ("duration", False, 0.0, math.inf),
        "bytes_out": ("orig_bytes", True, 0, math.inf),
        "bytes_in": ("resp_bytes", True, 0, math.inf),
        "packets_out": ("orig_pkts", True, 0, math.inf),
        "packets_in": ("resp_pkts", True, 0, math.inf),
    }
    for target, (column, integer, low, high) in numeric.items():
        columns[target], bad[column] = _number(frame, column, integer=integer, low=low, high=high)
    protocol = _text(frame, "proto").str.to_lowercase()
    columns.update(
        src_ip=_text(frame, "id.orig_h"),
        dst_ip=_text(frame, "id.resp_h"),
        protocol=protocol,
        service=_text(frame, "service").str.to_lowercase(),
        conn_state=_text(frame, "conn_state"),
        history=_text(frame, "history"),
    )
    bad["proto"] = protocol.is_null()
    raw_label = _text(frame, "label").str.to_lowercase()
    label = (
        pl.when(raw_label == "benign").then(pl.lit("Benign")).when(raw_label == "malicious").then(pl.lit("Malicious"))
    )
    bad["label"] = label.is_null()
    columns.update(_label_columns(label, _text(frame, "detailed-label"), IOT23_SCENARIOS))
    return _assemble(frame, columns, bad, IOT23_OPTIONAL)


def _map_cicids2017(frame: pl.DataFrame, source: str) -> _Mapped:
    frame = _strip_names(frame)
    _require(frame, source, "CIC-IDS-2017 CICFlowMeter CSV", CICIDS_REQUIRED)
    columns: dict[str, pl.Expr] = {}
    bad: dict[str, pl.Expr] = {}
    numeric = {
        "src_port": ("Source Port", True, 0, 65535, False),
        "dst_port": ("Destination Port", True, 0, 65535, False),
        "duration_s": ("Flow Duration", False, 0.0, math.inf, True),  # microseconds
        "packets_out": ("Total Fwd Packets", True, 0, math.inf, False),
        "packets_in": ("Total Backward Packets", True, 0, math.inf, False),
        "bytes_out": ("Total Length of Fwd Packets", True, 0, math.inf, False),
        "bytes_in": ("Total Length of Bwd Packets", True, 0, math.inf, False),
    }
    for target, (column, integer, low, high, micros) in numeric.items():
        columns[target], bad[column] = _number(frame, column, integer=integer, low=low, high=high, micros=micros)
    if "Protocol" in frame.columns:
        number, bad["Protocol"] = _number(frame, "Protocol", integer=True, low=0, high=255)
        columns["protocol"] = number.replace_strict(
            IP_PROTOCOLS, default=pl.format("ip-{}", number), return_dtype=pl.Utf8
        )
        bad["Protocol"] = bad["Protocol"] | number.is_null()
    else:
        columns["protocol"] = pl.lit("unknown")  # the MachineLearningCVE CSVs drop the protocol column
    if "Timestamp" in frame.columns:
        text = _text(frame, "Timestamp")
        parsed = pl.coalesce([text.str.to_datetime(fmt, strict=False) for fmt in CICIDS_TIME_FORMATS])
        columns["ts"] = parsed.dt.epoch("us").cast(pl.Float64) / 1e6
        bad["Timestamp"] = text.is_not_null() & parsed.is_null()
    columns.update(src_ip=_text(frame, "Source IP"), dst_ip=_text(frame, "Destination IP"))
    # Normalize the Web Attack separator: an en dash, or its cp1252 byte decoded as U+FFFD or mojibake.
    raw_label = _text(frame, "Label").str.replace(r"^Web Attack\s*[^A-Za-z0-9\s]+\s*", "Web Attack - ")
    label = (
        pl.when(raw_label.str.to_uppercase() == "BENIGN")
        .then(pl.lit("Benign"))
        .when(raw_label.is_not_null())
        .then(pl.lit("Malicious"))
    )
    bad["Label"] = label.is_null()
    columns.update(_label_columns(label, raw_label, CICIDS_SCENARIOS))
    return _assemble(frame, columns, bad, CICIDS_OPTIONAL)


def _map_unswnb15(frame: pl.DataFrame, source: str) -> _Mapped:
    frame = _strip_names(frame)
    _require(frame, source, "UNSW-NB15 training/testing-set CSV", UNSW_REQUIRED)
    columns: dict[str, pl.Expr] = {}
    bad: dict[str, pl.Expr] = {}
    numeric = {
        "duration_s": ("dur", False),
        "packets_out": ("spkts", True),
        "packets_in": ("dpkts", True),
        "bytes_out": ("sbytes", True),  # UNSW counts header bytes too: an upper bound on the payload.
        "bytes_in": ("dbytes", True),
    }
    for target, (column, integer) in numeric.items():
        columns[target], bad[column] = _number(frame, column, integer=integer)
    protocol = _text(frame, "proto").str.to_lowercase()
    state = _text(frame, "state")
    columns.update(
        protocol=protocol,
        service=_text(frame, "service").str.to_lowercase(),
        conn_state=state.replace(UNSW_STATES),
    )
    bad["proto"] = protocol.is_null()
    flag, bad["label"] = _number(frame, "label", integer=True, low=0, high=1)
    bad["label"] = bad["label"] | flag.is_null()
    label = pl.when(flag == 1).then(pl.lit("Malicious")).when(flag == 0).then(pl.lit("Benign"))
    category = _text(frame, "attack_cat").str.replace(r"^Backdoors$", "Backdoor")
    family = pl.when(category.str.to_lowercase() == "normal").then(None).otherwise(category)
    columns.update(_label_columns(label, family, UNSW_SCENARIOS))
    return _assemble(frame, columns, bad)


# --- assembling a corpus ---


def _row_example(source: str, row: Mapping[str, object], reasons: list[str]) -> str:
    failed = [reason for reason in reasons if row[f"__bad:{reason}"]]
    return f"{Path(source).name} data row {row['__row']} ({', '.join(failed)})"


def _finish(
    tables: list[tuple[str, pl.DataFrame]],
    mapper: Mapper,
    *,
    corpus: str,
    report: LoadReport,
    strict: bool,
) -> pl.DataFrame:
    """Map every table, drop and count untrusted rows, hash, deduplicate and validate."""
    kept: list[pl.DataFrame] = []
    for source, table in tables:
        mapped = mapper(table, source)
        flags = [f"__bad:{reason}" for reason in mapped.reasons]
        report.rows_read += mapped.frame.height
        report.absent = sorted({*report.absent, *mapped.absent})
        any_bad = pl.any_horizontal(flags) if flags else pl.lit(False)
        rejected = mapped.frame.filter(any_bad)
        report.rows_dropped += rejected.height
        if rejected.height:
            for reason in mapped.reasons:
                count = int(rejected[f"__bad:{reason}"].sum())
                if count:
                    report.dropped[reason] = report.dropped.get(reason, 0) + count
            room = MAX_EXAMPLES - len(report.examples)
            report.examples.extend(
                _row_example(source, row, mapped.reasons) for row in rejected.head(max(room, 0)).iter_rows(named=True)
            )
            if strict:
                raise CorpusValidationError(f"untrusted rows with strict=True: {report.summary()}")
        kept.append(mapped.frame.filter(~any_bad).select(FLOW_COLUMNS))
    combined = pl.concat(kept) if kept else pl.DataFrame(schema=FLOW_SCHEMA)
    combined = with_content_hash(combined.with_columns(pl.lit(corpus).alias("source_corpus")))
    deduped = dedupe(combined)
    report.record_load(combined, deduped, logger)
    return validate_flows(deduped, check_hashes=False)


def load_iot23(
    source: str | Path = IOT23_HUB_ID,
    *,
    split: str = "train",
    limit: int | None = None,
    report: LoadReport | None = None,
    strict: bool = False,
) -> pl.DataFrame:
    """IoT-23 flows from the HF hub id (e.g. 19kmunz/iot-23-preprocessed) or a local mirror.

    A local path may be a parquet/CSV/JSONL file in the HF export's layout, a raw Zeek conn.log.labeled file,
    a CSV export of one, or a directory of such files; `split` only applies to hub ids.
    """
    report = report if report is not None else LoadReport(source=str(source))
    path = Path(source)
    if path.exists():
        tables = _read_files(path, limit)
    elif is_hub_id(source):
        hint = (
            "load_iot23('/data/iot-23-preprocessed/') (a parquet, CSV or JSONL file, or a directory of them; raw "
            "conn.log.labeled files work too)"
        )
        tables = [(source, load_from_hub(source, split=split, limit=limit, mirror_hint=hint))]
    else:
        raise FileNotFoundError(f"IoT-23 source {source!r} is neither an existing path nor a hub dataset id")
    return _finish(tables, _map_iot23, corpus="iot-23", report=report, strict=strict)


def load_cicids2017(
    path: str | Path, *, limit: int | None = None, report: LoadReport | None = None, strict: bool = False
) -> pl.DataFrame:
    """CIC-IDS-2017 flows from a local CSV/parquet mirror (MachineLearningCVE or TrafficLabelling files, or a
    directory of them). Flow Duration is in microseconds; the real files' Infinity/NaN cells sit in rate
    columns this mapping does not use."""
    report = report if report is not None else LoadReport(source=str(path))
    return _finish(_read_files(Path(path), limit), _map_cicids2017, corpus="cic-ids-2017", report=report, strict=strict)


def load_unswnb15(
    path: str | Path, *, limit: int | None = None, report: LoadReport | None = None, strict: bool = False
) -> pl.DataFrame:
    """UNSW-NB15 flows from the training/testing-set CSVs (or parquet copies, or a directory of them).

    Argus states map to Zeek conn_state where the meaning is the same (FIN->SF, CON->S1, INT/REQ->S0); the
    others are kept as given. This layout has no hosts, ports or timestamps, so those columns are null.
    """
    report = report if report is not None else LoadReport(source=str(path))
    return _finish(_read_files(Path(path), limit), _map_unswnb15, corpus="unsw-nb15", report=report, strict=strict)


def embedded_path() -> Path:
    """Where the shipped corpus lives inside the installed package."""
    return Path(str(resources.files("sv_env_network_logs") / "data" / EMBEDDED_FILE))


def load_embedded() -> pl.DataFrame:
    """The shipped corpus (IoT-23 conn.log.labeled columns, written by scripts/build_e1_embedded.py).

    Loaded strictly: a shipped file with an untrusted row is a bug, not data to drop.
    """
    path = embedded_path()
    return _finish(_read_files(path, None), _map_iot23, corpus="sv-embedded", report=LoadReport(str(path)), strict=True)


STRATUM_COLUMN = "__stratum"


def curate(
    frames: list[pl.DataFrame],
    *,
    seed: int = 42,
    fractions: Mapping[str, float] | None = None,
) -> dict[str, pl.DataFrame]:
    """Concatenate corpora, deduplicate and split them per label and scenario, holding out whole templates (one
    source host's flows of one scenario; templates.template_split), so no template an eval tests leaks from train and
    each split holds every scenario that has enough templates.

    Duplicates across corpora keep the row that sorts first on all columns, so the result is the same for any
    order of frames and rows. Splits come back in the order of `fractions`, each sorted by flow_id.
    """
    checked = validate_fractions(fractions if fractions is not None else DEFAULT_FRACTIONS)
    if not frames:
        raise ValueError("curate needs at least one frame")
    combined = pl.concat([validate_flows(frame) for frame in frames])
    combined = dedupe(combined.sort(FLOW_COLUMNS, nulls_last=True))
    # Strata are label and scenario, so every split holds each kind of attack the corpus has several hosts of.
    stratum = pl.concat_str([pl.col("label"), pl.col("scenario")], separator="/").alias(STRATUM_COLUMN)
    parts = template_split(combined.with_columns(stratum), fractions=checked, seed=seed, by=STRATUM_COLUMN)
    return {name: validate_flows(part.drop(STRATUM_COLUMN), check_hashes=False) for name, part in parts.items()}
