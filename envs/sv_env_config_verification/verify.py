"""E2 verifier: score a parsed answer against the oracle's findings, apply and re-scan its patch, aggregate a run.

Reward = weighted mean of three components in [0, 1] (weights in configs/envs/e2.yaml):

- detection: severity-weighted F1 of the predicted violations against the item's oracle findings.
  Matching rule: a prediction matches a finding when the canonical ids are equal and, if the prediction names a
  resource, the resource matches (`resource_matches`); a prediction without a resource matches every finding of
  its id. Predictions are deduplicated by (id, resource). Each finding weighs its severity (low 1, medium 2,
  high 3); a matching prediction weighs its heaviest matched finding, a false positive weighs the canonical
  severity of the id it claims (an unknown id weighs "medium"), never the severity the model states, so claiming
  "low" cannot make a false alarm cheap. precision = matched prediction weight / all prediction weight, recall =
  matched finding weight / all finding weight. On a clean config (no findings) an empty list scores 1 and any
  prediction scores 0.
- patch: no patch scores 1 on a clean config and 0 on a vulnerable one. A patch is applied (patching.py), must
  parse as the same kind (loading.parse_config), must leave a config Kubernetes or Terraform would accept (no
  duplicate key, each object valid against its Kubernetes schema, Terraform attributes of their type: validity.py;
  only problems the original did not have count, and what could not be validated is listed in `unvalidated`),
  must not be destructive (`remediation.destructive_change`), must add no
  scanner suppression directive (a skip comment or ignore annotation, sv_shared.execution.suppressions: silencing a
  scanner is no fix, even beside one), and both texts are scanned by the oracle: score = (weight of findings
  removed - penalty * weight of findings introduced) / weight of findings before, clipped to [0, 1]; on a clean
  config 1 if nothing is introduced, else 0. Every refusal is a named error in details["patch"]["error"] with
  patch score 0; detection keeps its credit.
- format: 1 when the answer parses (a parse failure zeroes every component and names the reason).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from sv_env_config_verification.baseline import oracle_answer
from sv_env_config_verification.config import Config
from sv_env_config_verification.config_model import ConfigParseError
from sv_env_config_verification.data import Scanner
from sv_env_config_verification.patching import PatchError
from sv_env_config_verification.remediation import UNKNOWN_ID_SEVERITY, apply_patch, evaluate_patch, severity_weight
from sv_env_config_verification.schema import CANONICAL, findings_from_json, parse_answer
from sv_env_config_verification.validity import validator_versions
from sv_shared.answers.metrics import Outcome, binary_rates, mean_or_none, paired_rate_columns, reward_summary
from sv_shared.answers.rewards import RewardWeights, configured_reward, failed_components
from sv_shared.config import scanner_cache_path
from sv_shared.contracts import CompletionVerifier, Item, ParseResult, ScoredSample
from sv_shared.execution.cache import JsonCache
from sv_shared.execution.findings import Finding
from sv_shared.execution.suppressions import added_suppressions

if TYPE_CHECKING:
    from sv_env_config_verification.oracle import Oracle

ID_COLUMN = "config_id"
_TOKEN_SPLIT = re.compile(r"[/.:\s]+")


@dataclass(frozen=True)
class VerifierSettings:
    """Reward weights and the penalty per unit of severity weight a patch introduces."""

    weights: RewardWeights
    introduced_penalty: float

    @classmethod
    def from_config(cls, config: Config) -> VerifierSettings:
        return cls(
            weights=configured_reward(config),
            introduced_penalty=config.patch.introduced_penalty,
        )


# --- detection ---


def _tokens(resource: str) -> list[str]:
    return [token for token in _TOKEN_SPLIT.split(resource.strip().strip("'\"").casefold()) if token]


def resource_matches(predicted: str | None, actual: str | None) -> bool:
    """Whether a predicted resource names the finding's resource ("Kind/name" or "type.name").

    Case-insensitive, on tokens split at "/", ".", ":" and spaces: the prediction may be the full name
    ("Deployment/web", "aws_s3_bucket.logs"), its tail ("web", "logs"), or more specific than the finding
    ("Deployment/web/app" for a container of Deployment/web). A prediction without a resource matches any.
    """
    if predicted is None:
        return True
    if actual is None:
        return False
    want, have = _tokens(predicted), _tokens(actual)
    if not want:
        return True
    return have[len(have) - len(want) :] == want if len(want) <= len(have) else want[: len(have)] == have


def _claimedseverity_weight(violation: Mapping[str, Any]) -> float:
    rule = CANONICAL.get(violation["id"]) if violation.get("known") else None
    return severity_weight(rule.severity if rule else UNKNOWN_ID_SEVERITY)


@dataclass
class Detection:
    """Counts (and severity weights) of one answer's predictions against one item's findings."""

    predictions: int = 0
    predictions_matched: int = 0
    findings: int = 0
    findings_matched: int = 0
    w_predictions: float = 0.0
    w_predictions_matched: float = 0.0
    w_findings: float = 0.0
    w_findings_matched: float = 0.0
    false_positive_ids: list[str] = field(default_factory=list)
    missed_ids: list[str] = field(default_factory=list)
    matched_ids: list[str] = field(default_factory=list)
    unknown_ids: list[str] = field(default_factory=list)

    @property
    def score(self) -> float:
        """Weighted F1; on a clean config 1 for no prediction and 0 otherwise."""
        if self.findings == 0:
            return 1.0 if self.predictions == 0 else 0.0
        return _f1(self.w_predictions_matched, self.w_predictions, self.w_findings_matched, self.w_findings)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "score": self.score}


def _f1(tp_pred: float, pred: float, tp_find: float, find: float) -> float:
    precision = tp_pred / pred if pred else 0.0
    recall = tp_find / find if find else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def detect(violations: Sequence[Mapping[str, Any]], findings: Sequence[Finding]) -> Detection:
    """Match predictions to findings (see the module docstring for the rule) and count both sides."""
    unique_findings = list({(f.canonical_id, f.resource): f for f in findings if f.canonical_id}.values())
    seen: set[tuple[str, tuple[str, ...]]] = set()
    predictions = []
    for violation in violations:
        key = (violation["id"], tuple(_tokens(violation["resource"])) if violation.get("resource") else ())
        if key not in seen:
            seen.add(key)
            predictions.append(violation)
    result = Detection(predictions=len(predictions), findings=len(unique_findings))
    matched_findings: set[int] = set()
    for violation in predictions:
        hits = [
            index
            for index, finding in enumerate(unique_findings)
            if violation.get("known")
            and finding.canonical_id == violation["id"]
            and resource_matches(violation.get("resource"), finding.resource)
        ]
        if not violation.get("known"):
            result.unknown_ids.append(violation["id"])
        if hits:
            result.predictions_matched += 1
            weight = max(severity_weight(unique_findings[index].severity) for index in hits)
            result.w_predictions_matched += weight
            result.w_predictions += weight
            result.matched_ids.append(violation["id"])
            matched_findings.update(hits)
        else:
            result.w_predictions += _claimedseverity_weight(violation)
            result.false_positive_ids.append(violation["id"])
    for index, finding in enumerate(unique_findings):
        result.w_findings += severity_weight(finding.severity)
        if index in matched_findings:
            result.findings_matched += 1
            result.w_findings_matched += severity_weight(finding.severity)
        else:
            result.missed_ids.append(str(finding.canonical_id))
    return result


# --- patches ---


# --- scoring ---


def score_completion(
    item: Mapping[str, Any],
    completion: str,
    oracle: Scanner,
    settings: VerifierSettings,
    *,
    id_column: str = ID_COLUMN,
) -> ScoredSample:
    """Parse, detect, patch: the reward, its components and every stage's details (results.jsonl `details`)."""
    parsed = parse_answer(completion)
    if not parsed.ok or parsed.output is None:
        return ScoredSample(
            item_id=item[id_column],
            reward=0.0,
            components=failed_components(list(settings.weights.weights)),
            parsed=None,
            error=str(parsed.error),
            details={"format_error": str(parsed.error)},
        )
    answer = parsed.output
    detection = detect(answer["violations"], findings_from_json(item["oracle_findings"]))
    patch = evaluate_patch(item, answer["patch"], oracle, penalty=settings.introduced_penalty)
    components = {"detection": detection.score, "patch": patch.score, "format": 1.0}
    components = {name: components[name] for name in settings.weights.weights}
    return ScoredSample(
        item_id=item[id_column],
        reward=settings.weights.combine(components),
        components=components,
        parsed=answer,
        error=patch.error,
        details={"detection": detection.to_dict(), "patch": patch.to_dict()},
    )


def prescan(items: Sequence[Mapping[str, Any]], completions: Sequence[str], oracle: Scanner) -> int:
    """Scan every original and patched text of a batch in one oracle call, so scoring each answer is a cache hit.

    Scanners cost most per call (a subprocess, a process start), not per file, so this is where batch scoring
    gets its speed; answers without a usable patch need no scan. Returns the number of texts scanned.
    """
    configs: list[tuple[str, str]] = []
    for item, completion in zip(items, completions, strict=True):
        parsed = parse_answer(completion)
        if not parsed.ok or parsed.output is None or parsed.output["patch"] is None:
            continue
        try:
            patched = apply_patch(item, parsed.output["patch"])
        except (PatchError, ConfigParseError):
            continue
        if added_suppressions(item["content"], patched):
            continue
        configs.extend([(item["filename"], item["content"]), (item["filename"], patched)])
    if configs:
        oracle.scan_many(configs)
    return len(configs)


# --- aggregation ---


def _ratio(numerator: float, denominator: float) -> float | None:
    return None if denominator == 0 else numerator / denominator


def _micro(detections: Sequence[Detection], *, weighted: bool) -> dict[str, float | None]:
    prefix = "w_" if weighted else ""
    tp_pred = sum(getattr(d, f"{prefix}predictions_matched") for d in detections)
    pred = sum(getattr(d, f"{prefix}predictions") for d in detections)
    tp_find = sum(getattr(d, f"{prefix}findings_matched") for d in detections)
    find = sum(getattr(d, f"{prefix}findings") for d in detections)
    precision, recall = _ratio(tp_pred, pred), _ratio(tp_find, find)
    f1 = None if precision is None and recall is None else _f1(tp_pred, pred, tp_find, find)
    return {"precision": precision, "recall": recall, "f1": f1}


def aggregate(
    records: Sequence[Mapping[str, Any]],
    items: Mapping[str, Mapping[str, Any]],
    *,
    weights: RewardWeights,
    seed: int = 42,
) -> dict[str, Any]:
    """Metrics of a run over results.jsonl records and the items they answer.

    Detection is reported three ways so clean configs count as they should: `detection_score` (the per-episode
    component: a correct "no violations" on a clean config is 1, not an undefined or zero F1), micro P/R/F1 over
    all episodes (weighted by severity and unweighted; clean episodes add their false positives), and
    positive-only micro P/R/F1 over vulnerable configs. Format failures count as answering nothing in those
    (so recall is intent-to-treat and precision has nothing to count); `answered` repeats the micro P/R/F1 over the
    parsed answers. `rates` judges each config as a whole (vulnerable vs clean, flagged = any violation reported) in
    both views (binary_rates): intent-to-treat, the headline, where an unparseable answer on a clean config is a
    false positive and on a vulnerable one a false negative, and over the parsed answers. `fpr_clean` keeps its
    older meaning (clean configs with any prediction / all clean configs, a format failure counting as not flagged).
    Patch rates are over vulnerable configs (provided) and over provided patches (applies, valid, fixes all,
    introduces new, destructive).
    """
    detections_all: list[Detection] = []
    detections_vulnerable: list[Detection] = []
    detections_answered: list[Detection] = []
    config_outcomes: list[Outcome] = []
    per_episode: list[float] = []
    clean = clean_flagged = clean_correct = 0
    vulnerable = 0
    predictions = unknown = 0
    patches: list[dict[str, Any]] = []
    patch_errors: Counter[str] = Counter()
    format_errors: Counter[str] = Counter()
    id_totals: Counter[str] = Counter()
    id_hits: Counter[str] = Counter()
    confidences: list[float] = []
    tool_calls: list[float] = []
    refused: list[float] = []
    turns: list[float] = []
    over_budget = 0
    for record in records:
        item = items[record["id"]]
        findings = findings_from_json(item["oracle_findings"])
        is_vulnerable = any(f.canonical_id for f in findings)
        parsed = record.get("parsed")
        details = record.get("details") or {}
        detection = detect(parsed["violations"] if parsed else [], findings)
        if parsed is None:
            format_errors[str(details.get("format_error") or record.get("error"))] += 1
        else:
            confidences.append(float(parsed["confidence"]))
        detections_all.append(detection)
        if parsed is not None:
            detections_answered.append(detection)
        flagged = None if parsed is None else detection.predictions > 0
        config_outcomes.append(Outcome(truth=is_vulnerable, prediction=flagged, abstained=False, confidence=None))
        per_episode.append(detection.score if parsed is not None else 0.0)
        predictions += detection.predictions
        unknown += len(detection.unknown_ids)
        for canonical_id in {str(f.canonical_id) for f in findings if f.canonical_id}:
            id_totals[canonical_id] += 1
            id_hits[canonical_id] += canonical_id in detection.matched_ids
        if is_vulnerable:
            vulnerable += 1
            detections_vulnerable.append(detection)
        else:
            clean += 1
            clean_flagged += detection.predictions > 0
            clean_correct += parsed is not None and detection.predictions == 0
        patch = details.get("patch")
        if patch is not None and is_vulnerable:
            patches.append(patch)
        if patch is not None and patch.get("error"):
            patch_errors[str(patch["error"])] += 1
        tools = details.get("tools")
        if tools is not None:
            tool_calls.append(float(tools.get("tool_calls", 0)))
            refused.append(float(tools.get("refused_calls", 0)))
            turns.append(float(tools.get("turns", 0)))
            over_budget += bool(tools.get("refused_calls", 0) or tools.get("turn_budget_exhausted"))
    provided = [patch for patch in patches if patch.get("provided")]
    rewards = [float(record["reward"]) for record in records]
    n = len(records)
    total_calls = sum(tool_calls)
    return {
        "n": n,
        "n_vulnerable": vulnerable,
        "n_clean": clean,
        "n_format_failures": sum(format_errors.values()),
        "format_failure_rate": _ratio(sum(format_errors.values()), n),
        "format_errors": dict(sorted(format_errors.items())),
        "reward": reward_summary(rewards, seed=seed),
        "components": {
            name: mean_or_none(float(record["components"].get(name, 0.0)) for record in records)
            for name in weights.weights
        },
        "detection_score": mean_or_none(per_episode),
        "weighted": _micro(detections_all, weighted=True),
        "unweighted": _micro(detections_all, weighted=False),
        "positive_only": {
            "weighted": _micro(detections_vulnerable, weighted=True),
            "unweighted": _micro(detections_vulnerable, weighted=False),
        },
        "answered": {
            "weighted": _micro(detections_answered, weighted=True),
            "unweighted": _micro(detections_answered, weighted=False),
        },
        "rates": binary_rates(config_outcomes),
        "clean_accuracy": _ratio(clean_correct, clean),
        "fpr_clean": _ratio(clean_flagged, clean),
        "unknown_id_rate": _ratio(unknown, predictions),
        "recall_by_id": {key: id_hits[key] / id_totals[key] for key in sorted(id_totals)},
        "patch": {
            "provided_rate": _ratio(len(provided), vulnerable),
            "applies_rate": _ratio(sum(bool(p.get("applies")) for p in provided), len(provided)),
            "valid_rate": _ratio(sum(bool(p.get("valid")) for p in provided), len(provided)),
            "fixes_all_rate": _ratio(sum(bool(p.get("fixes_all")) for p in provided), len(provided)),
            "introduces_new_rate": _ratio(sum(bool(p.get("introduced")) for p in provided), len(provided)),
            "destructive_rate": _ratio(sum(bool(p.get("destructive")) for p in provided), len(provided)),
            "errors": dict(sorted(patch_errors.items())),
        },
        "confidence_mean": mean_or_none(confidences),
        "tools": {
            "episodes": len(tool_calls),
            "tool_calls_per_episode": mean_or_none(tool_calls),
            "refused_calls_per_episode": mean_or_none(refused),
            "turns_per_episode": mean_or_none(turns),
            "over_budget_rate": _ratio(over_budget, len(tool_calls)),
            "reward_per_tool_call": _ratio(sum(rewards), total_calls) if tool_calls else None,
        },
    }


# --- the verifier ---


class ConfigVerifier(CompletionVerifier):
    """Detection, patch and format of a {"violations", "patch", "confidence"} answer, graded by the oracle.

    The oracle (every available scanner) is this verifier's tool: injected, or built on first use, since starting
    the scanners is expensive and many uses of the environment (prompts, splits) never need them. The data
    loaders, the tool-oracle baseline and the tool episodes share it through `oracle`."""

    version = "e2-verifier-5"

    def __init__(self, config: Config, *, oracle: Oracle | None = None) -> None:
        self.settings = VerifierSettings.from_config(config)
        self.bootstrap_seed = config.eval.seed
        self.persistent_cache = config.oracle.persistent_cache
        self._oracle = oracle

    @property
    def oracle(self) -> Oracle:
        """The scanners, built on first use (with the persistent scanner cache unless the config turns it off)."""
        if self._oracle is None:
            from sv_env_config_verification.oracle import Oracle  # scanners are heavy: load them only when used

            cache = JsonCache(scanner_cache_path()) if self.persistent_cache else None
            self._oracle = Oracle(cache=cache)
        return self._oracle

    def parse(self, completion: str) -> ParseResult:
        return parse_answer(completion)

    def reference_answer(self, item: Item) -> str | None:
        """The item's stored oracle findings as the violations (canonical id, severity, resource, the scanner's
        message), and as the patch the mechanical remediation of exactly those findings (baseline.oracle_answer: no
        scanner runs; findings without a safe mechanical fix are reported and left unpatched, so such items score
        their detection in full and the patch in part). The embedded items carry no fixed file of their own; a clean
        item's answer is no violation and no patch."""
        try:
            findings = findings_from_json(item["oracle_findings"])
            observation = {name: item[name] for name in ("kind", "filename", "content")}
        except (KeyError, TypeError, ValueError):
            return None
        return oracle_answer(observation, findings)

    def score(self, item: Item, completion: str) -> ScoredSample:
        return score_completion(item, completion, self.oracle, self.settings)

    def score_many(self, items: Sequence[Item], completions: Sequence[str]) -> list[ScoredSample]:
        """Scores of many answers, the same as `score` one by one, with their patches re-scanned in one batch."""
        prescan(items, completions, self.oracle)
        return [self.score(item, completion) for item, completion in zip(items, completions, strict=True)]

    def aggregate(self, records: Sequence[Mapping[str, Any]], items: Mapping[str, Item]) -> dict[str, Any]:
        metrics = aggregate(records, items, weights=self.settings.weights, seed=self.bootstrap_seed)
        metrics["oracle_versions"] = dict(sorted(self.oracle.versions().items()))
        return metrics

    def provenance(self) -> dict[str, Any]:
        status = self.oracle.tool_status()
        return {
            "scanners": dict(sorted(self.oracle.versions().items())),
            "rulesets": dict(sorted(self.oracle.ruleset_hashes().items())),
            "unavailable": {name: st.reason for name, st in sorted(status.items()) if not st.available},
            "patch_validators": validator_versions(),
        }

    def report_columns(self) -> list[tuple[str, str]]:
        return [
            *paired_rate_columns("F1 (severity-wtd)", "weighted.f1", "answered.weighted.f1"),
            ("precision", "weighted.precision"),
            *paired_rate_columns("recall", "weighted.recall", "answered.weighted.recall"),
            *paired_rate_columns("F1 (unwtd)", "unweighted.f1", "answered.unweighted.f1"),
            *paired_rate_columns("FPR clean", "rates.itt.fpr", "rates.answered.fpr"),
            *paired_rate_columns("FNR vulnerable", "rates.itt.fnr", "rates.answered.fnr"),
            ("patch applies", "patch.applies_rate"),
            ("fixes all", "patch.fixes_all_rate"),
            ("introduces new", "patch.introduces_new_rate"),
            ("tool calls/episode", "tools.tool_calls_per_episode"),
            ("format fail", "format_failure_rate"),
        ]
