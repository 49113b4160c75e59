"""Scanner suppression directives: the comments and annotations that tell a scanner to skip a finding.

Patches are scored by scanning the patched text again, and every scanner honours its own "look away" marker
(`# checkov:skip=...` and `checkov.io/skip` annotations, `# trivy:ignore:...`, `# nosemgrep`, bandit's `# nosec`,
kube-linter's `ignore-check.kube-linter.io/...` annotations, ...). A patch that adds one can make a finding vanish
without fixing anything, so a verifier refuses any patch that adds a directive the original did not have. The list
is by scanner, across the config (E2) and code (E3) scanners and the common ones a model may know from elsewhere.
"""

from __future__ import annotations

import re
from collections import Counter

SUPPRESSION_DIRECTIVES: dict[str, re.Pattern[str]] = {
    tool: re.compile(pattern, re.IGNORECASE)
    for tool, pattern in {
        "bandit": r"#\s*nosec\b",
        "semgrep": r"\bnosem(?:grep)?\b",
        "checkov": r"\bcheckov\s*:\s*skip\b|\bcheckov\.io/skip",
        "trivy": r"\btrivy\s*:\s*ignore\b",
        "tfsec": r"\btfsec\s*:\s*ignore\b",
        "kube-linter": r"\bignore-check\.kube-linter\.io/",
        "kics": r"\bkics-scan\s+(?:ignore|disable)",
        "terrascan": r"\bts\s*:\s*skip\s*=",
        "polaris": r"\bpolaris\.fairwinds\.com/[\w.-]*exempt",
        "datree": r"\bdatree\.skip/",
        "kube-score": r"\bkube-score/ignore\b",
    }.items()
}


def suppressions(text: str) -> Counter[str]:
    """How many suppression directives of each scanner the text holds."""
    return Counter({tool: n for tool, pattern in SUPPRESSION_DIRECTIVES.items() if (n := len(pattern.findall(text)))})


def added_suppressions(before: str, after: str) -> list[str]:
    """The scanners with more suppression directives in `after` than in `before` (sorted; empty when none)."""
    return sorted((suppressions(after) - suppressions(before)).keys())
