# Quick start: `make demo` (train, export, translate, plot) and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: demo test test-backends bench bench-quick clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m examples.nmt demo --out runs/demo

test: $(STAMP)
	$(PY) -m pytest -q

bench-quick: $(STAMP)
	$(PY) -m benchmarks.run --quick

bench: $(STAMP)
	$(PY) -m benchmarks.run

clean:
	rm -rf $(VENV) runs
