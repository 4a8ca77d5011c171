"""``repaudit sweep``: vary one factor, hold the rest, and measure its effect against the noise floor.

For every value the configuration is run (finished batches come from the store), and the score
is compared with the base run doc by doc: Δ with a paired bootstrap interval and the flip rate.
The **noise floor** is the spread of the same metric under variation nobody chose: across
few-shot seeds when the base is n-shot (n > 0), otherwise across a repeated, uncached run of the
base (zero where inference is deterministic, e.g. float32 on CPU) — or, given a ``repaudit determinism`` report
(``--noise-floor``), the spread of the metric over the configurations that report measured (the backend's own
numerical noise: repeats, batch sizes, orders, caches, thread counts), with no floor run. A value's effect *exceeds
the floor* when its paired interval excludes 0 and |Δ| is more than twice the floor's standard deviation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from repaudit.audit.docsets import MIN_DOCS
from repaudit.audit.executor_placement import Placed, placed
from repaudit.audit.sequential import SequentialReport
from repaudit.audit.stat_settings import StatSettings, for_command
from repaudit.audit.stats import paired_bootstrap
from repaudit.errors import RepauditError, UsageError
from repaudit.run.config import RunConfig, field_value
from repaudit.run.records import RunRecord


def _factor(factor: str):
    """The sweepable factor ``factor`` (:func:`repaudit.run.factors.sweepable`).

    Raises:
        UsageError: not a factor sweep can vary (the sweepable ones are named): a bad value of ``--factor``.
    """
    from repaudit.run.factors import sweepable

    found = sweepable().get(factor)
    if found is None:
        raise UsageError(f"unknown factor '{factor}': sweepable factors are {', '.join(sweepable())} "
                            "(repaudit factors lists why the others are not)")
    return found


class SweepPoint(BaseModel):
    """One value of the swept factor: score, Δ vs the base with its paired (1 − alpha) interval, flip rate. Scores in
    metric units (0–1 for accuracies), on the docs evaluated."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    value: Any
    """The factor's value."""
    score: float
    """The metric's mean over the docs."""
    delta: float
    """Δ = this value's score − the base's (paired, same docs)."""
    ci_low: float
    """Lower bound of Δ's (1 − alpha) interval (paired bootstrap; with ``--precision`` the repeated confidence
    interval)."""
    ci_high: float
    """Upper bound of that interval."""
    flip_rate: float
    """Fraction (0–1) of docs whose per-doc value differs from the base's."""
    n: int
    """Docs paired."""
    fingerprint_digest: str
    """The value's run's fingerprint digest."""
    verdict: str
    """``exceeds noise floor`` (the interval excludes 0 and |Δ| > 2 × the floor's sd), ``within noise floor``, or
    ``no verdict: …`` (too few docs)."""


class SweepResult(BaseModel):
    """A whole sweep, with the noise floor it was judged against; scores in metric units."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    task: str
    """The task."""
    metric: str
    """The per-doc metric compared (default: the task's first)."""
    factor: str
    """The factor swept."""
    base_value: Any
    """The factor's value in the base configuration."""
    base_score: float
    """The base's mean score over the docs."""
    noise_floor_sd: float
    """Sample standard deviation (ddof 1) of ``noise_floor_scores``; 0.0 for a single score."""
    noise_floor_method: str
    """What the floor varies: other few-shot seeds (n-shot base), a repeated uncached run of the base, or the
    configurations of a determinism report (``--noise-floor``)."""
    noise_floor_scores: list[float]
    """The base's score, then each floor run's (``--noise-floor``: each configuration's score in the determinism
    report, on its probed docs)."""
    points: list[SweepPoint]
    """One point per value, in the order given."""
    computed_batches: int = 0
    """Batches the values' configurations computed now (scoring-only factors: 0)."""
    cached_batches: int = 0
    """Batches the values' configurations read from the store (scoring-only factors: all)."""
    sequential: SequentialReport | None = None
    """How a ``--precision`` estimate was reached; None: every doc, bootstrap intervals."""
    alpha: float = 0.05
    """The intervals are (1 − alpha), two-sided (``stat_settings.alpha``)."""
    stat_settings: StatSettings | None = None
    """How the intervals were made: alpha, the bootstrap's resamples and seed; ``adjust`` none (each value is judged
    alone); None: written by a repaudit that did not record it."""
    placements: list[Placed] = []
    """Where each configuration ran (a served model's endpoint among replicas, a Ray node): the base, the noise
    floor's runs, then each value."""


def parse_values(factor: str, text: str) -> list[Any]:
    """Parse ``--values 1,4,16`` for ``factor``.

    Raises:
        UsageError: unknown factor or a value that does not parse (bad values of ``--factor``/``--values``).
    """
    parse = _factor(factor).parse
    try:
        return [parse(v.strip()) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"--values '{text}' do not parse as values of {factor}") from None


def _metric_values(rec: RunRecord, metric: str) -> np.ndarray:
    return np.array([d.metrics[metric] for d in rec.docs])


def _restrict(cfg: RunConfig, chunk: list[int] | None) -> RunConfig:
    return cfg if chunk is None else cfg.model_copy(update={"doc_ids": chunk})


def base_docs(base: RunConfig) -> tuple[Any, list]:
    """``(task, docs)``: the docs ``base`` evaluates (its split after ``--limit``), read without loading a
    model or drawing few-shot examples."""
    from rich.console import Console

    from repaudit.run.docs import load_docs
    from repaudit.run.runner import get_task

    task = get_task(base.task, base.task_config)
    cfg = base.model_copy(update={"num_fewshot": 0, "fewshot_ids": None, "fewshot_from": None,
                                  "fewshot_by_doc": None})
    return task, load_docs(task, cfg, Console(quiet=True)).docs


def sweep_doc_ids(base: RunConfig) -> list[int]:
    """The doc ids ``base`` evaluates (its split after ``--limit``), read without loading a model."""
    return [d.doc_id for d in base_docs(base)[1]]


def floor_configs(base: RunConfig, num_fewshot: int, noise_seeds: int) -> tuple[list[RunConfig], str]:
    """The noise floor's configurations and their description: ``noise_seeds`` other few-shot seeds
    for an n-shot base, else one repeated uncached run of the base."""
    if num_fewshot > 0:
        return ([base.model_copy(update={"fewshot_seed": base.seeds.fewshot_seed + 1 + s}) for s in range(noise_seeds)],
                f"spread across {noise_seeds + 1} few-shot seeds")
    return [base.model_copy(update={"use_batch_cache": False})], "spread across a repeated uncached run of the base"


def sweep_grid(base: RunConfig, factor: str, values: list[Any], noise_seeds: int = 3,
               floor_given: bool = False) -> list[tuple[str, RunConfig]]:
    """(label, RunConfig) of every configuration :func:`sweep` would run, for ``--dry-run`` (``floor_given``: a
    determinism report is the floor, so no floor configuration runs).

    Raises:
        RepauditError: unknown factor or a configuration that cannot run.
    """
    from repaudit.run.runner import check_config

    field = _factor(factor).fields[0]
    task = check_config(base)
    nshot = len(base.fewshot_ids) if base.fewshot_ids is not None else (
        base.fewshot.num_fewshot if base.fewshot.num_fewshot is not None else task.default_num_fewshot)
    floor = [] if floor_given else floor_configs(base, nshot, noise_seeds)[0]
    out = [("base", base)] + [(f"noise floor: fewshot_seed={c.seeds.fewshot_seed}" if nshot
                               else "noise floor: uncached repeat", c) for c in floor]
    for value in values:
        cfg = base.model_copy(update={field: value})
        check_config(cfg)
        out.append((f"{factor}={value}", cfg))
    return out


def _value_configs(base: RunConfig, field: str, values: list[Any], noise_seeds: int) -> list[RunConfig]:
    """The configuration of each value, the arguments and every configuration checked before the first one runs."""
    from repaudit.run.runner import check_config

    if not values:
        raise RepauditError("--values is empty: give at least one value")
    if not 1 <= noise_seeds <= 100:
        raise RepauditError(f"--noise-seeds must be between 1 and 100, got {noise_seeds}")
    for value in values:
        check_config(base.model_copy(update={field: value}))
    return [base.model_copy(update={field: value}) for value in values]


def _checked_metric(metric: str | None, base_rec: RunRecord, task: str) -> str:
    """``metric``, or the first metric the base reports when none is asked for.

    Raises:
        RepauditError: the task does not report ``metric``.
    """
    metric = metric or next(iter(base_rec.docs[0].metrics))
    if metric not in base_rec.docs[0].metrics:
        raise RepauditError(f"metric '{metric}' is not reported by {task}: "
                            f"choose one of {', '.join(base_rec.docs[0].metrics)}")
    return metric


def _merged(so_far: list[RunRecord] | None, recs: list[RunRecord]) -> list[RunRecord]:
    """Each configuration's record so far with this round's docs appended (the first round's records as they are)."""
    if so_far is None:
        return recs
    return [a.model_copy(update={"docs": a.docs + b.docs}) for a, b in zip(so_far, recs)]


def sweep(base: RunConfig, factor: str, values: list[Any], executor, noise_seeds: int = 3,
          metric: str | None = None, progress=None, precision: float | None = None, precision_seed: int = 0,
           round_docs: int | None = None, noise_floor=None, stat: StatSettings | None = None) -> SweepResult:
    """Run ``base`` with ``factor`` set to each of ``values`` and judge each against the noise floor.

    ``executor`` is a :class:`repaudit.executor.Executor` (local or Ray) or a function
    ``RunConfig -> RunRecord``. The base runs first (its n-shot decides the noise floor); the
    floor's runs and every value then go to the executor as one batch of configurations.
    ``progress(done, total)`` is called per finished configuration.

    With ``precision`` (metric units), every configuration runs on the same seeded random rounds
    of docs until each value's Δ has a (1 − ``alpha``) repeated confidence interval at most that wide on
    each side (:mod:`repaudit.audit.sequential`); the floor is then measured on the same docs. Every
    interval is (1 − ``alpha``), two-sided; ``stat`` sets alpha and the bootstrap (sweep's defaults where None:
    10,000 resamples, seed 0).

    ``noise_floor`` (the path of a ``repaudit determinism`` JSON report of the base's task, backend and dtype) is the
    floor instead: no floor configuration runs (:func:`repaudit.audit.determinism.noise_floor`).

    Raises:
        RepauditError: unknown factor, no values, a metric the task does not report, or a noise-floor report of
            another configuration.
    """
    from repaudit.audit.executor import as_executor

    stat = for_command("sweep", stat)

    field = _factor(factor).fields[0]
    value_cfgs = _value_configs(base, field, values, noise_seeds)
    if noise_floor is not None:  # a report of another configuration is refused before anything runs
        from repaudit.audit.determinism import check_floor

        check_floor(noise_floor, base.task, base.serving.backend, base.serving.dtype)
    executor = as_executor(executor)
    st: dict[str, Any] = {"recs": None, "floor": None, "metric": metric, "round": 0, "computed": 0, "cached": 0}

    run_round = _round_runner(base, executor, st, values, value_cfgs, (noise_seeds, noise_floor), progress)
    seq = None
    if precision is None:
        run_round(None)
    else:
        from repaudit.audit.sequential import plan_rounds, run_rounds

        available = sweep_doc_ids(base)
        st["total"] = len(plan_rounds(available, precision_seed, round_docs))
        _, seq = run_rounds(available, precision, precision_seed, round_docs, run_round, alpha=stat.alpha)
    return _result(base, factor, field_value(base, field), values, st, seq, stat)


def _round_runner(base: RunConfig, executor, st: dict[str, Any], values: list[Any], value_cfgs: list[RunConfig],
                  floor_opts: tuple[int, Any], progress):
    """The function that runs one round of docs (``chunk``; ``None``: every doc) of the base, the floor and every value,
    keeps their records in ``st`` and returns each value's per-doc Δ against the base (values × docs)."""
    def run_round(chunk: list[int] | None) -> np.ndarray:
        base_rec = executor.map([_restrict(base, chunk)])[0]
        if st["floor"] is None:  # the base's n-shot decides the floor, in the first round
            _decide_floor(st, base, base_rec, *floor_opts)
        per = 1 + len(st["floor"]) + len(values)
        done, total = st["round"] * per, st.get("total", 1) * per
        if progress:
            progress(done + 1, total)
        cfgs = [_restrict(c, chunk) for c in [*st["floor"], *value_cfgs]]
        recs = [base_rec, *executor.map(cfgs, (lambda d, _t: progress(done + 1 + d, total)) if progress else None)]
        for r in recs[1 + len(st["floor"]):]:
            st["computed"] += r.timings.computed_batches
            st["cached"] += r.timings.cached_batches
        st["recs"] = _merged(st["recs"], recs)
        st["round"] += 1
        xb = _metric_values(recs[0], st["metric"])
        return np.stack([_metric_values(r, st["metric"]) - xb for r in recs[1 + len(st["floor"]):]])

    return run_round


def _decide_floor(st: dict[str, Any], base: RunConfig, base_rec: RunRecord, noise_seeds: int, noise_floor) -> None:
    """The metric and the floor, once the base's first record is in: a determinism report's configurations
    (``noise_floor``), else :func:`floor_configs` by the base's n-shot."""
    st["metric"] = _checked_metric(st["metric"], base_rec, base.task)
    shots = base_rec.fingerprint.settings.fewshot.num_fewshot
    if shots is None:  # a run records the n-shot it used
        raise RepauditError("the base run records no n-shot: the noise floor's configurations cannot be chosen")
    st["floor"], st["method"] = floor_configs(base, shots, noise_seeds)
    if noise_floor is not None:
        from repaudit.audit.determinism import noise_floor as numerical_floor

        st["given"] = numerical_floor(noise_floor, base.task, st["metric"], base.serving.backend, base.serving.dtype)
        st["floor"], st["method"] = [], st["given"].method


def _result(base: RunConfig, factor: str, base_value: Any, values: list[Any], st: dict[str, Any],
            seq: SequentialReport | None, stat: StatSettings) -> SweepResult:
    """The sweep's result from every round's records (``st``): the noise floor's spread, then each value's point."""
    metric = st["metric"]
    base_rec, floor_recs = st["recs"][0], st["recs"][1:1 + len(st["floor"])]
    xb = _metric_values(base_rec, metric)
    floor_scores = [float(xb.mean())] + [float(_metric_values(r, metric).mean()) for r in floor_recs]
    if st.get("given") is not None:  # a determinism report's configurations, on its probed docs
        floor_scores = st["given"].scores
    floor_sd = float(np.std(floor_scores, ddof=1)) if len(floor_scores) > 1 else 0.0
    points = _points(factor, values, base_rec, st["recs"][1 + len(st["floor"]):], metric, floor_sd, seq, stat)
    labels = ["base", *(f"noise floor {k + 1}" for k in range(len(floor_recs))),
              *(f"{factor}={v}" for v in values)]
    return SweepResult(task=base.task, metric=metric, factor=factor, base_value=base_value,
                       base_score=float(xb.mean()), noise_floor_sd=floor_sd, noise_floor_method=st["method"],
                       noise_floor_scores=floor_scores, points=points, sequential=seq,
                       computed_batches=st["computed"], cached_batches=st["cached"], alpha=stat.alpha,
                       stat_settings=stat,
                       placements=placed(list(zip(labels, st["recs"]))))


def _points(factor: str, values: list[Any], base_rec, value_recs: list, metric: str, floor_sd: float,
            seq, stat: StatSettings) -> list[SweepPoint]:
    """One :class:`SweepPoint` per value: paired Δ against the base (bootstrap, or the sequential
    design's repeated interval when ``seq`` is given) and a verdict against 2× the floor's sd (none below
    :data:`repaudit.audit.docsets.MIN_DOCS` docs)."""
    xb = _metric_values(base_rec, metric)
    points = []
    for j, (value, rec) in enumerate(zip(values, value_recs)):
        xv = _metric_values(rec, metric)
        if len(xv) != len(xb) or [d.doc_id for d in rec.docs] != [d.doc_id for d in base_rec.docs]:
            raise RepauditError(f"{factor}={value} evaluated other docs than the base: cannot pair them")
        n_boot, boot_seed = stat.bootstrap()
        res = paired_bootstrap(xb, xv, np.array([d.cluster for d in rec.docs]) if rec.docs[0].cluster else None,
                               n_boot=n_boot, alpha=stat.alpha, seed=boot_seed)
        lo, hi = res.ci_low, res.ci_high
        if seq is not None:  # the sequential design's interval replaces the fixed-n bootstrap one
            lo, hi = res.delta - seq.half_widths[j], res.delta + seq.half_widths[j]
        excludes = lo > 0 or hi < 0
        verdict = "exceeds noise floor" if excludes and abs(res.delta) > 2 * floor_sd else "within noise floor"
        if len(xv) < MIN_DOCS:  # as in compare: an interval over a handful of docs supports no verdict
            verdict = f"no verdict: {len(xv)} docs (fewer than {MIN_DOCS})"
        points.append(SweepPoint(value=value, score=float(xv.mean()), delta=res.delta, ci_low=lo,
                                 ci_high=hi, flip_rate=float(np.mean(xv != xb)), n=len(xv),
                                 fingerprint_digest=rec.fingerprint_digest, verdict=verdict))
    return points
