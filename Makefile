# Quick start: `make demo` (train, export, translate, plot) and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: demo test test-backends bench bench-quick clean

# torch is pinned to the CPU build that pip finds on these machines; an
# unpinned torch pulls a multi-GB CUDA build.
BACKEND_PINS ?= "torch==2.13.0" "jax[cpu]>=0.4.30"
# Tests that run on every Keras backend (the rest needs TensorFlow).
BACKEND_TESTS ?= $(wildcard tests/test_layers*.py tests/test_rnn*.py tests/test_decoding*.py tests/test_visualization*.py tests/test_backends*.py)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

$(VENV)/.backends: $(STAMP)
	$(PY) -m pip install --quiet $(BACKEND_PINS)
	touch $@

demo: $(STAMP)
	$(PY) -m examples.nmt demo --out runs/demo

# Two pytest workers, one test file each at a time (module fixtures that train
# a tiny model run once): many tests wait on subprocesses, so this halves the
# wall time on 2 cores.
PYTEST := $(PY) -m pytest -q -p no:cacheprovider -n 2 --dist loadfile

test: $(STAMP) $(VENV)/.backends
	KERAS_BACKEND=tensorflow $(PYTEST)
	KERAS_BACKEND=jax $(PYTEST) $(BACKEND_TESTS)
	KERAS_BACKEND=torch $(PYTEST) $(BACKEND_TESTS)

bench-quick: $(STAMP)
	$(PY) -m benchmarks.run --quick

bench: $(STAMP)
	$(PY) -m benchmarks.run

clean:
	rm -rf $(VENV) runs
