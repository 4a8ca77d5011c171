"""RunRecord: a fingerprint plus per-doc results and aggregates; read, validated and written atomically."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from repaudit.boundary import InputError, read_json, validate
from repaudit.run.diagnostics import Diagnostics
from repaudit.run.fingerprint import Fingerprint
from repaudit.run.metrics import Metric

RUN_SCHEMA_VERSION: Final = 3
#: run schemas this version reads (schema 2 records hold fingerprint schema 2, upgraded when read)
READABLE_RUN_SCHEMAS = (2, 3)


class Placement(BaseModel):
    """Where a grid executor ran one configuration (not part of the fingerprint: where, not what)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    executor: str
    """The executor: ``local`` (this process) or ``ray``."""
    endpoint: str | None = None
    """The served model's endpoint (replicas spread over): its base URL without credentials; None in-process."""
    ray_node: str | None = None
    """The Ray node id that ran it; None outside Ray."""


class ServedDoc(BaseModel):
    """What a served model's endpoint reported with one doc's answers (every request of the doc)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    system_fingerprints: list[str] = []
    """The distinct ``system_fingerprint`` values of the responses that answered the doc's requests, sorted (empty:
    the server sent none)."""
    finish_reasons: list[str] = []
    """generate_until: the server's ``finish_reason`` per generation (``stop``, ``length``); empty for
    log-likelihood requests."""
    completion_tokens: int | None = None
    """generate_until: tokens the server reports it generated (``usage.completion_tokens``); None where it reports
    none or for log-likelihood requests."""


def served_doc(answers: list) -> ServedDoc | None:
    """The :class:`ServedDoc` of one doc's answers (:class:`~repaudit.tasks.requests.Generation` or
    :class:`~repaudit.tasks.requests.LoglikelihoodResult`), or None where no answer came from an endpoint."""
    served = [a.served for a in answers if a.served is not None]
    if not served:
        return None
    fps = sorted({s["system_fingerprint"] for s in served if isinstance(s.get("system_fingerprint"), str)})
    reasons = [str(s["finish_reason"]) for s in served if s.get("finish_reason") is not None]
    toks = [s["completion_tokens"] for s in served if isinstance(s.get("completion_tokens"), int)]
    return ServedDoc(system_fingerprints=fps, finish_reasons=reasons, completion_tokens=sum(toks) if toks else None)


class DocResult(BaseModel):
    """One doc's outcome (each field's docstring says what it holds). ``doc_hash`` / ``prompt_hash`` /
    ``target_hash`` are computed as in lm-eval's sample logs, so they can be matched against them."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    doc_id: Annotated[int, Field(ge=0)]
    """The doc's position in the evaluated split after the task's processing (lm-eval's ``doc_id``)."""
    doc_hash: str
    """sha256 of the raw row as ``json.dumps(row, indent=2, ensure_ascii=False)`` (lm-eval's ``doc_hash``)."""
    prompt_hash: str
    """sha256 of the first request's context: the whole prompt, few-shot examples included."""
    target_hash: str
    """sha256 of ``target``."""
    target: str
    """Multiple choice: the gold index as text (``"2"``); loglikelihood: the scored continuation; generation:
    the reference answer."""
    gold: int | None
    """Index of the correct choice (0 for a loglikelihood task's single continuation); None for generation."""
    cluster: str | None
    """The doc's cluster for clustered standard errors and per-cluster few-shot pools (MMLU: its subject);
    None: the task has no clusters."""
    fewshot_ids: list[int]
    """Ids in the few-shot pool (the few-shot split, or a task's fixed samples) of the examples put before this doc,
    in prompt order; empty for 0-shot."""
    choices: list[str]
    """The scored choice texts (partial scoring, as WinoGrande: the contexts); empty for generation."""
    loglikelihoods: list[float]
    """Per choice: the continuation's summed log-probability in nats; empty for generation."""
    is_greedy: list[bool]
    """Per choice: greedy decoding would produce the continuation token for token; empty for generation."""
    continuation_tokens: list[int]
    """Per choice: the continuation's length in tokens; empty for generation."""
    prediction: int | str
    """Multiple choice: the index of the highest log-likelihood (ties to the first); loglikelihood: 1 if the
    continuation is greedy, else 0; generation: the first answer filter's extracted answer."""
    metrics: dict[str, float]
    """Per-doc metric values by key (``acc``, ``exact_match,strict-match``): 0 or 1 for accuracies; the
    aggregates in :attr:`RunRecord.metrics` are their means."""
    generation: str | None = None
    """generate_until: the generated text, cut before the first stop sequence; None for log-likelihood tasks."""
    extracted: dict[str, str] | None = None
    """generate_until: answer filter name → the answer it extracted; None for log-likelihood tasks."""
    generated_tokens: int | None = None
    """generate_until: tokens generated (an EOS counted); None for log-likelihood tasks."""
    finish: str | None = None
    """generate_until: why generation ended: ``stop:<sequence>``, ``eos`` or ``length`` (``max_gen_toks`` reached);
    None for log-likelihood tasks."""
    choices_hash: str | None = None
    """Log-likelihood tasks: sha256 of the JSON list of scored continuations (pairs docs across harnesses); None
    for generation."""
    unconditional_loglikelihoods: list[float] | None = None
    """acc_norm ``pmi`` only: each choice's log-likelihood after an empty context (nats); None otherwise."""
    served: ServedDoc | None = None
    """A served model (``--backend openai``): what its endpoint reported with this doc's answers; None for an
    in-process backend."""


class Timings(BaseModel):
    """What the run cost: wall-clock seconds by stage, batches computed or read from the store, and the work done."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    model_load_s: float
    """Seconds to load the backend and model (about 0 when an earlier run's loaded model was reused)."""
    eval_s: float
    """Seconds the backend spent answering the requests (batches read from the store included)."""
    total_s: float
    """Seconds from the start of the run to its record, everything included."""
    docs_per_s: float
    """Docs evaluated per second of ``eval_s``; 0.0 when ``eval_s`` is 0."""
    computed_batches: int
    """Batches the backend computed in this run."""
    cached_batches: int
    """Batches read from the batch store instead of computed."""
    tokens_computed: int = 0
    """Token positions run through the model for log-likelihood requests in this run (0 for generate_until)."""
    forward_s: float = 0.0
    """Seconds inside those log-likelihood forward passes (output layer and log-softmax included; on a GPU
    read after synchronising, so compute rather than kernel launch — a GPU run's file without
    ``gpu_memory_peak_mib`` was written before that and holds launch time here)."""
    model_load_parts_s: dict[str, float] | None = None
    """``model_load_s`` by part for the hf backend, in seconds — ``imports`` (torch, transformers, the model family's
    modules), ``device_init`` (the GPU's context; ~0 on the CPU), ``tokenizer``, ``weights`` (read, cast to the dtype,
    placed on the device), ``tokenizer_hash``, ``parameters`` (counted), ``attention_probe`` (the sdpa kernel the
    device picks), ``other`` (the rest); ``None`` where the model was reused from an earlier run or another backend
    loaded it, and in files written before it was recorded. Older files have fewer parts (their ``other`` held the
    tokenizer hash and the parameter count)."""
    eval_parts_s: dict[str, float] | None = None
    """``eval_s`` of log-likelihood requests by part for the hf backend, in seconds (``repaudit.backends.base.
    EVAL_PARTS``) — ``tokenise``, ``batch`` (grouping, sorting, building tensors, the batch store), ``forward`` (the
    decoder), ``logsoftmax`` (the output layer at the scored positions, log-softmax and the on-device gather),
    ``transfer`` (the scores read back); on a GPU each ends with a synchronised clock. ``None`` for generate_until
    and in files written before it was recorded."""
    gpu_memory_peak_mib: float | None = None
    """The most GPU memory torch held in tensors on the run's device during the run (MiB, weights included;
    ``torch.cuda.max_memory_allocated``); ``None`` on the CPU, for the vllm backend and in older files."""


class RunRecord(BaseModel):
    """A complete run file (``repaudit run -o run.json``). Non-finite floats are written as the
    ``NaN``/``Infinity`` constants (as lm-eval does) so that a record reads back as written."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants", use_attribute_docstrings=True)
    kind: Literal["repaudit.run"] = "repaudit.run"
    """Always ``repaudit.run``: marks the file as a repaudit run."""
    schema_version: Literal[2, 3] = RUN_SCHEMA_VERSION
    """The run file's schema; 2-files are upgraded when read (their fingerprint to schema 3)."""
    repaudit_version: str
    """The repaudit version that wrote the run."""
    created_at: str
    """When the record was made: ISO 8601 in UTC, to the second."""
    fingerprint: Fingerprint
    """Every setting the run used and the facts that identify what ran."""
    fingerprint_digest: str
    """sha256 of the fingerprint's canonical JSON (:meth:`Fingerprint.digest`), as it was when written."""
    metrics: list[Metric]
    """The aggregate scores, one per metric and variant."""
    docs: list[DocResult]
    """Per-doc results, one per evaluated doc."""
    timings: Timings
    """Where the run's time went."""
    diagnostics: Diagnostics | None = None
    """Silent-failure counts (:mod:`repaudit.run.diagnostics`); None in files written before they existed."""
    placement: Placement | None = None
    """Where a grid executor ran it (the endpoint of a replica, the Ray node); None for ``repaudit run``."""


def write_atomic(path: Path, content: str | bytes) -> None:
    """Write text (UTF-8) or bytes to ``path`` through a temporary file and rename, so no partial file is left:
    :func:`repaudit.outputs.write_file`, the one place output files are written.

    Raises:
        UsageError: ``path`` is not a regular file (a directory, a symbolic link, a device, a FIFO).
        OutputError: the write failed (a full disk); nothing was written.
    """
    from repaudit.outputs import write_file

    write_file(path, content)


def check_writable(path: Path, what: str = "output", mkdir: bool = False) -> None:
    """``path`` can be written as a regular file, checked before any work so that a long run never fails at the
    end: :func:`repaudit.outputs.check_target`.

    Raises:
        UsageError: ``path`` exists and is not a regular file.
        OutputError: a missing folder without ``mkdir``, a name the file system rejects, a folder that cannot be
            written.
    """
    from repaudit.outputs import check_target

    check_target(path, what, mkdir)


def write_record(record: RunRecord, path: Path) -> None:
    """Serialise ``record`` as indented JSON, atomically (:func:`repaudit.outputs.write_file`).

    Raises:
        UsageError: ``path`` is not a regular file; OutputError: the write failed (nothing was written).
    """
    from repaudit.outputs import write_file

    write_file(path, record.model_dump_json(indent=1))


def parse_record(raw: Any, path: Path) -> RunRecord:
    """Validate an already-parsed run file (limits were checked by :func:`repaudit.boundary.read_json`).

    Raises:
        InputError: not a repaudit run, another schema version, a value of the wrong type or range
            (named by its JSON path), no docs, duplicate doc ids, or per-choice lists of different lengths.
    """
    if not isinstance(raw, dict) or raw.get("kind") != "repaudit.run":
        raise InputError(path, None, 'is not a repaudit run (no "kind": "repaudit.run")')
    version = raw.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version not in READABLE_RUN_SCHEMAS:
        raise InputError(path, "$.schema_version", f"is run schema v{version}; this repaudit reads "
                         f"v{' and v'.join(map(str, READABLE_RUN_SCHEMAS))} (v2 records where the data came from and "
                         "a source-independent content hash): re-run it with this version")
    if version == 2 and isinstance(raw.get("fingerprint"), dict):
        from repaudit.run.fingerprint_v2 import FingerprintV2, upgrade

        old, _ = validate(FingerprintV2, raw["fingerprint"], path, prefix=("fingerprint",),
                          schema="fingerprint schema 2")
        raw = {**raw, "fingerprint": upgrade(old)}
    record, _ = validate(RunRecord, raw, path, schema=f"run schema v{version if version in (2, 3) else 3}")
    if not record.docs:  # every run evaluates at least one doc: an empty list is a damaged or hand-made file
        claimed = max((m.n for m in record.metrics), default=0)
        raise InputError(path, "$.docs", "is empty: a run file holds one result per evaluated doc"
                         + (f" (its metrics count {claimed})" if claimed else ""))
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
