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
  positive correlation of two runs on the same docs and is therefore conservative (wider).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps


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
    n = len(d)
    rng = np.random.default_rng(seed)
    reps = np.empty(n_boot)
    if clusters is None:
        chunk = max(1, 2_000_000 // n)
        for s in range(0, n_boot, chunk):
            k = min(chunk, n_boot - s)
            idx = rng.integers(0, n, size=(k, n))
            reps[s:s + k] = d[idx].mean(axis=1)
        n_clusters = None
    else:
        _, inv = np.unique(clusters, return_inverse=True)
        n_clusters = int(inv.max()) + 1
        sums = np.bincount(inv, weights=d, minlength=n_clusters)
        sizes = np.bincount(inv, minlength=n_clusters).astype(np.float64)
        for s in range(n_boot):
            pick = rng.integers(0, n_clusters, size=n_clusters)
            reps[s] = sums[pick].sum() / sizes[pick].sum()
    lo, hi = np.quantile(reps, [alpha / 2, 1 - alpha / 2])
    return PairedResult(delta=float(d.mean()), se=paired_se(d, None if clusters is None else np.asarray(clusters)),
                        ci_low=float(lo), ci_high=float(hi), n=n, n_clusters=n_clusters)


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
    return float(sps.binomtest(r2w, r2w + w2r, 0.5).pvalue), r2w, w2r


def unpaired_interval(va: float, sa: float, vb: float, sb: float, alpha: float = 0.05) -> tuple[float, float, float]:
    """``(se, low, high)`` of ``vb - va`` from two independent stderrs (normal approximation)."""
    se = math.sqrt(sa * sa + sb * sb)
    z = float(sps.norm.ppf(1 - alpha / 2))
    return se, (vb - va) - z * se, (vb - va) + z * se


def paired_power(delta: float, sd_diff: float, n: int, alpha: float = 0.05) -> float:
    """Power of the two-sided paired z-test to detect a true mean difference ``delta``.

    ``Φ(|δ|/SE - z) + Φ(-|δ|/SE - z)`` with ``SE = sd_diff / sqrt(n)`` and ``z = Φ⁻¹(1 - α/2)``.
    """
    se = sd_diff / math.sqrt(n)
    z = float(sps.norm.ppf(1 - alpha / 2))
    return float(sps.norm.cdf(abs(delta) / se - z) + sps.norm.cdf(-abs(delta) / se - z))


def top2_margin(loglikelihoods: list[float] | None) -> float | None:
    """Log-likelihood gap (nats) between the best and second-best choice; ``None`` if not MC."""
    if not loglikelihoods or len(loglikelihoods) < 2:
        return None
    top = sorted(loglikelihoods, reverse=True)
    return float(top[0] - top[1])
