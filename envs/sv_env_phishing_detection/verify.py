"""E4 verifier: parse the evidence-carrying answer, score it against the label and the detectors, aggregate a run.

Reward components (each in [0, 1]; the reward is the weighted mean of the gains minus the asymmetric-cost penalty,
weight × (1 − component): sv_shared.answers.rewards.RewardWeights, weights in configs/envs/e4.yaml):

- accuracy, calibration, format: the shared detection components (sv_shared.answers.classification.DetectionTask).
- asymmetric_cost: 1 − cost / cost of a miss. A missed phish costs most, a false alarm less. An abstention costs
  `costs.abstain` only where the evidence is genuinely mixed (detectors.is_mixed: the detectors' suspicion lies in
  `abstention.mixed_band`); anywhere else it is costed as the wrong answer it avoided (a miss on a phish, a false
  alarm on a legitimate email), so abstaining pays only where a careful analyst would hesitate too.
- evidence_precision: grounded entries that point at an indicator the detectors found for their type (the quote
  contains one of its anchors, or lies inside one), counted once per distinct (type, quote), over every entry the
  answer lists: a repeated entry supports nothing new, so padding the list with copies lowers precision.
- evidence_recall: share of the indicator types the detectors found that some such entry covers.
- grounding: share of entries whose quote occurs in the email (normalized: case, whitespace and invisible
  characters ignored; 4 to 300 characters). An ungrounded entry scores nothing anywhere.

An empty evidence list scores 1 on all three where the detectors found nothing (a clean email, rightly left
uncited) and 0 on all three where they found something: saying nothing must never beat partly right evidence.
A completion that fails to parse scores 0 on every component, so it earns the least reward of all (−0.7).
"""

from __future__ import annotations

import json
import re
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sv_env_phishing_detection.config import Config
from sv_env_phishing_detection.detectors import Analysis, analyze, is_mixed, normalize
from sv_env_phishing_detection.prompts import render_email
from sv_env_phishing_detection.schema import ANSWER_LABELS, EVIDENCE_TYPES
from sv_shared.answers.classification import ABSTAIN, DETECTION_REPORT_COLUMNS, DetectionTask
from sv_shared.answers.costs import CostTable
from sv_shared.answers.metrics import mean_or_none
from sv_shared.answers.parsing import JsonClassificationParser, extract_json_object, parse_confidence
from sv_shared.answers.rewards import RewardWeights, configured_reward, reward_asymmetric_cost
from sv_shared.contracts import CompletionVerifier, Item, ParseResult, ScoredSample

ID_COLUMN = "email_id"
ANALYSIS_CACHE_SIZE = 4_096
"""Detector results kept per verifier, keyed by the raw message: a run scores each item once per model, a sweep over
several completions of the same item (GRPO groups, re-scoring) parses it once."""
MAX_EVIDENCE = 32
"""More entries than this is not an answer but a spray of guesses: a format failure."""
EVIDENCE_COMPONENTS: tuple[str, ...] = ("evidence_precision", "evidence_recall", "grounding")

_LABELS = JsonClassificationParser(labels=ANSWER_LABELS)

REFERENCE_CONFIDENCE = 0.9
"""The confidence of the reference answers SFT teaches. Not 1.0: the gold label is certain, but a policy that learns to
copy these answers will not always be right, and calibration is a Brier score (a wrong answer at 1.0 loses all of
it). 0.9 costs 0.01 calibration on a right answer and keeps 0.19 on a wrong one."""


def _as_shown(anchor: str, shown: str) -> str:
    """The span of the email as the model sees it (`shown`, the rendered prompt text) whose normalized form is the
    detector's anchor, in its original case and spacing; the anchor itself when no such span is found (it is
    grounded either way: grounding compares normalized text)."""
    words = anchor.split()
    if not words:
        return anchor
    pattern = re.compile(r"\s+".join(re.escape(word) for word in words), re.IGNORECASE)
    for match in pattern.finditer(shown):
        if normalize(match.group()) == anchor:
            return match.group()
    return anchor


class EvidenceError(StrEnum):
    """Why the evidence list of an otherwise valid answer could not be parsed (recorded like FormatError)."""

    NOT_LIST = "evidence_not_list"
    TOO_MANY = "too_much_evidence"
    ITEM_NOT_OBJECT = "evidence_item_not_object"
    TYPE_NOT_STRING = "evidence_type_not_string"
    UNKNOWN_TYPE = "unknown_evidence_type"
    QUOTE_NOT_STRING = "evidence_quote_not_string"


def canonical_type(value: str) -> str | None:
    """A vocabulary type from a loosely written one ("Lookalike-Domain" -> lookalike_domain), else None."""
    key = "_".join(value.strip().casefold().replace("-", " ").split())
    return key if key in EVIDENCE_TYPES else None


def _evidence(value: Any) -> tuple[list[dict[str, str]] | None, EvidenceError | None]:
    if value is None:
        return [], None
    if not isinstance(value, list):
        return None, EvidenceError.NOT_LIST
    if len(value) > MAX_EVIDENCE:
        return None, EvidenceError.TOO_MANY
    entries = []
    for entry in value:
        if not isinstance(entry, dict):
            return None, EvidenceError.ITEM_NOT_OBJECT
        kind, quote = entry.get("type"), entry.get("quote")
        if not isinstance(kind, str):
            return None, EvidenceError.TYPE_NOT_STRING
        canonical = canonical_type(kind)
        if canonical is None:
            return None, EvidenceError.UNKNOWN_TYPE
        if not isinstance(quote, str):
            return None, EvidenceError.QUOTE_NOT_STRING
        entries.append({"type": canonical, "quote": quote})
    return entries, None


def parse_answer(completion: str) -> ParseResult:
    """`{"label", "confidence", "evidence": [{"type", "quote"}]}`; a missing or null evidence list means none."""
    obj, error = extract_json_object(completion)
    if obj is None:
        return ParseResult(None, error)
    label, error = _LABELS.canonical_label(obj.get("label"))
    if error:
        return ParseResult(None, error)
    confidence, error = parse_confidence(obj.get("confidence"))
    if error:
        return ParseResult(None, error)
    evidence, evidence_error = _evidence(obj.get("evidence"))
    if evidence_error:
        return ParseResult(None, evidence_error)
    return ParseResult({"label": label, "confidence": confidence, "evidence": evidence})


@dataclass(frozen=True)
class EvidenceScore:
    """Evidence components of one answer and the counts behind them."""

    precision: float
    recall: float
    grounding: float
    n_entries: int
    n_grounded: int
    n_supported: int
    covered: tuple[str, ...]


def score_evidence(analysis: Analysis, evidence: Sequence[Mapping[str, str]]) -> EvidenceScore:
    """Precision, recall and grounding of distinct (type, normalized quote) entries against the detectors; precision
    divides by every listed entry, copies included."""
    entries = list(dict.fromkeys((entry["type"], normalize(entry["quote"])) for entry in evidence))
    grounded = [analysis.grounded(quote) for _, quote in entries]
    supported = [
        is_grounded and analysis.supports(kind, quote)
        for (kind, quote), is_grounded in zip(entries, grounded, strict=True)
    ]
    covered = tuple(sorted({kind for (kind, _), ok in zip(entries, supported, strict=True) if ok}))
    detected = analysis.types
    n = len(entries)
    empty = 0.0 if detected else 1.0
    return EvidenceScore(
        precision=sum(supported) / len(evidence) if n else empty,
        recall=len(set(covered) & detected) / len(detected) if detected else 1.0,
        grounding=sum(grounded) / n if n else empty,
        n_entries=n,
        n_grounded=sum(grounded),
        n_supported=sum(supported),
        covered=covered,
    )


@dataclass(frozen=True)
class PhishingTask:
    """The shared detection task plus E4's mixed-evidence band for abstentions."""

    detection: DetectionTask
    mixed_band: tuple[float, float]

    @property
    def weights(self) -> RewardWeights:
        return self.detection.weights

    @property
    def costs(self) -> CostTable:
        return self.detection.costs


def phishing_task(config: Config) -> PhishingTask:
    low, high = config.abstention.mixed_band
    return PhishingTask(
        detection=DetectionTask(
            positive_label="Phishing",
            negative_label="Legitimate",
            costs=CostTable(**config.costs.as_dict()),
            weights=configured_reward(config),
        ),
        mixed_band=(low, high),
    )


def components(
    task: PhishingTask, truth_label: str, parsed: ParseResult, analysis: Analysis
) -> tuple[dict[str, float], EvidenceScore | None]:
    """Every reward component of one answer (see the module docstring) and its evidence counts; a parse failure
    zeroes every component and has no evidence score."""
    values = task.detection.components(truth_label, parsed)
    if not parsed.ok or parsed.output is None:
        return values | dict.fromkeys(EVIDENCE_COMPONENTS, 0.0), None
    if parsed.output["label"] == ABSTAIN and not is_mixed(analysis.suspicion, task.mixed_band):
        cost = task.costs.cost(truth_label == "Phishing", None, abstained=False)
        values["asymmetric_cost"] = reward_asymmetric_cost(cost, task.costs)
    evidence = score_evidence(analysis, parsed.output["evidence"])
    values.update(evidence_precision=evidence.precision, evidence_recall=evidence.recall, grounding=evidence.grounding)
    return values, evidence


def score_completion(
    task: PhishingTask, item_id: str, truth_label: str, completion: str, analysis: Analysis
) -> ScoredSample:
    parsed = parse_answer(completion)
    values, evidence = components(task, truth_label, parsed, analysis)
    details: dict[str, Any] = {
        "mixed": is_mixed(analysis.suspicion, task.mixed_band),
        "suspicion": analysis.suspicion,
        "indicators": sorted(analysis.types),
    }
    if evidence is not None:
        details.update(
            evidence_entries=evidence.n_entries,
            evidence_grounded=evidence.n_grounded,
            evidence_supported=evidence.n_supported,
            covered=list(evidence.covered),
        )
    return ScoredSample(
        item_id=item_id,
        reward=task.weights.combine(values),
        components=values,
        parsed=parsed.output,
        error=parsed.error,
        details=details,
    )


def _ratio(numerator: int, denominator: int) -> float | None:
    return None if denominator == 0 else numerator / denominator


def aggregate(
    task: PhishingTask, records: Sequence[Mapping[str, Any]], items: Mapping[str, Mapping[str, Any]], *, seed: int
) -> dict[str, Any]:
    """The shared detection metrics plus evidence quality, grounding, abstention on mixed vs clear evidence, recall
    per indicator type and accuracy per language. cost_weighted_error follows the reward: an abstention off the
    mixed band costs the wrong answer it avoided."""
    truths = {item_id: item["label"] for item_id, item in items.items()}
    metrics = task.detection.aggregate(records, truths, seed=seed)
    costs = []
    for record in records:
        outcome = task.detection.outcome(truths[record["id"]], record.get("parsed"))
        clear = not (record.get("details") or {}).get("mixed")
        abstained = outcome.abstained and not clear
        costs.append(task.costs.cost(outcome.truth, outcome.prediction, abstained=abstained))
    metrics["cost_weighted_error"] = mean_or_none(costs)
    for name in EVIDENCE_COMPONENTS:
        metrics[name] = mean_or_none(float(record["components"].get(name, 0.0)) for record in records)
    details = [record.get("details") or {} for record in records]
    entries = sum(int(detail.get("evidence_entries", 0)) for detail in details)
    metrics["grounding_rate"] = _ratio(sum(int(detail.get("evidence_grounded", 0)) for detail in details), entries)
    metrics["evidence_per_answer"] = mean_or_none(
        float(detail["evidence_entries"]) for detail in details if "evidence_entries" in detail
    )
    abstained = [bool(record.get("parsed")) and record["parsed"]["label"] == ABSTAIN for record in records]
    mixed = [bool(detail.get("mixed")) for detail in details]
    n_mixed = sum(mixed)
    metrics["n_mixed"] = n_mixed
    metrics["abstention_rate_mixed"] = _ratio(sum(a and m for a, m in zip(abstained, mixed, strict=True)), n_mixed)
    metrics["abstention_rate_clear"] = _ratio(
        sum(a and not m for a, m in zip(abstained, mixed, strict=True)), len(records) - n_mixed
    )
    detected: Counter[str] = Counter()
    covered: Counter[str] = Counter()
    for detail in details:
        detected.update(detail.get("indicators", []))
        covered.update(set(detail.get("covered", [])) & set(detail.get("indicators", [])))
    metrics["evidence_recall_by_type"] = {kind: covered[kind] / detected[kind] for kind in sorted(detected)}
    by_language: dict[str, list[bool]] = defaultdict(list)
    for record in records:
        item = items[record["id"]]
        answer = (record.get("parsed") or {}).get("label")
        by_language[str(item.get("language", "und"))].append(answer == item["label"])
    metrics["accuracy_by_language"] = {
        language: sum(correct) / len(correct) for language, correct in sorted(by_language.items())
    }
    return metrics


class PhishingVerifier(CompletionVerifier):
    """The components above for a {"label", "confidence", "evidence"} answer, against the label and the detectors'
    analysis of the raw email (its tool: recomputed, never read from stored columns, and cached)."""

    version = "e4-verifier-6"
    answers_are_labels = True
    reference_confidence: float = REFERENCE_CONFIDENCE

    def __init__(self, config: Config) -> None:
        self.task = phishing_task(config)
        self.reward_floor = self.task.weights.floor
        self.bootstrap_seed = config.eval.seed
        self._analyses: OrderedDict[str, Analysis] = OrderedDict()  # raw_email -> analysis

    def analysis(self, item: Item) -> Analysis:
        """The detectors' view of an item, recomputed from its raw message (never trusted from stored columns);
        cached by the message itself, so an item whose id was not recomputed after an edit is not misread."""
        key = item["raw_email"]
        cached = self._analyses.get(key)
        if cached is None:
            cached = analyze(item["raw_email"])
            self._analyses[key] = cached
            if len(self._analyses) > ANALYSIS_CACHE_SIZE:
                self._analyses.popitem(last=False)
        else:
            self._analyses.move_to_end(key)
        return cached

    def parse(self, completion: str) -> ParseResult:
        return parse_answer(completion)

    def reference_answer(self, item: Item) -> str | None:
        """The item's label at REFERENCE_CONFIDENCE (never "Abstain": every item has a label), quoting one anchor of
        every indicator type the detectors find in the email, as the rendered email shows it. The evidence does not
        depend on the label: a legitimate email can carry a warning sign, and the prompt asks for every warning sign
        that can be quoted (an empty list where the detectors find none)."""
        label = item.get("label")
        if label not in ("Phishing", "Legitimate") or not isinstance(item.get("raw_email"), str):
            return None
        analysis = self.analysis(item)
        shown = render_email(item["raw_email"])
        evidence = [
            {"type": kind, "quote": _as_shown(anchors[0], shown)}
            for kind, anchors in analysis.indicators.items()
            if anchors
        ]
        return json.dumps(
            {"label": label, "confidence": self.reference_confidence, "evidence": evidence}, ensure_ascii=False
        )

    def score(self, item: Item, completion: str) -> ScoredSample:
        return score_completion(self.task, item[ID_COLUMN], item["label"], completion, self.analysis(item))

    def aggregate(self, records: Sequence[Mapping[str, Any]], items: Mapping[str, Item]) -> dict[str, Any]:
        return aggregate(self.task, records, items, seed=self.bootstrap_seed)

    def report_columns(self) -> list[tuple[str, str]]:
        return [
            *DETECTION_REPORT_COLUMNS,
            ("evidence P", "evidence_precision"),
            ("evidence R", "evidence_recall"),
            ("grounding", "grounding_rate"),
        ]
