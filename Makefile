# Quick start: `make demo` (train, export, translate, plot) and `make test`.
# Release checks: `make dist`, `make wheel-test`, `make docs`, `make lint`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: demo g2p-demo test bench bench-quick bench-peers dist wheel-test docs lint clean

# torch is pinned to the CPU build that pip finds on these machines; an
# unpinned torch pulls a multi-GB CUDA build.
BACKEND_PINS ?= "torch==2.13.0" "jax[cpu]>=0.4.30"
# What a new user meets from the installed wheel (the tutorial's script, the
# console script): run by `make wheel-test` only.
FRONT_DOOR_TESTS ?= tests/test_wheel_front_door.py
# Tests that run on every Keras backend (the rest needs TensorFlow).
BACKEND_TESTS ?= $(wildcard tests/test_compat*.py tests/test_layers*.py tests/test_rnn*.py tests/test_decoding*.py tests/test_visualization*.py tests/test_alignment*.py tests/test_location_sensitive_attention.py tests/test_monotonic_attention.py tests/test_stateful_in_rnn.py tests/test_tfa_attention_parity.py tests/test_seq2seq.py tests/test_seq2seq_generate_compiled.py tests/test_seq2seq_reliability.py tests/test_seq2seq_cross_entropy.py tests/test_seq2seq_projection_dtype.py tests/test_translator.py tests/test_distillation.py)

# Environments made before the rename hold this project as `keras-attention`,
# also the name of an unrelated 2019 package with the same import name
# `keras_attention`: it is removed before the install.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip uninstall --quiet --yes keras-attention 2>/dev/null || true
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

$(VENV)/.backends: $(STAMP)
	$(PY) -m pip install --quiet $(BACKEND_PINS)
	touch $@

# The optional tool sets: building and checking the distributions, the docs
# site, the linter, eflomal for reference alignments and the alignment
# benchmarks (extras of pyproject.toml).
$(VENV)/.release $(VENV)/.docs $(VENV)/.lint $(VENV)/.align: $(VENV)/.%: $(STAMP)
	$(PY) -m pip install --quiet -e ".[$*]"
	touch $@

demo: $(STAMP)
	$(PY) -m examples.nmt demo --out runs/demo

g2p-demo: $(STAMP)
	$(PY) -m examples.g2p demo --out runs/g2p-demo

# pytest workers (-n), one test file each at a time (module fixtures that train
# a tiny model run once): many tests wait on subprocesses, so two halve the
# wall time on 2 cores. Files go out in collection order, which
# tests/conftest.py makes longest first.
PYTEST := $(PY) -m pytest -q -p no:cacheprovider --dist loadfile --no-loadscope-reorder --durations=15

# The TensorFlow run is two processes (the library's tests, then the
# examples'): a pytest worker keeps what each test file leaves behind in
# TensorFlow's caches, and one process for all of them grew past 10 GiB.
# The examples' tests wait on subprocesses, servers and files: three
# workers keep 2 cores busier there (7.3 against 7.8 minutes; under 9 GB
# of memory in all); the library's tests run faster on two.
EXAMPLE_TESTS ?= $(filter-out $(BACKEND_TESTS) $(FRONT_DOOR_TESTS),$(wildcard tests/test_*.py))

test: $(STAMP) $(VENV)/.backends
	KERAS_BACKEND=tensorflow $(PYTEST) -n 2 $(BACKEND_TESTS)
	KERAS_BACKEND=tensorflow $(PYTEST) -n 3 $(EXAMPLE_TESTS)
	KERAS_BACKEND=jax $(PYTEST) -n 2 $(BACKEND_TESTS)
	KERAS_BACKEND=torch $(PYTEST) -n 2 $(BACKEND_TESTS)

# The wheel and the sdist in $(DIST), checked by twine and for their contents.
DIST ?= dist
dist: $(VENV)/.release
	rm -rf $(DIST)
	$(PY) -m build --outdir $(DIST) .
	$(PY) -m twine check --strict $(DIST)/*
	$(PY) tools/check_dist.py $(DIST)

# The wheel installed (not editable) into a fresh $(WHEEL_VENV), and tests run
# against it from outside the source tree: every module imports from the
# wheel (tools/test_installed_wheel.py, which also runs every public layer
# and the attention RNN), the front door (the tutorial's script and the
# console script) and the translator. The rest of the library's tests
# (the layers' among them, on three backends) ran on the same code in
# `make test`.
WHEEL_VENV ?= $(VENV)-wheel
WHEEL_TESTS ?= $(FRONT_DOOR_TESTS) tests/test_translator.py
wheel-test: dist
	PYTHON=$(PYTHON) tools/test_wheel.sh $(DIST) $(WHEEL_VENV) $(WHEEL_TESTS)

# The documentation site from docs/ and the docstrings; --strict turns broken
# links and missing references into errors; every public name of the package
# must have an entry in docs/api/; then the built HTML is checked as a
# browser follows it (every nav page built, no broken internal link or anchor).
SITE ?= site
docs: $(VENV)/.docs
	$(PY) tools/check_api_docs.py
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir $(SITE)
	$(PY) tools/check_site.py $(SITE)

lint: $(VENV)/.lint
	$(PY) -m ruff check .

bench-quick: $(STAMP)
	$(PY) -m benchmarks.run --quick

bench: $(STAMP)
	$(PY) -m benchmarks.run

# TFA 0.23 (end of life) only runs on TensorFlow 2.15 and Python 3.11: it gets
# its own venv, made here and never by `make test`.
TFA_VENV ?= .venv-tfa
TFA_PYTHON ?= python3.11
$(TFA_VENV)/.installed:
	$(TFA_PYTHON) -m venv $(TFA_VENV)
	$(TFA_VENV)/bin/pip install --quiet "tensorflow-cpu==2.15.1" "tensorflow-addons==0.23.0" "numpy<2"
	touch $@

bench-peers: $(STAMP) $(TFA_VENV)/.installed
	$(PY) -m benchmarks.peers --tfa-python $(TFA_VENV)/bin/python --out runs/bench-peers

clean:
	rm -rf $(VENV) $(WHEEL_VENV) $(TFA_VENV) runs $(DIST) $(SITE) build
