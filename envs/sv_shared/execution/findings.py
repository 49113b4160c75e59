"""Scanner findings in one normalized shape, and the adapter protocol every scanner implements.

Used by E2 (config scanners: OPA/Rego, semgrep, checkov, trivy, kube-linter) and E3 (bandit, semgrep on code).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal, Protocol

Severity = Literal["low", "medium", "high"]
SEVERITIES: tuple[str, ...] = ("low", "medium", "high")
SEVERITY_WEIGHTS: dict[str, float] = {"low": 1.0, "medium": 2.0, "high": 3.0}


@dataclass(frozen=True)
class Finding:
    """One problem a scanner reports. canonical_id (None when unmapped) lets two tools' reports count once."""

    tool: str
    rule_id: str
    canonical_id: str | None
    severity: str
    resource: str | None
    path: str | None
    line: int | None
    message: str

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, got {self.severity!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Finding:
        return cls(**{name: data.get(name) for name in cls.__dataclass_fields__})


@dataclass(frozen=True)
class ToolStatus:
    """Whether a scanner can run here, and if not, the plain reason (e.g. "kube-linter is not on PATH")."""

    available: bool
    reason: str = ""
    version: str | None = None


class ScannerAdapter(Protocol):
    """A scanner behind one interface; scans many files per call (batching is where the speed is)."""

    name: str

    def status(self) -> ToolStatus: ...

    def ruleset_hash(self) -> str:
        """Hash of the rules/policies this adapter runs (part of every cache key)."""
        ...

    def scan(self, files: Mapping[str, str]) -> dict[str, list[Finding]]:
        """Findings per file name, for files given as {name: content}; every name gets a (possibly empty) list."""
        ...
