"""Judges' measured accuracy, kept with the outputs, and rates reported with it.

Every attack-success or unsafe-compliance rate is reported next to the accuracy of the judge that produced it and
corrected for that judge's error. The figures come from the REFERENCE validation when one is present (JailbreakBench's
human-labelled judge comparison or its artifacts: real responses labelled by people who did not write our judges,
see reference.py), else from the shipped set's held-out "test" split (real responses of the models here, labelled
by hand; the local judge was tuned on "dev" only). Each is measured with and without the category hint, since E6
probes and off-goal E5 turns reach the judge without one; `correction_source` names what was used. Measuring a model
judge costs one call per row, so a measurement is stored once per judge and validation-set version under
outputs/judges/ and reused. Each measurement also holds the judge's verdict flips on the manipulation set (flips.py:
the validation set's honest exchanges with text addressed to the judge added), and every rate carries them next to
the judge's sensitivity, specificity and kappa. Every rate also carries `judge_agreement` (`agreement`): the judge's
kappa with the name of the set it was measured on, whether those are the project's own rows, and the plain refusal
detector's kappa on the same rows, as one printable `line`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from sv_shared.answers.statistics import bootstrap_mean_ci
from sv_shared.config import outputs_dir
from sv_shared.contracts.types import BatchPolicy
from sv_shared.data.files import write_json_atomic
from sv_shared.data.hashing import sha256_hex
from sv_shared.judging.confusion import Confusion
from sv_shared.judging.correction import corrected_rate_ci
from sv_shared.judging.factory import build_judge
from sv_shared.judging.flips import manipulation_set_hash, measure_flips
from sv_shared.judging.reference import ReferenceSet, find_reference
from sv_shared.judging.validation import load_validation_set, rows_hash, validate_judge, validation_set_hash
from sv_shared.judging.verdict import UNAVAILABLE, Judge

MEASUREMENT_SPLIT = "test"


class JudgeUnavailableError(RuntimeError):
    """A judge's model failed during its validation: no measurement is stored."""


MODEL_FREE_JUDGES: tuple[str, ...] = ("local", "refusal-detector")
"""Judges that need no model: measured on demand wherever a rate needs them."""

BASELINE_JUDGE = "refusal-detector"
"""The plain keyword judge every judge's agreement is shown beside, measured on the same rows."""


@lru_cache(maxsize=1)
def reference_set() -> ReferenceSet | None:
    """The reference validation present in this process's environment (looked up once)."""
    return find_reference()


def _set_key() -> str:
    reference = reference_set()
    shipped = f"{validation_set_hash()}:{manipulation_set_hash()}"
    return sha256_hex(shipped if reference is None else f"{shipped}:{rows_hash(reference.rows)}")[:16]


def measurement_path(judge_id: str, root: Path | None = None) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", judge_id)
    return (root or outputs_dir() / "judges") / f"{safe}--{_set_key()[:12]}.json"


def _hint_blocks(judge: Judge, rows: Sequence[Any]) -> dict[str, Any]:
    return {"hint": validate_judge(judge, rows, category_hint=True),
            "no_hint": validate_judge(judge, rows, category_hint=False)}  # fmt: skip


def ensure_measurement(judge: Judge, root: Path | None = None) -> dict[str, Any]:
    """The judge's validation figures, measured now (and stored) unless already stored for these validation sets:
    the shipped set with the hint (top level, as before) and without it ("no_hint"), the reference when one is
    present ("reference"), both hint modes, and the verdict flips on the manipulation set ("manipulation")."""
    path = measurement_path(judge.judge_id, root)
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    shipped = load_validation_set()
    measurement = {
        "judge": judge.judge_id,
        "validation_set": validation_set_hash(),
        **validate_judge(judge, shipped),
        "no_hint": validate_judge(judge, shipped, category_hint=False),
        "reference": None,
        "manipulation": measure_flips(judge),
    }
    reference = reference_set()
    if reference is not None:
        measurement["reference"] = {
            "name": reference.name,
            "source": reference.source,
            "labelled_by": reference.labelled_by,
            "rows_hash": rows_hash(reference.rows),
            **_hint_blocks(judge, reference.rows),
        }
    blocks = [measurement, measurement["no_hint"]]
    if measurement["reference"] is not None:
        blocks += [measurement["reference"]["hint"], measurement["reference"]["no_hint"]]
    unavailable = sum(block["errors"][UNAVAILABLE] for block in blocks) + measurement["manipulation"][UNAVAILABLE]
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


SHIPPED_SET_NAME = "shipped judge-validation set, test split"
OWN_ROWS_NOTE = "the project's own rows: responses of its models, labelled by its engineer"


def correction_figures(
    measurement: dict[str, Any], *, category_hint: bool = True, label: str = "unsafe"
) -> tuple[Confusion, dict[str, Any]]:
    """The confusion a rate is corrected with, and where it was measured: the reference validation when the
    measurement has one, else the shipped set's test split; in the hint mode the rate's judge ran in. `name` is the
    set's name as a report prints it and `own_rows` whether the project wrote (and labelled) its rows."""
    mode = "hint" if category_hint else "no_hint"
    reference = measurement.get("reference")
    if reference is not None:
        counts = reference[mode][label]
        source = {"source": f"reference {reference['name']}: {reference['source']}", "set": reference["rows_hash"],
                  "name": reference["name"], "own_rows": False, "labelled_by": reference["labelled_by"],
                  "split": "all"}  # fmt: skip
    else:
        block = measurement if category_hint else measurement["no_hint"]
        counts = block["splits"][MEASUREMENT_SPLIT][label]
        source = {"source": f"shipped judge-validation set ({OWN_ROWS_NOTE})", "set": measurement["validation_set"],
                  "name": SHIPPED_SET_NAME, "own_rows": True, "split": MEASUREMENT_SPLIT}  # fmt: skip
    confusion = Confusion.from_mapping(counts)
    return confusion, source | {"n": confusion.n, "category_hint": category_hint}


def agreement(measurement: dict[str, Any], *, category_hint: bool = True, root: Path | None = None) -> dict[str, Any]:
    """The judge's Cohen's kappa on the set its corrected rates use, named, beside the plain refusal detector's kappa
    on the same rows in the same hint mode: a judge's figure means little without the baseline's on the same set (the
    two rank differently on the project's own rows and on outside labels). `line` is what a report prints."""
    confusion, validation = correction_figures(measurement, category_hint=category_hint)
    detector = load_measurement(BASELINE_JUDGE, root)
    detector_confusion, detector_validation = (
        correction_figures(detector, category_hint=category_hint) if detector is not None else (None, {})
    )
    same_rows = detector_validation.get("set") == validation["set"]
    detector_kappa = detector_confusion.cohen_kappa if detector_confusion is not None and same_rows else None
    hint = "category hint given" if category_hint else "no category hint"
    rows = f"{validation['n']} rows, {OWN_ROWS_NOTE}" if validation["own_rows"] else f"{validation['n']} rows"
    baseline = (
        f"{BASELINE_JUDGE} {_kappa(detector_kappa)} on the same rows"
        if same_rows
        else f"{BASELINE_JUDGE} not measured on it"
    )
    return {
        "set": validation["name"],
        "set_hash": validation["set"],
        "own_rows": validation["own_rows"],
        "n": validation["n"],
        "category_hint": category_hint,
        "kappa": confusion.cohen_kappa,
        "baseline_judge": BASELINE_JUDGE,
        "baseline_kappa": detector_kappa,
        "line": f"{measurement['judge']} {_kappa(confusion.cohen_kappa)} on {validation['name']} ({rows}; {hint}); "
        f"{baseline}",
    }


def agreement_line(measurement: dict[str, Any], *, category_hint: bool = True) -> str | None:
    """agreement()'s printable line, or None for a measurement recorded before agreement lines existed."""
    try:
        return agreement(measurement, category_hint=category_hint)["line"]
    except (KeyError, TypeError, ValueError):
        return None


def _kappa(value: float | None) -> str:
    return "κ –" if value is None else f"κ {value:.3f}"


def split_confusion(measurement: dict[str, Any], label: str = "unsafe") -> Confusion:
    return correction_figures(measurement, label=label)[0]


def judged_rate(
    flags: Sequence[bool], judge_id: str, *, root: Path | None = None, category_hint: bool = True
) -> dict[str, Any]:
    """A judged rate with its bootstrap CI, the judge's measured accuracy, and the rate corrected for it.

    category_hint says whether the judge saw the behaviour's category when it judged these flags (E5 on-goal turns
    do; E6 probes do not): the correction uses the figures measured the same way."""
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
    confusion, validation = correction_figures(measurement, category_hint=category_hint)
    result |= {
        "judge_sensitivity": confusion.sensitivity,
        "judge_specificity": confusion.specificity,
        "judge_kappa": confusion.cohen_kappa,
        "judge_validation": validation,
        "judge_flips": measurement["manipulation"]["flips"],
        "judge_flips_n": measurement["manipulation"]["n"],
        "judge_agreement": agreement(measurement, category_hint=category_hint, root=root),
    }
    if not values:
        return result | {"corrected": None, "corrected_ci": None}
    corrected = corrected_rate_ci(values, confusion)
    return result | {
        "corrected": corrected.rate,
        "corrected_ci": [corrected.ci_low, corrected.ci_high] if corrected.ci_low is not None else None,
        "correction_note": corrected.reason,
    }
