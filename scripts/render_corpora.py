"""Render every shipped embedded corpus from its source data, or check that the shipped files are current.

The sources are data files under scripts/corpus_sources/ (outside the packages, so they do not ship):
    e3_code_vulnerability/<item>.yaml         E3 repair items: module, fix, functional and exploit tests
                                              (e3-synthetic: the recipe's generated repair items, harness-validated)
    e4_phishing_detection/{cases,tables}.yaml E4 texts in four languages and the tables the cases draw from
    e5_redteam_attack/behaviors.yaml          E5 behaviours
    e6_redteam_defense/conversations.yaml     E6 conversations (labelled from the shipped policy_library.yaml)
    judge_validation/{categories,templates,benign}.yaml  the templated judge set (judge-templated); the shipped
                                              set (judge) joins real responses with their hand labels
E2's manifests and Terraform modules are their own source (envs/sv_env_config_verification/data/); only their
labels are computed. E1 is a seeded simulation, its scenario scripts its source.

Each corpus has one build script, scripts/build_*.py, holding only what has to be computed (draws, hashes, RFC 5322
rendering, policy and oracle labels, harness validation); this entry point runs them together. After E3's items change,
scripts/validate_e3_payload_variants.py validates their payload variants again (its --check names stale rows).

    .venv/bin/python scripts/render_corpora.py                   # rewrite every corpus
    .venv/bin/python scripts/render_corpora.py --check           # exit 1 if any shipped file differs
    .venv/bin/python scripts/render_corpora.py --check e4 judge  # only these corpora
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from sv_shared.data.embedded import check_or_write

SCRIPTS = Path(__file__).resolve().parent
CORPORA: dict[str, str] = {
    "e1": "build_e1_embedded",
    "e2": "build_e2_embedded",
    "e3": "build_e3_embedded",
    "e3-synthetic": "build_e3_synthetic",
    "e4": "build_e4_embedded",
    "e5": "build_e5_embedded",
    "e6": "build_e6_embedded",
    "judge": "build_judge_validation",
    "judge-templated": "build_judge_validation_templated",
}


def builder(corpus: str) -> ModuleType:
    """The corpus's build script as a module (scripts/ is not a package, so it is loaded from its path)."""
    name = CORPORA[corpus]
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {name}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while they are defined
        spec.loader.exec_module(module)
    return sys.modules[name]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the shipped files instead of writing")
    parser.add_argument("corpora", nargs="*", metavar="corpus", help=f"one of {', '.join(CORPORA)} (default: all)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.corpora) - set(CORPORA))
    if unknown:
        parser.error(f"unknown corpora {unknown}; choose from {list(CORPORA)}")
    status = 0
    for corpus in args.corpora or CORPORA:
        script = f"scripts/{CORPORA[corpus]}.py"
        print(f"{corpus} ({script})", flush=True)
        status |= check_or_write(builder(corpus).files(), check=args.check, script=script)
    return status


if __name__ == "__main__":
    sys.exit(main())
