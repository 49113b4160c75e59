"""Label the E2 embedded corpus (envs/sv_env_config_verification/data/) and grow it with E2's synthetic recipe,
deterministically. This script is the one way labels.json and synthetic.jsonl are written.

The hand-written files are their own source, kept as a user would keep them in a repository:
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

`synthetic.jsonl` holds variants of the secure hand-written files made by synth.generate, each kept only when the
oracle confirms it (every flaw a mutation introduces is found; a secure edit leaves nothing to find), with its
base, generator, parameters, seed and findings: every single mutation, MUTATION_PAIRS pairs of mutations, and every
secure edit and pair of secure edits. A variant belongs to its base's template, so curate keeps a base and all its
variants in one split.

    python scripts/build_e2_embedded.py            # canonicalize manifests, rewrite labels.json and synthetic.jsonl
    python scripts/build_e2_embedded.py --check    # exit 1 if a manifest is not canonical or a label differs
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl

from sv_env_config_verification import synth
from sv_env_config_verification.data import (
    LABELS_FILE,
    SYNTHETIC_FILE,
    Scanner,
    corpus_paths,
    default_oracle,
    embedded_dir,
    label_files,
    labelled_frame,
    synthetic_records,
)
from sv_shared.data.embedded import build_main, jsonl_text

KINDS = ("kubernetes", "terraform")
SEED = 42
EVERY = 1_000_000
"""More variants than any recipe can make: all its confirmed candidates are kept."""
MUTATION_PAIRS = 110
"""Two-flaw variants kept (of ~550 confirmable): enough that the held-out test split passes 50 items."""
RECIPES: tuple[tuple[Callable[[str], list[str]], int], ...] = (
    (synth.mutations_for, EVERY),
    (synth.mutation_pairs_for, MUTATION_PAIRS),
    (synth.secure_edits_for, EVERY),
    (synth.secure_edit_pairs_for, EVERY),
)


def corpus() -> dict[str, tuple[str, str]]:
    """{path relative to the data folder: (kind, text in canonical form)} of every file in the kind folders (the
    loader takes every file there, so every one is labelled)."""
    root = embedded_dir()
    return {
        f"{kind}/{path.name}": (kind, synth.canonical_form(kind, path.read_text(encoding="utf-8")))
        for kind in KINDS
        for path in sorted((root / kind).iterdir())
        if path.is_file()
    }


def variants(bases: pl.DataFrame, oracle: Scanner) -> pl.DataFrame:
    """Every recipe's oracle-confirmed variants of the secure bases, without duplicates."""
    made = [synth.generate(bases, n, SEED, oracle, recipe=recipe) for recipe, n in RECIPES]
    return pl.concat(made).unique(subset="config_id", keep="first").sort("config_id")


def files(oracle: Scanner | None = None) -> dict[Path, str]:
    """The corpus files in canonical form, labels.json and synthetic.jsonl from the oracle (the full default one
    unless given)."""
    scanner = oracle or default_oracle()
    root, texts = embedded_dir(), corpus()
    labels = label_files(texts, scanner)
    bases = labelled_frame(texts, labels["files"])
    records = synthetic_records(variants(bases, scanner), bases, corpus_paths(texts))
    outputs = {root / path: text for path, (_, text) in texts.items()}
    outputs[root / LABELS_FILE] = json.dumps(labels, indent=2, sort_keys=True) + "\n"
    outputs[root / SYNTHETIC_FILE] = jsonl_text(records)
    return outputs


def main(argv: Sequence[str] | None = None) -> int:
    return build_main(__doc__, files, script="scripts/build_e2_embedded.py", argv=argv)


if __name__ == "__main__":
    sys.exit(main())
