"""SFT datasets per environment: chat examples whose targets pass the environment's own verifier.

Where examples come from:

- Completion environments (E1–E4): for every item, its reference answer (`CompletionVerifier.reference_answer`,
  source "reference"), and the completions of teacher eval runs (records as in results.jsonl, source
  "teacher:<model id>"). The prompt is what an eval sends (`env.episodes.messages(item)`), the target the answer.
  Every candidate is scored by `env.verifier` here and kept only when that reward reaches `min_reward`; a teacher
  record must also say it did (its stored reward), but the verifier, not the stored number, decides.
- Dialogue environments (E5, E6): no reference answer. Each teacher dialogue whose recorded reward reaches
  `min_reward` gives one example per turn of the policy role (attacker, defender): the dialogue so far as the model
  saw it is the prompt, that turn the target. A dialogue is not replayed here (its counterparts and judge are
  models), so its reward is the one the verifier recorded in the run. A turn is never used when it was redacted
  (sv_shared.judging.redaction: judged unsafe, flagged by the storage screen, or left unjudged; dropped as
  "redacted_turn"), when its judge verdict says unsafe or failed ("unsafe_turn"), or when the conversation before it
  holds such a text ("after_redacted_or_unsafe_turn"): the model would learn from a marker, not from what was said.
  The provenance counts each.
- Synthetic batches (sv_shared.training.synthetic_gate): the kept examples of every batch of the environment whose
  human spot-check passed, or that an override names (source "synthetic:<batch id>"). The prompt is the one the
  batch's model answered, the target its completion. Completion environments re-score each against its item from
  the batch's items.parquet and keep it when the reward reaches `min_reward`, as for teachers; a dialogue example
  keeps its recorded reward and is dropped when any of its text is redacted. Batches left out are named in the
  provenance ("synthetic_batches": included, dropped_batches with their reason, overrides).

Every example is unique as a (prompt, target) pair, and the examples are ordered by item id (then source, turn and
text), so the same inputs give byte-identical files. The provenance says what the examples were made from and how
many candidates each filter dropped, by reason.

The examples, the dataset and their files (train.jsonl, manifest.json) are sft_files.py's.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import polars as pl

from sv_shared.answers.classification import ABSTAIN
from sv_shared.contracts import (
    Baseline,
    CompletionVerifier,
    Dialogue,
    DialogueVerifier,
    Environment,
    Item,
    Message,
)
from sv_shared.data.hashing import sha256_hex, stable_json
from sv_shared.data.review_batches import KeptExample, SyntheticBatch
from sv_shared.judging.redaction import MARKER_PREFIX, is_redacted
from sv_shared.runs.schema import ResultRecord, RunRecordError
from sv_shared.training.sft_files import SFT_SCHEMA_VERSION, SftDataError, SftDataset, SftExample
from sv_shared.training.synthetic_gate import BatchGate

SYNTHETIC_PREFIX: Final = "synthetic:"
REFERENCE_SOURCE: Final = "reference"
TEACHER_PREFIX: Final = "teacher:"


# --- building ---


@dataclass(frozen=True)
class _Candidate:
    item_id: str
    source: str
    turn: int
    messages: tuple[Message, ...]
    reward: float
    label: str | None = None
    """The answer's label, where answers are labels (E1, E4): what class balancing counts."""

    def sort_key(self) -> tuple[Any, ...]:
        return (
            self.item_id,
            self.source != REFERENCE_SOURCE,
            self.source,
            self.turn,
            stable_json(list(self.messages)),
            -self.reward,  # of two identical dialogue turns, the one from the better-rewarded dialogue is kept
        )


def _check_min_reward(min_reward: float) -> float:
    if isinstance(min_reward, bool) or not isinstance(min_reward, int | float) or not math.isfinite(min_reward):
        raise SftDataError(f"min_reward must be a finite number, got {min_reward!r}")
    if not 0.0 <= min_reward <= 1.0:
        raise SftDataError(f"min_reward must lie in [0, 1] (rewards do), got {min_reward!r}")
    return float(min_reward)


def _item_rows(env: Environment, items: Sequence[Item] | pl.DataFrame) -> dict[str, Item]:
    rows = items.to_dicts() if isinstance(items, pl.DataFrame) else [dict(item) for item in items]
    column = env.data.id_column
    by_id: dict[str, Item] = {}
    for index, row in enumerate(rows):
        if column not in row or row[column] is None:
            raise SftDataError(f"{env.env_id}: item {index} has no {column!r} (the environment's id column)")
        item_id = str(row[column])
        if item_id in by_id:
            raise SftDataError(f"{env.env_id}: item id {item_id!r} occurs twice in the items")
        by_id[item_id] = row
    return dict(sorted(by_id.items()))


def items_hash(items: Mapping[str, Item]) -> str:
    """sha256 of the items' canonical JSON, in id order: which items a dataset was built from."""
    return sha256_hex(stable_json([items[item_id] for item_id in sorted(items)]))


def _record(data: ResultRecord | Mapping[str, Any], index: int) -> ResultRecord:
    if isinstance(data, ResultRecord):
        return data
    try:
        return ResultRecord.parse(data, f"teacher record {index + 1}")
    except RunRecordError as error:
        raise SftDataError(str(error)) from None


def _valid_reward(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class LabelTargets:
    """How answers that are labels (E1, E4) are taught, so SFT teaches discrimination rather than the common label
    and one confidence.

    balance: every label keeps as many examples as the rarest one has (a seeded, per-item draw decides which of the
    commoner labels' examples stay; the rest are dropped as "label_balance"). confidence_from: a rule baseline whose
    answer to the same observation sets each reference answer's confidence, from how clearly the evidence the model
    sees points to the truth: the baseline's own confidence where it is right, one minus it where it is wrong, never
    below MIN_TARGET_CONFIDENCE (a label stated below 0.5 would contradict itself), and MIN_TARGET_CONFIDENCE where it
    abstains. Without one, every reference answer states the verifier's one reference confidence."""

    balance: bool = True
    confidence_from: Baseline | None = None
    confidence_source: str | None = None
    """The baseline's registry id, for the provenance."""
    seed: int = 42


MIN_TARGET_CONFIDENCE: Final = 0.55
"""The lowest confidence a reference answer states: unsure, but still for its label."""


def _evidence_confidence(env: Environment, item: Item, truth: str, baseline: Baseline) -> float:
    """How clearly what the model sees points to the item's true label, as the rule baseline reads it."""
    assert isinstance(env.verifier, CompletionVerifier)
    parsed = env.verifier.parse(baseline(env.episodes.observation(item)))
    if not parsed.ok or parsed.output is None or parsed.output.get("label") == ABSTAIN:
        return MIN_TARGET_CONFIDENCE
    stated = float(parsed.output["confidence"])
    confidence = stated if parsed.output["label"] == truth else 1.0 - stated
    return round(min(max(confidence, MIN_TARGET_CONFIDENCE), 1.0), 2)


def _restate_confidence(answer: str, confidence: float) -> str:
    """A reference answer (a JSON object with a confidence) stating another confidence."""
    body = json.loads(answer)
    body["confidence"] = confidence
    return json.dumps(body, ensure_ascii=False)


def _balance_labels(
    candidates: list[_Candidate], dropped: Mapping[str, Counter[str]], seed: int
) -> tuple[list[_Candidate], dict[str, int]]:
    """Every label down to the rarest label's count of examples, by a seeded per-example draw; and the count of each
    label before."""
    by_label: dict[str, list[_Candidate]] = {}
    for candidate in candidates:
        by_label.setdefault(str(candidate.label), []).append(candidate)
    before = {label: len(group) for label, group in sorted(by_label.items())}
    if len(by_label) < 2:
        return candidates, before
    quota = min(before.values())
    kept: list[_Candidate] = []
    for group in by_label.values():
        ranked = sorted(group, key=lambda c: sha256_hex(f"{seed}:{c.item_id}:{c.source}:{c.turn}"))
        kept += ranked[:quota]
        for candidate in ranked[quota:]:
            dropped[_source_kind(candidate.source)]["label_balance"] += 1
    return kept, before


def build_sft_dataset(
    env: Environment,
    items: Sequence[Item] | pl.DataFrame,
    *,
    teacher_records: Iterable[ResultRecord | Mapping[str, Any]] = (),
    teacher_id: str | None = None,
    min_reward: float,
    synthetic: BatchGate | None = None,
    held_out: Collection[str] = (),
    label_targets: LabelTargets | None = None,
) -> SftDataset:
    """The SFT examples of `items` (rows of the environment's frame; a split's frame or its dicts).

    teacher_records: eval run records (results.jsonl lines as dicts, or ResultRecord) whose completions (dialogues:
    whose policy turns) become examples when the verifier rewards them at least `min_reward`. teacher_id, when
    given, is the teacher's registry model id: records of another model are dropped ("other_teacher"), so two
    teachers never mix under one name. synthetic: the reviewed synthetic batches to include (see the module's
    docstring); held_out: content hashes of the items a checkpoint is measured on (dev and test), whose synthetic
    examples are dropped ("held_out_overlap"). label_targets: class balance and informative confidences where answers
    are labels (ignored elsewhere). Raises SftDataError for a malformed record or item list, and whatever
    the verifier raises when its tools are missing (a sandbox, a scanner): a dataset is never built from a partial
    check."""
    threshold = _check_min_reward(min_reward)
    by_id = _item_rows(env, items)
    records = [_record(data, index) for index, data in enumerate(teacher_records)]
    dropped = {REFERENCE_SOURCE: Counter[str](), "teacher": Counter[str](), "synthetic": Counter[str]()}
    batches = synthetic.included if synthetic is not None else ()
    batch_examples = [
        (batch.batch_id, item, example)
        for batch in batches
        for item, example in _batch_examples(env, batch, frozenset(held_out), dropped["synthetic"])
    ]
    usable: list[ResultRecord] = []
    for record in records:
        if teacher_id is not None and record.model != teacher_id:
            dropped["teacher"]["other_teacher"] += 1
        elif record.id not in by_id:
            dropped["teacher"]["unknown_item"] += 1
        elif not _valid_reward(record.reward) or record.reward < threshold:
            dropped["teacher"]["below_min_reward"] += 1
        else:
            usable.append(record)
    labels = label_targets if label_targets is not None and env.verifier.answers_are_labels else None
    labels_before: dict[str, int] | None = None
    if isinstance(env.verifier, CompletionVerifier):
        kind = "completion"
        confidence_from = labels.confidence_from if labels is not None else None
        candidates = _completion_candidates(env, by_id, usable, batch_examples, threshold, dropped, confidence_from)
        if labels is not None and labels.balance:
            candidates, labels_before = _balance_labels(candidates, dropped, labels.seed)
    elif isinstance(env.verifier, DialogueVerifier):
        kind = "dialogue"
        candidates = _dialogue_candidates(env, by_id, usable, dropped["teacher"])
        candidates += _synthetic_dialogue_candidates(batch_examples, threshold, dropped["synthetic"])
    else:  # pragma: no cover - the Environment contract allows only these two
        raise SftDataError(f"{env.env_id}: unknown verifier kind {type(env.verifier).__name__}")

    examples: list[SftExample] = []
    seen: set[str] = set()
    for candidate in sorted(candidates, key=_Candidate.sort_key):
        key = stable_json(list(candidate.messages))
        if key in seen:
            dropped[_source_kind(candidate.source)]["duplicate"] += 1
            continue
        seen.add(key)
        examples.append(
            SftExample.model_validate(
                {
                    "messages": [dict(message) for message in candidate.messages],
                    "env_id": env.env_id,
                    "item_id": candidate.item_id,
                    "source": candidate.source,
                    "reward": float(candidate.reward),
                }
            )
        )
    dataset = SftDataset(examples=tuple(examples))
    sources = Counter(example.source for example in examples)
    rewards = [example.reward for example in examples]
    counts: dict[str, Any] = {"kept": len(examples)}
    if kind == "completion":
        counts[REFERENCE_SOURCE] = {
            "kept": sources[REFERENCE_SOURCE],
            "dropped": dict(sorted(dropped[REFERENCE_SOURCE].items())),
        }
    counts["teacher"] = {
        "kept": sum(count for source, count in sources.items() if source.startswith(TEACHER_PREFIX)),
        "dropped": dict(sorted(dropped["teacher"].items())),
    }
    if synthetic is not None:
        counts["synthetic"] = {
            "kept": sum(count for source, count in sources.items() if source.startswith(SYNTHETIC_PREFIX)),
            "dropped": dict(sorted(dropped["synthetic"].items())),
        }
    provenance: dict[str, Any] = {
        "schema_version": SFT_SCHEMA_VERSION,
        "env_id": env.env_id,
        "env_name": env.name,
        "verifier": {"kind": kind, "version": env.verifier.version},
        "items": {"count": len(by_id), "hash": items_hash(by_id), "id_column": env.data.id_column},
        "teacher": {
            "id": teacher_id,
            "records": len(records),
            "models": sorted({record.model for record in records}),
            "rewards": "re-scored by the verifier" if kind == "completion" else "as recorded (dialogues not replayed)",
        },
        "min_reward": threshold,
        **({"synthetic_batches": synthetic.provenance} if synthetic is not None else {}),
        **(
            {
                "label_targets": {
                    "balanced": labels.balance,
                    # kept: counted on the final examples, after duplicates are dropped too
                    "labels": {
                        "before": labels_before,
                        "kept": dict(sorted(Counter(_stated(examples, "label")).items())),
                    },
                    "confidence_from": labels.confidence_source,
                    "target_confidences": dict(sorted(Counter(_stated(examples, "confidence")).items())),
                }
            }
            if labels is not None
            else {}
        ),
        "sources": dict(sorted(sources.items())),
        "counts": counts,
        "reward_mean": sum(rewards) / len(rewards) if rewards else None,
        "n_examples": len(examples),
        "dataset_hash": dataset.dataset_hash,
    }
    return SftDataset(examples=dataset.examples, provenance=provenance)


def _source_kind(source: str) -> str:
    """The provenance bucket of a source: "reference", "teacher" or "synthetic"."""
    return source if source == REFERENCE_SOURCE else source.split(":", 1)[0]


BatchExample = tuple[str, Item, KeptExample]
"""(batch id, the item from the batch's items.parquet, the kept example answering it)."""


def _batch_examples(
    env: Environment, batch: SyntheticBatch, held_out: frozenset[str], synthetic: Counter[str]
) -> list[tuple[Item, KeptExample]]:
    """The batch's kept examples with their items; one whose item is unknown or held out is dropped."""
    column = env.data.id_column
    items = {str(row[column]): row for row in batch.items() if row.get(column) is not None}
    found: list[tuple[Item, KeptExample]] = []
    for example in batch.kept():
        item = items.get(example.item_id)
        if item is None:
            synthetic["unknown_item"] += 1
        elif item.get("content_hash") in held_out:
            synthetic["held_out_overlap"] += 1
        else:
            found.append((item, example))
    return found


def _prompt(example: KeptExample) -> tuple[Message, ...]:
    return tuple({"role": message.role, "content": message.content} for message in example.prompt)


def _completion_candidates(
    env: Environment,
    by_id: Mapping[str, Item],
    usable: Sequence[ResultRecord],
    batch_examples: Sequence[BatchExample],
    threshold: float,
    dropped: Mapping[str, Counter[str]],
    confidence_from: Baseline | None = None,
) -> list[_Candidate]:
    """Reference answers (stating the confidence the baseline's reading of the evidence gives, when confidence_from
    is set), teacher completions and synthetic examples, all scored in one batch (verifiers batch their tools)."""
    verifier = env.verifier
    assert isinstance(verifier, CompletionVerifier)
    pending: list[tuple[Item, str, str, str, tuple[Message, ...]]] = []  # (item, item id, source, completion, prompt)
    for item_id, item in by_id.items():
        answer = verifier.reference_answer(item)
        if answer is None:
            dropped[REFERENCE_SOURCE]["no_reference"] += 1
        else:
            if confidence_from is not None:
                truth = json.loads(answer)["label"]
                answer = _restate_confidence(answer, _evidence_confidence(env, item, truth, confidence_from))
            pending.append((item, item_id, REFERENCE_SOURCE, answer, tuple(env.episodes.messages(item))))
    for record in usable:
        item = by_id[record.id]
        pending.append(
            (item, record.id, TEACHER_PREFIX + record.model, record.completion, tuple(env.episodes.messages(item)))
        )
    for batch_id, item, example in batch_examples:
        source = SYNTHETIC_PREFIX + batch_id
        pending.append((item, example.item_id, source, example.completion, _prompt(example)))
    scored = verifier.score_many([entry[0] for entry in pending], [entry[3] for entry in pending])
    candidates: list[_Candidate] = []
    for (_, item_id, source, text, prompt), sample in zip(pending, scored, strict=True):
        counts = dropped[_source_kind(source)]
        if sample.parsed is None:
            counts[f"parse_error:{sample.error}"] += 1
            continue
        if not _valid_reward(sample.reward) or sample.reward < threshold:
            # A teacher record or a kept synthetic example got here by saying it passed: the verifier disagrees.
            counts["below_min_reward" if source == REFERENCE_SOURCE else "verifier_disagrees"] += 1
            continue
        label = sample.parsed.get("label") if verifier.answers_are_labels else None
        candidates.append(
            _Candidate(
                item_id, source, 0, (*prompt, {"role": "assistant", "content": text}), float(sample.reward), label
            )
        )
    return candidates


def _stated(examples: Sequence[SftExample], field: str) -> list[Any]:
    """What each example's target states under `field` (where it is a JSON answer with one)."""
    found = []
    for example in examples:
        try:
            found.append(json.loads(example.target)[field])
        except (ValueError, TypeError, KeyError):
            continue
    return found


def _synthetic_dialogue_candidates(
    batch_examples: Sequence[BatchExample], threshold: float, synthetic: Counter[str]
) -> list[_Candidate]:
    """Kept dialogue examples at their recorded reward; one with any redacted text teaches a marker, not a reply."""
    candidates: list[_Candidate] = []
    for batch_id, _, example in batch_examples:
        texts = [message.content for message in example.prompt] + [example.completion]
        if any(is_redacted(text) or MARKER_PREFIX in text for text in texts):
            synthetic["redacted_turn"] += 1
        elif not _valid_reward(example.reward) or example.reward > 1.0:
            synthetic["invalid_reward"] += 1
        elif example.reward < threshold:
            synthetic["below_min_reward"] += 1
        elif any(message.role not in ("system", "user", "assistant") for message in example.prompt):
            synthetic["malformed_prompt"] += 1
        else:
            messages = (*_prompt(example), {"role": "assistant", "content": example.completion})
            source = SYNTHETIC_PREFIX + batch_id
            candidates.append(_Candidate(example.item_id, source, 0, messages, float(example.reward)))
    return candidates


# --- dialogues ---


def _tainted(entry: Mapping[str, Any]) -> str | None:
    """Why a transcript entry may not be trained on or shown in a prompt: redacted, or judged unsafe / unjudged."""
    text = entry.get("text")
    if not isinstance(text, str):
        return "redacted"
    if entry.get("redacted") or is_redacted(text) or MARKER_PREFIX in text:
        return "redacted"
    verdict = entry.get("verdict")
    if isinstance(verdict, Mapping) and (verdict.get("unsafe") or verdict.get("error")):
        return "unsafe"
    return None


def _dialogue_candidates(
    env: Environment, by_id: Mapping[str, Item], usable: Sequence[ResultRecord], teacher: Counter[str]
) -> list[_Candidate]:
    verifier = env.verifier
    assert isinstance(verifier, DialogueVerifier)
    episodes = env.episodes
    assert isinstance(episodes, Dialogue)
    policy_role, roles = episodes.policy_role, episodes.transcript_roles
    candidates: list[_Candidate] = []
    for record in usable:
        transcript = record.details.get("transcript")
        if not isinstance(transcript, list) or not all(isinstance(entry, Mapping) for entry in transcript):
            teacher["no_transcript"] += 1
            continue
        if [entry.get("role") for entry in transcript] != [roles[i % 2] for i in range(len(transcript))]:
            teacher["malformed_transcript"] += 1
            continue
        item = by_id[record.id]
        for index, entry in enumerate(transcript):
            if entry.get("role") != policy_role:
                continue
            taint = _tainted(entry)
            if taint is not None:
                teacher[f"{taint}_turn"] += 1
                continue
            if any(_tainted(earlier) for earlier in transcript[:index]):
                teacher["after_redacted_or_unsafe_turn"] += 1
                continue
            parsed = verifier.parse_turn(str(entry["text"]))
            if not parsed.ok:
                teacher[f"parse_error:{parsed.error}"] += 1
                continue
            target = {"role": "assistant", "content": episodes.policy_turn_completion(entry)}
            messages = (*episodes.policy_view(item, transcript[:index]), target)
            candidates.append(
                _Candidate(record.id, TEACHER_PREFIX + record.model, index, messages, float(record.reward))
            )
    return candidates
