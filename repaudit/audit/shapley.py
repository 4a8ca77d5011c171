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
    delta_lo, delta_hi = np.quantile(delta_b, q)
    return Attribution(
        factors=list(factors), phi=w @ v, phi_ci=np.quantile(phi_b, q, axis=0).T,
        pairs=[(factors[i], factors[j]) for i, j in pairs], interactions=m @ v if len(pairs) else np.zeros(0),
        interactions_ci=np.quantile(int_b, q, axis=0).T if len(pairs) else np.zeros((0, 2)),
        delta=float(v[-1] - v[0]), delta_ci=(float(delta_lo), float(delta_hi)),
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


def perm_stderr(per: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Monte-Carlo standard error of permutation Shapley values, shape (k,): sd over the n permutations
    / sqrt(n) (``per``: (n, m) per-permutation weights, ``v``: (m,) configuration scores); NaN for n = 1."""
    n = per.shape[0]
    return (per @ v).std(axis=0, ddof=1) / math.sqrt(n) if n > 1 else np.full(per.shape[1], np.nan)


def shapley_permutation(k: int, value, n_perm: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Monte-Carlo Shapley values by random permutations (Castro et al. 2009), for k > 8.

    ``value(frozenset) -> float`` is called once per distinct visited subset. Returns
    ``(phi, stderr)``; ``phi`` sums to v(F) − v(∅) exactly (see :func:`permutation_weights`).
    """
    w, subs, per = permutation_weights(k, n_perm, seed)
    v = np.array([float(value(s)) for s in subs])
    return w @ v, perm_stderr(per, v)


#: exact Shapley values up to this many factors (2^8 = 256 configurations); sampling beyond
EXACT_MAX_FACTORS = 8
