# The two entry points named in README.md.  Each creates .venv on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test venv clean gpu-check

$(BIN)/memsched: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,dask]'
	$(BIN)/pip install -q torch==2.13.0
	touch $(BIN)/memsched

venv: $(BIN)/memsched

demo: venv
	$(BIN)/memsched crosscheck instances/shipped/unet_small.json --time-limit 10

test: venv
	$(BIN)/python -m pytest -q -n 2

# Every shipped model graph on a CUDA GPU (benchmarks/gpu_check.py); one line and exit 0 without a GPU.
gpu-check: venv
	$(BIN)/python benchmarks/gpu_check.py

clean:
	rm -rf $(VENV) build *.egg-info
