"""``repaudit determinism``: does the same request give the same log-probabilities and the same answer whatever else
is in the batch, run after run — and where does it stop being so?

This module holds the findings and how they are judged; :mod:`repaudit.audit.determinism_run` measures them.
Every axis compares the probed docs' answers under one configuration (a *point*) with a reference configuration,
bit for bit:

* **repeat** — the base configuration again, N times, against its first pass;
* **batch** — each probed doc among B − 1 other requests (needle in a batch, as vLLM's
  ``tests/v1/determinism/test_batch_invariance.py``), against the doc scored alone (B = 1); a served model: B rows
  in one request;
* **concurrency** — a served model: each probed doc's requests among N − k other requests in flight at once (each
  its own HTTP request, so the server batches them as it batches its users'), against the doc sent alone (vLLM
  #11778: batch 1 vs N);
* **order** — the same batch in shuffled orders, against its first order;
* **cache** — repaudit's batch store written and read, against no store; vLLM's prefix cache warm against cold;
* **prefix-cache** — the engine's prefix cache: the probed docs sent cold (the cache emptied where the engine or
  server offers it) then warm, log-likelihoods and a short greedy generation of each doc (prompt log-probabilities
  may skip the cache by construction: vLLM #42245);
* **seed** — sampled generations of the probed docs' prompts: the same seed twice must give the same samples (else
  "seed not honoured", vLLM #21310, SGLang #15481), and another seed other samples (said, not judged);
* **threads** — CPU thread counts, against the first;
* **process** — the base configuration in a fresh process each time (the model loaded again), against the first,
  with the environment that governs numerics recorded per process;
* **dtype** — the control: the other dtype (float32 ↔ bfloat16), to show what a real numeric change looks like;
  it never decides the exit code;
* **tp** — tensor-parallel sizes of a vLLM engine, where several GPUs exist (skipped with the reason otherwise).

A point's verdict is ``bit-identical`` (every log-likelihood, greedy flag and generated text has the same bits),
``numerically different, same predictions`` (bits differ, no doc's prediction or per-doc metric does) or
``predictions differ``; an axis takes its worst point's. The command exits 0 when every measured axis is
bit-identical, 1 when predictions differ on one, 2 when only log-likelihoods (or generated tokens) differ — as
``gate``'s 0/1/2 — and 65 when no axis could be measured.
"""

from __future__ import annotations

import math
import struct
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict

from repaudit.audit.stat_settings import StatSettings
from repaudit.backends.server import ServerFacts
from repaudit.errors import RepauditError

Axis = Literal["repeat", "batch", "concurrency", "order", "cache", "prefix-cache", "seed", "threads", "process",
               "dtype", "tp"]
#: every axis, in the order they run and are reported
AXES: tuple[str, ...] = get_args(Axis)
#: the axes run without --axes, by backend (process loads the model again per repeat, seed samples: asked for)
DEFAULT_AXES: dict[str, tuple[str, ...]] = {
    "hf": ("repeat", "batch", "order", "cache", "threads", "dtype", "tp"),
    "vllm": ("repeat", "batch", "order", "cache", "threads", "dtype", "tp"),
    "openai": ("repeat", "batch", "concurrency", "order", "cache", "prefix-cache", "seed")}
#: axes that are controls: they show a real numeric change and never decide the exit code
CONTROLS = ("dtype",)
Verdict = Literal["bit-identical", "numerically different, same predictions", "predictions differ", "skipped"]
#: verdicts from best to worst
ORDER: tuple[Verdict, ...] = ("bit-identical", "numerically different, same predictions", "predictions differ")
#: exit code of each overall verdict (gate's 0/1/2: 0 pass, 1 the decision that fails, 2 in between)
EXIT = {"bit-identical": 0, "predictions differ": 1, "numerically different, same predictions": 2}
#: sysexits' EX_DATAERR: no axis could be measured (every one asked skipped, or only the control asked)
EX_NOTHING = 65


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class AxisPoint(_Record):
    """One configuration of an axis against the axis's reference, on every probed doc."""

    label: str
    """The configuration (``B=8``, ``repeat 3``, ``threads 2``, ``store read``, ``bfloat16``)."""
    n_docs: int
    """Docs probed."""
    docs_changed: int
    """Docs with any answer whose bits differ from the reference's: a log-likelihood, a greedy flag or a generated
    text."""
    requests_changed: int
    """Requests (choices, generations) whose answer's bits differ."""
    max_abs_delta: float | None
    """Largest |Δ log-likelihood| over every request, in nats (natural-log probability units; Δ = this point −
    the reference); None for generation tasks."""
    doc_max_abs_delta: list[float]
    """Per probed doc, in probe order: the largest |Δ log-likelihood| over its requests (nats); empty for
    generation tasks."""
    flips: int
    """Docs whose prediction (acc's argmax; a generation's extracted answer) or any per-doc metric differs."""
    changed_doc_ids: list[int]
    """Ids of the docs counted in ``docs_changed``."""
    flipped_doc_ids: list[int]
    """Ids of the docs counted in ``flips``."""
    divergence: dict[int, int] = {}
    """generate_until: doc id → the first token (0-based, of the generated text re-tokenised) where its generation
    differs from the reference's, for every doc whose generation differs."""
    scores: dict[str, float]
    """Per-doc metric → its mean over the probed docs (metric units: 0–1 for accuracies)."""
    verdict: Verdict
    """``bit-identical``, ``numerically different, same predictions`` or ``predictions differ``."""
    note: str | None = None
    """What this point could not do as asked (a batch smaller than B where the split has too few requests), else
    None."""
    judged: bool = True
    """Whether the point decides its axis's verdict; False for a point shown for contrast (the seed axis's other
    seed, expected to give other samples)."""
    environment: dict[str, Any] = {}
    """process: the environment that governs numerics in that process (thread counts, ``OMP_*``, ``MKL_*`` and
    ``CUBLAS_*`` variables, torch's deterministic-algorithms switch); empty for other axes."""


class AxisResult(_Record):
    """One axis: its points against one reference, the worst verdict, and what a compare would show."""

    axis: Axis
    """The axis (see the module docstring)."""
    reference: str
    """The configuration every point is compared with (``B=1 (alone)``, ``repeat 1``, ``no store``, …)."""
    reference_scores: dict[str, float] = {}
    """Per-doc metric → its mean over the probed docs under the reference (metric units)."""
    points: list[AxisPoint] = []
    """The configurations compared, in the order they ran."""
    verdict: Verdict
    """The worst point's verdict; ``skipped`` when the axis could not run here (``skipped`` says why)."""
    control: bool = False
    """A control axis (dtype): it shows a real numeric change and never decides the exit code."""
    skipped: str | None = None
    """Why the axis did not run here; None: it ran."""
    notes: list[str] = []
    """What qualifies the result (a mechanism that makes the axis identical by construction, a cache that was not
    read, the distinct completions of a repeat)."""
    reference_environment: dict[str, Any] = {}
    """process: the reference process's numerics environment (as :attr:`AxisPoint.environment`); empty otherwise."""
    expected_compare: str = ""
    """What ``repaudit compare`` of two runs that differ only along this axis would be expected to show."""
    seconds: float = 0.0
    """Wall-clock seconds the axis took."""


class Trace(_Record):
    """Every answer of one configuration of one axis, request by request (``--keep-traces``), so that two reports —
    two machines, two library versions — are compared offline without a model (``repaudit determinism --diff``)."""

    axis: str
    """The axis."""
    label: str
    """The configuration (a point's label, or ``reference``)."""
    doc_ids: list[int]
    """The probed docs, in probe order."""
    keys: list[list[str]]
    """Per doc, per request: the request's key (sha256 of its context and continuation or generation settings), the
    same on any machine for the same request."""
    logprobs: list[list[float]] | None = None
    """Per doc, per request: the log-likelihood in nats (JSON floats round-trip every bit); None for generations."""
    greedy: list[list[bool]] | None = None
    """Per doc, per request: is_greedy; None for generations."""
    texts: list[list[str]] | None = None
    """Per doc, per request: the generated text; None for log-likelihoods."""


class DeterminismReport(_Record):
    """The result of ``repaudit determinism`` (JSON-ready; also the file ``sweep`` and ``attribute`` read as the
    backend's numerical noise floor with ``--noise-floor``)."""

    kind: Literal["repaudit.determinism"] = "repaudit.determinism"
    """Marks the file as a determinism report."""
    repaudit_version: str
    """repaudit's version."""
    created_at: str
    """When the report was made (ISO 8601, UTC)."""
    git_commit: str | None = None
    """The repaudit checkout's commit, if any."""
    task: str
    """The task probed."""
    output_type: str
    """multiple_choice, loglikelihood or generate_until."""
    model: str
    """The model as named on the command line."""
    weights_sha256: str | None
    """sha256 over the weight files loaded; None: a served model (its files are the server's)."""
    backend: str
    """The backend: hf, vllm or openai."""
    device: str | None
    """The device the model ran on; None: a served model (not told)."""
    dtype: str | None
    """The dtype the weights were loaded in (the dtype axis's other dtype is its control); None: a served model whose
    server does not tell."""
    server: ServerFacts | None = None
    """A served model's endpoint: the server, its version, the model id and root, what it could not tell."""
    batch_size: int
    """The base batch size (repeat, cache, threads, dtype; order's batch)."""
    torch_threads: int
    """torch's intra-op threads of the base configuration."""
    n_docs: int
    """Docs probed."""
    doc_ids: list[int]
    """Their ids, in probe order."""
    metrics: list[str]
    """The per-doc metrics compared."""
    axes_asked: list[str]
    """The axes asked for, in run order."""
    axes: list[AxisResult]
    """One result per axis asked."""
    modes: dict[str, Any]
    """The determinism switches in force (:class:`repaudit.backends.determinism.DeterminismModes`), the attention
    kernel and, for vLLM, its batch-invariant mode."""
    engine: dict[str, Any] = {}
    """The backend's engine facts, as a run file records them."""
    unsupported: str | None = None
    """Why nothing ran: a mode asked for that this build cannot run; None: the axes ran."""
    verdict: Verdict
    """The worst verdict over the measured axes that are not controls; ``skipped`` when none was measured."""
    exit_code: int
    """The command's exit code: 0 bit-identical, 1 predictions differ, 2 only numbers differ, 65 nothing measured."""
    wall_s: float = 0.0
    """Wall-clock seconds of the whole probe, model loads included."""
    traces: list[Trace] | None = None
    """Every answer of every configuration (``--keep-traces``); None: not kept."""
    stat_settings: StatSettings | None = None
    """How intervals were made, as every report says: None, for determinism makes no interval and no test — it
    counts the bits, docs and predictions that differ (``sweep``/``attribute --noise-floor`` take the spread of its
    scores, a standard deviation, and judge against it with their own settings)."""


def bits(x: float) -> bytes:
    """The IEEE-754 double bits of ``x`` (NaN equals NaN, 0.0 differs from −0.0: what "bit-identical" means)."""
    return struct.pack("<d", float(x))


def abs_delta(a: float, b: float) -> float:
    """|a − b| in the numbers' unit; 0 for identical bits (two −inf included), inf where one is not finite."""
    if bits(a) == bits(b):
        return 0.0
    d = abs(float(a) - float(b))
    return d if math.isfinite(d) else math.inf


def worst(verdicts: list[str]) -> Verdict:
    """The worst of ``verdicts`` (skipped ones left out); ``skipped`` when none is left."""
    i = max((ORDER.index(v) for v in verdicts if v in ORDER), default=None)
    return ORDER[i] if i is not None else "skipped"


def point_verdict(docs_changed: int, flips: int) -> Verdict:
    """A point's verdict from its counts."""
    return "predictions differ" if flips else ("numerically different, same predictions" if docs_changed else
                                               "bit-identical")


def worst_key(p: AxisPoint) -> tuple:
    """How bad a point is: judged before shown-for-contrast, then its verdict, its flips, its changed docs, its
    largest |Δ|."""
    return p.judged, ORDER.index(p.verdict), p.flips, p.docs_changed, p.max_abs_delta or 0.0


def overall(axes: list[AxisResult]) -> tuple[Verdict, int]:
    """The report's verdict and exit code: the worst measured axis that is not a control (:data:`EXIT`); 65 when
    none was measured."""
    v = worst([a.verdict for a in axes if not a.control])
    return v, EXIT.get(v, EX_NOTHING)


def _pct(n: int, total: int) -> str:
    return f"{n} of {total}"


def expected_compare(axis: AxisResult, n_docs: int, metric: str | None) -> str:
    """What ``repaudit compare`` of two runs differing only along ``axis`` would be expected to show, from the
    axis's worst point (``metric``: the one whose Δ is quoted)."""
    if axis.skipped is not None or not axis.points:
        return "not measured here: nothing to expect"
    p = max(axis.points, key=worst_key)
    what = {"repeat": "two repeated runs", "batch": "two runs at different batch sizes",
            "order": "two runs whose requests arrive in other orders",
            "cache": "a run from the batch store and one recomputed", "threads": "two runs on other thread counts",
            "concurrency": "two runs of a served model under other loads (requests in flight)",
            "prefix-cache": "a run on a cold engine and one on a warm one", "seed": "two sampled runs with one seed",
            "process": "two runs in separate processes",
            "dtype": "two runs in different dtypes", "tp": "two runs at other tensor-parallel sizes"}[axis.axis]
    answers = "generation" if p.max_abs_delta is None else "log-likelihood"
    if p.verdict == "bit-identical":
        return f"{what}: identical per-doc results — no changed {answers}, no flipped doc, Δ 0 in every metric"
    delta = "" if p.max_abs_delta is None else f" (up to {p.max_abs_delta:.2g} nats apart)"
    head = f"{what}: {_pct(p.docs_changed, n_docs)} probed docs with other {answers}s{delta}"
    if p.verdict != "predictions differ":
        return head + "; no flipped doc, so Δ 0 in every metric and no flip in compare's tables"
    moved = ""
    if metric is not None and metric in p.scores and metric in axis.reference_scores:
        moved = f", {metric} moving by {100 * (p.scores[metric] - axis.reference_scores[metric]):+.2f} pts here"
    return (head + f"; {_pct(p.flips, n_docs)} docs flipped ({p.label}){moved} — compare would list them as flips "
            "and count them in its paired test: numerical noise, not a setting")


class NoiseFloor(_Record):
    """The numerical noise floor of a backend, from a determinism report: the spread of a metric's score over the
    report's measured configurations (controls left out), for ``sweep`` and ``attribute`` (``--noise-floor``)."""

    source: str
    """The determinism report's file."""
    metric: str
    """The metric."""
    scores: list[float]
    """Each axis's reference score, then each point's (metric units), over the report's probed docs."""
    sd: float
    """Sample standard deviation (ddof 1) of ``scores``; 0.0 for a single score."""
    method: str
    """What the floor is, in words (for the report that uses it)."""


def read_report(path) -> DeterminismReport:
    """A determinism report read through the input boundary.

    Raises:
        RepauditError: a file that cannot be read, or is not a ``repaudit determinism`` JSON report.
    """
    from pathlib import Path

    from repaudit.boundary import read_json, validate

    obj = read_json(Path(path), what="determinism report")
    if not isinstance(obj, dict) or obj.get("kind") != "repaudit.determinism":
        raise RepauditError(f"'{path}' is not a repaudit determinism report (write one with repaudit determinism "
                            "--json -o FILE)")
    return validate(DeterminismReport, obj, Path(path))[0]


def check_floor(path, task: str | None = None, backend: str | None = None, dtype: str | None = None
                ) -> DeterminismReport:
    """The determinism report at ``path``, checked usable as the noise floor of a grid on ``task`` (where given;
    and whose base runs on ``backend`` in ``dtype``, where given: sweep's base).

    Raises:
        RepauditError: an unreadable report, one of another task, backend or dtype, or one that measured no axis.
    """
    r = read_report(path)
    if task not in (None, r.task) or backend not in (None, r.backend) or dtype not in (None, r.dtype):
        raise RepauditError(f"--noise-floor '{path}' measured {r.task} on {r.backend} {r.dtype}; this base runs "
                            f"{task}" + (f" on {backend} {dtype}" if backend else "")
                            + ": measure that configuration with repaudit determinism")
    if not any(not a.control and a.skipped is None and a.points for a in r.axes):
        raise RepauditError(f"--noise-floor '{path}' measured no axis: nothing to take a floor from")
    return r


def noise_floor(path, task: str, metric: str, backend: str | None = None, dtype: str | None = None) -> NoiseFloor:
    """The numerical noise floor of ``metric`` from the determinism report at ``path`` (checked as
    :func:`check_floor` checks it): every measured axis's reference score and its points' scores, controls left
    out.

    Raises:
        RepauditError: what :func:`check_floor` raises, or a report without ``metric``.
    """
    import numpy as np

    r = check_floor(path, task, backend, dtype)
    if metric not in r.metrics:
        raise RepauditError(f"--noise-floor '{path}' has no metric '{metric}': it has {', '.join(r.metrics)}")
    # the seed axis samples generations of a log-likelihood task's prompts: it scores no metric, no floor from it
    axes = [a for a in r.axes if not a.control and a.skipped is None and a.points and metric in a.reference_scores]
    scores = [s for a in axes for s in [a.reference_scores[metric], *(p.scores[metric] for p in a.points
                                                                       if metric in p.scores)]]
    sd = float(np.std(scores, ddof=1)) if len(scores) > 1 else 0.0
    method = (f"determinism report '{path}': spread of {metric} over {len(scores)} configurations of {r.backend} "
              f"{r.dtype}'s numerics ({', '.join(a.axis for a in axes)}) on {r.n_docs} probed docs")
    return NoiseFloor(source=str(path), metric=metric, scores=scores, sd=sd, method=method)
