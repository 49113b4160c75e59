"""Label the E2 embedded corpus (envs/sv_env_config_verification/data/), deterministically.

The corpus files are their own source, kept as a user would keep them in a repository:
- kubernetes/*.yaml: Pods, Deployments, StatefulSets, DaemonSets, Jobs, CronJobs, RBAC, Services, NetworkPolicies
  (many files hold several documents). Hardened workloads follow the restricted Pod Security Standard; the others
  carry the mistakes seen in real repositories, from a single flaw in a hardened manifest to copy-pasted defaults.
  Images are pinned to made-up sha256 digests (the corpus is never pulled).
- terraform/*.tf: AWS S3 / EBS / RDS / security groups / IAM and GCP storage / firewall modules, with variables.
To change the corpus, edit or add those files and run this script.

Labels are not written by hand: `labels.json` holds what the oracle (every available scanner) finds in each file,
with the oracle's tool versions, and a file is vulnerable iff it has a finding. Manifests are rewritten in one
canonical style (synth.canonical_form: parsed and dumped, keys in the order written, comments dropped) so a parsed
and dumped copy equals the file, which keeps the diffs of synthetic (vulnerable, secure) pairs minimal.

    python scripts/build_e2_embedded.py            # canonicalize manifests, rewrite labels.json (runs the oracle)
    python scripts/build_e2_embedded.py --check    # exit 1 if a manifest is not canonical or a label differs
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from sv_env_config_verification.data import LABELS_FILE, Scanner, embedded_dir, label_files
from sv_env_config_verification.synth import canonical_form
from sv_shared.data.embedded import build_main

KINDS = ("kubernetes", "terraform")


def corpus() -> dict[str, tuple[str, str]]:
    """{path relative to the data folder: (kind, text in canonical form)} of every file in the kind folders (the
    loader takes every file there, so every one is labelled)."""
    root = embedded_dir()
    return {
        f"{kind}/{path.name}": (kind, canonical_form(kind, path.read_text(encoding="utf-8")))
        for kind in KINDS
        for path in sorted((root / kind).iterdir())
        if path.is_file()
    }


def files(oracle: Scanner | None = None) -> dict[Path, str]:
    """The corpus files in canonical form and labels.json from the oracle (the full default one unless given)."""
    root, texts = embedded_dir(), corpus()
    labels = label_files(texts, oracle)
    outputs = {root / path: text for path, (_, text) in texts.items()}
    outputs[root / LABELS_FILE] = json.dumps(labels, indent=2, sort_keys=True) + "\n"
    return outputs


def main(argv: Sequence[str] | None = None) -> int:
    return build_main(__doc__, files, script="scripts/build_e2_embedded.py", argv=argv)


if __name__ == "__main__":
    sys.exit(main())
