"""Racing for ``reproduce --race``: every candidate advances through the same seeded doc rounds, and a
candidate is dropped once no all-doc score it could still have would reproduce the target.

Racing (successive elimination; Maron & Moore 1994, "Hoeffding races", NIPS 6; Birattari et al.
2002, "A racing algorithm for configuring metaheuristics", GECCO — the ``irace`` family) evaluates
candidates on growing doc sets and stops spending docs on those that are clearly out. Here:

- **Rounds.** The docs of the base configuration, permuted with a seed and cut into rounds
  (:func:`repaudit.audit.sequential.plan_rounds`, the rounds of ``--precision``). After each round
  every surviving candidate has been evaluated on the same docs.
- **Interval on the all-doc score.** For each of a candidate's scores (metric × form) the mean ȳ_t
  over the t docs so far gets the repeated confidence interval of :mod:`repaudit.audit.sequential`,
  ``ȳ_t ± c · s_t · sqrt((1 − t/N)/t)`` (Jennison & Turnbull 1989; finite-population correction,
  Pocock-type constant over the planned looks): it holds the score on all N docs at every look at
  once with probability ≥ 95 %, whatever round the candidate is dropped in.
- **What could still match.** ``reproduce`` calls a configuration a match when the target lies in
  ``μ ± 1.96 · se`` of its all-doc score μ, with lm-eval's ``se = stdev(ddof=1)/sqrt(N)``. For
  per-doc values in [0, 1], ``se ≤ sqrt(μ(1 − μ)/(N − 1))`` (the Bhatia–Davis bound on a variance;
  equality for 0/1 values), so the all-doc scores that could match form the interval M of
  :func:`matchable`, widened by ``--tolerance``. A candidate is dropped when, for *every* one of its
  scores, the repeated interval misses M. Scores that are not a per-doc mean (MMLU's subject macro
  average) or whose per-doc values leave [0, 1] never drop a candidate.
- **Survivors** run to the last round; their scores are computed from all N docs (the rounds'
  records joined), as in the full search.

The guarantee is per candidate: one that would match on all docs is dropped with probability at most
5 % (its interval's miss rate), not 5 % for the family. ``bench/reproduce_racing.py`` measures the
saving against the full search.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

Z95 = 1.959963984540054
DESIGN = ("racing: shared seeded doc rounds; a candidate is dropped when every score's repeated (1 − alpha) "
          "interval (Jennison & Turnbull 1989) misses the all-doc scores that could match")


def z_of(alpha: float) -> float:
    """``Φ⁻¹(1 − alpha/2)``: the normal quantile of a two-sided (1 − alpha) interval (:data:`Z95` at 0.05); ``alpha``
    a :class:`~repaudit.audit.stat_settings.StatSettings` one, checked there."""
    from scipy.stats import norm

    return Z95 if alpha == 0.05 else float(norm.ppf(1 - alpha / 2))


class RaceReport(BaseModel):
    """How a race went (JSON-ready; fractions of the metric's range)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    design: str = DESIGN
    """The design, in words."""
    seed: int
    """The seed of the doc permutation the rounds are cut from."""
    round_docs: int
    """Docs in the first round."""
    rounds_planned: int
    """Rounds planned (the last one completes all docs)."""
    rounds_run: int
    """Rounds run (the race ends when every candidate is dropped or the last round is done)."""
    docs_available: int
    """N: the docs a full evaluation of each candidate scores."""
    tolerance: float
    """The slack (a fraction) added to the matchable interval before a candidate may be dropped."""
    alpha: float
    """1 − the coverage of each candidate's repeated intervals."""
    constant: float
    """The repeated intervals' boundary constant ``c``."""
    random_baseline: float
    """The all-doc chance score (a fraction) used for the leaderboard-normalised form."""
    docs_evaluated: dict[str, int]
    """Candidate label → docs evaluated (N for survivors)."""
    dropped: list[str]
    """The dropped candidates' labels, in the order they were dropped."""
    doc_evaluations: int
    """Docs evaluated, summed over all candidates."""
    full_doc_evaluations: int
    """What the full search evaluates: candidates × N."""


def matchable(target: float, n: int, tolerance: float = 0.0, floor: bool = False, z: float = Z95
              ) -> tuple[float, float]:
    """The all-doc means μ ∈ [0, 1] whose interval ``μ ± z · sqrt(μ(1 − μ)/(n − 1))`` (z = 1.96: 95 %) comes
    within ``tolerance`` of ``target`` (fractions; ``n`` ≥ 2 docs). That interval bounds lm-eval's
    ``μ ± z · stdev(ddof=1)/sqrt(n)`` for any per-doc values in [0, 1] (Bhatia–Davis), so a
    candidate whose all-doc score lies outside the returned interval cannot match.

    ``floor=True`` is the leaderboard-normalised target 0 (raw baseline ``target``): every μ whose
    interval reaches below the baseline matches, so the interval starts at 0.

    Returns ``(low, high)``, containing ``target``.
    """
    from scipy.optimize import brentq, minimize_scalar

    if n < 2:
        return 0.0, 1.0
    t = min(max(target, 0.0), 1.0)

    def gap(mu: float) -> float:  # convex in μ: |μ − t| is, and −sqrt(μ(1 − μ)) is
        return abs(mu - t) - tolerance - z * math.sqrt(max(mu * (1.0 - mu), 0.0) / (n - 1))

    # the roots lie either side of the minimum (at t = 0 or 1 the target itself is a root too)
    m = float(minimize_scalar(gap, bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-12}).x)
    m = m if gap(m) < gap(t) else t
    low = 0.0 if floor or gap(0.0) <= 0 else brentq(gap, 0.0, m, xtol=1e-14)
    high = 1.0 if gap(1.0) <= 0 else brentq(gap, m, 1.0, xtol=1e-14)
    return float(low), float(high)


class RaceScore(BaseModel):
    """One raceable score of a task: the per-doc metric it averages and its key in the views."""

    model_config = ConfigDict(use_attribute_docstrings=True)
    name: str
    """The per-doc metric averaged (a key of :attr:`repaudit.run.records.DocResult.metrics`)."""
    key: str
    """The score's key in the views (``acc``, ``exact_match,strict-match``)."""


def race(labels: list[str], doc_ids: list[int], targets: dict[str, tuple[float, float]],
         run_round: Callable[[list[int], list[int]], list[Any]], scores: Callable[[Any], list[RaceScore]],
         seed: int = 0, round_docs: int | None = None, alpha: float = 0.05,
         tolerance: float = 0.0, random_baseline: float = 0.0
         ) -> tuple[dict[int, list[Any]], RaceReport, dict[int, dict[str, tuple]]]:
    """Advance candidates through shared doc rounds and drop those that cannot match.

    Args:
        labels: the candidates' labels (K of them; candidate i is index i).
        doc_ids: the N docs a full evaluation scores.
        targets: per form (``raw``, ``leaderboard_normalised``) the matchable interval of all-doc raw
            means (:func:`matchable`), already in raw units.
        run_round: ``(candidate indices, chunk of doc ids) -> one record per index`` for that chunk.
        scores: the raceable scores of a round record (an empty list: the candidate is never dropped).
        tolerance, random_baseline: recorded in the report (``targets`` already include them).

    Returns:
        ``(records per candidate index, one per round run; report; per dropped index, per score key
        and form: (mean, interval low, interval high, docs))``.

    Raises:
        RepauditError: no docs (:func:`repaudit.audit.sequential.plan_rounds`).
    """
    from repaudit.audit.sequential import boundary_constant, plan_rounds

    chunks = plan_rounds(doc_ids, seed, round_docs)
    n = len(doc_ids)
    looks = tuple(int(x) for x in np.cumsum([len(c) for c in chunks]))
    const = boundary_constant(looks, n, alpha)
    recs: dict[int, list[Any]] = {i: [] for i in range(len(labels))}
    alive = list(range(len(labels)))
    partial: dict[int, dict[str, tuple]] = {}  # the dropped candidates, in the order they were dropped
    rounds_run = 0
    for r, chunk in enumerate(chunks):
        if not alive:
            break
        for i, rec in zip(alive, run_round(alive, chunk)):
            recs[i].append(rec)
        rounds_run = r + 1
        t = looks[r]
        if t >= n:
            break
        still = []
        for i in alive:
            raceable = scores(recs[i][0])
            seen = _ruled_out(recs[i], raceable, targets, t, n, const) if raceable else None
            if seen is None:
                still.append(i)
            else:
                partial[i] = seen
        alive = still
    used = {labels[i]: sum(len(rec.docs) for rec in recs[i]) for i in range(len(labels))}
    return recs, RaceReport(
        seed=seed, round_docs=len(chunks[0]), rounds_planned=len(chunks), rounds_run=rounds_run,
        docs_available=n, tolerance=tolerance, alpha=alpha, constant=const, random_baseline=random_baseline,
        docs_evaluated=used, dropped=[labels[i] for i in partial], doc_evaluations=sum(used.values()),
        full_doc_evaluations=n * len(labels)), partial


def _ruled_out(recs: list[Any], raceable: list[RaceScore], targets: dict[str, tuple[float, float]], t: int, n: int,
               const: float) -> dict[str, tuple] | None:
    """Per score key and form, (mean, low, high, docs) if every score's interval misses what could match; else None."""
    from repaudit.audit.sequential import half_widths

    seen: dict[str, tuple] = {}
    out = True
    for s in raceable:
        y = np.array([d.metrics[s.name] for rec in recs for d in rec.docs if s.name in d.metrics])
        if len(y) != t or y.min() < 0.0 or y.max() > 1.0:
            return None  # a score that is not a [0, 1] mean over every doc cannot rule the candidate out
        hw = float(half_widths(y[None, :], n, const, 1.0)[0])
        lo, hi = float(y.mean()) - hw, float(y.mean()) + hw
        for form, (m_lo, m_hi) in targets.items():
            seen[f"{s.key}|{form}"] = (float(y.mean()), max(lo, 0.0), min(hi, 1.0), t)
            if not (hi < m_lo or lo > m_hi):
                out = False
    return seen if out else None
