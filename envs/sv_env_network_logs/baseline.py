"""The E1 heuristic baseline: hand-written rules on ports, connection states and byte ratios.

It answers through the same JSON schema as a model and is scored by the same verifier (registry id `heuristic`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

# Services an attacker brute-forces or abuses; benign traffic reaches them too, so they only add suspicion.
_REMOTE_ACCESS_PORTS = frozenset({21, 22, 23, 2323, 3389, 5900})
_FAILED_STATES = frozenset({"S0", "REJ", "RSTO", "RSTOS0", "RSTR", "RSTRH", "SH", "SHR", "OTH"})
_WELL_KNOWN_BENIGN = frozenset({53, 80, 123, 443, 993, 587})


def _int(observation: Mapping[str, Any], key: str) -> int:
    value = observation.get(key)
    return int(value) if value is not None else 0


def suspicion_score(observation: Mapping[str, Any]) -> tuple[float, list[str]]:
    """A score in [0, 1] from independent rules, and the rules that fired."""
    reasons: list[str] = []
    score = 0.0
    state = observation.get("conn_state") or ""
    dst_port = observation.get("dst_port")
    bytes_out = _int(observation, "bytes_out")
    bytes_in = _int(observation, "bytes_in")
    packets_out = _int(observation, "packets_out")
    duration = observation.get("duration_s") or 0.0

    if state in _FAILED_STATES and bytes_out == 0 and bytes_in == 0:
        score += 0.45
        reasons.append("failed handshake, no payload")
    if dst_port in _REMOTE_ACCESS_PORTS:
        score += 0.25
        reasons.append("remote-access port")
    if bytes_out > 1_000_000 and bytes_out > 20 * max(bytes_in, 1):
        score += 0.4
        reasons.append("large one-way upload")
    if packets_out >= 500 and duration < 5.0:
        score += 0.4
        reasons.append("packet flood")
    if dst_port is not None and dst_port not in _WELL_KNOWN_BENIGN and dst_port > 1024 and 0 < bytes_out < 400 \
            and 0 < bytes_in < 400 and duration < 2.0:
        score += 0.2
        reasons.append("small exchange on a high port")
    if dst_port in _WELL_KNOWN_BENIGN and state == "SF":
        score -= 0.3
        reasons.append("completed session on a common service")
    return min(max(score, 0.0), 1.0), reasons


def heuristic_answer(observation: Mapping[str, Any]) -> str:
    """The baseline's completion: Malicious when the score passes 0.5, confidence from the distance to it."""
    score, reasons = suspicion_score(observation)
    label = "Malicious" if score >= 0.5 else "Benign"
    confidence = round(0.5 + abs(score - 0.5), 3)
    rationale = "; ".join(reasons) if reasons else "no rule fired"
    return json.dumps({"label": label, "confidence": confidence, "rationale": rationale})
