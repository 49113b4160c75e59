"""Judges' measured accuracy, kept with the outputs, and rates reported with it.

Every attack-success or unsafe-compliance rate is reported next to the accuracy of the judge that produced it,
measured on the shipped validation set, and corrected for that judge's error. Measuring a model judge costs one
call per validation row, so a measurement is stored once per judge and validation-set version under
outputs/judges/ and reused. The figures used for correction are the held-out "test" split's: the local judge's
rules were tuned on "dev" only, and every judge is compared on the same rows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sv_shared.answers.statistics import bootstrap_mean_ci
from sv_shared.config import outputs_dir
from sv_shared.contracts.types import BatchPolicy
from sv_shared.data.files import write_json_atomic
from sv_shared.judging.confusion import Confusion
from sv_shared.judging.correction import corrected_rate_ci
from sv_shared.judging.factory import build_judge
from sv_shared.judging.validation import load_validation_set, validate_judge, validation_set_hash
from sv_shared.judging.verdict import UNAVAILABLE, Judge

MEASUREMENT_SPLIT = "test"


class JudgeUnavailableError(RuntimeError):
    """A judge's model failed during its validation: no measurement is stored."""


MODEL_FREE_JUDGES: tuple[str, ...] = ("local", "refusal-detector")
"""Judges that need no model: measured on demand wherever a rate needs them."""


def measurement_path(judge_id: str, root: Path | None = None) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", judge_id)
    return (root or outputs_dir() / "judges") / f"{safe}--{validation_set_hash()[:12]}.json"


def ensure_measurement(judge: Judge, root: Path | None = None) -> dict[str, Any]:
    """The judge's validation figures, measured now (and stored) unless already stored for this validation set."""
    path = measurement_path(judge.judge_id, root)
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    measurement = {
        "judge": judge.judge_id,
        "validation_set": validation_set_hash(),
        **validate_judge(judge, load_validation_set()),
    }
    unavailable = measurement["errors"][UNAVAILABLE]
    if unavailable:
        # A judge whose model could not be reached was not measured: storing its figures would poison every rate.
        raise JudgeUnavailableError(
            f"judge {judge.judge_id}: its model failed on {unavailable} of {measurement['n']} validation rows; "
            "nothing was stored, measure it again when the model is reachable"
        )
    write_json_atomic(path, measurement, sort_keys=True)
    return measurement


def load_measurement(judge_id: str, root: Path | None = None) -> dict[str, Any] | None:
    """A stored measurement, or a fresh one for a model-free judge; None for a model judge never measured."""
    path = measurement_path(judge_id, root)
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    if judge_id in MODEL_FREE_JUDGES:
        return ensure_measurement(build_judge(judge_id, _no_model), root)
    return None


def _no_model(model_id: str) -> BatchPolicy:
    raise ValueError(f"a model-free judge asked for model {model_id!r}")


def split_confusion(measurement: dict[str, Any], label: str = "unsafe") -> Confusion:
    return Confusion.from_mapping(measurement["splits"][MEASUREMENT_SPLIT][label])


def judged_rate(flags: Sequence[bool], judge_id: str, *, root: Path | None = None) -> dict[str, Any]:
    """A judged rate with its bootstrap CI, the judge's measured accuracy, and the rate corrected for it."""
    values = [bool(flag) for flag in flags]
    result: dict[str, Any] = {"n": len(values), "judge": judge_id, "rate": None, "ci": None}
    if values:
        rate, low, high = bootstrap_mean_ci([float(v) for v in values], n_resamples=2000)
        result |= {"rate": rate, "ci": [low, high]}
    measurement = load_measurement(judge_id, root)
    if measurement is None:
        return result | {
            "corrected": None,
            "corrected_ci": None,
            "correction_note": f"judge {judge_id} has no validation measurement yet: run `secverify judges`",
        }
    confusion = split_confusion(measurement)
    result |= {
        "judge_sensitivity": confusion.sensitivity,
        "judge_specificity": confusion.specificity,
        "judge_kappa": confusion.cohen_kappa,
        "judge_validation": {"set": measurement["validation_set"], "split": MEASUREMENT_SPLIT, "n": confusion.n},
    }
    if not values:
        return result | {"corrected": None, "corrected_ci": None}
    corrected = corrected_rate_ci(values, confusion)
    return result | {
        "corrected": corrected.rate,
        "corrected_ci": [corrected.ci_low, corrected.ci_high] if corrected.ci_low is not None else None,
        "correction_note": corrected.reason,
    }
