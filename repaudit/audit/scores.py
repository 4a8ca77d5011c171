"""One score row per task and metric: Δ = B − A in the metric's display unit, its interval, its p-value.

Which test a row gets (every number in the metric's display unit, :mod:`repaudit.importers.metric_kinds`):

* **paired** — both runs have per-doc values on the same docs: for 0/1 metrics without clusters, Tango's score
  interval for a difference of paired proportions (Tango 1998; it keeps its level when few docs flip, where a
  percentile bootstrap is too narrow) and p from the exact McNemar test; otherwise the paired bootstrap interval
  of the mean difference (clustered when every doc carries a cluster) and a z-test with the (clustered)
  analytic SE;
* **paired, corpus-level** — perplexity, word/byte perplexity, bits per byte from per-doc
  log-likelihoods: paired bootstrap of the corpus statistic itself; z-test with the bootstrap SE;
* **unpaired** — a side without per-doc values but the same doc set: for a proportion of 0/1 docs whose doc counts
  are known on both sides (its recorded stderr is a 0/1 mean's, :func:`unpaired_proportion`), Newcombe's hybrid
  score interval of the two Wilson intervals (Newcombe 1998, method 10), whose coverage holds on few docs near 0 or
  1 where the normal approximation's does not (``bench/unpaired_coverage.py``), with the p-value that inverts it;
  otherwise ``Δ ± z √(se_A² + se_B²)`` from the recorded stderrs, clipped to the widest move the metric allows;
  both ignore the positive correlation of two runs on the same docs, so they are wider than a paired interval;
* **no verdict** — fewer than :data:`~repaudit.audit.docsets.MIN_DOCS` docs, a stderr of 0, no stderr at
  all, or per-doc values that do not average to the reported score.

Verdicts are given afterwards on multiplicity-adjusted p-values (:func:`judge`).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from repaudit.audit.docsets import MIN_DOCS
from repaudit.audit.flips import FlipList, list_flips
from repaudit.audit.mde import RowPower, binary_power, z_power
from repaudit.audit.stats import (
    benjamini_hochberg,
    holm,
    level,
    mcnemar_exact,
    newcombe_interval,
    newcombe_pvalue,
    paired_bootstrap,
    paired_bootstrap_ratio,
    paired_score_interval,
    paired_se,
    unpaired_interval,
    z_pvalue,
)
from repaudit.boundary import finite
from repaudit.importers.comparable import TaskOutcome
from repaudit.importers.metric_kinds import MetricKind, delta_range, metric_kind, moved, pair_kinds

Verdict = Literal["within noise", "significant", "not comparable", "no verdict"]

#: names of the multiplicity adjustments (``--adjust``) as reports and notes print them
ADJUST = {"holm": "Holm", "bh": "Benjamini–Hochberg", "none": "no adjustment"}


class ScoreRow(BaseModel):
    """One task and metric of a comparison. Every score, Δ, SE and interval bound is in ``unit`` (``pts`` =
    percentage points for proportions and percentages, else the metric's own unit); Δ = B − A."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    task: str
    """The task, under the name the two runs were paired by."""
    metric: str
    """The metric key (``acc``, ``exact_match,strict-match``)."""
    is_group: bool = False
    """The row is a group's aggregate (a family of its own for the multiplicity correction)."""
    kind: str = "proportion"
    """What the number is: proportion, percentage, unbounded, error, correlation or score (unknown metric)."""
    unit: str = "pts"
    """The unit of every number in the row: ``pts`` for proportions (×100) and percentages, else the metric's own
    unit (``perplexity``, ``bits/byte``, …)."""
    direction: str = "higher"
    """Which way is better: ``higher``, ``lower`` or ``unknown``."""
    a: float
    """A's score Δ is computed from: the mean over the shared docs when paired, else A's reported score."""
    b: float
    """B's score, as ``a``."""
    delta: float
    """Δ = B − A."""
    a_reported: float | None = None
    """A's own reported score (differs from ``a`` when only a subset of docs is shared); None: not finite."""
    b_reported: float | None = None
    """B's own reported score; None: not finite."""
    se: float | None
    """Standard error of Δ (paired: analytic, clustered where the docs are; corpus-level: bootstrap; unpaired:
    √(se_A² + se_B²)); None: not tested."""
    ci_low: float | None
    """Lower bound of the (1 − alpha) interval of Δ; None: not tested."""
    ci_high: float | None
    """Upper bound of the (1 − alpha) interval of Δ; None: not tested."""
    method: str
    """How the interval was computed: ``paired_score`` (0/1 metrics on paired docs without clusters: Tango's score
    interval), ``paired_bootstrap``, ``paired_cluster_bootstrap``, ``paired_corpus_bootstrap``,
    ``unpaired_newcombe`` (a proportion of 0/1 docs of known counts without per-doc values: Newcombe's hybrid score
    interval), ``unpaired_stderr`` or ``none`` (no test)."""
    n_paired: int
    """Docs the row pairs: the shared docs on which both runs have the metric's per-doc value (0: not paired — a
    side has no per-doc values of the metric, or its docs are not the same; the task's shared doc ids are
    :attr:`~repaudit.audit.compare.DocAgreement.n_shared`, counted whatever the metric)."""
    n_a: int | None = None
    """Docs in A's task (its per-doc results, else its recorded count); None: not recorded."""
    n_b: int | None = None
    """Docs in B's task, as ``n_a``."""
    subset: bool = False
    """Paired on fewer docs than a run has: ``a``/``b`` are then not the reported scores."""
    n_clusters: int | None = None
    """Clusters resampled by the paired cluster bootstrap; None when docs were resampled one by one."""
    p_value: float | None = None
    """Raw two-sided p of Δ = 0 (exact McNemar for 0/1 metrics without clusters, else a z-test); None: not
    tested."""
    p_adjusted: float | None = None
    """``p_value`` after the comparison's multiplicity adjustment; None: not tested."""
    mcnemar_p: float | None = None
    """0/1 metrics on paired docs: the exact McNemar p; None otherwise."""
    right_to_wrong: int | None = None
    """0/1 metrics on paired docs: docs right in A and wrong in B; None otherwise."""
    wrong_to_right: int | None = None
    """0/1 metrics on paired docs: docs wrong in A and right in B; None otherwise."""
    near_tie_flips: int | None = None
    """0/1 metrics on paired docs: flips where a run's margin by the metric is at most ``tie_eps`` nats
    (:mod:`repaudit.audit.picks`); None otherwise."""
    flip_ids: dict[str, list[int]] | None = None
    """0/1 metrics on paired docs: flipped doc ids by class — harmful (right → wrong), beneficial (wrong → right),
    churn (a flip either way where a run's margin by the metric is at most ``tie_eps``); None otherwise."""
    verdict: Verdict
    """within noise, significant (adjusted p < alpha), not comparable, or no verdict."""
    moved: str | None = None
    """Significant rows only: ``better``/``worse`` by the metric's direction (``up``/``down`` when it is unknown);
    None otherwise."""
    note: str = ""
    """Why a row has no test or how it was computed (units, subsets, unpaired); empty: nothing to say."""
    a_name: str | None = None
    """A's own ``task metric`` where a rename paired it under this row's names; None: the same names."""
    b_name: str | None = None
    """B's own ``task metric``, as ``a_name``."""
    power: RowPower | None = None
    """Paired rows: the smallest move the row's test detects with 80 % power, the effective docs and the docs a 1-
    and 3-point move need (:mod:`repaudit.audit.mde`); None for rows that are not paired or not tested."""


def _finite(x) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def _row(task: str, metric: str, kind: MetricKind, va: float, vb: float, method: str, verdict: Verdict, note: str,
         n: int = 0, **kw) -> ScoreRow:
    return ScoreRow(task=task, metric=metric, kind=kind.kind, unit=kind.display_unit, direction=kind.direction,
                    a=va, b=vb, delta=vb - va, method=method, n_paired=n, verdict=verdict, note=note,
                    **{"se": None, "ci_low": None, "ci_high": None, **kw})


def side_kind(metric: str, t: TaskOutcome) -> MetricKind:
    """The kind of ``metric`` as one run reports it, its scale settled by the run's evidence: the value, the
    run's per-doc values, the task's other metrics (:func:`~repaudit.importers.metric_kinds.reported_scale`)."""
    vals = [d.metrics[metric] for d in (t.docs or {}).values() if metric in d.metrics]
    mean = sum(vals) / len(vals) if t.docs and len(vals) == len(t.docs) and all(map(math.isfinite, vals)) else None
    siblings = {m: v for m, (v, _) in t.reported.items() if m != metric}
    return metric_kind(metric, [t.reported[metric][0]], t.higher_is_better.get(metric), task=t.source_name or t.task,
                       siblings=siblings, per_doc_mean=mean, declared=t.declared.get(metric))


def row_kind(metric: str, ta: TaskOutcome, tb: TaskOutcome, same_task: bool = False
             ) -> tuple[MetricKind, MetricKind, MetricKind | None, str]:
    """Each side's kind and the kind the pair is compared under (``None`` with a reason when incompatible);
    ``same_task``: both runs come from one harness and name the task alike (a scale one run shows is the
    task's, so it holds for the other run too)."""
    kind, why, ka, kb = pair_kinds(side_kind(metric, ta), side_kind(metric, tb), same_task)
    return ka, kb, kind, why or ""


def score_row(task: str, metric: str, ta: TaskOutcome, tb: TaskOutcome, shared: list[int] | None,
              reason: str | None, tie_eps: float, n_boot: int, alpha: float, flips: FlipList,
              same_task: bool = False) -> ScoreRow:
    """One score row before the multiplicity correction (:func:`judge` gives the verdict).

    Args:
        shared: doc ids both runs scored (``None`` when a side has no per-doc results).
        reason: why the doc sets are not comparable, or ``None``.
        flips: where the flipped docs of a 0/1 metric go, with each run's scoring of the task
            (:class:`~repaudit.audit.flips.FlipList`).
        same_task: both runs come from one harness and name the task alike (:func:`row_kind`).
    """
    ka, kb, kind, why = row_kind(metric, ta, tb, same_task)
    ra, rb = ta.reported[metric][0] * ka.scale, tb.reported[metric][0] * kb.scale
    extra = dict(a_reported=_finite(ra), b_reported=_finite(rb), is_group=ta.is_group or tb.is_group,
                 n_a=len(ta.docs) if ta.docs else ta.n_docs, n_b=len(tb.docs) if tb.docs else tb.n_docs,
                 a_name=ta.metric_names.get(metric) or _renamed(ta, metric),
                 b_name=tb.metric_names.get(metric) or _renamed(tb, metric))
    n = len(shared or [])
    if kind is None:
        return _row(task, metric, ka, ra, rb, "none", "not comparable", why, n, **extra)
    row = _score_row(task, metric, ta, tb, shared, reason, tie_eps, n_boot, alpha, flips, ka, kb, kind, extra)
    scales = {k: side.kind for k, side in (("A", ka), ("B", kb))}
    if len(set(scales.values())) > 1:  # a proportion and a percentage: both shown in points
        said = "; ".join(f"{k} reports it as a {v} ({'0–1' if v == 'proportion' else '0–100'})"
                         for k, v in scales.items())
        row.note = f"{said}: both shown in points" + (f"; {row.note}" if row.note else "")
    if why:
        row.note = f"{why}; {row.note}" if row.note else why
    if kind.kind == "score":
        unknown = (f"repaudit does not know the metric '{metric}'" + (
            f"; {kind.declared}" if kind.declared else ": its unit and scale are unknown") +
            ", so the values are shown as the files report them" + (" and its direction is unknown" if
                                                                     kind.direction == "unknown" else ""))
        row.note = f"{unknown}; {row.note}" if row.note else unknown
    return row


def _score_row(task, metric, ta, tb, shared, reason, tie_eps, n_boot, alpha, flips, ka, kb, kind, extra) -> ScoreRow:
    (va, sa), (vb, sb) = ta.reported[metric], tb.reported[metric]
    ra, rb = va * ka.scale, vb * kb.scale
    n = len(shared or [])
    if reason is not None:
        return _row(task, metric, kind, ra, rb, "none", "not comparable", reason, n, **extra)
    if not (finite(va) and finite(vb)):
        return _row(task, metric, kind, ra, rb, "none", "no verdict", f"a reported value is not finite (A {va}, "
                                                                       f"B {vb})", n, **extra)
    if shared:
        paired = _paired(task, metric, ta, tb, shared, ka, kb, kind, tie_eps, n_boot, alpha, flips, extra)
        if paired is not None:
            return paired
        why = "per-doc values are not a mean of the reported score; compared unpaired"
    elif shared is not None:
        why = ""
    else:
        why = "unpaired (no per-doc values in " + ("both runs" if not ta.docs and not tb.docs else
                                                   "A" if not ta.docs else "B") + "): wider than a paired interval"
    read = [f"{side}: {how}" for side, t in (("A", ta), ("B", tb)) if (how := t.stderr_notes.get(metric))]
    return _unpaired(task, metric, kind, ra, rb, sa, sb, ka.scale, kb.scale, alpha, "; ".join([why, *read]) if why
                     else "; ".join(read), extra)


def _renamed(t: TaskOutcome, metric: str) -> str | None:
    return f"{t.source_name} {metric}" if t.source_name and t.source_name != t.task else None


def unpaired_proportion(value: float, stderr: float, n: int | None) -> bool:
    """Whether a reported score (a fraction) with its recorded stderr (a fraction) is a proportion of ``n`` 0/1
    docs: the stderr is a 0/1 mean's, sqrt(p(1 − p)/(n − 1)) as lm-eval's ``mean_stderr`` writes it or sqrt(p(1 −
    p)/n), within 2 % — or 0 where the score is 0 or 1. Then each side's count is known and a binomial interval
    applies (:func:`~repaudit.audit.stats.newcombe_interval`)."""
    if n is None or n < 2 or not (math.isfinite(value) and math.isfinite(stderr)) or not 0.0 <= value <= 1.0:
        return False
    if value in (0.0, 1.0):
        return stderr == 0.0
    return any(math.isclose(stderr, math.sqrt(value * (1 - value) / m), rel_tol=0.02) for m in (n - 1, n))


def _unpaired(task, metric, kind, ra, rb, sa, sb, scale_a, scale_b, alpha, why, extra) -> ScoreRow:
    n = min((x for x in (extra["n_a"], extra["n_b"]) if x is not None), default=None)
    if not (finite(sa) and finite(sb)):
        return _row(task, metric, kind, ra, rb, "none", "no verdict", "neither per-doc values nor finite stderrs "
                    "in both runs (a corpus-level metric has none)", **extra)
    if n is not None and n < MIN_DOCS:
        return _row(task, metric, kind, ra, rb, "none", "no verdict",
                    f"{n} docs: fewer than the floor of {MIN_DOCS} for a verdict", **extra)
    dlo, dhi = delta_range(kind)
    se = math.sqrt((sa * scale_a) ** 2 + (sb * scale_b) ** 2)
    if kind.display_unit == "pts":  # a proportion (fraction ×100, or a percentage): are both 0/1 means of known docs?
        fa, fb, na, nb = ra / 100, rb / 100, extra["n_a"], extra["n_b"]
        if unpaired_proportion(fa, sa * scale_a / 100, na) and unpaired_proportion(fb, sb * scale_b / 100, nb):
            lo, hi = newcombe_interval(fa, na, fb, nb, alpha)
            note = "; ".join(x for x in (why, f"Newcombe's hybrid score interval of the two Wilson intervals ({na} "
                                              f"and {nb} docs): the recorded stderrs are 0/1 means'") if x)
            return _row(task, metric, kind, ra, rb, "unpaired_newcombe", "within noise", note, se=se,
                        ci_low=max(100 * lo, dlo), ci_high=min(100 * hi, dhi),
                        p_value=newcombe_pvalue(fa, na, fb, nb), **extra)
    if sa == 0 or sb == 0:
        return _row(task, metric, kind, ra, rb, "none", "no verdict",
                    f"a recorded stderr of 0 ({'A' if sa == 0 else 'B'}) is not an estimate of noise", **extra)
    se, lo, hi = unpaired_interval(ra, sa * scale_a, rb, sb * scale_b, alpha)
    return _row(task, metric, kind, ra, rb, "unpaired_stderr", "within noise", why, se=se,
                ci_low=max(lo, dlo), ci_high=min(hi, dhi), p_value=z_pvalue(rb - ra, se), **extra)


_RATIO = {"perplexity": lambda x: np.exp(-x), "weighted_perplexity": lambda x: np.exp(-x),
          "bits_per_byte": lambda x: -x / math.log(2)}


def _side_scale(t: TaskOutcome, metric: str, k: MetricKind, reported: float) -> float | None:
    """The factor that turns this run's per-doc values into its reported score's display unit, or ``None``
    when their mean over all of its docs is not the reported score (the metric is not a per-doc mean)."""
    vals = [d.metrics[metric] for d in t.docs.values() if metric in d.metrics]
    if len(vals) != len(t.docs) or not all(math.isfinite(v) for v in vals):
        return k.scale if k.aggregation == "mean" else None
    mean = sum(vals) / len(vals)
    for s in dict.fromkeys((k.scale, 100.0, 1.0)):
        if math.isclose(mean * s, reported * k.scale, rel_tol=1e-6, abs_tol=1e-6 * max(1.0, s)):
            return s
    return None


def _paired(task, metric, ta, tb, shared, ka, kb, kind, tie_eps, n_boot, alpha, flips, extra) -> ScoreRow | None:
    if kind.aggregation in _RATIO:
        return _paired_corpus(task, metric, ta, tb, shared, kind, n_boot, alpha, extra)
    if not all(metric in ta.docs[i].metrics and metric in tb.docs[i].metrics for i in shared):
        return None
    s_a = _side_scale(ta, metric, ka, ta.reported[metric][0])
    s_b = _side_scale(tb, metric, kb, tb.reported[metric][0])
    if s_a is None or s_b is None:
        return None
    xa = np.array([ta.docs[i].metrics[metric] for i in shared], dtype=np.float64)
    xb = np.array([tb.docs[i].metrics[metric] for i in shared], dtype=np.float64)
    bad = [i for i, x, y in zip(shared, xa, xb) if not (math.isfinite(x) and math.isfinite(y))]
    if bad:
        return _row(task, metric, kind, extra["a_reported"] or 0.0, extra["b_reported"] or 0.0, "none", "no verdict",
                    f"{len(bad)} docs have a non-finite per-doc {metric} (e.g. doc {bad[0]})", len(shared), **extra)
    subset = len(shared) < max(len(ta.docs), len(tb.docs))
    binary = set(np.unique(np.concatenate([xa, xb]))) <= {0.0, 1.0}
    if len(shared) < MIN_DOCS:  # the floor withholds a verdict; the flips are facts and are always listed
        row = _row(task, metric, kind, float(xa.mean() * s_a), float(xb.mean() * s_b), "none", "no verdict",
                   f"{len(shared)} shared doc{'' if len(shared) == 1 else 's'}: fewer than the floor of {MIN_DOCS} "
                   "for a verdict", len(shared),
                   subset=subset, **extra)
        if binary:
            _, row.right_to_wrong, row.wrong_to_right = mcnemar_exact(xa, xb)
            row.flip_ids = list_flips(task, metric, ta, tb, shared, xa, xb, tie_eps, flips)
            row.near_tie_flips = len(row.flip_ids["churn"])
        return row
    cl = [ta.docs[i].cluster or tb.docs[i].cluster for i in shared]
    clusters = np.array(cl) if all(c is not None for c in cl) else None  # partial labels would mix unlike units
    one_cluster = clusters is not None and len(set(cl)) < 2
    if one_cluster:  # a cluster-robust SE needs two clusters at least: with one, it is 0 by construction
        clusters = None
    res = paired_bootstrap(xa * s_a, xb * s_b, clusters, n_boot=n_boot, alpha=alpha)
    row = ScoreRow(task=task, metric=metric, kind=kind.kind, unit=kind.display_unit, direction=kind.direction,
                   a=float(xa.mean() * s_a), b=float(xb.mean() * s_b), delta=res.delta, se=res.se,
                   ci_low=res.ci_low, ci_high=res.ci_high,
                   method="paired_cluster_bootstrap" if clusters is not None else "paired_bootstrap",
                   n_paired=len(shared), n_clusters=res.n_clusters, subset=subset, verdict="within noise",
                   p_value=z_pvalue(res.delta, res.se),
                   note=(f"every doc is in one cluster ('{cl[0]}'): a clustered interval needs two clusters at least, "
                         "so docs were resampled one by one" if one_cluster else "" if clusters is not None
                         or not any(cl) else "only some docs carry a cluster: not clustered"),
                   **extra)
    n_avail = max((x for x in (row.n_a, row.n_b) if x is not None), default=None)
    row.power = z_power(res.se, paired_se(xb * s_b - xa * s_a) if clusters is not None else None, len(shared),
                        alpha, row.unit, n_avail)
    if binary:
        p, r2w, w2r = mcnemar_exact(xa, xb)
        row.mcnemar_p, row.right_to_wrong, row.wrong_to_right = p, r2w, w2r
        if clusters is None:
            row.p_value = p
            row.power = binary_power(r2w, w2r, len(shared), alpha, s_a, row.unit, n_avail)
            if s_a == s_b:
                # the percentile bootstrap is too narrow when few docs flip (4 flips of 40 one way: [+2.5, +20]
                # pts while McNemar's p is 0.125); the score interval keeps its level there (Newcombe 1998)
                lo, hi = paired_score_interval(r2w, w2r, len(shared), alpha / 2)
                row.ci_low, row.ci_high, row.method = s_a * lo, s_a * hi, "paired_score"
        row.flip_ids = list_flips(task, metric, ta, tb, shared, xa, xb, tie_eps, flips)
        row.near_tie_flips = len(row.flip_ids["churn"])
    return row


def _ratio_parts(t: TaskOutcome, metric: str, ids: list[int], aggregation: str):
    """Per-doc (numerator, denominator) of a corpus statistic, or ``None`` if a doc lacks them."""
    if aggregation == "perplexity":
        vals = [t.docs[i].metrics.get(metric) for i in ids]
        return None if None in vals else (np.array(vals, dtype=np.float64), np.ones(len(vals)))
    pairs = [(t.docs[i].weighted or {}).get(metric) for i in ids]
    if None in pairs:
        return None
    arr = np.array(pairs, dtype=np.float64)
    return arr[:, 0], arr[:, 1]


def _paired_corpus(task, metric, ta, tb, shared, kind, n_boot, alpha, extra) -> ScoreRow | None:
    f = _RATIO[kind.aggregation]
    parts_a, parts_b = _ratio_parts(ta, metric, shared, kind.aggregation), _ratio_parts(tb, metric, shared,
                                                                                        kind.aggregation)
    full_a, full_b = (_ratio_parts(t, metric, list(t.docs), kind.aggregation) for t in (ta, tb))
    if None in (parts_a, parts_b, full_a, full_b) or not (np.all(parts_a[1] > 0) and np.all(parts_b[1] > 0)):
        return None
    for (num, den), t in ((full_a, ta), (full_b, tb)):  # the per-doc parts must rebuild the reported score
        if not math.isclose(float(f(num.sum() / den.sum())), t.reported[metric][0], rel_tol=1e-5):
            return None
    subset = len(shared) < max(len(ta.docs), len(tb.docs))
    if len(shared) < MIN_DOCS:
        return _row(task, metric, kind, float(f(parts_a[0].sum() / parts_a[1].sum())),
                    float(f(parts_b[0].sum() / parts_b[1].sum())), "none", "no verdict",
                    f"{len(shared)} shared doc{'' if len(shared) == 1 else 's'}: fewer than the floor of {MIN_DOCS} "
                    "for a verdict", len(shared),
                    subset=subset, **extra)
    res = paired_bootstrap_ratio(*parts_a, *parts_b, f, n_boot=n_boot, alpha=alpha)
    n_avail = max((x for x in (extra["n_a"], extra["n_b"]) if x is not None), default=None)
    return _row(task, metric, kind, float(f(parts_a[0].sum() / parts_a[1].sum())),
                float(f(parts_b[0].sum() / parts_b[1].sum())), "paired_corpus_bootstrap", "within noise",
                f"paired bootstrap of the corpus-level {kind.aggregation.replace('_', ' ')}", len(shared),
                se=res.se, ci_low=res.ci_low, ci_high=res.ci_high, p_value=z_pvalue(res.delta, res.se),
                subset=subset, power=z_power(res.se, None, len(shared), alpha, kind.display_unit, n_avail), **extra)


def judge(rows: list[ScoreRow], alpha: float, adjust: str = "holm") -> None:
    """Adjust the p-values of the tested rows for multiplicity and set each row's verdict, in place.

    Task rows and group rows (aggregates of task rows) are two families, so a group never counts
    twice with its own subtasks. ``adjust`` is ``holm`` (family-wise error; Holm 1979), ``bh``
    (false discovery rate; Benjamini & Hochberg 1995) or ``none``. A row is *significant* when its
    adjusted p is below ``alpha``; its ``moved`` says better/worse by the metric's direction.
    """
    for family in (False, True):
        tested = [r for r in rows if r.is_group == family and r.method != "none" and r.p_value is not None
                  and math.isfinite(r.p_value)]
        ps = [r.p_value for r in tested]
        adj = holm(ps) if adjust == "holm" else benjamini_hochberg(ps) if adjust == "bh" else ps
        for r, p in zip(tested, adj):
            r.p_adjusted = p
            r.verdict = "significant" if p < alpha else "within noise"
            r.moved = moved(r.delta, MetricKind(r.kind, r.unit, r.direction)) if r.verdict == "significant" else None
            _say_where_interval_and_verdict_part(r, alpha, adjust, len(tested))
        for r in rows:
            if r.is_group == family and r.method != "none" and r not in tested:
                r.verdict = "no verdict"
                r.note = "; ".join(x for x in (r.note, "no p-value (the interval has no spread)") if x)


def _say_where_interval_and_verdict_part(r: ScoreRow, alpha: float, adjust: str, n_tested: int) -> None:
    """Append to ``r.note`` when its unadjusted interval and its verdict point different ways: the interval
    excludes 0 but the adjusted p does not reach ``alpha`` (the multiplicity adjustment, or the test and the
    interval disagreeing at the margin), or the reverse. A reader then sees why, instead of two answers."""
    if r.ci_low is None or r.ci_high is None or r.p_adjusted is None:
        return
    excludes = r.ci_low > 0 or r.ci_high < 0
    adjusted = "not adjusted" if adjust == "none" else f"{ADJUST[adjust]}-adjusted over {n_tested} rows"
    if excludes and r.verdict == "within noise":
        text = (f"the unadjusted {level(alpha)} % interval excludes 0, but p adj = {r.p_adjusted:.3g} ({adjusted}) "
                f"is not below {alpha:g}: within noise")
    elif not excludes and r.verdict == "significant":
        text = (f"p adj = {r.p_adjusted:.3g} ({adjusted}) is below {alpha:g}, but the {level(alpha)} % interval "
                "includes 0: the test and the interval disagree at the margin")
    else:
        return
    r.note = "; ".join(x for x in (r.note, text) if x)
