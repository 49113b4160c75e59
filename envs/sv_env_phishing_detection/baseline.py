"""The E4 rules baseline (registry id `phish-rules`): the detectors themselves, answering as a classifier.

It reads the observation (the raw email, as a model would), labels Phishing when the detectors' suspicion reaches
PHISHING_THRESHOLD, takes its confidence from the distance to that threshold, and quotes one anchor of every
indicator it found. It answers through the same JSON schema and is scored by the same verifier; its evidence
components are 1 by construction, so its informative numbers are the detection and calibration metrics.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sv_env_phishing_detection.detectors import analyze

PHISHING_THRESHOLD = 0.5


def rules_answer(observation: Mapping[str, Any]) -> str:
    analysis = analyze(observation["raw_email"])
    score = analysis.suspicion
    label = "Phishing" if score >= PHISHING_THRESHOLD else "Legitimate"
    evidence = [{"type": kind, "quote": anchors[0]} for kind, anchors in analysis.indicators.items()]
    return json.dumps(
        {"label": label, "confidence": round(0.5 + abs(score - PHISHING_THRESHOLD), 3), "evidence": evidence},
        ensure_ascii=False,
    )
