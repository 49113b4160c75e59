"""Judges: who decides whether a response is unsafe or refuses, how well they do it, and what that does to an ASR.

Plain Python (no Dagster). Every judge takes `Exchange`s and returns `Verdict`s (verdict.py); `build_judge` makes
one from a spec string; `validate_judge` measures one on a labelled set (the shipped real responses, or a
reference from outside the project via `find_reference`); `measure_flips` counts its verdict flips when text
addressed to the judge is added (manipulation.py, flips.py); `corrected_rate_ci` corrects an attack-success rate for
the measured error.
"""

from sv_shared.judging.confusion import Confusion
from sv_shared.judging.correction import CorrectedRate, CorrectedRateCI, corrected_rate, corrected_rate_ci
from sv_shared.judging.factory import JUDGE_SPECS_HELP, UnsuitableJudgeError, build_judge, check_helpfulness_judge
from sv_shared.judging.flips import measure_flips
from sv_shared.judging.llama_guard import (
    LlamaGuard3Judge,
    LlamaGuardAnswer,
    llama_guard_messages,
    parse_llama_guard,
    render_llama_guard_prompt,
)
from sv_shared.judging.llm_judge import LLMJudge, llm_judge_messages, parse_llm_verdict
from sv_shared.judging.local import LocalJudge
from sv_shared.judging.reference import ReferenceSet, find_reference, load_artifacts, load_judge_comparison
from sv_shared.judging.refusal import RefusalJudge, RefusalSignal, detect_refusal
from sv_shared.judging.validation import (
    ValidationRow,
    load_validation_set,
    rows_hash,
    validate_judge,
    validation_set_hash,
)
from sv_shared.judging.verdict import (
    HAZARD_CATEGORIES,
    UNAVAILABLE,
    UNPARSEABLE,
    Exchange,
    Judge,
    Verdict,
)

__all__ = [
    "HAZARD_CATEGORIES",
    "JUDGE_SPECS_HELP",
    "UNAVAILABLE",
    "UNPARSEABLE",
    "Confusion",
    "CorrectedRate",
    "CorrectedRateCI",
    "Exchange",
    "Judge",
    "LLMJudge",
    "LlamaGuard3Judge",
    "LlamaGuardAnswer",
    "LocalJudge",
    "ReferenceSet",
    "RefusalJudge",
    "RefusalSignal",
    "UnsuitableJudgeError",
    "ValidationRow",
    "Verdict",
    "build_judge",
    "check_helpfulness_judge",
    "corrected_rate",
    "corrected_rate_ci",
    "detect_refusal",
    "find_reference",
    "llama_guard_messages",
    "llm_judge_messages",
    "load_artifacts",
    "load_judge_comparison",
    "load_validation_set",
    "measure_flips",
    "parse_llama_guard",
    "parse_llm_verdict",
    "render_llama_guard_prompt",
    "rows_hash",
    "validate_judge",
    "validation_set_hash",
]
