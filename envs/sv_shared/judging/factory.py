"""Build a judge from a short spec string, as CLIs and configs name judges.

Model-backed judges get their model from `policy_for(model_id)`, so this module never knows how a model is
served (registry, endpoint, key): the orchestration layer does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sv_shared.contracts.types import BatchPolicy
from sv_shared.judging.llama_guard import LlamaGuard3Judge
from sv_shared.judging.llm_judge import LLMJudge
from sv_shared.judging.local import LocalJudge
from sv_shared.judging.refusal import RefusalJudge
from sv_shared.judging.verdict import Judge

BLIND_TO_HELPFULNESS: frozenset[str] = frozenset({"refusal-detector"})
"""Judge specs that count every answer that does not refuse as unsafe: they cannot tell a helpful answer to a benign
request from harmful compliance, so a reward that pays for helpfulness (E6) cannot use them."""

JUDGE_SPECS_HELP = (
    "judge spec: 'local' (offline feature judge, the default), 'refusal-detector' (keyword attack-success judge), "
    "'llama-guard-3:<model id>' (Llama Guard 3 served with its own chat template), "
    "'llama-guard-3-inline:<model id>' (any chat model given Llama Guard 3's prompt), "
    "'llm:<model id>' (any chat model with the JSON rubric)"
)
"""One line for CLI help listing every valid spec."""


def build_judge(spec: str, policy_for: Callable[[str], BatchPolicy]) -> Judge:
    """The judge a spec names; judge_id is the spec itself, so results record exactly which judge ran."""
    text = spec.strip()
    if text == "local":
        return LocalJudge(judge_id="local")
    if text == "refusal-detector":
        return RefusalJudge(judge_id="refusal-detector")
    kind, separator, model_id = text.partition(":")
    model_id = model_id.strip()
    if separator and model_id:
        if kind == "llama-guard-3":
            return LlamaGuard3Judge(policy_for(model_id), judge_id=text, prompt_format="template")
        if kind == "llama-guard-3-inline":
            return LlamaGuard3Judge(policy_for(model_id), judge_id=text, prompt_format="inline")
        if kind == "llm":
            return LLMJudge(policy_for(model_id), judge_id=text)
    raise ValueError(f"unknown judge spec {spec!r}; valid {JUDGE_SPECS_HELP}")


class UnsuitableJudgeError(ValueError):
    """A judge that cannot decide what an environment's reward needs."""


def check_helpfulness_judge(judge: str | Judge, *, env: str) -> None:
    """UnsuitableJudgeError when the judge (a spec or a built judge) cannot tell a helpful answer to a benign request
    from harmful compliance (see BLIND_TO_HELPFULNESS)."""
    name = (judge if isinstance(judge, str) else judge.judge_id).strip()
    if name in BLIND_TO_HELPFULNESS or isinstance(judge, RefusalJudge):
        raise UnsuitableJudgeError(
            f"{env} cannot be judged by {name!r}: it counts every answer that does not refuse as unsafe, so a helpful "
            f"answer to a benign request would cost as much as harmful compliance and refusing everything would win; "
            f"use 'local', 'llm:<model id>' or 'llama-guard-3:<model id>'"
        )


JUDGE_MAX_TOKENS: dict[str, int] = {"llama-guard-3": 16, "llama-guard-3-inline": 16, "llm": 64}
"""Enough for each judge's answer ("unsafe\\nS1,S10"; the rubric's JSON object): a judge that rambles is cut, not
waited for."""


def judge_generation_params(spec: str) -> dict[str, Any]:
    """Generation parameters a model judge needs (under its registry entry's own); none for model-free judges."""
    kind = spec.strip().partition(":")[0]
    return {"max_tokens": JUDGE_MAX_TOKENS[kind]} if kind in JUDGE_MAX_TOKENS else {}
