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

import numpy as np
from pydantic import BaseModel, ConfigDict


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


def shapley_permutation(k: int, value, n_perm: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Monte-Carlo Shapley values by random permutations (Castro et al. 2009), for k > 8.

    ``value(frozenset) -> float`` is called once per distinct subset (memoised). Returns
    ``(phi, stderr)``; each permutation's marginals sum to v(F) − v(∅), so ``phi`` still sums to the
    delta exactly.
    """
    rng = np.random.default_rng(seed)
    memo: dict[frozenset[int], float] = {}

    def v(s: frozenset[int]) -> float:
        if s not in memo:
            memo[s] = float(value(s))
        return memo[s]

    marg = np.zeros((n_perm, k))
    for p in range(n_perm):
        s: frozenset[int] = frozenset()
        for i in rng.permutation(k):
            t = s | {int(i)}
            marg[p, i] = v(t) - v(s)
            s = t
    return marg.mean(axis=0), marg.std(axis=0, ddof=1) / math.sqrt(n_perm) if n_perm > 1 else np.full(k, np.nan)


class AttributionReport(BaseModel):
    """The result of ``repaudit attribute`` (JSON-ready). Scores and values in metric units (0-1)."""

    model_config = ConfigDict(extra="forbid")
    task: str
    metric: str
    factors: list[str]
    not_replayable: list[str]
    phi: list[float]
    phi_ci: list[list[float]]
    interactions: list[dict]
    recorded_a: float
    recorded_b: float
    recorded_delta: float
    reexecuted_delta: float
    residual: float
    fidelity_a: float
    fidelity_b: float
    configurations: int
    computed_batches: int
    cached_batches: int
    minimal_flip_sets: dict[int, list[str]]


def run_attribution(rec_a, rec_b, cfg_a, cfg_b, run_fn, metric: str | None = None, n_boot: int = 2000,
                    progress=None) -> AttributionReport:
    """Re-execute every hybrid of two runs and attribute the score delta to each differing factor.

    ``run_fn(RunConfig) -> RunRecord`` evaluates a configuration (finished batches come from the
    store, so a repeated attribution performs no inference). Configurations are ordered by dtype so
    that the model is reloaded as rarely as possible.

    Raises:
        RepauditError: no replayable factor differs, or the runs are of different tasks.
    """
    from repaudit.errors import RepauditError
    from repaudit.replay import differing_factors, hybrid

    if rec_a.fingerprint.data.task != rec_b.fingerprint.data.task:
        raise RepauditError(f"the runs are of different tasks ({rec_a.fingerprint.data.task} vs "
                            f"{rec_b.fingerprint.data.task}): nothing to attribute")
    factors, fixed = differing_factors(rec_a, rec_b)
    if not factors:
        raise RepauditError("no replayable factor differs between the runs"
                            + (f" (they differ only in {', '.join(fixed)})" if fixed else ""))
    k = len(factors)
    metric = metric or next(iter(rec_a.docs[0].metrics))
    subs = subsets(k)
    order = sorted(subs, key=lambda s: (hybrid(cfg_a, cfg_b, factors, s).dtype, len(s)))
    records, computed, cached = {}, 0, 0
    for s in order:
        rec = run_fn(hybrid(cfg_a, cfg_b, factors, s))
        records[s] = rec
        computed += rec.timings.computed_batches
        cached += rec.timings.cached_batches
        if progress:
            progress()
    doc_ids = [d.doc_id for d in records[frozenset()].docs]
    outcomes = {s: np.array([d.metrics[metric] for d in r.docs]) for s, r in records.items()}
    att = attribute(factors, outcomes, n_boot=n_boot)

    def agree(x, y):
        return float(np.mean([p.prediction == q.prediction for p, q in zip(x.docs, y.docs)]))

    full = frozenset(range(k))
    ra = float(np.mean([d.metrics[metric] for d in rec_a.docs]))
    rb = float(np.mean([d.metrics[metric] for d in rec_b.docs]))
    flips = {}
    base, end = outcomes[frozenset()], outcomes[full]
    for j, doc_id in enumerate(doc_ids):
        if base[j] == end[j]:
            continue
        for s in subs:  # subsets are ordered by size: the first that flips the doc is a smallest one
            if s and outcomes[s][j] == end[j]:
                flips[doc_id] = [factors[i] for i in sorted(s)]
                break
    return AttributionReport(
        task=rec_a.fingerprint.data.task, metric=metric, factors=factors, not_replayable=fixed,
        phi=[float(x) for x in att.phi], phi_ci=[[float(a), float(b)] for a, b in att.phi_ci],
        interactions=[{"pair": list(p), "value": float(v), "ci": [float(c[0]), float(c[1])]}
                      for p, v, c in zip(att.pairs, att.interactions, att.interactions_ci)],
        recorded_a=ra, recorded_b=rb, recorded_delta=rb - ra, reexecuted_delta=att.delta,
        residual=(rb - ra) - att.delta, fidelity_a=agree(records[frozenset()], rec_a),
        fidelity_b=agree(records[full], rec_b), configurations=len(subs), computed_batches=computed,
        cached_batches=cached, minimal_flip_sets=flips)
