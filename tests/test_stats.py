"""Paired statistics on synthetic per-doc outcomes with a known answer."""

from __future__ import annotations

import math

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


def test_the_score_interval_excludes_0_where_exact_mcnemar_rejects_but_at_two_margin_splits():
    """compare shows Tango's score interval for 0/1 metrics and tests with the exact McNemar p: over every split of
    up to 30 flips each way they agree, except where the exact p sits just under 0.05 (4 vs 13, 15 vs 29 flips)."""
    from repaudit.audit.stats import paired_score_interval

    for n in (40, 400):
        apart = set()
        for b in range(31):
            for c in range(31):
                if 0 < b + c <= n:
                    p = sps.binomtest(b, b + c, 0.5).pvalue
                    lo, hi = paired_score_interval(b, c, n, 0.025)
                    assert lo <= (c - b) / n <= hi
                    if (lo > 0 or hi < 0) != (p < 0.05):
                        apart.add((min(b, c), max(b, c)))
                        assert 0.048 < p < 0.05 and min(abs(lo), abs(hi)) < 0.003
        assert apart <= {(4, 13), (15, 29)} and (4, 13) in apart


def test_compare_says_when_an_interval_and_its_verdict_point_different_ways():
    """The README's OpenBookQA pair (4 flips of 40, all one way; exact McNemar p 0.125): the score interval holds 0,
    as the verdict says. Rows whose unadjusted interval excludes 0 but whose Holm-adjusted p does not reach 0.05 (or
    the reverse) carry a note that says which."""
    from pathlib import Path

    from repaudit.audit.compare import compare, load_run
    from repaudit.audit.scores import ScoreRow
    from repaudit.audit.stat_settings import StatSettings
    from repaudit.audit.verdicts import judge

    fix = Path(__file__).resolve().parent / "fixtures" / "lmeval_config"
    c = compare(load_run(fix / "openbookqa_0shot"), load_run(fix / "openbookqa_3shot"), n_boot=500)
    acc = next(r for r in c.scores if r.metric == "acc")
    assert (acc.right_to_wrong, acc.wrong_to_right, acc.method) == (0, 4, "paired_score")
    assert acc.ci_low < 0 < acc.ci_high and acc.verdict == "within noise" and "interval" not in acc.note

    def row(metric, lo, hi, p):
        return ScoreRow(task="t", metric=metric, a=50.0, b=55.0, delta=5.0, se=2.0, ci_low=lo, ci_high=hi,
                        method="paired_score", n_paired=400, verdict="within noise", p_value=p)

    rows = [row("acc", 0.5, 9.5, 0.03), row("acc_norm", 0.2, 9.8, 0.04)]  # Holm: both adjusted to 0.06
    judge(rows, StatSettings())
    for r in rows:
        assert r.verdict == "within noise" and r.p_adjusted == pytest.approx(0.06)
        assert "the unadjusted 95 % interval excludes 0, but p adj = 0.06 (Holm-adjusted over 2 rows)" in r.note
    margin = [row("acc", -0.2, 9.0, 0.049)]
    judge(margin, StatSettings())
    assert margin[0].verdict == "significant" and "the 95 % interval includes 0" in margin[0].note
    plain = [row("acc", 0.5, 9.5, 0.01)]
    judge(plain, StatSettings())
    assert plain[0].verdict == "significant" and plain[0].note == ""


def test_newcombe_interval_reproduces_the_published_examples():
    """Newcombe 1998 (Statistics in Medicine 17:873–890), Table II, method 10: 56/70 − 48/80 → [0.0524, 0.3339],
    5/56 − 0/29 → [−0.0381, 0.1926]; the p-value that inverts the interval puts one end on 0."""
    from repaudit.audit.stats import newcombe_interval, newcombe_pvalue

    assert newcombe_interval(48 / 80, 80, 56 / 70, 70) == pytest.approx((0.0524, 0.3339), abs=5e-5)
    assert newcombe_interval(0 / 29, 29, 5 / 56, 56) == pytest.approx((-0.0381, 0.1926), abs=5e-5)
    p = newcombe_pvalue(48 / 80, 80, 56 / 70, 70)
    assert 0 < p < 0.05 and newcombe_interval(48 / 80, 80, 56 / 70, 70, p)[0] == pytest.approx(0.0, abs=1e-9)
    assert newcombe_pvalue(0.4, 30, 0.4, 30) == 1.0


def test_the_unpaired_interval_keeps_its_coverage_on_few_docs():
    """Exact coverage (every outcome of n docs summed, bench/unpaired_coverage.py) of compare's unpaired interval of a
    0/1 metric at 95 %: the normal interval from recorded stderrs falls below 95 % on 20–30 docs near 5 % accuracy
    (the rows it gives a verdict for); Newcombe's hybrid score interval, which compare now uses there, stays at or
    above 94 % for every n of 20–30, accuracies of 5, 50 and 90 %, moves up to ±10 points and run correlations 0.1
    and 0.3."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from unpaired_coverage import table

    rows = table()
    assert len(rows) == 11 * 3
    assert min(r[4] for r in rows) >= 0.94, min(rows, key=lambda r: r[4])
    assert min(r[2] for r in rows) < 0.95  # what the normal interval did


def test_an_unpaired_proportion_of_known_docs_gets_newcombes_interval():
    """Two lm-eval runs without samples but with their doc counts (n-samples): a 0/1 metric's row takes Newcombe's
    interval (method unpaired_newcombe) — also where one run scored every doc right (stderr 0, where the normal
    interval has no spread); a row whose stderr is not a 0/1 mean's keeps the normal interval."""
    from repaudit.audit.scores import RowInput, score_row, unpaired_proportion
    from repaudit.audit.stat_settings import StatSettings
    from repaudit.importers.comparable import TaskOutcome

    assert unpaired_proportion(0.5, math.sqrt(0.25 / 24), 25) and unpaired_proportion(1.0, 0.0, 25)
    assert not unpaired_proportion(0.5, 0.2, 25) and not unpaired_proportion(0.5, 0.1, None)
    ta = TaskOutcome(task="t", reported={"acc": (0.92, math.sqrt(0.92 * 0.08 / 24))}, docs=None, n_docs=25)
    tb = TaskOutcome(task="t", reported={"acc": (1.0, 0.0)}, docs=None, n_docs=25)
    stat = StatSettings(n_boot=200)
    row = score_row(RowInput("t", "acc", ta, tb), stat).row
    assert row.method == "unpaired_newcombe" and row.ci_low < 0 < row.ci_high and "Newcombe" in row.note
    tc = TaskOutcome(task="t", reported={"acc": (0.8, 0.05)}, docs=None, n_docs=25)
    assert score_row(RowInput("t", "acc", ta, tc), stat).row.method == "unpaired_stderr"
