"""E2's patch stage: apply an answer's patch, check that the result is a valid, non-destructive config that silences
no scanner, re-scan both texts and score the findings removed against those introduced (verify.py has the reward)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from sv_env_config_verification.config_model import ConfigParseError, ParsedConfig
from sv_env_config_verification.data import Scanner
from sv_env_config_verification.loading import parse_config
from sv_env_config_verification.manifests import dump_yaml
from sv_env_config_verification.patching import PatchError, PatchErrorReason, apply_json_patch, apply_unified_diff
from sv_env_config_verification.pod_specs import pod_specs
from sv_env_config_verification.schema import findings_from_json
from sv_env_config_verification.validity import check_config, new_problems, original_validity
from sv_shared.execution.findings import SEVERITY_WEIGHTS, Finding
from sv_shared.execution.suppressions import added_suppressions

UNKNOWN_ID_SEVERITY = "medium"


def severity_weight(severity: str | None) -> float:
    """A finding's weight by its severity (low 1, medium 2, high 3); an unknown severity weighs as medium."""
    return SEVERITY_WEIGHTS.get(str(severity), SEVERITY_WEIGHTS[UNKNOWN_ID_SEVERITY])


@dataclass
class PatchOutcome:
    """What happened to an answer's patch, stage by stage."""

    provided: bool = False
    format: str | None = None
    applies: bool = False
    valid: bool = False  # parses, and Kubernetes or Terraform would accept it (validity.py)
    unvalidated: list[str] = field(default_factory=list)
    destructive: bool = False
    removed: list[str] = field(default_factory=list)
    introduced: list[str] = field(default_factory=list)
    fixes_all: bool = False
    error: str | None = None
    detail: str | None = None
    score: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_CONTAINER_LISTS = ("containers", "initContainers")


def _named(items: Any) -> set[str]:
    return (
        {str(item.get("name")) for item in items or [] if isinstance(item, dict)} if isinstance(items, list) else set()
    )


def destructive_change(before: ParsedConfig, after: ParsedConfig) -> str | None:
    """Why the patched config no longer does what the original did (None when it still does).

    Destructive: a resource (Kubernetes object / Terraform resource) removed; a pod spec (pod_specs.py, any kind)
    gone from its path, or its containers removed or emptied; replicas or count set to 0; a spec, RBAC rule list or
    Service port list emptied; a Terraform resource body emptied. Fixing a finding by deleting what it is about
    earns no patch credit.
    """
    after_by_name: dict[str, list[Any]] = {}
    for resource in after.resources:
        after_by_name.setdefault(resource.name, []).append(resource.body)
    for resource in before.resources:
        bodies = after_by_name.get(resource.name)
        if not bodies:
            return f"{resource.name} was removed"
        body, new = resource.body, bodies.pop(0)
        if before.kind == "terraform":
            if body and not new:
                return f"{resource.name} was emptied"
            if body.get("count") != 0 and new.get("count") == 0:
                return f"{resource.name} has count = 0"
            continue
        if isinstance(body.get("spec"), dict) and body["spec"] and not new.get("spec"):
            return f"{resource.name}: spec was emptied"
        # Every pod spec where the labels find one (pod_specs.py): moving one elsewhere or renaming its containers
        # field hides it from the labels, so a pod spec must stay at its path with its containers.
        new_specs = dict(pod_specs(new))
        for path, old_spec in pod_specs(body):
            new_spec = new_specs.get(path)
            if new_spec is None or (old_spec.get("containers") and not new_spec.get("containers")):
                return f"{resource.name}: the pod at {'.'.join(path)} has no containers left"
            for key in _CONTAINER_LISTS:
                lost = _named(old_spec.get(key)) - _named(new_spec.get(key))
                if lost:
                    return f"{resource.name}: container(s) {sorted(lost)} removed"
        spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
        new_spec_obj = new.get("spec") if isinstance(new.get("spec"), dict) else {}
        if spec.get("replicas", 1) != 0 and new_spec_obj.get("replicas") == 0:
            return f"{resource.name}: replicas set to 0"
        if body.get("rules") and not new.get("rules"):
            return f"{resource.name}: every RBAC rule was removed"
        if spec.get("ports") and not new_spec_obj.get("ports"):
            return f"{resource.name}: every Service port was removed"
    return None


def apply_patch(item: Mapping[str, Any], patch: str | list[dict[str, Any]]) -> str:
    """The patched text; JSON Patch addresses the document of a one-document file, else the list of documents."""
    if isinstance(patch, str):
        return apply_unified_diff(item["content"], patch, item["filename"])
    if item["kind"] != "kubernetes":
        raise PatchError(PatchErrorReason.JSON_PATCH_UNSUPPORTED, "JSON Patch applies to Kubernetes YAML only")
    documents = parse_config("kubernetes", item["content"]).documents
    single = len(documents) == 1
    result = apply_json_patch(documents[0] if single else documents, patch)
    result = [result] if single else result
    if not isinstance(result, list) or not all(isinstance(document, dict) for document in result):
        raise PatchError(PatchErrorReason.JSON_PATCH_FAILED, "the patched file is not a list of objects")
    return dump_yaml(result)


def _keys(findings: Iterable[Finding]) -> dict[tuple[str, str | None], Finding]:
    return {(f.canonical_id, f.resource): f for f in findings if f.canonical_id}


def _label(key: tuple[str, str | None]) -> str:
    return f"{key[0]}@{key[1]}" if key[1] else key[0]


def evaluate_patch(
    item: Mapping[str, Any], patch: str | list[dict[str, Any]] | None, oracle: Scanner, *, penalty: float
) -> PatchOutcome:
    """Apply, validate, check for destruction and re-scan one patch (the module docstring has the scoring)."""
    stored = findings_from_json(item["oracle_findings"])
    if patch is None:
        return PatchOutcome(score=0.0 if _keys(stored) else 1.0)
    outcome = PatchOutcome(provided=True, format="unified_diff" if isinstance(patch, str) else "json_patch")
    try:
        patched = apply_patch(item, patch)
    except PatchError as error:
        outcome.error, outcome.detail = error.reason.value, str(error)
        return outcome
    except ConfigParseError as error:
        outcome.error, outcome.detail = f"original_{error.reason}", str(error)
        return outcome
    outcome.applies = True
    try:
        after = parse_config(item["kind"], patched)
        before = parse_config(item["kind"], item["content"])
    except ConfigParseError as error:
        outcome.error, outcome.detail = f"patched_{error.reason}", str(error)
        return outcome
    validity = check_config(after, patched)
    outcome.unvalidated = list(validity.unvalidated)
    problems = new_problems(original_validity(item["kind"], item["content"]), validity)
    outcome.valid = not problems
    # Destruction is named first: a patch that deletes what a finding is about is destructive, whatever it leaves.
    reason = destructive_change(before, after)
    if reason is not None:
        outcome.destructive = True
        outcome.error, outcome.detail = "destructive_fix", reason
        return outcome
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        outcome.error, outcome.detail = problems[0].code.value, f"{problems[0]}{more}"
        return outcome
    silenced = added_suppressions(item["content"], patched)
    if silenced:
        outcome.error, outcome.detail = "adds_suppression", f"the patch tells {', '.join(silenced)} to skip findings"
        return outcome
    scans = oracle.scan_many([(item["filename"], item["content"]), (item["filename"], patched)])
    failed = next((scan.error for scan in scans if scan.error), None)
    if failed:
        outcome.error, outcome.detail = "rescan_failed", str(failed)
        return outcome
    old, new = _keys(scans[0].findings), _keys(scans[1].findings)
    removed = [key for key in old if key not in new]
    introduced = [key for key in new if key not in old]
    outcome.removed = sorted(_label(key) for key in removed)
    outcome.introduced = sorted(_label(key) for key in introduced)
    outcome.fixes_all = bool(old) and len(removed) == len(old)
    w_introduced = sum(severity_weight(new[key].severity) for key in introduced)
    if old:
        w_removed = sum(severity_weight(old[key].severity) for key in removed)
        w_before = sum(severity_weight(finding.severity) for finding in old.values())
        outcome.score = min(1.0, max(0.0, (w_removed - penalty * w_introduced) / w_before))
    else:
        outcome.score = 0.0 if introduced else 1.0
    return outcome
