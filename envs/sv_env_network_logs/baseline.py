"""The E1 heuristic baseline: hand-written rules on ports, connection states and byte ratios.

It answers through the same JSON schema as a model and is scored by the same verifier (registry id `heuristic`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

# Ports with a strong prior: remote-access services brute-forced by botnets, classic C&C ports, and IoT exploit
# targets (Huawei HG532 37215, Realtek SDK 52869). Benign traffic reaches some of them too: they add suspicion only.
_REMOTE_ACCESS_PORTS = frozenset({21, 22, 23, 2323, 3389, 5900})
_C2_PORTS = frozenset({6667, 6697, 4444, 1337, 31337})
_EXPLOIT_PORTS = frozenset({37215, 52869, 7547})
_UNANSWERED_STATES = frozenset({"S0", "REJ", "RSTOS0", "SH", "OTH"})
_COMMON_SERVICES = frozenset({53, 80, 123, 443, 993, 587})


def _int(observation: Mapping[str, Any], key: str) -> int:
    value = observation.get(key)
    return int(value) if value is not None else 0


def suspicion_score(observation: Mapping[str, Any]) -> tuple[float, list[str]]:
    """A score in [0, 1] from independent rules, and the rules that fired."""
    reasons: list[str] = []
    score = 0.0

    def rule(weight: float, reason: str) -> None:
        nonlocal score
        score += weight
        reasons.append(reason)

    state = observation.get("conn_state") or ""
    port = observation.get("dst_port")
    bytes_out, bytes_in = _int(observation, "bytes_out"), _int(observation, "bytes_in")
    packets_out, packets_in = _int(observation, "packets_out"), _int(observation, "packets_in")
    duration = observation.get("duration_s") or 0.0

    if state in _UNANSWERED_STATES and packets_in == 0 and packets_out <= 3:
        rule(0.6, "unanswered connection attempt (scan or flood probe)")
    if packets_out >= 1000 and packets_in == 0:
        rule(0.6, "one-way packet flood")
    if bytes_out > 1_000_000 and bytes_out > 100 * max(bytes_in, 1):
        rule(0.3 if port == 443 else 0.5, "large one-way upload")
    if port in _REMOTE_ACCESS_PORTS and duration < 10.0 and bytes_out < 5_000 and bytes_in < 5_000:
        rule(0.55, "short session on a remote-access port (login attempt)")
    if port in _C2_PORTS:
        rule(0.55, "known command-and-control port")
    if port in _EXPLOIT_PORTS:
        rule(0.55, "IoT exploit target port")
    if port == 53 and bytes_out > 200:
        rule(0.5, "oversized DNS query (tunnelling)")
    if port in _COMMON_SERVICES and state == "SF" and bytes_in >= bytes_out:
        rule(-0.2, "completed download from a common service")
    return min(max(score, 0.0), 1.0), reasons


def heuristic_answer(observation: Mapping[str, Any]) -> str:
    """The baseline's completion: Malicious when the score passes 0.5, confidence from the distance to it."""
    score, reasons = suspicion_score(observation)
    label = "Malicious" if score >= 0.5 else "Benign"
    confidence = round(0.5 + abs(score - 0.5), 3)
    rationale = "; ".join(reasons) if reasons else "no rule fired"
    return json.dumps({"label": label, "confidence": confidence, "rationale": rationale})
