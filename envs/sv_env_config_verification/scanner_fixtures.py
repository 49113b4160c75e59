"""E2's labels measured on the scanners' own public Kubernetes test fixtures: outside data nobody here wrote.

checkov keeps, per check, a folder `tests/kubernetes/checks/example_<Check>/` of manifests named `*PASSED*` or
`*FAILED*`; trivy-checks keeps, per check, `checks/kubernetes/<check>.yaml` whose `kubernetes.good` / `.bad` lists
hold manifests. Each scanner's authors thereby say which manifests fail their check. A check counts here only
through an explicit mapping onto canonical ids (CHECKOV_CHECKS, TRIVY_CHECKS) and the relation of its meaning to
the canonical definition, because that relation decides what the fixtures can measure:

- equal: the check and the definition fail the same manifests: failing files must carry the id (recall) and
  passing files must not (false positives);
- narrower: the check is a special case of the definition (a docker socket mount is a hostPath volume): failing
  files must carry the id, but a passing file may carry it rightly, so only recall is measured;
- broader: the check also fails what the definition allows (any added capability, not only dangerous ones): a
  passing file must not carry the id, but a failing one need not, so only false positives are measured.

Every other check is unmapped and listed as such. The unit is the file: a failing file is caught when any of its
check's ids is labelled anywhere in it, a passing file is a false positive when any is. A file the labeller
rejects (the loader's verdict on invalid input) is labelled nothing, so it counts as a miss or as clean.

The fixtures are read from a folder given by the caller (e.g. ../shared/data/scanner-fixtures); nothing of them
ships with the project.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml

Relation = Literal["equal", "narrower", "broader"]
FixtureSet = Literal["checkov", "trivy-checks"]
FIXTURE_SETS: tuple[FixtureSet, ...] = ("checkov", "trivy-checks")

CHECKOV_DIR = Path("checkov/tests/kubernetes/checks")
TRIVY_DIR = Path("trivy-checks/checks/kubernetes")

# Per file: the canonical ids labelled in it, or None when the labeller rejected the file.
Labeller = Callable[[Sequence[tuple[str, str]]], list[frozenset[str] | None]]


@dataclass(frozen=True)
class CheckMapping:
    """What one scanner check means in canonical ids, and how its meaning relates to theirs (module docstring)."""

    canonical_ids: tuple[str, ...]
    relation: Relation


def _maps(relation: Relation, *canonical_ids: str) -> CheckMapping:
    return CheckMapping(canonical_ids=canonical_ids, relation=relation)


# checkov: folder name without "example_" -> mapping. Its check ids are in the comments.
CHECKOV_CHECKS: dict[str, CheckMapping] = {
    "AllowPrivilegeEscalation": _maps("equal", "K8S_PRIV_ESCALATION"),  # CKV_K8S_20
    "AllowedCapabilities": _maps("broader", "K8S_DANGEROUS_CAPABILITIES"),  # CKV_K8S_25: any added capability
    "AllowedCapabilitiesSysAdmin": _maps("narrower", "K8S_DANGEROUS_CAPABILITIES"),  # CKV_K8S_39: SYS_ADMIN
    "DockerSocketVolume": _maps("narrower", "K8S_HOSTPATH"),  # CKV_K8S_27: the docker socket by hostPath
    "ImageDigest": _maps("broader", "K8S_LATEST_TAG"),  # CKV_K8S_43: a digest, not only a fixed tag
    "ImageTagFixed": _maps("equal", "K8S_LATEST_TAG"),  # CKV_K8S_14
    "PrivilegedContainers": _maps("equal", "K8S_PRIVILEGED"),  # CKV_K8S_16
    "ReadOnlyFilesystem": _maps("equal", "K8S_WRITABLE_ROOT_FS"),  # CKV_K8S_22
    # CKV_K8S_10-13: CPU and memory requests and limits; a file may fail on a request alone.
    "Requests_Limits": _maps("broader", "K8S_NO_CPU_LIMIT", "K8S_NO_MEMORY_LIMIT"),
    "RootContainers": _maps("equal", "K8S_RUN_AS_ROOT"),  # CKV_K8S_23
    "RootContainersHighUID": _maps("broader", "K8S_RUN_AS_ROOT"),  # CKV_K8S_40: any UID under 10000
    "ShareHost": _maps("equal", "K8S_HOST_NAMESPACE"),  # CKV_K8S_17/18/19: hostPID, hostIPC, hostNetwork
}

# trivy-checks: file stem -> mapping. Their AVD ids are in the comments.
TRIVY_CHECKS: dict[str, CheckMapping] = {
    "CPU_not_limited": _maps("equal", "K8S_NO_CPU_LIMIT"),  # KSV-0011
    "memory_not_limited": _maps("equal", "K8S_NO_MEMORY_LIMIT"),  # KSV-0018
    "SYS_ADMIN_capability": _maps("narrower", "K8S_DANGEROUS_CAPABILITIES"),  # KSV-0005
    "can_elevate_its_own_privileges": _maps("equal", "K8S_PRIV_ESCALATION"),  # KSV-0001
    "file_system_not_read_only": _maps("equal", "K8S_WRITABLE_ROOT_FS"),  # KSV-0014
    "host_ipc": _maps("narrower", "K8S_HOST_NAMESPACE"),  # KSV-0008
    "host_network": _maps("narrower", "K8S_HOST_NAMESPACE"),  # KSV-0009
    "host_pid": _maps("narrower", "K8S_HOST_NAMESPACE"),  # KSV-0010
    "hostpath_volumes_mounted": _maps("equal", "K8S_HOSTPATH"),  # KSV-0023
    "mounts_docker_socket": _maps("narrower", "K8S_HOSTPATH"),  # KSV-0006
    "privileged": _maps("equal", "K8S_PRIVILEGED"),  # KSV-0017
    "runs_as_root": _maps("broader", "K8S_RUN_AS_ROOT"),  # KSV-0012: runAsNonRoot even beside a non-zero UID
    "runs_with_UID_le_10000": _maps("broader", "K8S_RUN_AS_ROOT"),  # KSV-0020
    "uses_image_tag_latest": _maps("equal", "K8S_LATEST_TAG"),  # KSV-0013
}

CHECK_MAPPINGS: dict[FixtureSet, dict[str, CheckMapping]] = {"checkov": CHECKOV_CHECKS, "trivy-checks": TRIVY_CHECKS}


@dataclass(frozen=True)
class Fixture:
    """One manifest its scanner's authors say fails (failing=True) or passes one check."""

    fixture_set: FixtureSet
    check: str
    name: str
    content: str
    failing: bool


def checkov_fixtures(root: Path) -> list[Fixture]:
    """checkov's fixtures under root; a file named both PASSED and FAILED holds a failing resource, so it fails."""
    fixtures: list[Fixture] = []
    for folder in sorted((root / CHECKOV_DIR).glob("example_*")):
        check = folder.name.removeprefix("example_")
        for path in sorted(folder.iterdir()):
            if path.suffix not in (".yaml", ".yml") or not ({"PASSED", "FAILED"} & _marks(path.name)):
                continue
            content = path.read_text(encoding="utf-8")
            failing = "FAILED" in _marks(path.name)
            fixtures.append(Fixture("checkov", check, f"{folder.name}/{path.name}", content, failing))
    return fixtures


def _marks(name: str) -> set[str]:
    return {mark for mark in ("PASSED", "FAILED") if mark in name}


def trivy_fixtures(root: Path) -> list[Fixture]:
    """trivy-checks' good and bad example manifests under root, one fixture per example."""
    fixtures: list[Fixture] = []
    for path in sorted((root / TRIVY_DIR).glob("*.yaml")):
        examples = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("kubernetes") or {}
        for key, failing in (("bad", True), ("good", False)):
            for index, content in enumerate(examples.get(key) or []):
                name = f"{path.stem}/{key}-{index}.yaml"
                fixtures.append(Fixture("trivy-checks", path.stem, name, str(content), failing))
    return fixtures


def oracle_labeller(policy_dir: Path | None = None) -> Labeller:
    """E2's labeller: the oracle with its reference alone (the project's Rego policies, from policy_dir when given),
    uncached, so every call measures the policies as they are."""
    from sv_env_config_verification.adapters.opa import OpaAdapter
    from sv_env_config_verification.oracle import Oracle

    oracle = Oracle([OpaAdapter(policy_dir)], cache=None)

    def label(configs: Sequence[tuple[str, str]]) -> list[frozenset[str] | None]:
        return [
            None if result.error else frozenset(f.canonical_id for f in result.findings if f.canonical_id)
            for result in oracle.scan_many(configs)
        ]

    return label


def load_fixtures(root: Path) -> list[Fixture]:
    """Every fixture of both sets under root (the folder whose README describes them)."""
    return checkov_fixtures(root) + trivy_fixtures(root)


@dataclass(frozen=True)
class CheckScore:
    """One mapped check's fixtures as the labeller saw them.

    failing / caught: failing files and those labelled with one of the check's ids (None: the relation does not
    measure recall); passing / flagged likewise for false positives; missed and false_positives name the files;
    rejected names the files the labeller refused to label.
    """

    fixture_set: FixtureSet
    check: str
    mapping: CheckMapping
    failing: int | None
    caught: int | None
    passing: int | None
    flagged: int | None
    missed: tuple[str, ...]
    false_positives: tuple[str, ...]
    rejected: tuple[str, ...]


@dataclass(frozen=True)
class SetScore:
    """A fixture set's totals over its mapped checks, and its checks left unmapped."""

    fixture_set: FixtureSet
    failing: int
    caught: int
    passing: int
    flagged: int
    unmapped: tuple[str, ...]

    @property
    def recall(self) -> float | None:
        return self.caught / self.failing if self.failing else None

    @property
    def false_positive_rate(self) -> float | None:
        return self.flagged / self.passing if self.passing else None


def score_checks(fixtures: Sequence[Fixture], labeller: Labeller) -> list[CheckScore]:
    """Label every mapped check's fixtures in one batch and score them check by check."""
    mapped = [f for f in fixtures if f.check in CHECK_MAPPINGS[f.fixture_set]]
    labels = labeller([(f"{f.fixture_set}/{f.name}", f.content) for f in mapped])
    by_check: dict[tuple[FixtureSet, str], list[tuple[Fixture, frozenset[str] | None]]] = {}
    for fixture, labelled in zip(mapped, labels, strict=True):
        by_check.setdefault((fixture.fixture_set, fixture.check), []).append((fixture, labelled))
    return [_score(fixture_set, check, rows) for (fixture_set, check), rows in sorted(by_check.items())]


def _score(fixture_set: FixtureSet, check: str, rows: Iterable[tuple[Fixture, frozenset[str] | None]]) -> CheckScore:
    mapping = CHECK_MAPPINGS[fixture_set][check]
    wanted = set(mapping.canonical_ids)
    rows = list(rows)
    hit = [(fixture, bool(wanted & (labelled or frozenset()))) for fixture, labelled in rows]
    failing = [(fixture, found) for fixture, found in hit if fixture.failing]
    passing = [(fixture, found) for fixture, found in hit if not fixture.failing]
    recall = mapping.relation in ("equal", "narrower")
    false_positives = mapping.relation in ("equal", "broader")
    return CheckScore(
        fixture_set=fixture_set,
        check=check,
        mapping=mapping,
        failing=len(failing) if recall else None,
        caught=sum(found for _, found in failing) if recall else None,
        passing=len(passing) if false_positives else None,
        flagged=sum(found for _, found in passing) if false_positives else None,
        missed=tuple(f.name for f, found in failing if not found) if recall else (),
        false_positives=tuple(f.name for f, found in passing if found) if false_positives else (),
        rejected=tuple(fixture.name for fixture, labelled in rows if labelled is None),
    )


def score_sets(fixtures: Sequence[Fixture], checks: Sequence[CheckScore]) -> list[SetScore]:
    """Per fixture set: recall and false positives over its mapped checks, and the checks it has that are unmapped."""
    scores: list[SetScore] = []
    for fixture_set in FIXTURE_SETS:
        mine = [score for score in checks if score.fixture_set == fixture_set]
        present = {f.check for f in fixtures if f.fixture_set == fixture_set}
        scores.append(
            SetScore(
                fixture_set=fixture_set,
                failing=sum(score.failing or 0 for score in mine),
                caught=sum(score.caught or 0 for score in mine),
                passing=sum(score.passing or 0 for score in mine),
                flagged=sum(score.flagged or 0 for score in mine),
                unmapped=tuple(sorted(present - CHECK_MAPPINGS[fixture_set].keys())),
            )
        )
    return scores
