"""The E1 heuristic baseline: hand-written rules on ports, connection states and sizes, calibrated on the train split.

It answers through the same JSON schema as a model and is scored by the same verifier (registry id `heuristic`).

These rules of evidence keep it honest on real logs, which often lack fields the embedded corpus records:
- Unknown is not zero. A field that is not recorded (None) is absent evidence: a rule that needs it does not fire
  (a missing packet count is never "0 packets").
- Rules use what is recorded. Each rule reads the fields it needs from whichever are present: one direction of a
  count, the Zeek history in place of byte counts, the duration in place of sizes, the destination port when nothing
  else is known. So a log without bytes and packets, or one that records only endpoints, is still judged.
- A reply that was never sent is evidence only where one is expected. Zeek's S0 ("no reply seen") is what every
  UDP broadcast, discovery or one-way datagram gets; only a TCP attempt that carried no data reads as a probe.
- Confidences are fitted, never read off the score, and only on the train split (FIT_SPLIT). CalibrationTable is
  histogram binning of P(Malicious) over the rule score, separately for each combination of recorded measurements
  (the train flows are seen through every one), with templates as the unit of evidence. Dev and test are never read,
  so their figures measure it.
- Abstention is for no evidence at all: only a flow that records nothing but its protocol and hosts abstains, so no
  view of a log leaves a class unanswered.

Rules, calibration and answer live in this one module on purpose: the runner fingerprints a rule baseline by its
module's source, so an edit to any of them starts a new run rather than resuming one made with the old rules.
"""

from __future__ import annotations

import json
import math
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import polars as pl

from sv_env_network_logs.schema import FEATURE_COLUMNS
from sv_env_network_logs.templates import TEMPLATE_COLUMN, template_keys

# Ports with a strong prior: remote-access services brute-forced by botnets, classic C&C ports, and IoT exploit
# targets (Huawei HG532 37215, Realtek SDK 52869). Benign traffic reaches some of them too: they add suspicion only.
_REMOTE_ACCESS_PORTS = frozenset({21, 22, 23, 2323, 3389, 5900})
_C2_PORTS = frozenset({6667, 6697, 4444, 1337, 31337})
_EXPLOIT_PORTS = frozenset({37215, 52869, 7547})
_COMMON_SERVICES = frozenset(
    [("tcp", port) for port in (53, 80, 443, 587, 853, 993, 1883, 8883)]
    + [("udp", port) for port in (53, 67, 68, 123, 137, 138, 443, 1900, 5353, 5355)]
)
"""(transport, port) of the services ordinary clients and IoT devices use: DNS (and over TLS), HTTP(S) and QUIC,
mail, MQTT, NTP, DHCP, and the local discovery protocols (NetBIOS, SSDP, mDNS, LLMNR) every home network broadcasts.
A known port on a transport its service does not use (HTTP over UDP) is not one of them."""
_NEVER_ESTABLISHED = frozenset({"S0", "REJ", "RSTOS0", "RSTRH", "SH", "SHR"})
"""Zeek states of a TCP connection whose handshake never completed: no data can have flowed."""
_ESTABLISHED = frozenset({"SF", "S1", "S2", "S3", "RSTO", "RSTR"})
"""Zeek states of a TCP connection whose handshake completed."""
_PROBE_PACKETS = 3
"""At most this many packets out: a probe, not a session (a flood has its own rule)."""

MEASUREMENTS: Mapping[str, tuple[str, ...]] = {
    "state": ("conn_state", "history"),
    "bytes": ("bytes_out", "bytes_in"),
    "packets": ("packets_out", "packets_in"),
    "duration": ("duration_s",),
}
"""What a flow record measures about the connection, by the fields that record it (either one counts). The service
is left out: Zeek leaves it unset ("-") on most flows it cannot identify, so its absence says nothing about how
complete a log is."""

FIT_SPLIT = "train"
"""The one split the calibration is fitted on; dev and test only ever measure it."""
SCORE_BIN_EDGES: tuple[float, ...] = (0.25, 0.5, 0.75)
"""Inner edges of the rule-score bins calibrated separately (4 bins over [0, 1])."""
MIN_CELL_TEMPLATES = 2
"""A (measurements, score bin) cell holding fewer templates borrows the bin pooled over all measurements."""
ABSTAIN_CONFIDENCE = 0.5


@dataclass(frozen=True)
class Evidence:
    """What the rules make of one flow: a suspicion score in [0, 1], the rules that fired, the measurements recorded,
    and whether the flow names the service it reached (its destination port or service)."""

    score: float
    reasons: tuple[str, ...]
    known: frozenset[str]
    addressed: bool

    @property
    def thin(self) -> bool:
        """Nothing to judge: no rule fired and nothing but the protocol and the hosts is recorded."""
        return not self.reasons and not self.known and not self.addressed

    @property
    def profile(self) -> tuple[str, ...]:
        """The recorded measurements, in MEASUREMENTS order: which calibration the flow's score is read through."""
        return tuple(name for name in MEASUREMENTS if name in self.known)

    @property
    def score_bin(self) -> int:
        return sum(self.score >= edge for edge in SCORE_BIN_EDGES)


def _number(observation: Mapping[str, Any], key: str) -> float | None:
    """A recorded number, or None when the field is missing or not a finite number (never 0 by default)."""
    value = observation.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _text(observation: Mapping[str, Any], key: str) -> str | None:
    value = observation.get(key)
    return value if isinstance(value, str) and value else None


def _carried_data(volume: tuple[float | None, float | None], history: str | None) -> bool | None:
    """Whether any payload flowed, from byte counts (either direction) or else Zeek's history (D/d: a packet with
    payload); None when neither tells."""
    if any(count is not None and count > 0 for count in volume):
        return True
    if all(count is not None for count in volume):
        return False
    return None if history is None else any(letter in history for letter in "Dd")


def assess(observation: Mapping[str, Any]) -> Evidence:
    """Every rule whose fields are recorded, summed and clipped to [0, 1]."""
    reasons: list[str] = []
    score = 0.0

    def rule(weight: float, reason: str) -> None:
        nonlocal score
        score += weight
        reasons.append(reason)

    state, history = _text(observation, "conn_state"), _text(observation, "history")
    port = _number(observation, "dst_port")
    protocol = (_text(observation, "protocol") or "").lower()
    bytes_out, bytes_in = _number(observation, "bytes_out"), _number(observation, "bytes_in")
    packets_out, packets_in = _number(observation, "packets_out"), _number(observation, "packets_in")
    duration = _number(observation, "duration_s")
    recorded = {"state": (state, history), "bytes": (bytes_out, bytes_in), "packets": (packets_out, packets_in)}
    known = frozenset(
        [name for name, values in recorded.items() if any(value is not None for value in values)]
        + (["duration"] if duration is not None else [])
    )
    service = (protocol, int(port)) if port is not None else None
    carried = _carried_data((bytes_out, bytes_in), history)

    if protocol == "tcp" and (packets_out is None or packets_out <= _PROBE_PACKETS):
        if carried is False or (carried is None and state in _NEVER_ESTABLISHED):
            rule(0.6, "TCP connection that carried no data (scan probe)")
        elif carried is None and state not in _ESTABLISHED and packets_in is not None and packets_in <= 1:
            # A session that carries data takes at least two packets back (SYN-ACK, then an ACK or a reply); a
            # reset or nothing at all is a refused or unanswered attempt.
            rule(0.5, "short TCP attempt that got no session")
    if packets_out is not None and packets_out >= 1000 and packets_in == 0:
        rule(0.6, "one-way packet flood")
    if bytes_out is not None and bytes_out > 1_000_000 and (bytes_in is None or bytes_out > 100 * max(bytes_in, 1)):
        rule(0.3 if port == 443 else 0.5, "large one-way upload")
    elif bytes_out is None and packets_out is not None and packets_in and packets_out >= max(1000, 100 * packets_in):
        rule(0.3 if port == 443 else 0.5, "large one-way upload (by packets)")
    if port in _REMOTE_ACCESS_PORTS:
        sizes = [count for count in (bytes_out, bytes_in) if count is not None]
        counts = [count for count in (packets_out, packets_in) if count is not None]
        session = [*(count < 5_000 for count in sizes), *(count <= 10 for count in counts)]
        if duration is not None:
            session.append(duration < 10.0)
        if not session:
            rule(0.3, "remote-access port")
        elif all(session):
            rule(0.55, "short session on a remote-access port (login attempt)")
    elif port in _C2_PORTS:
        rule(0.55, "known command-and-control port")
    elif port in _EXPLOIT_PORTS:
        rule(0.55, "IoT exploit target port")
    elif service is not None and protocol in ("tcp", "udp") and service not in _COMMON_SERVICES:
        rule(0.3, "uncommon service port")
    if port == 53 and bytes_out is not None and bytes_out > 200:
        rule(0.5, "oversized DNS query (tunnelling)")
    received = (bytes_out, bytes_in) if bytes_out is not None and bytes_in is not None else (packets_out, packets_in)
    if service in _COMMON_SERVICES and state == "SF" and None not in received and received[1] >= received[0]:
        rule(-0.2, "completed download from a common service")
    addressed = port is not None or _text(observation, "service") is not None
    return Evidence(min(max(score, 0.0), 1.0), tuple(reasons), known, addressed)


Cell = tuple[tuple[str, ...], int]
"""(recorded measurements, score bin)."""


@dataclass(frozen=True)
class CellCounts:
    malicious: int
    flows: int
    templates: frozenset[str]
    """The templates among the cell's flows: its independent pieces of evidence (a template seen through several
    measurement profiles is still one)."""

    def __add__(self, other: CellCounts) -> CellCounts:
        return CellCounts(self.malicious + other.malicious, self.flows + other.flows, self.templates | other.templates)

    @property
    def p_malicious(self) -> float:
        """The malicious share of flows, Laplace-smoothed over templates; 1/2 for an empty cell."""
        if not self.flows:
            return 0.5
        return (self.malicious / self.flows * len(self.templates) + 1) / (len(self.templates) + 2)


EMPTY_CELL = CellCounts(0, 0, frozenset())


@dataclass(frozen=True)
class CalibrationTable:
    """P(Malicious) per (recorded measurements, score bin) cell: the cell's malicious share of flows, shrunk toward
    1/2 by how few templates it holds.

    A template's flows are near-copies (templates.py), so a hundred probes of one scan are one piece of evidence, not
    a hundred: the estimate is (share x templates + 1) / (templates + 2), Laplace smoothing over templates. The share
    itself is counted in flows, as answers are scored, so a split of a few large malicious templates and many small
    benign ones is not read as mostly benign.
    """

    cells: Mapping[Cell, CellCounts]

    @classmethod
    def fit(cls, observations: Iterable[tuple[Mapping[str, Any], str, str]]) -> CalibrationTable:
        """From (observation, label, template) triples; thin flows (which abstain) are left out."""
        flows: dict[Cell, Counter[str]] = {}
        templates: dict[Cell, set[str]] = {}
        for observation, label, template in observations:
            evidence = assess(observation)
            if evidence.thin:
                continue
            key = (evidence.profile, evidence.score_bin)
            flows.setdefault(key, Counter())[label] += 1
            templates.setdefault(key, set()).add(template)
        return cls(
            {
                key: CellCounts(counts["Malicious"], counts.total(), frozenset(templates[key]))
                for key, counts in flows.items()
            }
        )

    def p_malicious(self, evidence: Evidence) -> float:
        cell = self.cells.get((evidence.profile, evidence.score_bin), EMPTY_CELL)
        if len(cell.templates) < MIN_CELL_TEMPLATES:
            pooled = [counts for (_, score_bin), counts in self.cells.items() if score_bin == evidence.score_bin]
            cell = sum(pooled, EMPTY_CELL)
        return cell.p_malicious


def measurement_views(frame: pl.DataFrame) -> list[pl.DataFrame]:
    """The frame with every combination of its measurements unrecorded (all 2^4, none hidden first)."""
    names = list(MEASUREMENTS)
    hidden_sets = [chosen for size in range(len(names) + 1) for chosen in combinations(names, size)]
    return [
        frame.with_columns(
            [pl.lit(None, dtype=frame.schema[field]).alias(field) for name in hidden for field in MEASUREMENTS[name]]
        )
        for hidden in hidden_sets
    ]


def calibration_observations(train: pl.DataFrame) -> list[tuple[dict[str, Any], str, str]]:
    """The train flows as the baseline sees them with each combination of measurements recorded, with their labels
    and templates; a combination that hides nothing a flow recorded adds no second copy of it."""
    seen: set[tuple[Any, ...]] = set()
    observations = []
    keyed = train.with_columns(template_keys(train).alias(TEMPLATE_COLUMN))
    for frame in measurement_views(keyed):
        for row in frame.iter_rows(named=True):
            observation = {column: row[column] for column in FEATURE_COLUMNS}
            key = (row["flow_id"], *observation.values())
            if key not in seen:
                seen.add(key)
                observations.append((observation, row["label"], row[TEMPLATE_COLUMN]))
    return observations


class HeuristicBaseline:
    """The `heuristic` answer function. Its calibration is fitted once, on first use, from the FIT_SPLIT part of the
    splits `load_splits` returns (the embedded corpus curated as evals curate it), so building the environment
    loads nothing and no other split can reach the fit."""

    def __init__(self, load_splits: Callable[[], Mapping[str, pl.DataFrame]]) -> None:
        self._load_splits = load_splits
        self._table: CalibrationTable | None = None
        self._lock = threading.Lock()

    @property
    def table(self) -> CalibrationTable:
        with self._lock:
            if self._table is None:
                train = self._load_splits()[FIT_SPLIT]
                self._table = CalibrationTable.fit(calibration_observations(train))
            return self._table

    def __call__(self, observation: Mapping[str, Any]) -> str:
        evidence = assess(observation)
        if evidence.thin:
            return _answer("Abstain", ABSTAIN_CONFIDENCE, "too little recorded to judge (no port, service or measure)")
        p_malicious = self.table.p_malicious(evidence)
        rationale = "; ".join(evidence.reasons) if evidence.reasons else "no rule fired"
        if math.isclose(p_malicious, 0.5):  # train evidence absent (an empty bin) or even: the rules decide, at chance
            return _answer("Malicious" if evidence.score >= 0.5 else "Benign", 0.5, rationale)
        label = "Malicious" if p_malicious > 0.5 else "Benign"
        return _answer(label, max(p_malicious, 1.0 - p_malicious), rationale)


def _answer(label: str, confidence: float, rationale: str) -> str:
    return json.dumps({"label": label, "confidence": round(confidence, 3), "rationale": rationale})
