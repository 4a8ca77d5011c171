"""Paired statistics on synthetic per-doc outcomes with a known answer."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from repaudit.audit.stats import mcnemar_exact, paired_bootstrap, paired_power, paired_se


def _pair(rng, n, p_base, flip_rate, shift):
    """Run A: Bernoulli(p_base) per doc. Run B: A with a fraction of docs re-drawn by coin flip
    (tie-breaking noise, mean-preserving when p_base = 0.5), plus a planted shift: that fraction of
    wrong docs turned right."""
    a = (rng.random(n) < p_base).astype(float)
    b = a.copy()
    noisy = rng.random(n) < flip_rate
    b[noisy] = (rng.random(noisy.sum()) < 0.5).astype(float)
    if shift:
        wrong = np.flatnonzero(b == 0)
        b[rng.choice(wrong, size=int(round(shift * n)), replace=False)] = 1.0
    return a, b


def test_null_coverage_of_the_paired_interval():
    rng = np.random.default_rng(1)
    covered = 0
    for _ in range(1000):
        a, b = _pair(rng, 400, 0.5, 0.1, 0.0)
        r = paired_bootstrap(a, b, n_boot=400, seed=int(rng.integers(1 << 30)))
        covered += r.ci_low <= 0.0 <= r.ci_high
    # Measured 94.6 % (a percentile bootstrap of a discrete mean is slightly anti-conservative).
    assert covered / 1000 >= 0.93


def test_power_with_a_planted_shift_matches_the_paired_formula():
    rng = np.random.default_rng(2)
    n, shift, trials = 400, 0.02, 600
    detected, sds = 0, []
    for _ in range(trials):
        a, b = _pair(rng, n, 0.5, 0.1, shift)
        sds.append(np.std(b - a, ddof=1))
        r = paired_bootstrap(a, b, n_boot=400, seed=int(rng.integers(1 << 30)))
        detected += r.ci_low > 0 or r.ci_high < 0
    predicted = paired_power(shift, float(np.mean(sds)), n)
    observed = detected / trials
    # Binomial standard error of the observed rate at 600 trials is ~2 points.
    assert abs(observed - predicted) < 0.06, (observed, predicted)


def test_mcnemar_exact_against_scipy():
    a = np.array([1] * 30 + [0] * 10 + [1] * 7 + [0] * 3, dtype=float)
    b = np.array([1] * 30 + [0] * 10 + [0] * 7 + [1] * 3, dtype=float)
    p, r2w, w2r = mcnemar_exact(a, b)
    assert (r2w, w2r) == (7, 3)
    assert p == pytest.approx(sps.binomtest(7, 10, 0.5).pvalue)
    assert mcnemar_exact(a, a) == (1.0, 0, 0)


def test_clustered_se_exceeds_plain_se_with_correlated_clusters():
    rng = np.random.default_rng(3)
    clusters = np.repeat(np.arange(20), 30)
    effect = rng.normal(0, 0.3, 20)[clusters]  # a per-cluster shift shared by its docs
    d = effect + rng.normal(0, 0.1, len(clusters))
    assert paired_se(d, clusters) > 2 * paired_se(d)


def test_cluster_bootstrap_is_wider_than_doc_bootstrap_with_cluster_effects():
    rng = np.random.default_rng(4)
    clusters = np.repeat(np.arange(15), 40)
    a = np.zeros(len(clusters))
    b = (rng.random(15)[clusters] < 0.5).astype(float) * (rng.random(len(clusters)) < 0.2)
    plain = paired_bootstrap(a, b, n_boot=2000)
    clustered = paired_bootstrap(a, b, clusters, n_boot=2000)
    assert (clustered.ci_high - clustered.ci_low) > (plain.ci_high - plain.ci_low)
    assert clustered.n_clusters == 15
