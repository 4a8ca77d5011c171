"""Per-factor attribution of a score delta: Shapley values over configurations.

Given k differing factors, configuration ``S`` (a subset of the factors) takes run B's value for
the factors in ``S`` and run A's for the rest; ``v(S)`` is its score. Factor i's attribution is
its Shapley value (Shapley 1953)

    φ_i = Σ_{S ⊆ F∖{i}}  |S|! (k-|S|-1)! / k!  · (v(S ∪ {i}) − v(S)),

so that Σ_i φ_i = v(F) − v(∅), the re-executed delta, exactly ("efficiency"). Pairwise
interactions use the Shapley interaction index (Grabisch & Roubens 1999)

    I_ij = Σ_{S ⊆ F∖{i,j}}  |S|! (k-|S|-2)! / (k-1)!  · (v(S∪{i,j}) − v(S∪{i}) − v(S∪{j}) + v(S)).

This is the configuration-space Shapley analysis of HyperSHAP (Wever et al. 2025,
arXiv 2502.01276), and generalises the single-path ablation analysis of Fawcett & Hoos (2016).

Because every φ and I is a *linear* function of the vector of configuration scores, its
uncertainty comes from a paired bootstrap over docs at no inference cost: resample docs,
recompute every configuration's mean from the cached per-doc outcomes, apply the same weights.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from repaudit.audit.sequential import SequentialReport


def subsets(k: int) -> list[frozenset[int]]:
    """All subsets of ``range(k)``, ordered by size then lexicographically (2^k of them)."""
    return [frozenset(c) for r in range(k + 1) for c in itertools.combinations(range(k), r)]


def shapley_weights(k: int) -> tuple[np.ndarray, list[frozenset[int]]]:
    """Matrix ``W`` (k × 2^k) with ``φ = W @ v`` for ``v`` indexed like :func:`subsets`."""
    subs = subsets(k)
    index = {s: j for j, s in enumerate(subs)}
    w = np.zeros((k, len(subs)))
    for i in range(k):
        for s in subs:
            if i in s:
                continue
            coef = math.factorial(len(s)) * math.factorial(k - len(s) - 1) / math.factorial(k)
            w[i, index[s | {i}]] += coef
            w[i, index[s]] -= coef
    return w, subs


def interaction_weights(k: int) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Matrix ``M`` (k(k-1)/2 × 2^k) with ``I = M @ v`` for the Shapley interaction index."""
    subs = subsets(k)
    index = {s: j for j, s in enumerate(subs)}
    pairs = list(itertools.combinations(range(k), 2))
    m = np.zeros((len(pairs), len(subs)))
    for p, (i, j) in enumerate(pairs):
        for s in subs:
            if i in s or j in s:
                continue
            coef = math.factorial(len(s)) * math.factorial(k - len(s) - 2) / math.factorial(k - 1)
            m[p, index[s | {i, j}]] += coef
            m[p, index[s | {i}]] -= coef
            m[p, index[s | {j}]] -= coef
            m[p, index[s]] += coef
    return m, pairs


@dataclass
class Attribution:
    """Shapley values (``phi``), pairwise interactions and 95 % bootstrap intervals, in score units.

    ``delta`` = v(all factors from B) − v(none) = ``phi.sum()``.
    """

    factors: list[str]
    phi: np.ndarray
    phi_ci: np.ndarray  # (k, 2)
    pairs: list[tuple[str, str]]
    interactions: np.ndarray
    interactions_ci: np.ndarray  # (pairs, 2)
    delta: float
    delta_ci: tuple[float, float]
    config_scores: dict[frozenset[int], float]


def attribute(factors: list[str], outcomes: dict[frozenset[int], np.ndarray], n_boot: int = 2000,
              alpha: float = 0.05, seed: int = 0) -> Attribution:
    """Exact Shapley attribution from per-doc outcomes of all 2^k configurations.

    Args:
        factors: names of the k differing factors (k ≤ 12 keeps 2^k tractable; the issue's exact
            regime is k ≤ 8).
        outcomes: for every subset S of ``range(k)``, the per-doc metric values (shape (n,), the
            same docs in the same order for every S) of the configuration taking B's values for S.

    Raises:
        ValueError: a subset is missing or the doc counts differ.
    """
    k = len(factors)
    w, subs = shapley_weights(k)
    m, pairs = interaction_weights(k)
    missing = [s for s in subs if s not in outcomes]
    if missing:
        raise ValueError(f"outcomes lack {len(missing)} of the {len(subs)} configurations, e.g. {sorted(missing[0])}")
    mat = np.stack([np.asarray(outcomes[s], dtype=np.float64) for s in subs])  # (2^k, n)
    n = mat.shape[1]
    v = mat.mean(axis=1)
    rng = np.random.default_rng(seed)
    boot_v = np.empty((n_boot, len(subs)))
    for b in range(n_boot):
        boot_v[b] = mat[:, rng.integers(0, n, size=n)].mean(axis=1)
    q = [alpha / 2, 1 - alpha / 2]
    phi_b = boot_v @ w.T
    int_b = boot_v @ m.T if len(pairs) else np.zeros((n_boot, 0))
    delta_b = boot_v[:, -1] - boot_v[:, 0]
    return Attribution(
        factors=list(factors), phi=w @ v, phi_ci=np.quantile(phi_b, q, axis=0).T,
        pairs=[(factors[i], factors[j]) for i, j in pairs], interactions=m @ v if len(pairs) else np.zeros(0),
        interactions_ci=np.quantile(int_b, q, axis=0).T if len(pairs) else np.zeros((0, 2)),
        delta=float(v[-1] - v[0]), delta_ci=tuple(float(x) for x in np.quantile(delta_b, q)),
        config_scores={s: float(x) for s, x in zip(subs, v)},
    )


def permutation_weights(k: int, n_perm: int, seed: int = 0) -> tuple[np.ndarray, list[frozenset[int]], np.ndarray]:
    """Monte-Carlo Shapley values as weights over the subsets the sampled permutations visit.

    Each permutation adds factors one at a time; factor i's marginal is v(S ∪ {i}) − v(S) for the
    S before it (Castro et al. 2009). Returns ``(W, subsets, W_per_perm)`` with ``φ ≈ W @ v`` over
    ``subsets`` and ``W_per_perm`` (n_perm × k × len(subsets)) for the permutation standard error;
    every permutation's marginals sum to v(F) − v(∅), so φ still sums to the delta exactly.
    """
    rng = np.random.default_rng(seed)
    perms = [rng.permutation(k) for _ in range(n_perm)]
    visited: dict[frozenset[int], int] = {}
    steps = []
    for perm in perms:
        s: frozenset[int] = frozenset()
        visited.setdefault(s, len(visited))
        for i in perm:
            t = s | {int(i)}
            visited.setdefault(t, len(visited))
            steps.append((int(i), s, t))
            s = t
    subs = list(visited)
    per = np.zeros((n_perm, k, len(subs)))
    for n, (i, s, t) in enumerate(steps):
        per[n // k, i, visited[t]] += 1.0
        per[n // k, i, visited[s]] -= 1.0
    return per.mean(axis=0), subs, per


def _perm_stderr(per: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Monte-Carlo standard error of permutation Shapley values: sd over permutations / sqrt(n)."""
    n = per.shape[0]
    return (per @ v).std(axis=0, ddof=1) / math.sqrt(n) if n > 1 else np.full(per.shape[1], np.nan)


def shapley_permutation(k: int, value, n_perm: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Monte-Carlo Shapley values by random permutations (Castro et al. 2009), for k > 8.

    ``value(frozenset) -> float`` is called once per distinct visited subset. Returns
    ``(phi, stderr)``; ``phi`` sums to v(F) − v(∅) exactly (see :func:`permutation_weights`).
    """
    w, subs, per = permutation_weights(k, n_perm, seed)
    v = np.array([float(value(s)) for s in subs])
    return w @ v, _perm_stderr(per, v)


#: exact Shapley values up to this many factors (2^8 = 256 configurations); sampling beyond
EXACT_MAX_FACTORS = 8


class AttributionReport(BaseModel):
    """The result of ``repaudit attribute`` (JSON-ready). Scores and values in metric units (0-1).

    ``method`` is ``exact`` (all 2^k configurations) or ``permutation`` (sampled, k > 8; then
    ``phi_stderr`` is the Monte-Carlo standard error and interactions are not computed).
    """

    model_config = ConfigDict(extra="forbid")
    task: str
    metric: str
    run_a: str = ""
    run_b: str = ""
    factors: list[str]
    not_replayable: list[str]
    not_recorded: list[str] = []
    method: str = "exact"
    phi: list[float]
    phi_ci: list[list[float]]
    phi_stderr: list[float] | None = None
    interactions: list[dict]
    recorded_a: float
    recorded_b: float
    reexecuted_a: float = float("nan")
    reexecuted_b: float = float("nan")
    recorded_delta: float
    reexecuted_delta: float
    reexecuted_delta_ci: list[float] = []
    residual: float
    fidelity_a: float
    fidelity_b: float
    n_docs: int = 0
    configurations: int
    forward_configurations: int = 0
    computed_batches: int
    cached_batches: int
    wall_s: float = 0.0
    minimal_flip_sets: dict[int, list[str]]
    #: how a ``--precision`` estimate was reached (None: every doc, bootstrap intervals)
    sequential: SequentialReport | None = None


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

    Raises:
        RepauditError: a hybrid this machine cannot run (the first bad setting).
    """
    from repaudit.audit.replay import hybrid
    from repaudit.run.runner import check_config

    configs = {s: hybrid(src_a.config, src_b.config, factors, s) for s in subs}
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
    return [("B" if len(s) == k else "A" + "".join(f" + {factors[i]}" for i in sorted(s)), configs[s])
            for s in subs]


def run_attribution(src_a, src_b, executor, metric: str | None = None, n_boot: int = 2000,
                    progress=None, n_perm: int | None = None, precision: float | None = None,
                    precision_seed: int = 0, round_docs: int | None = None) -> AttributionReport:
    """Re-execute the hybrids of two runs and attribute the score delta to each differing factor.

    Args:
        src_a, src_b: :class:`repaudit.replay.ReplaySource` of runs A and B.
        executor: a :class:`repaudit.executor.Executor` (local or Ray), or a function
            ``RunConfig -> RunRecord``; finished batches come from the store, so a repeated
            attribution performs no inference.
        metric: per-doc metric to attribute (default: the task's first).
        progress: called as ``progress(done, total)`` after each configuration.
        n_perm: permutations when k > :data:`EXACT_MAX_FACTORS` (default 4·k).
        precision: stop when every Shapley value's (and interaction's, and the delta's) 95 %
            interval is at most this wide on each side, in metric units; docs are evaluated in
            seeded random rounds (:mod:`repaudit.audit.sequential`) and intervals are repeated
            confidence intervals. ``None`` evaluates every doc, intervals by bootstrap.
        precision_seed, round_docs: the permutation seed and round size of the doc-adaptive audit.

    Configurations are ordered by (backend, dtype) so that a pooled backend loads the model once
    per backend and dtype.

    Raises:
        RepauditError: no replayable factor differs, the runs are of different tasks, or the
            metric is not recorded by both runs.
    """
    import time

    from repaudit.audit.replay import differing_factors
    from repaudit.errors import RepauditError

    t0 = time.perf_counter()
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
    if not 100 <= n_boot <= 1_000_000:
        raise RepauditError(f"--n-boot must be between 100 and 1000000, got {n_boot}")
    configs = attribution_configs(src_a, src_b, factors, subs)
    order = sorted(subs, key=lambda s: (configs[s].backend, configs[s].dtype, len(s)))
    from repaudit.audit.executor import as_executor

    ex = as_executor(executor)
    full = frozenset(range(k))
    docs: dict[frozenset[int], list] = {s: [] for s in subs}
    records: dict[frozenset[int], Any] = {}
    spent = {"computed": 0, "cached": 0, "forward": set()}
    state: dict[str, Any] = {"metric": metric, "round": 0}

    def run_round(chunk: list[int] | None) -> np.ndarray:
        cfgs = [configs[s] if chunk is None else configs[s].model_copy(update={"doc_ids": chunk}) for s in order]
        base = state["round"] * len(order)
        tick = (lambda d, _t: progress(base + d, total[0])) if progress else None
        for s, r in zip(order, ex.map(cfgs, tick)):
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
        x = np.stack([[d.metrics.get(state["metric"], np.nan) for d in records[s].docs] for s in subs])
        return np.vstack([w @ x, m_int @ x, x[-1:] - x[:1]]) if len(m_int) else np.vstack([w @ x, x[-1:] - x[:1]])

    m_int = interaction_weights(k)[0] if method == "exact" else np.zeros((0, len(subs)))
    seq = None
    if precision is None:
        total = [len(order)]
        run_round(None)
    else:
        from repaudit.audit.sequential import plan_rounds, run_rounds

        available = sorted(set(src_a.docs) & set(src_b.docs))
        total = [len(order) * len(plan_rounds(available, precision_seed, round_docs))]
        contrib, seq = run_rounds(available, precision, precision_seed, round_docs, run_round, gate=k)
    metric = state["metric"]
    computed, cached, forward = spent["computed"], spent["cached"], len(spent["forward"])
    for s in subs:
        records[s] = records[s].model_copy(update={"docs": docs[s]})
    first = records[frozenset()]
    for src in (src_a, src_b):
        if not all(metric in d.metrics for d in src.docs.values()):
            raise RepauditError(f"'{src.path}' does not record {metric} for every doc: choose another --metric")
    if not all(metric in d.metrics for r in records.values() for d in r.docs):
        raise RepauditError(f"a re-executed configuration does not report {metric}: choose another --metric")
    doc_ids = [d.doc_id for d in first.docs]
    _check_same_docs(src_a, first)
    _check_same_docs(src_b, records[full])
    outcomes = {s: np.array([d.metrics[metric] for d in r.docs]) for s, r in records.items()}
    if method == "exact":
        att = attribute(factors, outcomes, n_boot=n_boot)
        phi, phi_ci, stderr = att.phi, att.phi_ci, None
        inter = [{"pair": list(p), "value": float(v), "ci": [float(c[0]), float(c[1])]}
                 for p, v, c in zip(att.pairs, att.interactions, att.interactions_ci)]
        delta_ci = list(att.delta_ci)
    else:
        mat = np.stack([outcomes[s].astype(np.float64) for s in subs])
        v = mat.mean(axis=1)
        phi = w @ v
        stderr = [float(x) for x in _perm_stderr(per, v)]
        rng = np.random.default_rng(0)
        boot = np.stack([mat[:, rng.integers(0, mat.shape[1], mat.shape[1])].mean(axis=1) for _ in range(n_boot)])
        phi_ci = np.quantile(boot @ w.T, [0.025, 0.975], axis=0).T
        inter = []
        i0, i1 = subs.index(frozenset()), subs.index(full)
        delta_ci = [float(x) for x in np.quantile(boot[:, i1] - boot[:, i0], [0.025, 0.975])]
    if seq is not None:  # the sequential design's intervals replace the fixed-n bootstrap ones
        est, hw = contrib.mean(axis=1), np.asarray(seq.half_widths)
        phi_ci = np.stack([est[:k] - hw[:k], est[:k] + hw[:k]], axis=1)
        for j, it in enumerate(inter):
            it["ci"] = [float(est[k + j] - hw[k + j]), float(est[k + j] + hw[k + j])]
        delta_ci = [float(est[-1] - hw[-1]), float(est[-1] + hw[-1])]
    # recorded scores on the docs this estimate used (all of them without --precision)
    ra = float(np.mean([src_a.docs[i].metrics[metric] for i in doc_ids if i in src_a.docs]))
    rb = float(np.mean([src_b.docs[i].metrics[metric] for i in doc_ids if i in src_b.docs]))
    va, vb = float(outcomes[frozenset()].mean()), float(outcomes[full].mean())
    flips = {}
    base, end = outcomes[frozenset()], outcomes[full]
    by_size = sorted(subs, key=len)
    for j, doc_id in enumerate(doc_ids):
        if base[j] == end[j]:
            continue
        for s in by_size:  # ordered by size: the first subset that flips the doc is a smallest one
            if s and outcomes[s][j] == end[j]:
                flips[doc_id] = [factors[i] for i in sorted(s)]
                break
    return AttributionReport(
        task=src_a.task, metric=metric, run_a=str(src_a.path), run_b=str(src_b.path), factors=factors,
        not_replayable=fixed, not_recorded=unknown, method=method,
        phi=[float(x) for x in phi], phi_ci=[[float(a), float(b)] for a, b in phi_ci], phi_stderr=stderr,
        interactions=inter, recorded_a=ra, recorded_b=rb, reexecuted_a=va, reexecuted_b=vb,
        recorded_delta=rb - ra, reexecuted_delta=vb - va, reexecuted_delta_ci=delta_ci,
        residual=(rb - ra) - (vb - va), fidelity_a=_agreement(src_a.docs, records[frozenset()]),
        fidelity_b=_agreement(src_b.docs, records[full]), n_docs=len(doc_ids), configurations=len(subs),
        forward_configurations=forward, computed_batches=computed, cached_batches=cached,
        wall_s=round(time.perf_counter() - t0, 2), minimal_flip_sets=flips, sequential=seq)
