"""Per-factor attribution of a score delta by re-execution: the configurations between run A and run B
(every subset of the differing factors set to B's values, the rest to A's), their per-doc outcomes, and
the Shapley values and interactions of :mod:`repaudit.audit.shapley` over them, with intervals."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from repaudit.audit.docsets import shared_doc_ids
from repaudit.audit.executor_placement import Placed, placed
from repaudit.audit.sequential import SequentialReport
from repaudit.audit.shapley import (  # noqa: F401
    EXACT_MAX_FACTORS,
    Attribution,
    attribute,
    interaction_weights,
    perm_stderr,
    permutation_weights,
    shapley_permutation,
    shapley_weights,
    subsets,
)
from repaudit.audit.stat_settings import StatSettings, for_command


class AttributionReport(BaseModel):
    """The result of ``repaudit attribute`` (JSON-ready). Scores and values in metric units (0–1 for accuracies);
    every Δ is B − A."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    task: str
    """The task."""
    metric: str
    """The per-doc metric attributed."""
    run_a: str = ""
    """Run A's file."""
    run_b: str = ""
    """Run B's file."""
    factors: list[str]
    """The replayable factors that differ, in the order of ``phi``."""
    not_replayable: list[str]
    """What differs but cannot be replayed (hardware, library versions, model weights, tokenizer, data): part of
    the residual."""
    not_recorded: list[str] = []
    """Of those parts, the ones a run does not record, so they may differ unseen."""
    method: str = "exact"
    """``exact`` (all 2^k configurations) or ``permutation`` (sampled permutations, for k > 8)."""
    phi: list[float]
    """Each factor's Shapley value: its share of the re-executed Δ (they sum to ``reexecuted_delta``)."""
    phi_ci: list[list[float]]
    """Each factor's (1 − ``alpha``) interval [low, high] (bootstrap over docs; with ``--precision`` the repeated
    confidence interval)."""
    phi_stderr: list[float] | None = None
    """``permutation``: each value's Monte-Carlo standard error; None for ``exact``."""
    interactions: list[dict]
    """``exact`` only: per pair of factors ``{"pair", "value", "ci"}``: the pair, their Shapley interaction index and
    its interval; empty for ``permutation``."""
    recorded_a: float
    """A's recorded score on the docs used (stratum-weighted with ``--precision``)."""
    recorded_b: float
    """B's recorded score on the docs used, as ``recorded_a``."""
    reexecuted_a: float = float("nan")
    """The score of A's configuration re-executed here, on the same docs and weights."""
    reexecuted_b: float = float("nan")
    """The score of B's configuration re-executed here, as ``reexecuted_a``."""
    recorded_delta: float
    """``recorded_b − recorded_a``."""
    reexecuted_delta: float
    """``reexecuted_b − reexecuted_a``."""
    reexecuted_delta_ci: list[float] = []
    """(1 − ``alpha``) interval [low, high] of ``reexecuted_delta``, as ``phi_ci``."""
    alpha: float = 0.05
    """The intervals are (1 − alpha) (two-sided; ``stat_settings.alpha``)."""
    stat_settings: StatSettings | None = None
    """How the intervals were made (alpha, the bootstrap's resamples and seed); None: not recorded (older report)."""
    residual: float
    """``recorded_delta − reexecuted_delta``: what re-execution does not reproduce (not-replayable factors,
    nondeterminism)."""
    fidelity_a: float
    """Fraction (0–1) of docs whose re-executed A prediction equals A's recorded one; NaN: no doc to compare."""
    fidelity_b: float
    """As ``fidelity_a``, for B."""
    n_docs: int = 0
    """Docs each configuration evaluated: the docs both runs scored (:func:`repaudit.audit.docsets.shared_doc_ids`,
    compare's rule), or a ``--precision`` estimate's docs among them."""
    n_shared: int | None = None
    """Docs both runs scored (:func:`repaudit.audit.docsets.shared_doc_ids`): ``n_docs`` unless ``--precision``
    stopped early; None in reports written before it was recorded."""
    n_docs_a: int | None = None
    """Docs run A's file has per-doc results for (more than ``n_shared`` where B scored fewer, or other, docs); None
    in reports written before it was recorded."""
    n_docs_b: int | None = None
    """Docs run B's file has per-doc results for, as ``n_docs_a``."""
    configurations: int
    """Configurations (hybrids of A and B) evaluated."""
    forward_configurations: int = 0
    """Of them, configurations that computed at least one batch (the rest came from the batch store)."""
    computed_batches: int
    """Batches computed, over all configurations."""
    cached_batches: int
    """Batches read from the batch store, over all configurations."""
    wall_s: float = 0.0
    """Wall-clock seconds of the whole attribution."""
    minimal_flip_sets: dict[int, list[str]]
    """Doc id → a smallest set of factors whose hybrid already gives B's outcome, for every doc whose re-executed
    outcome differs between A and B."""
    sequential: SequentialReport | None = None
    """How a ``--precision`` estimate was reached; None: every doc, bootstrap intervals."""
    noise_floor_sd: float | None = None
    """``--noise-floor``: the backend's numerical noise floor of the metric, a standard deviation in metric units
    from a ``repaudit determinism`` report (:func:`repaudit.audit.determinism.noise_floor`); None: not given."""
    noise_floor_method: str | None = None
    """``--noise-floor``: what that floor is, in words; None: not given."""
    placements: list[Placed] = []
    """Where each configuration ran (a served model's endpoint among replicas, a Ray node), in run order."""


def _check_same_docs(src, rec) -> None:
    """The replay read the docs the run evaluated (same doc_hash per doc id), or a clear error."""
    from repaudit.errors import RepauditError

    pairs = [(src.docs[d.doc_id].doc_hash, d.doc_hash) for d in rec.docs if d.doc_id in src.docs]
    differ = sum(a is not None and a != b for a, b in pairs)
    if not pairs or differ:
        what = "none of its doc ids" if not pairs else f"{differ} of {len(pairs)} docs have other content"
        raise RepauditError(f"the re-executed run of '{src.path}' read other docs than it recorded ({what}; data "
                            f"from {rec.fingerprint.data.source} {rec.fingerprint.data.location}): pass --data-dir "
                            "with the data the run used")


def _agreement(recorded: dict[int, Any], rec) -> float:
    pairs = [(recorded[d.doc_id].prediction, d.prediction) for d in rec.docs if d.doc_id in recorded]
    return float(np.mean([x == y for x, y in pairs])) if pairs else float("nan")


def attribution_configs(src_a, src_b, factors: list[str], subs: list[frozenset[int]]) -> dict:
    """The hybrid RunConfig of every subset, each checked before the first one runs.

    Where the two runs scored different docs (a ``--limit`` on one of them, lighteval's ``--max-samples``), every
    hybrid evaluates the docs both runs scored (:func:`repaudit.audit.docsets.shared_doc_ids`, the rule compare and
    gate apply), so that each Shapley value, the recorded Δ and the residual are on the same docs as compare's Δ.

    Raises:
        RepauditError: a hybrid this machine cannot run (the first bad setting), or runs with no
            doc in common.
    """
    from repaudit.audit.replay import hybrid
    from repaudit.errors import RepauditError
    from repaudit.run.runner import check_config

    configs = {s: hybrid(src_a.config, src_b.config, factors, s) for s in subs}
    shared = shared_doc_ids(src_a.docs, src_b.docs)
    if not shared:
        raise RepauditError(f"the runs scored no doc in common (A {len(src_a.docs)} docs, B {len(src_b.docs)}): "
                            "nothing to attribute")
    if len(shared) < max(len(src_a.docs), len(src_b.docs)):
        configs = {s: c.model_copy(update={"doc_ids": shared}) for s, c in configs.items()}
    for cfg in configs.values():
        check_config(cfg)
    return configs


def attribution_grid(src_a, src_b, n_perm: int | None = None) -> list[tuple[str, Any]]:
    """(label, RunConfig) of every configuration :func:`run_attribution` would run, labelled by the
    factors that take B's value ("A", "A + dtype", …, "B"), for ``--dry-run``.

    Raises:
        RepauditError: as :func:`run_attribution` before it runs anything.
    """
    from repaudit.audit.replay import differing_factors
    from repaudit.errors import RepauditError

    factors = differing_factors(src_a, src_b)[0]
    if not factors:
        raise RepauditError("no replayable factor differs between the runs")
    k = len(factors)
    subs = subsets(k) if k <= EXACT_MAX_FACTORS else permutation_weights(k, n_perm or 4 * k)[1]
    configs = attribution_configs(src_a, src_b, factors, subs)
    return [(_label(factors, s), configs[s]) for s in subs]


def _label(factors: list[str], s: frozenset[int]) -> str:
    """A hybrid's label: the factors that take B's value (``A``, ``A + dtype``, …, ``B``)."""
    return "B" if len(s) == len(factors) else "A" + "".join(f" + {factors[i]}" for i in sorted(s))


@dataclass
class _Grid:
    """What one attribution runs: the differing factors, the hybrid configurations and how they are weighted."""

    factors: list[str]
    fixed: list[str]
    unknown: list[str]
    method: str
    w: np.ndarray
    subs: list[frozenset[int]]
    per: Any
    configs: dict[frozenset[int], Any]
    order: list[frozenset[int]]


def _grid(src_a, src_b, n_perm: int | None) -> _Grid:
    """The differing replayable factors and every hybrid to run, in (backend, dtype) order.

    Raises:
        RepauditError: different tasks, or no replayable factor differs.
    """
    from repaudit.audit.replay import differing_factors
    from repaudit.errors import RepauditError

    if src_a.task != src_b.task:
        raise RepauditError(f"the runs are of different tasks ({src_a.task} vs {src_b.task}): nothing to attribute")
    factors, fixed, unknown = differing_factors(src_a, src_b)
    if not factors:
        raise RepauditError("no replayable factor differs between the runs"
                            + (f" (they differ only in {', '.join(fixed)})" if fixed else ""))
    k = len(factors)
    if k <= EXACT_MAX_FACTORS:
        method, (w, subs), per = "exact", shapley_weights(k), None
    else:
        method = "permutation"
        w, subs, per = permutation_weights(k, n_perm or 4 * k)
    configs = attribution_configs(src_a, src_b, factors, subs)
    order = sorted(subs, key=lambda s: (configs[s].serving.backend, configs[s].serving.dtype, len(s)))
    return _Grid(factors, fixed, unknown, method, w, subs, per, configs, order)


def _execute(g: _Grid, src_a, src_b, executor, metric, progress, precision, precision_seed, round_docs,
             alpha: float = 0.05):
    """Run every hybrid (in doc rounds with ``precision``). Returns ``(records, metric, spent, contrib, seq)``."""
    from repaudit.audit.executor import as_executor

    ex = as_executor(executor)
    k = len(g.factors)
    docs: dict[frozenset[int], list] = {s: [] for s in g.subs}
    records: dict[frozenset[int], Any] = {}
    spent: dict[str, Any] = {"computed": 0, "cached": 0, "forward": set()}
    state: dict[str, Any] = {"metric": metric, "round": 0, "total": len(g.order)}
    m_int = interaction_weights(k)[0] if g.method == "exact" else np.zeros((0, len(g.subs)))

    def run_round(chunk: list[int] | None) -> np.ndarray:
        cfgs = [g.configs[s] if chunk is None else g.configs[s].model_copy(update={"doc_ids": chunk})
                for s in g.order]
        base = state["round"] * len(g.order)
        tick = (lambda d, _t: progress(base + d, state["total"])) if progress else None
        for s, r in zip(g.order, ex.map(cfgs, tick)):
            records[s] = r
            docs[s].extend(r.docs)
            spent["computed"] += r.timings.computed_batches
            spent["cached"] += r.timings.cached_batches
            if r.timings.computed_batches:
                spent["forward"].add(s)
        state["round"] += 1
        state["metric"] = state["metric"] or next(iter(records[frozenset()].docs[0].metrics))
        if chunk is None:  # every doc at once: no sequential intervals to feed
            return np.zeros((0, 0))
        x = np.stack([[d.metrics.get(state["metric"], np.nan) for d in records[s].docs] for s in g.subs])
        return np.vstack([g.w @ x, m_int @ x, x[-1:] - x[:1]]) if len(m_int) else np.vstack([g.w @ x, x[-1:] - x[:1]])

    contrib = seq = weights = None
    if precision is None:
        run_round(None)
    else:
        from repaudit.audit.sequential import plan_strata, run_stratified_rounds

        census, strata = attribution_strata(src_a, src_b, metric)
        state["total"] = len(g.order) * len(plan_strata(census, strata, precision_seed, round_docs))
        contrib, weights, seq = run_stratified_rounds(census, strata, precision, precision_seed, round_docs,
                                                      run_round, alpha=alpha, gate=k)
    for s in g.subs:
        records[s] = records[s].model_copy(update={"docs": docs[s]})
    return records, state["metric"], spent, (contrib, weights), seq


def attribution_strata(src_a, src_b, metric: str | None) -> tuple[list[int], dict[str, list[int]]]:
    """The strata of ``attribute --precision``, from what the two recorded runs already show.

    Returns ``(census, strata)``: the docs both runs scored whose recorded ``metric`` (default
    ``acc`` where recorded, else the first metric) differs between A and B (each contributes its
    whole difference to the sum of the Shapley values, so all of them are evaluated, in round 1);
    the others split into ``near-tie`` (the quarter with the smallest decision margin, the smaller
    of A's and B's top-two log-likelihood gap: the docs a hybrid is likeliest to flip) and ``rest``,
    or one stratum ``rest`` where log-likelihoods are not recorded (generate_until, lm-eval files
    without them). Which doc lands in which stratum changes the cost, never the estimand.
    """
    shared = sorted(set(src_a.docs) & set(src_b.docs))
    if not shared:
        return [], {"rest": []}
    first = src_a.docs[shared[0]].metrics
    key = metric if metric is not None else ("acc" if "acc" in first else next(iter(first), None))
    census = [d for d in shared if src_a.docs[d].metrics.get(key) != src_b.docs[d].metrics.get(key)]
    flips = set(census)
    others = [d for d in shared if d not in flips]

    def margin(doc) -> float | None:
        ll = getattr(doc, "loglikelihoods", None)
        if not ll or len(ll) < 2:
            return None
        top = sorted(ll, reverse=True)
        return float(top[0] - top[1])

    margins = [(a, b) for d in others if (a := margin(src_a.docs[d])) is not None
               and (b := margin(src_b.docs[d])) is not None]
    if len(others) < 8 or len(margins) < len(others):  # a doc without both margins: no near-tie stratum
        return census, {"rest": others}
    m = np.array([min(a, b) for a, b in margins])
    cut = float(np.quantile(m, 0.25))
    near = [d for d, x in zip(others, m) if x <= cut]
    return census, {"near-tie": near, "rest": [d for d, x in zip(others, m) if x > cut]}


def _estimate(g: _Grid, outcomes: dict, stat: StatSettings, contrib, seq):
    """Shapley values with intervals, interactions and the Δ interval. Returns ``(phi, phi_ci, stderr, inter,
    delta_ci)``; a sequential design's repeated confidence intervals replace the bootstrap ones."""
    k, full = len(g.factors), frozenset(range(len(g.factors)))
    (n_boot, boot_seed), alpha = stat.bootstrap(), stat.alpha
    if g.method == "exact":
        att = attribute(g.factors, outcomes, n_boot=n_boot, alpha=alpha, seed=boot_seed)
        phi, phi_ci, stderr = att.phi, att.phi_ci, None
        inter = [{"pair": list(p), "value": float(v), "ci": [float(c[0]), float(c[1])]}
                 for p, v, c in zip(att.pairs, att.interactions, att.interactions_ci)]
        delta_ci = list(att.delta_ci)
    else:
        mat = np.stack([outcomes[s].astype(np.float64) for s in g.subs])
        v = mat.mean(axis=1)
        phi = g.w @ v
        stderr = [float(x) for x in perm_stderr(g.per, v)]
        rng = np.random.default_rng(boot_seed)
        boot = np.stack([mat[:, rng.integers(0, mat.shape[1], mat.shape[1])].mean(axis=1) for _ in range(n_boot)])
        q = [alpha / 2, 1 - alpha / 2]
        phi_ci = np.quantile(boot @ g.w.T, q, axis=0).T
        inter = []
        i0, i1 = g.subs.index(frozenset()), g.subs.index(full)
        delta_ci = [float(x) for x in np.quantile(boot[:, i1] - boot[:, i0], q)]
    if seq is not None:  # the sequential design's estimates and intervals replace the fixed-n ones
        contrib, weights = contrib
        est, hw = contrib @ weights, np.asarray(seq.half_widths)  # stratum-weighted: the all-doc value's estimate
        phi = est[:k]
        phi_ci = np.stack([est[:k] - hw[:k], est[:k] + hw[:k]], axis=1)
        for j, it in enumerate(inter):
            it["value"] = float(est[k + j])
            it["ci"] = [float(est[k + j] - hw[k + j]), float(est[k + j] + hw[k + j])]
        delta_ci = [float(est[-1] - hw[-1]), float(est[-1] + hw[-1])]
    return phi, phi_ci, stderr, inter, delta_ci


def _minimal_flips(g: _Grid, outcomes: dict, doc_ids: list[int]) -> dict[int, list[str]]:
    """Per doc that flips between A and B: the smallest set of factors whose hybrid already flips it."""
    flips = {}
    base, end = outcomes[frozenset()], outcomes[frozenset(range(len(g.factors)))]
    by_size = sorted(g.subs, key=len)
    for j, doc_id in enumerate(doc_ids):
        if base[j] == end[j]:
            continue
        for s in by_size:  # ordered by size: the first subset that flips the doc is a smallest one
            if s and outcomes[s][j] == end[j]:
                flips[doc_id] = [g.factors[i] for i in sorted(s)]
                break
    return flips


def _check_metric(metric: str, src_a, src_b, records: dict) -> None:
    from repaudit.errors import RepauditError

    for src in (src_a, src_b):
        if not all(metric in d.metrics for d in src.docs.values()):
            raise RepauditError(f"'{src.path}' does not record {metric} for every doc: choose another --metric")
    if not all(metric in d.metrics for r in records.values() for d in r.docs):
        raise RepauditError(f"a re-executed configuration does not report {metric}: choose another --metric")


def _recorded_score(src, doc_ids: list[int], metric: str, w: np.ndarray | None) -> float:
    """A run's recorded score on the docs the estimate used: their mean, or weighted by ``w`` (``--precision``)."""
    if w is None:
        return float(np.mean([src.docs[i].metrics[metric] for i in doc_ids if i in src.docs]))
    return float(np.array([src.docs[i].metrics[metric] for i in doc_ids]) @ w)


def _score(values: np.ndarray, w: np.ndarray | None) -> float:
    """A re-executed configuration's score: the mean of its per-doc values, or weighted by ``w`` (``--precision``)."""
    return float(values.mean()) if w is None else float(values @ w)


def run_attribution(src_a, src_b, executor, metric: str | None = None, stat: StatSettings | None = None,
                    progress=None, n_perm: int | None = None, precision: float | None = None,
                    precision_seed: int = 0, round_docs: int | None = None, **changes: Any) -> AttributionReport:
    """Re-execute the hybrids of two runs and attribute the score delta to each differing factor.

    Args:
        src_a, src_b: :class:`repaudit.replay.ReplaySource` of runs A and B.
        executor: a :class:`repaudit.executor.Executor` (local or Ray), or a function
            ``RunConfig -> RunRecord``; finished batches come from the store, so a repeated
            attribution performs no inference.
        metric: per-doc metric to attribute (default: the task's first).
        stat: alpha (the intervals are (1 − alpha), two-sided) and the bootstrap (attribute's defaults where None:
            2000 resamples, seed 0); ``changes`` override its fields (``n_boot=200``).
        progress: called as ``progress(done, total)`` after each configuration.
        n_perm: permutations when k > :data:`EXACT_MAX_FACTORS` (default 4·k).
        precision: stop when every Shapley value's (and interaction's, and the delta's) (1 − ``alpha``)
            interval is at most this wide on each side, in metric units; docs are evaluated in
            seeded random rounds (:mod:`repaudit.audit.sequential`) and intervals are repeated
            confidence intervals. ``None`` evaluates every doc, intervals by bootstrap.
        precision_seed, round_docs: the permutation seed and round size of the doc-adaptive audit.

    Configurations are ordered by (backend, dtype): a pooled backend loads the model once per pair.

    Raises:
        RepauditError: no replayable factor differs, the runs are of different tasks, or the
            metric is not recorded by both runs.
        UsageError: a statistics setting out of range.
    """
    t0 = time.perf_counter()
    stat = for_command("attribute", stat, **changes)
    g = _grid(src_a, src_b, n_perm)
    full = frozenset(range(len(g.factors)))
    records, metric, spent, contrib, seq = _execute(g, src_a, src_b, executor, metric, progress, precision,
                                                    precision_seed, round_docs, stat.alpha)
    first = records[frozenset()]
    _check_metric(metric, src_a, src_b, records)
    doc_ids = [d.doc_id for d in first.docs]
    _check_same_docs(src_a, first)
    _check_same_docs(src_b, records[full])
    outcomes = {s: np.array([d.metrics[metric] for d in r.docs]) for s, r in records.items()}
    phi, phi_ci, stderr, inter, delta_ci = _estimate(g, outcomes, stat, contrib, seq)
    # recorded and re-executed scores on the docs this estimate used (all of them without --precision), weighted
    # as the estimate is (stratum sizes over docs used, with --precision), so that the sum of φ is their Δ
    w = None if seq is None else contrib[1]
    ra, rb = _recorded_score(src_a, doc_ids, metric, w), _recorded_score(src_b, doc_ids, metric, w)
    va, vb = _score(outcomes[frozenset()], w), _score(outcomes[full], w)
    return AttributionReport(
        task=src_a.task, metric=metric, run_a=str(src_a.path), run_b=str(src_b.path), factors=g.factors,
        not_replayable=g.fixed, not_recorded=g.unknown, method=g.method,
        phi=[float(x) for x in phi], phi_ci=[[float(a), float(b)] for a, b in phi_ci], phi_stderr=stderr,
        interactions=inter, recorded_a=ra, recorded_b=rb, reexecuted_a=va, reexecuted_b=vb,
        recorded_delta=rb - ra, reexecuted_delta=vb - va, reexecuted_delta_ci=delta_ci, alpha=stat.alpha,
        stat_settings=stat,
        residual=(rb - ra) - (vb - va), fidelity_a=_agreement(src_a.docs, first),
        fidelity_b=_agreement(src_b.docs, records[full]), n_docs=len(doc_ids), n_shared=len(shared_doc_ids(
            src_a.docs, src_b.docs)), n_docs_a=len(src_a.docs), n_docs_b=len(src_b.docs), configurations=len(g.subs),
        forward_configurations=len(spent["forward"]), computed_batches=spent["computed"],
        cached_batches=spent["cached"], wall_s=round(time.perf_counter() - t0, 2),
        minimal_flip_sets=_minimal_flips(g, outcomes, doc_ids), sequential=seq,
        placements=placed([(_label(g.factors, s), records[s]) for s in g.order]))
