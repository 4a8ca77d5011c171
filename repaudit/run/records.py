"""RunRecord: a fingerprint plus per-doc results and aggregates; read, validated and written atomically."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from repaudit.boundary import InputError, read_json, validate
from repaudit.run.diagnostics import Diagnostics
from repaudit.run.fingerprint import Fingerprint
from repaudit.run.metrics import Metric

RUN_SCHEMA_VERSION = 2


class DocResult(BaseModel):
    """One doc's outcome.

    For multiple choice: ``loglikelihoods``, ``is_greedy`` and ``continuation_tokens`` per choice
    (in nats / bool / tokens), ``prediction`` the argmax choice index. For generation:
    ``generation`` the raw text, ``extracted`` the answer per filter, ``prediction`` the
    strict-match answer. ``doc_hash`` / ``prompt_hash`` / ``target_hash`` are computed as in
    lm-eval's sample logs, so they can be matched against them.
    """

    model_config = ConfigDict(extra="forbid")
    doc_id: Annotated[int, Field(ge=0)]
    doc_hash: str
    prompt_hash: str
    target_hash: str
    target: str
    gold: int | None
    cluster: str | None
    fewshot_ids: list[int]
    choices: list[str]
    loglikelihoods: list[float]
    is_greedy: list[bool]
    continuation_tokens: list[int]
    prediction: int | str
    metrics: dict[str, float]
    generation: str | None = None
    extracted: dict[str, str] | None = None
    #: generate_until: tokens generated and why generation ended (``stop:<s>``, ``eos``, ``length``)
    generated_tokens: int | None = None
    finish: str | None = None
    #: sha256 of the JSON list of scored continuations (log-likelihood tasks): pairs docs across harnesses
    choices_hash: str | None = None
    #: acc_norm pmi: each choice's log-likelihood after an empty context (nats)
    unconditional_loglikelihoods: list[float] | None = None


class Timings(BaseModel):
    """Wall-clock seconds. ``computed_batches`` ran now; ``cached_batches`` came from the store;
    ``tokens_computed`` is the number of positions the decoder ran for loglikelihood requests now,
    ``forward_s`` the seconds spent inside those forward passes (output layer and log-softmax included; on a
    GPU read after synchronising, so it is compute, not kernel launch; a GPU run's file without
    ``gpu_memory_peak_mib`` was written before that and holds launch time there).

    Added later (absent in older files, read as ``None``): ``model_load_parts_s``, the seconds of
    ``model_load_s`` by part for the hf backend — ``imports`` (torch, transformers), ``device_init`` (the
    GPU's context; ~0 on the CPU), ``tokenizer``, ``weights`` (read, cast to the dtype, placed on the
    device), ``other`` (tokenizer hash, parameter count) — ``None`` where this run reused a model loaded
    by an earlier run of the process, or another backend loaded it;
    ``gpu_memory_peak_mib``, the most GPU memory torch held in tensors on the run's device during the run
    (MiB, weights included; ``torch.cuda.max_memory_allocated``), ``None`` on the CPU and for the vllm
    backend (its engine allocates outside this counter)."""

    model_config = ConfigDict(extra="forbid")
    model_load_s: float
    eval_s: float
    total_s: float
    docs_per_s: float
    computed_batches: int
    cached_batches: int
    tokens_computed: int = 0
    forward_s: float = 0.0
    model_load_parts_s: dict[str, float] | None = None
    gpu_memory_peak_mib: float | None = None


class RunRecord(BaseModel):
    """A complete run file (``repaudit run -o run.json``). Non-finite floats are written as the
    ``NaN``/``Infinity`` constants (as lm-eval does) so that a record reads back as written."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")
    kind: Literal["repaudit.run"] = "repaudit.run"
    schema_version: Literal[2] = RUN_SCHEMA_VERSION
    repaudit_version: str
    created_at: str
    fingerprint: Fingerprint
    fingerprint_digest: str
    metrics: list[Metric]
    docs: list[DocResult]
    timings: Timings
    #: silent-failure counts (:mod:`repaudit.run.diagnostics`); absent in files written before they existed
    diagnostics: Diagnostics | None = None


def write_atomic(path: Path, content: str | bytes) -> None:
    """Write text (UTF-8) or bytes to ``path`` through a temporary file and rename, so no partial
    file is left."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(content.encode("utf-8") if isinstance(content, str) else content)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a run file is meant to be shared
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def check_writable(path: Path, what: str = "output") -> None:
    """``path`` can be written as a file, checked before any work so that a long run never fails at the end.

    Creates nothing: where the folder exists, a temporary file is created and removed in it (the only
    reliable test, e.g. for ``/proc`` or a read-only mount); otherwise the nearest existing ancestor
    must be a writable directory.

    Raises:
        RepauditError: a directory at ``path``, a file where a folder should be, a name the file
            system rejects, or a folder that cannot be written.
    """
    from repaudit.errors import RepauditError

    path = Path(path)
    if len(path.name.encode("utf-8", "surrogateescape")) > 255:
        raise RepauditError(f"{what} '{str(path)[:80]}…' has a file name over 255 bytes")
    if path.is_dir():
        raise RepauditError(f"{what} '{path}' is a directory: give a file name")
    parent = path.parent
    ancestor = next((p for p in [parent, *parent.parents] if p.exists()), None)
    if ancestor is None or not ancestor.is_dir():
        raise RepauditError(f"{what} '{path}' cannot be written: '{ancestor}' is a file, not a folder")
    if ancestor != parent:
        if not os.access(ancestor, os.W_OK | os.X_OK):
            raise RepauditError(f"{what} '{path}' cannot be written: folder '{ancestor}' is not writable")
        return
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:40]}.", dir=parent)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise RepauditError(f"{what} '{path}' cannot be written in '{parent}' ({exc.strerror or exc})") from None


def write_record(record: RunRecord, path: Path) -> None:
    """Serialise ``record`` as indented JSON, atomically."""
    write_atomic(path, record.model_dump_json(indent=1))


def parse_record(raw: Any, path: Path) -> RunRecord:
    """Validate an already-parsed run file (limits were checked by :func:`repaudit.boundary.read_json`).

    Raises:
        InputError: not a repaudit run, another schema version, a value of the wrong type or range
            (named by its JSON path), duplicate doc ids, or per-choice lists of different lengths.
    """
    if not isinstance(raw, dict) or raw.get("kind") != "repaudit.run":
        raise InputError(path, None, 'is not a repaudit run (no "kind": "repaudit.run")')
    version = raw.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version != RUN_SCHEMA_VERSION:
        raise InputError(path, "$.schema_version", f"is run schema v{version}; this repaudit reads "
                         f"v{RUN_SCHEMA_VERSION} (v2 records where the data came from and a source-independent "
                         "content hash): re-run it with this version")
    record, _ = validate(RunRecord, raw, path, schema=f"run schema v{RUN_SCHEMA_VERSION}")
    seen: dict[int, int] = {}
    for i, d in enumerate(record.docs):
        if d.doc_id in seen:
            raise InputError(path, f"$.docs[{i}].doc_id",
                             f"duplicate doc_id {d.doc_id} (also $.docs[{seen[d.doc_id]}])")
        seen[d.doc_id] = i
        n = len(d.loglikelihoods)
        if n and not (len(d.choices) == len(d.is_greedy) == len(d.continuation_tokens) == n):
            raise InputError(path, f"$.docs[{i}]", f"choices, loglikelihoods, is_greedy and continuation_tokens "
                                                   f"have different lengths ({len(d.choices)}, {n}, "
                                                   f"{len(d.is_greedy)}, {len(d.continuation_tokens)})")
    return record


def read_record(path: Path) -> RunRecord:
    """Read and validate a run file through the input boundary (limits first).

    Raises:
        InputError: unreadable, not JSON, over a limit, not a repaudit run, or failing the schema.
    """
    return parse_record(read_json(path, what="run file"), Path(path))
