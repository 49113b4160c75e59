"""Write tests/scope_seconds.json from a measured run's JUnit XML: the seconds each scheduling unit (a module, or the
served-model group) took, which tests/conftest.py orders the suite by, longest first.

    python -m pytest --junitxml=/tmp/junit.xml && python tests/scope_seconds.py /tmp/junit.xml
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from conftest import SCOPE_SECONDS, _served_modules, scope_of


def scope_seconds(junit_xml: Path, rootpath: Path) -> dict[str, float]:
    served = _served_modules(rootpath)
    totals: dict[str, float] = defaultdict(float)
    for case in ET.parse(junit_xml).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")
        path = "/".join(part for part in module if not part[:1].isupper()) + ".py"
        totals[scope_of(path, served)] += float(case.get("time", 0.0))
    return {scope: round(total, 1) for scope, total in sorted(totals.items(), key=lambda kv: -kv[1])}


def main() -> None:
    rootpath = Path(__file__).resolve().parents[1]
    totals = scope_seconds(Path(sys.argv[1]), rootpath)
    SCOPE_SECONDS.write_text(json.dumps(totals, indent=1) + "\n", encoding="utf-8")
    print(f"{len(totals)} units, {sum(totals.values()):.0f} s in all → {SCOPE_SECONDS}")


if __name__ == "__main__":
    main()
