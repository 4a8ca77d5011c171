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

Verdicts are given afterwards on multiplicity-adjusted p-values (:func:`repaudit.audit.verdicts.judge`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from repaudit.audit.docsets import MIN_DOCS
from repaudit.audit.flips import FlipList, FlippedDoc, list_flips
from repaudit.audit.mde import RowPower, binary_power, z_power
from repaudit.audit.picks import Scoring
from repaudit.audit.stat_settings import StatSettings
from repaudit.audit.stats import (
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
from repaudit.importers.metric_kinds import MetricKind, delta_range, metric_kind, pair_kinds

Verdict = Literal["within noise", "significant", "not comparable", "no verdict"]


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


@dataclass(frozen=True)
class RowInput:
    """One task and one metric of two runs, as a score row is built from them.

    Attributes:
        task: the task, under the name the two runs were paired by.
        metric: the metric key both runs report.
        a, b: each run's outcome of the task.
        shared: doc ids both runs scored; ``None`` when a side has no per-doc results.
        reason: why the doc sets are not comparable; ``None`` when they are.
        same_task: both runs come from one harness and name the task alike (:func:`row_kind`).
        scoring_a, scoring_b: how each run's metrics pick their answers, for the flipped docs' columns
            (:func:`repaudit.audit.picks.scoring_of`).
    """

    task: str
    metric: str
    a: TaskOutcome
    b: TaskOutcome
    shared: list[int] | None = None
    reason: str | None = None
    same_task: bool = False
    scoring_a: Scoring = field(default_factory=Scoring)
    scoring_b: Scoring = field(default_factory=Scoring)


@dataclass
class ScoredRow:
    """A score row before the multiplicity correction (:func:`~repaudit.audit.verdicts.judge` gives the verdict)
    and the docs whose 0/1 outcome flipped on its metric (empty for other metrics), in doc order."""

    row: ScoreRow
    flips: list[FlippedDoc]


@dataclass
class _Row:
    """What every step of one row needs: its input, the statistics, each side's kind and the pair's (``kind``: None
    when the units are incompatible, ``why`` then says so), the fields every row carries, where the flips go."""

    inp: RowInput
    stat: StatSettings
    ka: MetricKind
    kb: MetricKind
    kind: MetricKind | None
    why: str
    extra: dict[str, Any]
    flips: FlipList

    def make(self, va: float, vb: float, method: str, verdict: Verdict, note: str, n: int = 0, **kw: Any
             ) -> ScoreRow:
        """A row of this task and metric in the pair's kind (A's where the units are incompatible), without a test
        unless ``kw`` gives one."""
        k = self.kind or self.ka
        return ScoreRow(**{"task": self.inp.task, "metric": self.inp.metric, "kind": k.kind, "unit": k.display_unit,
                           "direction": k.direction, "a": va, "b": vb, "delta": vb - va, "method": method,
                           "n_paired": n, "verdict": verdict, "note": note, "se": None, "ci_low": None,
                           "ci_high": None, **self.extra, **kw})


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


def score_row(inp: RowInput, stat: StatSettings) -> ScoredRow:
    """One score row before the multiplicity correction (:func:`~repaudit.audit.verdicts.judge` gives the
    verdict), and its flipped docs.

    ``stat`` is compare's record (:func:`repaudit.audit.stat_settings.for_command`): its ``n_boot`` resamples seeded
    with ``boot_seed``, (1 − ``alpha``) intervals, flips within ``tie_eps`` nats counted as churn.
    """
    ta, tb, metric = inp.a, inp.b, inp.metric
    ka, kb, kind, why = row_kind(metric, ta, tb, inp.same_task)
    extra = dict(a_reported=_finite(ta.reported[metric][0] * ka.scale),
                 b_reported=_finite(tb.reported[metric][0] * kb.scale), is_group=ta.is_group or tb.is_group,
                 n_a=len(ta.docs) if ta.docs else ta.n_docs, n_b=len(tb.docs) if tb.docs else tb.n_docs,
                 a_name=ta.metric_names.get(metric) or _renamed(ta, metric),
                 b_name=tb.metric_names.get(metric) or _renamed(tb, metric))
    r = _Row(inp, stat, ka, kb, kind, why, extra, FlipList([], inp.scoring_a, inp.scoring_b))
    row = _score_row(r) if kind is not None else r.make(ta.reported[metric][0] * ka.scale,
                                                        tb.reported[metric][0] * kb.scale, "none", "not comparable",
                                                        why, len(inp.shared or []))
    if kind is not None:
        _explain_units(row, r)
    return ScoredRow(row, r.flips.out)


def _explain_units(row: ScoreRow, r: _Row) -> None:
    """Prepend to ``row.note`` what the units say: two scales shown in points, the pair's reason, an unknown metric."""
    scales = {k: side.kind for k, side in (("A", r.ka), ("B", r.kb))}
    if len(set(scales.values())) > 1:  # a proportion and a percentage: both shown in points
        said = "; ".join(f"{k} reports it as a {v} ({'0–1' if v == 'proportion' else '0–100'})"
                         for k, v in scales.items())
        row.note = f"{said}: both shown in points" + (f"; {row.note}" if row.note else "")
    if r.why:
        row.note = f"{r.why}; {row.note}" if row.note else r.why
    kind = r.kind
    if kind is not None and kind.kind == "score":
        unknown = (f"repaudit does not know the metric '{r.inp.metric}'" + (
            f"; {kind.declared}" if kind.declared else ": its unit and scale are unknown") +
            ", so the values are shown as the files report them" + (" and its direction is unknown" if
                                                                     kind.direction == "unknown" else ""))
        row.note = f"{unknown}; {row.note}" if row.note else unknown


def _score_row(r: _Row) -> ScoreRow:
    inp, metric = r.inp, r.inp.metric
    ta, tb, shared = inp.a, inp.b, inp.shared
    (va, sa), (vb, sb) = ta.reported[metric], tb.reported[metric]
    ra, rb = va * r.ka.scale, vb * r.kb.scale
    n = len(shared or [])
    if inp.reason is not None:
        return r.make(ra, rb, "none", "not comparable", inp.reason, n)
    if not (finite(va) and finite(vb)):
        return r.make(ra, rb, "none", "no verdict", f"a reported value is not finite (A {va}, B {vb})", n)
    if shared:
        paired = _paired(r)
        if paired is not None:
            return paired
        why = "per-doc values are not a mean of the reported score; compared unpaired"
    elif shared is not None:
        why = ""
    else:
        why = "unpaired (no per-doc values in " + ("both runs" if not ta.docs and not tb.docs else
                                                   "A" if not ta.docs else "B") + "): wider than a paired interval"
    read = [f"{side}: {how}" for side, t in (("A", ta), ("B", tb)) if (how := t.stderr_notes.get(metric))]
    return _unpaired(r, ra, rb, sa, sb, "; ".join([why, *read]) if why else "; ".join(read))


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


def _unpaired(r: _Row, ra: float, rb: float, sa: float, sb: float, why: str) -> ScoreRow:
    kind, extra, alpha = r.kind, r.extra, r.stat.alpha
    scale_a, scale_b = r.ka.scale, r.kb.scale
    n = min((x for x in (extra["n_a"], extra["n_b"]) if x is not None), default=None)
    if not (finite(sa) and finite(sb)):
        return r.make(ra, rb, "none", "no verdict", "neither per-doc values nor finite stderrs in both runs (a "
                      "corpus-level metric has none)")
    if n is not None and n < MIN_DOCS:
        return r.make(ra, rb, "none", "no verdict", f"{n} docs: fewer than the floor of {MIN_DOCS} for a verdict")
    dlo, dhi = delta_range(kind)
    se = math.sqrt((sa * scale_a) ** 2 + (sb * scale_b) ** 2)
    if kind.display_unit == "pts":  # a proportion (fraction ×100, or a percentage): are both 0/1 means of known docs?
        fa, fb, na, nb = ra / 100, rb / 100, extra["n_a"], extra["n_b"]
        if unpaired_proportion(fa, sa * scale_a / 100, na) and unpaired_proportion(fb, sb * scale_b / 100, nb):
            lo, hi = newcombe_interval(fa, na, fb, nb, alpha)
            note = "; ".join(x for x in (why, f"Newcombe's hybrid score interval of the two Wilson intervals ({na} "
                                              f"and {nb} docs): the recorded stderrs are 0/1 means'") if x)
            return r.make(ra, rb, "unpaired_newcombe", "within noise", note, se=se, ci_low=max(100 * lo, dlo),
                          ci_high=min(100 * hi, dhi), p_value=newcombe_pvalue(fa, na, fb, nb))
    if sa == 0 or sb == 0:
        return r.make(ra, rb, "none", "no verdict",
                      f"a recorded stderr of 0 ({'A' if sa == 0 else 'B'}) is not an estimate of noise")
    se, lo, hi = unpaired_interval(ra, sa * scale_a, rb, sb * scale_b, alpha)
    return r.make(ra, rb, "unpaired_stderr", "within noise", why, se=se, ci_low=max(lo, dlo), ci_high=min(hi, dhi),
                  p_value=z_pvalue(rb - ra, se))


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


def _few_docs(n: int) -> str:
    return f"{n} shared doc{'' if n == 1 else 's'}: fewer than the floor of {MIN_DOCS} for a verdict"


def _paired(r: _Row) -> ScoreRow | None:
    inp, kind, stat, extra = r.inp, r.kind, r.stat, r.extra
    ta, tb, metric, shared = inp.a, inp.b, inp.metric, inp.shared
    if kind.aggregation in _RATIO:
        return _paired_corpus(r)
    if not all(metric in ta.docs[i].metrics and metric in tb.docs[i].metrics for i in shared):
        return None
    s_a = _side_scale(ta, metric, r.ka, ta.reported[metric][0])
    s_b = _side_scale(tb, metric, r.kb, tb.reported[metric][0])
    if s_a is None or s_b is None:
        return None
    xa = np.array([ta.docs[i].metrics[metric] for i in shared], dtype=np.float64)
    xb = np.array([tb.docs[i].metrics[metric] for i in shared], dtype=np.float64)
    bad = [i for i, x, y in zip(shared, xa, xb) if not (math.isfinite(x) and math.isfinite(y))]
    if bad:
        return r.make(extra["a_reported"] or 0.0, extra["b_reported"] or 0.0, "none", "no verdict",
                      f"{len(bad)} docs have a non-finite per-doc {metric} (e.g. doc {bad[0]})", len(shared))
    subset = len(shared) < max(len(ta.docs), len(tb.docs))
    binary = set(np.unique(np.concatenate([xa, xb]))) <= {0.0, 1.0}
    if len(shared) < MIN_DOCS:  # the floor withholds a verdict; the flips are facts and are always listed
        row = r.make(float(xa.mean() * s_a), float(xb.mean() * s_b), "none", "no verdict", _few_docs(len(shared)),
                     len(shared), subset=subset)
        if binary:
            _, row.right_to_wrong, row.wrong_to_right = mcnemar_exact(xa, xb)
            row.flip_ids = list_flips(inp.task, metric, ta, tb, shared, xa, xb, stat.tie_eps, r.flips)
            row.near_tie_flips = len(row.flip_ids["churn"])
        return row
    cl = [ta.docs[i].cluster or tb.docs[i].cluster for i in shared]
    clusters = np.array(cl) if all(c is not None for c in cl) else None  # partial labels would mix unlike units
    one_cluster = clusters is not None and len(set(cl)) < 2
    if one_cluster:  # a cluster-robust SE needs two clusters at least: with one, it is 0 by construction
        clusters = None
    res = paired_bootstrap(xa * s_a, xb * s_b, clusters, n_boot=stat.n_boot, alpha=stat.alpha, seed=stat.boot_seed)
    row = r.make(float(xa.mean() * s_a), float(xb.mean() * s_b),
                 "paired_cluster_bootstrap" if clusters is not None else "paired_bootstrap", "within noise",
                 (f"every doc is in one cluster ('{cl[0]}'): a clustered interval needs two clusters at least, so docs "
                  "were resampled one by one" if one_cluster else "" if clusters is not None or not any(cl) else
                  "only some docs carry a cluster: not clustered"), len(shared),
                 delta=res.delta, se=res.se, ci_low=res.ci_low, ci_high=res.ci_high, n_clusters=res.n_clusters,
                 subset=subset, p_value=z_pvalue(res.delta, res.se))
    n_avail = max((x for x in (row.n_a, row.n_b) if x is not None), default=None)
    row.power = z_power(res.se, paired_se(xb * s_b - xa * s_a) if clusters is not None else None, len(shared),
                        stat.alpha, row.unit, n_avail)
    if binary:
        p, r2w, w2r = mcnemar_exact(xa, xb)
        row.mcnemar_p, row.right_to_wrong, row.wrong_to_right = p, r2w, w2r
        if clusters is None:
            row.p_value = p
            row.power = binary_power(r2w, w2r, len(shared), stat.alpha, s_a, row.unit, n_avail)
            if s_a == s_b:
                # the percentile bootstrap is too narrow when few docs flip (4 flips of 40 one way: [+2.5, +20]
                # pts while McNemar's p is 0.125); the score interval keeps its level there (Newcombe 1998)
                lo, hi = paired_score_interval(r2w, w2r, len(shared), stat.alpha / 2)
                row.ci_low, row.ci_high, row.method = s_a * lo, s_a * hi, "paired_score"
        row.flip_ids = list_flips(inp.task, metric, ta, tb, shared, xa, xb, stat.tie_eps, r.flips)
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


def _paired_corpus(r: _Row) -> ScoreRow | None:
    inp, kind, stat = r.inp, r.kind, r.stat
    ta, tb, metric, shared = inp.a, inp.b, inp.metric, inp.shared
    f = _RATIO[kind.aggregation]
    parts_a, parts_b = (_ratio_parts(t, metric, shared, kind.aggregation) for t in (ta, tb))
    full_a, full_b = (_ratio_parts(t, metric, list(t.docs), kind.aggregation) for t in (ta, tb))
    if None in (parts_a, parts_b, full_a, full_b) or not (np.all(parts_a[1] > 0) and np.all(parts_b[1] > 0)):
        return None
    for (num, den), t in ((full_a, ta), (full_b, tb)):  # the per-doc parts must rebuild the reported score
        if not math.isclose(float(f(num.sum() / den.sum())), t.reported[metric][0], rel_tol=1e-5):
            return None
    subset = len(shared) < max(len(ta.docs), len(tb.docs))
    va, vb = (float(f(p[0].sum() / p[1].sum())) for p in (parts_a, parts_b))
    if len(shared) < MIN_DOCS:
        return r.make(va, vb, "none", "no verdict", _few_docs(len(shared)), len(shared), subset=subset)
    res = paired_bootstrap_ratio(*parts_a, *parts_b, f, n_boot=stat.n_boot, alpha=stat.alpha, seed=stat.boot_seed)
    n_avail = max((x for x in (r.extra["n_a"], r.extra["n_b"]) if x is not None), default=None)
    return r.make(va, vb, "paired_corpus_bootstrap", "within noise",
                  f"paired bootstrap of the corpus-level {kind.aggregation.replace('_', ' ')}", len(shared),
                  se=res.se, ci_low=res.ci_low, ci_high=res.ci_high, p_value=z_pvalue(res.delta, res.se),
                  subset=subset, power=z_power(res.se, None, len(shared), stat.alpha, kind.display_unit, n_avail))
