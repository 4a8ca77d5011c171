"""``repaudit determinism``'s building blocks: the probed docs rendered once, the backend called by hand for a
configuration, every answer compared bit for bit (:mod:`repaudit.audit.determinism` says what each axis is and how
it is judged; :mod:`repaudit.audit.determinism_run` runs the axes).

The batch store is never read here (every pass computes), except by the cache axis, which writes and reads a
store of its own in a temporary folder. A needle batch is the probed doc's requests among ``B − k`` requests drawn
(seeded) from the other docs loaded for that purpose, in a seeded order; the backend batches them as it batches a
run (length-sorted rows, padded as it pads), with its batch size set to B, so they share one forward pass.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import Console

from repaudit.audit.determinism import (
    AXES,
    AxisPoint,
    AxisResult,
    Trace,
    abs_delta,
    bits,
    point_verdict,
    worst,
)
from repaudit.errors import UsageError
from repaudit.run.progress import progress
from repaudit.run.records import DocResult
from repaudit.run.scoring import doc_result, em_options
from repaudit.tasks.base import OutputType
from repaudit.tasks.prompts import RenderedDoc
from repaudit.tasks.requests import Generation

if TYPE_CHECKING:  # for annotations only: the pool imports every backend's loader
    from repaudit.backends.model_source import ResolvedModel
    from repaudit.run.pool import BackendPool


@dataclass
class ProbeOptions:
    """What ``repaudit determinism`` measures, beyond the run settings (see the command's options)."""

    axes: tuple[str, ...] = AXES
    repeats: int = 5
    batch_sizes: tuple[int, ...] = (1, 2, 8, 32, 64)
    orders: int = 3
    threads: tuple[int, ...] = (1, 2, 0)  # 0 = every core (os.cpu_count())
    seed: int = 0
    #: concurrency: requests in flight around each probed doc (1, the reference, is always added)
    concurrency: tuple[int, ...] = (1, 8, 32, 64)
    #: process: fresh processes (the first the reference)
    processes: int = 3
    #: seed: the sampling seed sent twice (and this + 1 once), the temperature and the tokens sampled
    sample_seed: int = 1234
    sample_temperature: float = 1.0
    sample_tokens: int = 16
    #: keep every answer of every configuration in the report (:class:`~repaudit.audit.determinism.Trace`)
    keep_traces: bool = False

    def check(self) -> None:
        """Every option in range, before any work.

        Raises:
            UsageError: an unknown axis, fewer than 2 repeats, a batch size or thread count out of range, no order.
        """
        unknown = [a for a in self.axes if a not in AXES]
        if unknown or not self.axes:
            raise UsageError(f"--axes: unknown axis '{(unknown or [''])[0]}': choose from {', '.join(AXES)}")
        if not 2 <= self.repeats <= 1000:
            raise UsageError(f"--repeats must be between 2 and 1000, got {self.repeats}")
        if not self.batch_sizes or any(not 1 <= b <= 4096 for b in self.batch_sizes):
            raise UsageError("--batch-sizes takes sizes between 1 and 4096, e.g. 1,2,8,32,64")
        if not 1 <= self.orders <= 100:
            raise UsageError(f"--orders must be between 1 and 100, got {self.orders}")
        if not self.threads or any(not 0 <= t <= 4096 for t in self.threads):
            raise UsageError("--threads takes thread counts (or 'all'), e.g. 1,2,all")
        if not self.concurrency or any(not 1 <= n <= 1024 for n in self.concurrency):
            raise UsageError("--concurrency takes requests in flight between 1 and 1024, e.g. 1,8,32,64")
        if not 2 <= self.processes <= 100:
            raise UsageError(f"--processes must be between 2 and 100, got {self.processes}")
        if not 0 < self.sample_temperature <= 100:
            raise UsageError(f"--sample-temperature must be above 0 and at most 100, got {self.sample_temperature}")
        if not 1 <= self.sample_tokens <= 4096:
            raise UsageError(f"--sample-tokens must be between 1 and 4096, got {self.sample_tokens}")

    def thread_counts(self) -> list[int]:
        """The thread counts, ``all`` resolved to this machine's cores, each once, in the order given."""
        out: list[int] = []
        for t in self.threads:
            t = t or (os.cpu_count() or 1)
            if t not in out:
                out.append(t)
        return out


@dataclass
class Pass:
    """One configuration's answers for every probed doc, and the per-doc results they score to."""

    answers: list[list]
    results: list[DocResult]

    def scores(self) -> dict[str, float]:
        """Per-doc metric → its mean over the probed docs."""
        keys = self.results[0].metrics if self.results else {}
        return {k: sum(r.metrics[k] for r in self.results) / len(self.results) for k in keys}


@dataclass
class Probe:
    """The probed docs rendered for one loaded backend, and how to answer and score them.

    Attributes:
        task: the task (:class:`~repaudit.tasks.base.Task`).
        cfg: the run configuration probed (:class:`~repaudit.run.config.RunConfig`).
        backend: the loaded backend the axes call by hand (the dtype and tp axes pass their own).
        docs: the probed docs, rendered, in doc order.
        others: the docs loaded after them, whose requests fill a needle batch.
        seed: the seed of those draws and of a batch's orders (``--probe-seed``).
    """

    task: Any
    cfg: Any
    backend: Any
    docs: list[RenderedDoc]
    others: list[RenderedDoc]
    seed: int = 0
    #: every pass compared, by (axis, label), where traces are kept (None: not kept)
    traces: dict[tuple[str, str], Any] | None = None
    #: the axis now running (the traces' key)
    axis: str = ""

    @property
    def generative(self) -> bool:
        """Whether the task generates (answers are generations, not log-likelihoods)."""
        return self.task.output_type is OutputType.generate_until

    def answer(self, requests: list, batch_size: int, backend=None, cache=None, advance=None,
               concurrency: int | None = None) -> list:
        """The backend's answers to ``requests`` with its batch size set to ``batch_size`` (a served model's
        requests in flight to ``concurrency`` where given; the run's other per-run settings unchanged)."""
        b, c = backend or self.backend, self.cfg
        update: dict[str, Any] = {"batch_size": batch_size}
        if concurrency is not None:
            update["max_concurrency"] = concurrency
        b.configure(c.serving.replaced(**update))
        if self.generative:
            return b.generate_until(requests, cache, advance)
        return b.loglikelihood(requests, cache, advance)

    def score(self, answers: list[list]) -> Pass:
        """The per-doc results of ``answers`` (one list per probed doc)."""
        c = self.cfg
        opts = em_options(self.task, c.scoring.ignore_case, c.scoring.ignore_punctuation, c.scoring.regexes_to_ignore)
        return Pass(answers, [doc_result(self.task, rd, a, c.scoring.acc_norm, c.scoring.answer_match, opts)
                              for rd, a in zip(self.docs, answers)])

    def run_pass(self, bar, batch_size: int | None = None, backend=None, cache=None) -> Pass:
        """Every probed doc answered in one call, as a run answers them (``batch_size``: the base one)."""
        per_doc = [rd.all_requests for rd in self.docs]
        flat = [r for reqs in per_doc for r in reqs]
        share = [1.0 / len(reqs) for reqs in per_doc for _ in reqs]
        done = [0]

        def advance(n: int) -> None:
            bar.advance(sum(share[done[0]:done[0] + n]))
            done[0] += n

        answers = self.answer(flat, batch_size or self.cfg.serving.batch_size, backend, cache, advance)
        out, pos = [], 0
        for reqs in per_doc:
            out.append(answers[pos:pos + len(reqs)])
            pos += len(reqs)
        return self.score(out)

    def needle(self, i: int, size: int, order_seed: int | None = None) -> tuple[list, list[int], int]:
        """Probed doc ``i``'s requests among ``size − k`` others drawn from the other docs, in a seeded order:
        ``(requests, positions of the doc's k requests in them, k)``; ``order_seed`` draws another order of the
        same batch."""
        own = self.docs[i].all_requests
        k = len(own)
        pool = [r for rd in self.others for r in rd.all_requests]
        if len(pool) < size - k:  # a small split: the other probed docs too
            pool += [r for j, rd in enumerate(self.docs) if j != i for r in rd.all_requests]
        rng = random.Random(f"{self.seed}:{size}:{i}")
        batch = own + rng.sample(pool, min(max(size - k, 0), len(pool)))
        order = list(range(len(batch)))
        random.Random(f"{self.seed}:{size}:{i}:{order_seed}").shuffle(order)
        return [batch[j] for j in order], [order.index(j) for j in range(k)], k


def compare(p: Probe, ref: Pass, other: Pass, label: str) -> AxisPoint:
    """``other`` against ``ref``, bit for bit (see :class:`AxisPoint`); both kept as traces where asked."""
    keep(p, "reference", ref)
    keep(p, label, other)
    changed, flipped, per_doc, divergence = [], [], [], {}
    n_req = 0
    for rd, a, b, ra, rb in zip(p.docs, ref.answers, other.answers, ref.results, other.results):
        if p.generative:
            differs = [x.text != y.text or x.finish != y.finish for x, y in zip(a, b)]
            if differs[0]:
                divergence[rd.doc.doc_id] = first_divergence(p.backend, a[0].text, b[0].text)
        else:
            differs = [bits(x.logprob) != bits(y.logprob) or x.is_greedy != y.is_greedy for x, y in zip(a, b)]
            per_doc.append(max((abs_delta(x.logprob, y.logprob) for x, y in zip(a, b)), default=0.0))
        n_req += sum(differs)
        if any(differs):
            changed.append(rd.doc.doc_id)
        if ra.prediction != rb.prediction or ra.metrics != rb.metrics:
            flipped.append(rd.doc.doc_id)
    return AxisPoint(label=label, n_docs=len(p.docs), docs_changed=len(changed), requests_changed=n_req,
                     max_abs_delta=None if p.generative else max(per_doc, default=0.0), doc_max_abs_delta=per_doc,
                     flips=len(flipped), changed_doc_ids=changed, flipped_doc_ids=flipped, divergence=divergence,
                     scores=other.scores(), verdict=point_verdict(len(changed), len(flipped)))


def keep(p: Probe, label: str, done: Pass, requests: list[list] | None = None) -> None:
    """Keep ``done``'s answers as the trace of ``(p.axis, label)`` where traces are kept (the first pass under a
    label stands); ``requests``: per doc the requests answered (default: each probed doc's own)."""
    if p.traces is None or (p.axis, label) in p.traces:
        return
    reqs = requests if requests is not None else [rd.all_requests for rd in p.docs]
    generated = any(isinstance(a, Generation) for ans in done.answers for a in ans)
    p.traces[(p.axis, label)] = Trace(
        axis=p.axis, label=label, doc_ids=[rd.doc.doc_id for rd in p.docs],
        keys=[[r.key for r in rs] for rs in reqs],
        logprobs=None if generated else [[float(a.logprob) for a in ans] for ans in done.answers],
        greedy=None if generated else [[bool(a.is_greedy) for a in ans] for ans in done.answers],
        texts=[[a.text for a in ans] for ans in done.answers] if generated else None)


def first_divergence(backend, a: str, b: str) -> int:
    """The first token (0-based) where two generated texts differ, both re-tokenised without special tokens."""
    ta = backend.tokenizer.encode(a, add_special_tokens=False)
    tb = backend.tokenizer.encode(b, add_special_tokens=False)
    return next((j for j, (x, y) in enumerate(zip(ta, tb)) if x != y), min(len(ta), len(tb)))


def result(axis: str, reference: str, ref: Pass | None, points: list[AxisPoint], notes: Sequence[str] = (),
           t0: float = 0.0, **extra) -> AxisResult:
    """An axis's result from its points (the worst verdict)."""
    return AxisResult(axis=axis, reference=reference, reference_scores=ref.scores() if ref else {}, points=points,
                      verdict=worst([pt.verdict for pt in points if pt.judged]), notes=list(notes),
                      seconds=round(time.perf_counter() - t0, 2) if t0 else 0.0, **extra)


def skipped(axis: str, why: str, **extra) -> AxisResult:
    """An axis that cannot run here, and why."""
    return AxisResult(axis=axis, reference="—", verdict="skipped", skipped=why, **extra)


@dataclass
class Context:
    """What every axis function receives: the probe, the options, the base pass (computed once, on demand), the
    backend pool and the resolved model (for the axes that load another engine), and a progress factory."""

    probe: Probe
    opts: ProbeOptions
    pool: BackendPool
    resolved: ResolvedModel
    bar: Callable
    base: Pass | None = None

    def base_pass(self) -> Pass:
        """The base configuration's pass (its batch size, no store, the process's threads), computed once."""
        if self.base is None:
            with self.bar("base", len(self.probe.docs)) as bar:
                self.base = self.probe.run_pass(bar)
        return self.base


def bar_factory(err: Console) -> Callable:
    """``bar(label, total)``: a progress context over ``total`` docs (rich bar, or log lines off a terminal)."""
    return lambda label, total: progress(err, f"determinism · {label}", total, unit="docs", transient=True)
