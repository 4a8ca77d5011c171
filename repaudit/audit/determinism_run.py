"""``repaudit determinism``'s axes, and the probe that runs them (:func:`probe_determinism`).

Each axis function takes the :class:`~repaudit.audit.determinism_probe.Context` and returns its
:class:`~repaudit.audit.determinism.AxisResult`; what each measures is in :mod:`repaudit.audit.determinism`.
"""

from __future__ import annotations

import datetime as _dt
import tempfile
import time
from pathlib import Path

from rich.console import Console

from repaudit.audit.determinism import (
    AXES,
    AxisResult,
    DeterminismReport,
    expected_compare,
    overall,
)
from repaudit.audit.determinism_probe import (
    Context,
    Pass,
    Probe,
    ProbeOptions,
    bar_factory,
    compare,
    result,
    skipped,
)
from repaudit.audit.determinism_process import axis_process
from repaudit.audit.determinism_served import axis_concurrency, axis_prefix_cache, axis_seed

#: why vLLM's prefix cache cannot change a log-likelihood (vllm/sampling_params.py, 0.32)
_PROMPT_LOGPROBS_SKIP = ("vLLM does not read its prefix cache for requests that ask for prompt log-probabilities "
                         "(SamplingParams.skip_reading_prefix_cache defaults to True for them), so for log-likelihood "
                         "tasks a warm cache equals a cold one by construction; generations do read it")
_SORTED = ("the backend sorts a batch's rows by length, then by tokens, before the forward pass (lm-eval's order), "
           "so the order requests arrive in does not reach the kernels")


def axis_repeat(c: Context) -> AxisResult:
    """The base configuration ``repeats`` times, each pass against the first."""
    t0 = time.perf_counter()
    base = c.base_pass()
    passes = [base]
    with c.bar("repeat", len(c.probe.docs) * (c.opts.repeats - 1)) as bar:
        for _ in range(c.opts.repeats - 1):
            passes.append(c.probe.run_pass(bar))
    points = [compare(c.probe, base, p, f"repeat {k + 2}") for k, p in enumerate(passes[1:])]
    notes = []
    if c.probe.generative:
        distinct = [len({p.answers[i][0].text for p in passes}) for i in range(len(c.probe.docs))]
        notes.append(f"up to {max(distinct)} distinct completions per doc over {len(passes)} passes "
                     f"({sum(d > 1 for d in distinct)} docs with more than one)")
    return result("repeat", "repeat 1", base, points, notes, t0)


def axis_batch(c: Context) -> AxisResult:
    """Each probed doc alone (B = 1), then among B − 1 other requests for every other B."""
    t0 = time.perf_counter()
    sizes = sorted(set(c.opts.batch_sizes) | {1})
    p = c.probe
    with c.bar("batch", len(p.docs) * len(sizes)) as bar:
        ref = p.run_pass(bar, batch_size=1)
        points = []
        for size in sizes[1:]:
            answers, short = [], 0
            for i in range(len(p.docs)):
                reqs, at, k = p.needle(i, size)
                short += len(reqs) < size and k < size
                got = p.answer(reqs, size)
                answers.append([got[j] for j in at])
                bar.advance(1)
            pt = compare(p, ref, p.score(answers), f"B={size}")
            if short:
                pt.note = f"{short} docs in batches smaller than {size}: too few other requests in the split"
            points.append(pt)
    notes = ["a doc of k requests at B ≤ k shares its forward passes with its own requests only"] if any(
        s <= max(len(rd.all_requests) for rd in p.docs) for s in sizes[1:]) else []
    return result("batch", "B=1 (alone)", ref, points, notes, t0)


def axis_order(c: Context) -> AxisResult:
    """Each probed doc's batch at the base batch size in ``orders`` other seeded orders, against its first."""
    t0 = time.perf_counter()
    p, size = c.probe, c.probe.cfg.serving.batch_size
    with c.bar("order", len(p.docs) * (1 + c.opts.orders)) as bar:
        per_order: list[list[list]] = [[] for _ in range(1 + c.opts.orders)]
        for i in range(len(p.docs)):
            for s in range(1 + c.opts.orders):
                reqs, at, _ = p.needle(i, size, order_seed=None if s == 0 else s)
                got = p.answer(reqs, size)
                per_order[s].append([got[j] for j in at])
                bar.advance(1)
    ref = p.score(per_order[0])
    points = [compare(p, ref, p.score(a), f"order {s}") for s, a in enumerate(per_order[1:], start=1)]
    return result("order", "first order", ref, points, [_SORTED], t0)


def axis_cache(c: Context) -> AxisResult:
    """repaudit's batch store written then read, against no store; vLLM's prefix cache cold and warm."""
    from repaudit.backends.store import open_store

    t0 = time.perf_counter()
    p, base, notes = c.probe, c.base_pass(), []
    vllm = p.cfg.serving.backend == "vllm"
    with tempfile.TemporaryDirectory(prefix="repaudit-determinism-") as tmp, \
            c.bar("cache", len(p.docs) * (4 if vllm else 2)) as bar:
        store = open_store(Path(tmp))
        try:
            write = p.run_pass(bar, cache=store)
            written = store.added
            read = p.run_pass(bar, cache=store)
            again = store.added - written
        finally:
            store.close()
        points = [compare(p, base, write, "store write"), compare(p, base, read, "store read")]
        notes.append(f"the read pass took every batch from the store ({written} written)" if not again else
                     f"the read pass computed {again} batches again: the store did not serve them")
        if vllm:
            points += _prefix_cache(p, base, bar, notes)
    ref = "no store" + (", first pass" if vllm else "")
    return result("cache", ref, base, points, notes, t0)


def _prefix_cache(p: Probe, base: Pass, bar, notes: list[str]) -> list:
    """vLLM: the prefix cache emptied (cold), then the same requests again (warm), each against the base."""
    if not (p.backend.info.engine or {}).get("enable_prefix_caching"):
        notes.append("vLLM's prefix cache is off in this engine (--enable-prefix-caching measures it)")
        return []
    p.backend.reset_prefix_cache()
    cold = p.run_pass(bar)
    warm = p.run_pass(bar)
    if not p.generative:
        notes.append(_PROMPT_LOGPROBS_SKIP)
    return [compare(p, base, cold, "prefix cache reset"), compare(p, base, warm, "prefix cache warm")]


def axis_threads(c: Context) -> AxisResult:
    """The base configuration at each CPU thread count, against the first; torch's count restored after."""
    import torch

    if c.probe.cfg.serving.backend == "openai":
        return skipped("threads", "a served model runs behind its endpoint: this process's CPU threads do not reach "
                                  "its kernels")

    t0 = time.perf_counter()
    counts, saved = c.opts.thread_counts(), torch.get_num_threads()
    passes: list[Pass] = []
    try:
        with c.bar("threads", len(c.probe.docs) * len(counts)) as bar:
            for t in counts:
                torch.set_num_threads(t)
                passes.append(c.probe.run_pass(bar))
    finally:
        torch.set_num_threads(saved)
    points = [compare(c.probe, passes[0], q, f"threads {t}") for t, q in zip(counts[1:], passes[1:])]
    notes = []
    if c.probe.backend.info.device != "cpu":
        notes.append(f"the forward pass runs on {c.probe.backend.info.device}: CPU threads reach host-side work only")
    if c.probe.cfg.serving.backend == "vllm":
        notes.append("vLLM's CPU worker binds its own OpenMP threads at start-up; torch.set_num_threads may not "
                     "reach its kernels")
    if len(counts) == 1:
        notes.append(f"one thread count only ({counts[0]}): nothing to compare")
    return result("threads", f"threads {counts[0]}", passes[0], points, notes, t0)


def axis_dtype(c: Context) -> AxisResult:
    """The control: the base configuration in the other dtype (float32 ↔ bfloat16), against the base."""
    t0 = time.perf_counter()
    cfg = c.probe.cfg
    if cfg.serving.backend == "openai":
        return skipped("dtype", "a served model runs in the dtype its server loaded: repaudit cannot change it through "
                                "an endpoint", control=True)
    other = "bfloat16" if cfg.serving.dtype == "float32" else "float32"
    base = c.base_pass()
    backend = c.pool.get(c.resolved, cfg.model_copy(update={"dtype": other}))
    with c.bar(f"dtype {other}", len(c.probe.docs)) as bar:
        changed = c.probe.run_pass(bar, backend=backend)
    pt = compare(c.probe, base, changed, other)
    notes = ["the control: a real numeric change, to read the other axes against; it never decides the exit code"]
    if pt.verdict == "bit-identical":
        notes.append("the control moved nothing: these docs cannot show a numeric change, so a bit-identical verdict "
                     "on another axis says little")
    return result("dtype", cfg.serving.dtype, base, [pt], notes, t0, control=True)


def axis_tp(c: Context) -> AxisResult:
    """vLLM's tensor-parallel sizes (1, 2, 4, 8 up to the GPUs visible), against 1; skipped elsewhere."""
    import torch

    cfg = c.probe.cfg
    if cfg.serving.backend != "vllm":
        return skipped("tp", "tensor parallelism is a vLLM engine setting: the hf backend runs the model on one device")
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if gpus < 2:
        return skipped("tp", f"{gpus} GPU(s) visible here: tensor-parallel sizes need at least 2")
    t0 = time.perf_counter()
    sizes = [s for s in (1, 2, 4, 8) if s <= gpus]
    passes = []
    with c.bar("tp", len(c.probe.docs) * len(sizes)) as bar:
        for s in sizes:
            backend = c.pool.get(c.resolved, cfg.model_copy(update={"tensor_parallel_size": s}))
            passes.append(c.probe.run_pass(bar, backend=backend))
    points = [compare(c.probe, passes[0], q, f"tp {s}") for s, q in zip(sizes[1:], passes[1:])]
    return result("tp", "tp 1", passes[0], points, [], t0)


AXIS_FUNCTIONS = {"repeat": axis_repeat, "batch": axis_batch, "concurrency": axis_concurrency, "order": axis_order,
                  "cache": axis_cache, "prefix-cache": axis_prefix_cache, "seed": axis_seed, "threads": axis_threads,
                  "process": axis_process, "dtype": axis_dtype, "tp": axis_tp}


def probe_determinism(cfg, opts: ProbeOptions, err: Console | None = None, pool=None) -> DeterminismReport:
    """Run the axes ``opts`` asks for on the first ``cfg.data.limit`` docs of ``cfg``'s task (all of them without a
    limit) and judge each (:mod:`repaudit.audit.determinism`).

    ``pool`` (a :class:`~repaudit.run.pool.BackendPool`) lets the caller share loaded models; the dtype and tp axes
    load theirs through it. A batch-invariant mode this build cannot run is not an error here: the report says so
    (``unsupported``) and measures nothing.

    Raises:
        UsageError: options out of range. RepauditError: what a run of ``cfg`` raises (task, data, model).
    """
    from repaudit.backends.determinism import UnsupportedMode
    from repaudit.backends.model_source import resolve_for
    from repaudit.run.config import default_cache_dir
    from repaudit.run.docs import load_docs
    from repaudit.run.environment import capture_git_state
    from repaudit.run.pool import BackendPool
    from repaudit.run.runner import check_config, generation_settings, render_requests, seed_everything

    t0, commit = time.perf_counter(), capture_git_state().commit  # the code that measures, read before it runs
    err = err or Console(stderr=True)
    opts.check()
    task = check_config(cfg)
    resolved = resolve_for(cfg.serving.backend, cfg.model, cfg.revision, cfg.cache_dir or default_cache_dir())
    seed_everything(cfg)
    n = cfg.data.limit
    needles = [*(opts.batch_sizes if "batch" in opts.axes else ()), *(opts.concurrency if "concurrency" in opts.axes
                                                                     else ()), cfg.serving.batch_size]
    extra = max(n for n in needles if isinstance(n, int)) if {"batch", "order", "concurrency"} & set(opts.axes) else 0
    docset = load_docs(task, cfg.model_copy(update={"limit": n + extra}) if n else cfg, err)
    pool = pool or BackendPool()
    try:
        backend = pool.get(resolved, cfg)
    except UnsupportedMode as exc:
        axes = [skipped(a, "the mode asked for is unsupported here (the report's 'unsupported' says why)")
                for a in AXES if a in opts.axes]
        return _report(cfg, task, resolved, opts, axes, docset.docs[:n], {"determinism": _modes_now()},
                       (t0, commit), unsupported=str(exc))
    generation = generation_settings(task, cfg, backend.info.eos_token)
    rendered = render_requests(task, cfg, docset, backend, generation)
    probe = Probe(task, cfg, backend, rendered[:n], rendered[n:] if n else [], opts.seed,
                  traces={} if opts.keep_traces else None)
    ctx = Context(probe, opts, pool, resolved, bar_factory(err))
    metric = next(iter(_metrics(task, cfg)), None)
    axes = []
    for name in [a for a in AXES if a in opts.axes]:
        probe.axis = name
        ax = AXIS_FUNCTIONS[name](ctx)
        ax.expected_compare = expected_compare(ax, len(probe.docs), metric)
        axes.append(ax)
    backend.configure(cfg.serving)
    return _report(cfg, task, resolved, opts, axes, [rd.doc for rd in probe.docs], backend.info.engine or {},
                   (t0, commit), server=backend.server_facts(),
                   traces=list(probe.traces.values()) if probe.traces is not None else None)


def _metrics(task, cfg) -> list[str]:
    from repaudit.run.scoring import metric_variants

    return list(metric_variants(task, cfg.scoring.acc_norm))


def _modes_now() -> dict:
    from repaudit.backends.determinism import mode_facts

    return mode_facts()


def _report(cfg, task, resolved, opts: ProbeOptions, axes: list[AxisResult], docs: list, engine: dict,
            started: tuple[float, str | None], unsupported: str | None = None, server=None,
            traces: list | None = None) -> DeterminismReport:
    """The report: what was probed, each axis, the modes in force, the verdict and exit code (``started``: the
    probe's start time and the commit read then)."""
    import torch

    import repaudit

    verdict, code = overall(axes)
    modes = dict(engine.get("determinism") or {})
    modes["attention"] = engine.get("attention_backend", engine.get("attn_implementation"))
    if cfg.serving.backend == "vllm" and "batch_invariant" in engine:  # the engine's own fact, where an engine started
        modes["vllm_batch_invariant"] = engine["batch_invariant"]
    modes["batch_invariant_requested"] = cfg.serving.batch_invariant
    return DeterminismReport(
        repaudit_version=repaudit.__version__,
        created_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        git_commit=started[1], task=task.name, output_type=task.output_type.value,
        model=server.model_id if server is not None else cfg.model, server=server,
        weights_sha256=resolved.weights_sha256, backend=cfg.serving.backend, device=cfg.serving.device,
        dtype=cfg.serving.dtype, batch_size=cfg.serving.batch_size, torch_threads=torch.get_num_threads(),
        n_docs=len(docs),
        doc_ids=[d.doc_id for d in docs], metrics=_metrics(task, cfg), axes_asked=[a for a in AXES if a in opts.axes],
        axes=axes, modes=modes, engine=engine, unsupported=unsupported, verdict=verdict, exit_code=code,
        wall_s=round(time.perf_counter() - started[0], 2), traces=traces)
