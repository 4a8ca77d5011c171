"""Paired statistics over per-doc outcomes of two runs on the same docs.

* Paired bootstrap of the mean difference (Efron & Tibshirani 1993; for evals, Miller 2024,
  "Adding Error Bars to Evals", arXiv 2411.00640, §3): resample docs — or whole clusters when docs
  share a cluster such as an MMLU subject — with replacement, and take percentiles of the
  resampled mean differences.
* Analytic standard errors of the paired difference: ``sd(d, ddof=1)/sqrt(n)``; clustered
  ``sqrt(sum_c (sum_{i in c} (d_i - mean(d)))^2) / n`` (Miller 2024, eq. 5).
* Exact McNemar test for binary outcomes (McNemar 1947): under H0 the discordant docs split
  Binomial(b + c, 1/2); two-sided p = ``binomtest(b, b + c, 0.5)``.
* Unpaired fallback from reported stderrs: ``Δ ± z sqrt(se_A^2 + se_B^2)``, which ignores the
  positive correlation of two runs on the same docs and is therefore conservative (wider) — except on few docs near
  0 or 1, where the normal approximation of each side fails (coverage 92.7–93.8 % at a nominal 95 % on 20–30 docs
  near 5 % or 90 % accuracy). There, for a proportion of 0/1 docs whose counts are known, the hybrid score interval
  of Newcombe (1998, "Interval estimation for the difference between independent proportions", Statistics in
  Medicine 17:873–890, method 10; the MOVER form of Zou & Donner 2008) combines each side's Wilson (1927) interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri


@dataclass(frozen=True)
class PairedResult:
    """Δ = mean(b) - mean(a) over n shared docs, with a (1 - alpha) interval.

    ``se`` is the analytic (clustered when clusters are given) standard error of Δ; ``ci`` the
    paired-bootstrap percentile interval.
    """

    delta: float
    se: float
    ci_low: float
    ci_high: float
    n: int
    n_clusters: int | None


def paired_se(d: np.ndarray, clusters: np.ndarray | None = None) -> float:
    """Standard error of ``mean(d)``; clustered (Miller 2024 eq. 5) when ``clusters`` is given."""
    n = len(d)
    if n < 2:
        return float("nan")
    if clusters is None:
        return float(np.std(d, ddof=1) / math.sqrt(n))
    resid = d - d.mean()
    _, inv = np.unique(clusters, return_inverse=True)
    sums = np.bincount(inv, weights=resid)
    return float(math.sqrt(np.sum(sums ** 2)) / n)


def paired_bootstrap(a: np.ndarray, b: np.ndarray, clusters: np.ndarray | None = None, n_boot: int = 10_000,
                     alpha: float = 0.05, seed: int = 0) -> PairedResult:
    """Paired (cluster) bootstrap interval for ``mean(b) - mean(a)``.

    Args:
        a, b: per-doc values of the same docs, shape (n,).
        clusters: optional cluster label per doc, shape (n,); whole clusters are resampled.
        n_boot: bootstrap replicates.

    Raises:
        ValueError: shapes differ or no docs.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or len(a) == 0:
        raise ValueError("a and b must be 1-D arrays of the same non-zero length")
    d = b - a
    reps, n_clusters = _bootstrap_means(d, clusters, n_boot, seed)
    lo, hi = np.quantile(reps, [alpha / 2, 1 - alpha / 2])
    return PairedResult(delta=float(d.mean()), se=paired_se(d, None if clusters is None else np.asarray(clusters)),
                        ci_low=float(lo), ci_high=float(hi), n=len(d), n_clusters=n_clusters)


def _bootstrap_means(d: np.ndarray, clusters: np.ndarray | None, n_boot: int, seed: int
                     ) -> tuple[np.ndarray, int | None]:
    """``n_boot`` resampled means of ``d`` (docs, or whole clusters, drawn with replacement) and the cluster count."""
    n = len(d)
    rng = np.random.default_rng(seed)
    reps = np.empty(n_boot)
    if clusters is None:
        chunk = max(1, 2_000_000 // n)
        for s in range(0, n_boot, chunk):
            k = min(chunk, n_boot - s)
            idx = rng.integers(0, n, size=(k, n))
            reps[s:s + k] = d[idx].mean(axis=1)
        return reps, None
    _, inv = np.unique(clusters, return_inverse=True)
    n_clusters = int(inv.max()) + 1
    sums = np.bincount(inv, weights=d, minlength=n_clusters)
    sizes = np.bincount(inv, minlength=n_clusters).astype(np.float64)
    for s in range(n_boot):
        pick = rng.integers(0, n_clusters, size=n_clusters)
        reps[s] = sums[pick].sum() / sizes[pick].sum()
    return reps, n_clusters


@dataclass(frozen=True)
class BootstrapMean:
    """The mean of one run's per-doc values with its bootstrap standard error (the standard deviation of the
    resampled means, ddof 1) and percentile interval, in the values' unit."""

    mean: float
    se: float
    ci_low: float
    ci_high: float
    n: int


def bootstrap_mean(x: np.ndarray, clusters: np.ndarray | None = None, n_boot: int = 2000, alpha: float = 0.05,
                   seed: int = 0) -> BootstrapMean:
    """Bootstrap of one run's mean over its docs (whole clusters resampled where given; Efron & Tibshirani
    1993, Miller 2024 §3), as :func:`paired_bootstrap` resamples a difference.

    Args:
        x: per-doc values, shape (n,), n ≥ 1.
        clusters: optional cluster label per doc, shape (n,).

    Raises:
        ValueError: ``x`` is not 1-D or empty, or ``n_boot`` < 2.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or len(x) == 0 or n_boot < 2:
        raise ValueError("x must be a non-empty 1-D array and n_boot at least 2")
    reps, _ = _bootstrap_means(x, clusters, n_boot, seed)
    lo, hi = np.quantile(reps, [alpha / 2, 1 - alpha / 2])
    return BootstrapMean(mean=float(x.mean()), se=float(np.std(reps, ddof=1)), ci_low=float(lo), ci_high=float(hi),
                         n=len(x))


def mcnemar_exact(a: np.ndarray, b: np.ndarray) -> tuple[float, int, int]:
    """Exact two-sided McNemar p-value for binary outcomes, with the discordant counts.

    Returns:
        ``(p, right_to_wrong, wrong_to_right)`` where right_to_wrong counts docs with a=1, b=0.
    """
    a = np.asarray(a) > 0.5
    b = np.asarray(b) > 0.5
    r2w = int(np.sum(a & ~b))
    w2r = int(np.sum(~a & b))
    if r2w + w2r == 0:
        return 1.0, 0, 0
    from scipy.stats import binomtest  # scipy.stats costs ~0.6 s to import: only the exact tests take it

    return float(binomtest(r2w, r2w + w2r, 0.5).pvalue), r2w, w2r


def unpaired_interval(va: float, sa: float, vb: float, sb: float, alpha: float = 0.05) -> tuple[float, float, float]:
    """``(se, low, high)`` of ``vb - va`` from two independent stderrs (normal approximation)."""
    se = math.sqrt(sa * sa + sb * sb)
    z = float(ndtri(1 - alpha / 2))
    return se, (vb - va) - z * se, (vb - va) + z * se


def wilson_interval(p, n, alpha: float = 0.05):
    """Wilson's (1927) score interval of a proportion ``p`` observed on ``n`` docs, at level 1 − ``alpha``:
    ``(p + z²/2n ± z·sqrt(p(1 − p)/n + z²/4n²)) / (1 + z²/n)``, inside [0, 1] by construction. ``p`` and ``n`` may be
    numbers or numpy arrays of one shape (the bounds come back alike).

    Raises:
        ValueError: ``n`` < 1 or ``p`` outside [0, 1].
    """
    p, n = np.asarray(p, dtype=np.float64), np.asarray(n, dtype=np.float64)
    if np.any(n < 1) or np.any((p < 0) | (p > 1)) or np.any(~np.isfinite(p)):
        raise ValueError("a Wilson interval needs n >= 1 docs and a proportion in [0, 1]")
    z = float(-ndtri(alpha / 2))  # isf keeps its precision at tiny alpha, where 1 − alpha/2 rounds to 1
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo, hi = np.maximum(0.0, centre - half), np.minimum(1.0, centre + half)
    return (float(lo), float(hi)) if lo.ndim == 0 else (lo, hi)


def newcombe_interval(pa, na, pb, nb, alpha: float = 0.05):
    """Newcombe's hybrid score interval of ``pb − pa`` for two independent proportions (Newcombe 1998, method 10):
    with each side's Wilson interval (l, u), ``Δ − sqrt((pb − l_b)² + (u_a − pa)²)`` to ``Δ + sqrt((u_b − pb)² + (pa −
    l_a)²)``. Fractions in, fractions out; numbers or numpy arrays (as :func:`wilson_interval`).

    Raises:
        ValueError: as :func:`wilson_interval`.
    """
    la, ua = wilson_interval(pa, na, alpha)
    lb, ub = wilson_interval(pb, nb, alpha)
    d = np.asarray(pb, dtype=np.float64) - np.asarray(pa, dtype=np.float64)
    lo = d - np.sqrt((pb - lb) ** 2 + (ua - pa) ** 2)
    hi = d + np.sqrt((ub - pb) ** 2 + (pa - la) ** 2)
    return (float(lo), float(hi)) if np.ndim(lo) == 0 else (lo, hi)


def newcombe_pvalue(pa: float, na: int, pb: float, nb: int) -> float:
    """The two-sided p that matches :func:`newcombe_interval`: the smallest α at which its (1 − α) interval
    excludes 0 (found by ``scipy.optimize.brentq``; the interval narrows as α grows); 1.0 when Δ = 0, 0.0 when even
    the 1 − 10⁻¹⁶ interval excludes 0 (reports print ``<1e-16``)."""
    from scipy.optimize import brentq

    if pa == pb:
        return 1.0

    def gap(alpha: float) -> float:
        lo, hi = newcombe_interval(pa, na, pb, nb, alpha)
        return lo if pb > pa else -hi  # < 0 while the interval still holds 0

    lo_a, hi_a = 1e-16, 1.0 - 1e-12
    if gap(lo_a) >= 0:
        return 0.0
    if gap(hi_a) < 0:
        return 1.0
    return float(brentq(gap, lo_a, hi_a, xtol=1e-18, rtol=1e-10))


def level(alpha: float) -> str:
    """An interval's confidence level ``1 − alpha`` in percent, as labels print it without the sign: ``90`` for
    ``alpha`` 0.1, ``99.9`` for 0.001 (two-sided; a gate's (1 − 2α) interval passes ``2 * alpha``)."""
    return f"{round(100 * (1 - alpha), 8):g}"


def paired_power(delta: float, sd_diff: float, n: int, alpha: float = 0.05) -> float:
    """Power of the two-sided paired z-test to detect a true mean difference ``delta``.

    ``Φ(|δ|/SE - z) + Φ(-|δ|/SE - z)`` with ``SE = sd_diff / sqrt(n)`` and ``z = Φ⁻¹(1 - α/2)``.
    """
    se = sd_diff / math.sqrt(n)
    z = float(ndtri(1 - alpha / 2))
    return float(ndtr(abs(delta) / se - z) + ndtr(-abs(delta) / se - z))


def top2_margin(loglikelihoods: list[float] | None) -> float | None:
    """Log-likelihood gap (nats) between the best and second-best choice; ``None`` if not MC."""
    if not loglikelihoods or len(loglikelihoods) < 2:
        return None
    top = sorted(loglikelihoods, reverse=True)
    return float(top[0] - top[1])


def z_pvalue(delta: float, se: float) -> float:
    """Two-sided p of a normal test of Δ = 0: ``2 Φ(−|Δ|/se)``; 1.0 when Δ = 0, ``nan`` when se is 0 or not finite."""
    if not (math.isfinite(delta) and math.isfinite(se)):
        return float("nan")
    if delta == 0:
        return 1.0
    if se <= 0:
        return float("nan")
    return float(2 * ndtr(-abs(delta) / se))


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (Holm 1979), family-wise error control; same order as given.

    ``p_(i) adj = max_{j ≤ i} min(1, (m − j + 1) p_(j))`` over the ascending p-values. ``nan`` entries are
    left out of the family and stay ``nan``.
    """
    idx = [i for i, p in enumerate(pvalues) if math.isfinite(p)]
    order = sorted(idx, key=lambda i: pvalues[i])
    m = len(order)
    out = [float("nan")] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


def benjamini_hochberg(pvalues: list[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (false discovery rate; Benjamini & Hochberg 1995), via
    :func:`scipy.stats.false_discovery_control`; ``nan`` entries stay ``nan`` and are not counted."""
    idx = [i for i, p in enumerate(pvalues) if math.isfinite(p)]
    out = [float("nan")] * len(pvalues)
    if idx:
        from scipy.stats import false_discovery_control

        adj = false_discovery_control(np.array([pvalues[i] for i in idx]), method="bh")
        for i, a in zip(idx, adj):
            out[i] = float(a)
    return out


def paired_bootstrap_ratio(num_a: np.ndarray, den_a: np.ndarray, num_b: np.ndarray, den_b: np.ndarray,
                           transform, n_boot: int = 10_000, alpha: float = 0.05, seed: int = 0) -> PairedResult:
    """Paired bootstrap for a corpus-level statistic ``transform(Σnum / Σden)`` of each run, e.g. lm-eval's
    ``perplexity`` = ``exp(−mean ll)`` (num = ll, den = 1), ``word_perplexity`` = ``exp(−Σll/Σwords)``,
    ``bits_per_byte`` = ``−Σll/Σbytes/ln 2`` (lm-eval ``api/metrics.py``). Docs are resampled together in
    both runs; ``se`` is the bootstrap standard deviation of the difference.

    Args:
        num_a, den_a, num_b, den_b: per-doc numerators and denominators, shape (n,) each.
        transform: vectorised map of the ratio to the statistic.

    Raises:
        ValueError: shapes differ or no docs.
    """
    arrays = [np.asarray(x, dtype=np.float64) for x in (num_a, den_a, num_b, den_b)]
    n = len(arrays[0])
    if n == 0 or any(x.shape != (n,) for x in arrays):
        raise ValueError("per-doc arrays must be 1-D and of the same non-zero length")
    na, da, nb, db = arrays
    full = float(transform(nb.sum() / db.sum()) - transform(na.sum() / da.sum()))
    rng = np.random.default_rng(seed)
    reps = np.empty(n_boot)
    chunk = max(1, 2_000_000 // n)
    for s in range(0, n_boot, chunk):
        k = min(chunk, n_boot - s)
        idx = rng.integers(0, n, size=(k, n))
        reps[s:s + k] = transform(nb[idx].sum(1) / db[idx].sum(1)) - transform(na[idx].sum(1) / da[idx].sum(1))
    lo, hi = np.quantile(reps, [alpha / 2, 1 - alpha / 2])
    return PairedResult(delta=full, se=float(np.std(reps, ddof=1)), ci_low=float(lo), ci_high=float(hi), n=n,
                        n_clusters=None)


def _restricted_down(b: int, c: int, n: int, delta0: float) -> float:
    """Restricted MLE of P(right → wrong) under δ = δ0 ≥ 0 (trinomial: c up, b down, n − b − c same)."""
    big_b = c * (1 - delta0) + b * (1 - 3 * delta0) - 2 * (n - b - c) * delta0
    big_c = b * delta0 * (1 - delta0)
    x = (big_b + math.sqrt(max(big_b * big_b + 8 * n * big_c, 0.0))) / (4 * n)
    return min(max(x, 0.0), (1 - delta0) / 2)


def paired_score_z(b: int, c: int, n: int, delta0: float) -> float:
    """Score statistic for H0: δ = δ0 on paired 0/1 outcomes (Tango 1998, "Equivalence test and confidence
    interval for the difference in proportions for the paired-sample design", Stat. Med. 17:891–908).

    ``b`` docs went right → wrong, ``c`` wrong → right, of ``n``; δ = (c − b)/n is B's accuracy minus A's.
    ``Z = (δ̂ − δ0) / sqrt((p̃_up + p̃_down − δ0²)/n)`` with the probabilities restricted to δ0 by maximum
    likelihood, and |δ̂ − δ0| reduced by one doc (1/n, a continuity correction). At δ0 = 0 it is the
    continuity-corrected McNemar ``(|c − b| − 1)/sqrt(b + c)``. Unlike the Wald test it keeps its level
    when flips are rare: the variance under δ0 ≠ 0 cannot be smaller than |δ0| − δ0².
    Returns +inf/−inf when the variance under δ0 is 0 and δ̂ ≠ δ0, 0 when both vanish.
    """
    if n <= 0 or not -1 < delta0 < 1:
        return float("nan")
    if delta0 < 0:  # mirror, so that the restricted maximum is interior to the parametrisation
        return -paired_score_z(c, b, n, -delta0)
    down = _restricted_down(b, c, n, delta0)
    var = down + (down + delta0) - delta0 * delta0
    diff = (c - b) / n - delta0
    # continuity correction of one doc (as Edwards' for McNemar): without it the test overshoots its level
    # where flips are few (bench/gate_simulation.py)
    diff = math.copysign(max(abs(diff) - 1 / n, 0.0), diff)
    if var <= 0:
        return 0.0 if diff == 0 else math.copysign(math.inf, diff)
    return diff / math.sqrt(var / n)


def paired_score_interval(b: int, c: int, n: int, alpha: float) -> tuple[float, float]:
    """The (1 − 2α) interval of δ that inverts :func:`paired_score_z` at ``z_{1−α}`` on each side (Tango 1998)."""
    from scipy.optimize import brentq

    z = float(ndtri(1 - alpha))
    est = (c - b) / n
    f = (lambda d0, target: paired_score_z(b, c, n, d0) - target)
    eps = 1e-9
    lo = -1 + eps if f(-1 + eps, z) < 0 else brentq(f, -1 + eps, est, args=(z,)) if est > -1 + eps else -1.0
    hi = 1 - eps if f(1 - eps, -z) > 0 else brentq(f, est, 1 - eps, args=(-z,)) if est < 1 - eps else 1.0
    return float(lo), float(hi)
