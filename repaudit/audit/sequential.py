"""Doc-adaptive estimation: docs in a seeded random order, in rounds, until the intervals are narrow enough.

``--precision PTS`` on ``attribute`` and ``sweep`` evaluates the docs in rounds shared by every
configuration: a seeded permutation of the available doc ids cut into rounds of ``round_docs``.
After each round every estimated quantity (a Shapley value, an interaction, a sweep Δ) is the mean
of a per-doc contribution over the docs so far, and gets an interval; the audit stops when every
half-width is ≤ PTS, or when the docs run out (then the value is the full attribution's, exactly).

**Design: repeated confidence intervals** (Jennison & Turnbull 1989, "Interim analyses: the
repeated confidence interval approach", JRSS B 51(3):305–361; Jennison & Turnbull 2000, *Group
Sequential Methods*, ch. 9). The looks are planned before any doc is seen (after each round, at
``t_1 < … < t_K`` docs), and the constant ``c`` is chosen so that the K intervals

    ȳ_t ± c · s_t · sqrt((1 − t/N) / t)

hold *simultaneously* with probability 1 − α; so the interval at any stopping time — however it
depends on the data — covers with at least 1 − α. The estimand is the value on all N available
docs (what the full attribution reports): docs are drawn without replacement, so the standard error
carries the finite-population correction ``1 − t/N`` (Cochran 1977, *Sampling Techniques*, §2.5)
and ``s_t`` is the sample standard deviation (ddof 1). Standardised means at looks j ≤ k then have
correlation ``sqrt(t_j (N − t_k) / (t_k (N − t_j)))``, and ``c`` is the 1 − α quantile of
``max_k |Z_k|`` for that Gaussian vector (a Pocock-type boundary, Pocock 1977), computed here by a
seeded Monte-Carlo draw. ``s_t`` is regularised by one pseudo-doc the metric's full range from the mean,
so that a first round in which no doc flips cannot look certain. ``bench/sequential_coverage.py``
checks the coverage by simulation.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
from pydantic import BaseModel, ConfigDict

from repaudit.audit.stats import level
from repaudit.errors import RepauditError

#: words the reports use for the design
DESIGN = "repeated confidence intervals, Pocock-type constant, finite-population (Jennison & Turnbull 1989)"
#: rounds when ``--round-docs`` is not given: about this many looks
DEFAULT_LOOKS = 10
MIN_ROUND_DOCS = 20
#: Monte-Carlo draws for the boundary constant (its own sampling error is ~0.01 in c)
_DRAWS = 200_000


class StratumReport(BaseModel):
    """One stratum of a stratified design: its docs, how many were evaluated, census or sampled."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    name: str
    """``flip`` (the docs whose recorded metric differs between the runs), ``near-tie`` or ``rest``."""
    size: int
    """Docs in the stratum."""
    used: int
    """Of them, docs evaluated."""
    census: bool
    """Evaluated in full in round 1 (no sampling error), rather than sampled in slices."""


class SequentialReport(BaseModel):
    """How a doc-adaptive estimate was reached (JSON-ready; intervals in metric units)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    design: str = DESIGN
    """The design, in words (uniform rounds, or the stratified design)."""
    precision: float
    """The half-width asked for, in metric units (0.02 = 2 points for a 0–1 metric)."""
    alpha: float
    """1 − the simultaneous coverage of the repeated confidence intervals."""
    seed: int
    """The permutation seed; with ``round_docs`` it fixes every round's docs."""
    round_docs: int
    """Docs in the first round (stratified: the census docs included)."""
    rounds_run: int
    """Looks taken."""
    rounds_planned: int
    """Looks planned (the last planned look is all docs)."""
    docs_used: int
    """Docs evaluated per configuration."""
    docs_available: int
    """N: the docs the estimate is of (the docs the runs share), all evaluated by the last planned look."""
    doc_ids: list[int]
    """The docs used, round by round (each round sorted)."""
    constant: float
    """The boundary constant ``c`` of the repeated confidence intervals."""
    half_widths: list[float]
    """The final half-width of every estimated quantity, in metric units."""
    gating: int = 0
    """How many of the quantities (the first ones) decided the stop: the Shapley values or the sweep's Δs."""
    stopped: str
    """``precision reached`` or ``docs exhausted``."""
    strata: list[StratumReport] | None = None
    """The stratified design (``attribute --precision``): per stratum its size and docs used; None: uniform
    rounds."""


def plan_rounds(doc_ids: list[int], seed: int, round_docs: int | None = None) -> list[list[int]]:
    """The rounds: a seeded permutation of ``doc_ids`` cut into chunks of ``round_docs``.

    Each chunk is sorted (the runner evaluates docs in doc-id order, so a chunk's batches, and
    with them the batch store's keys, depend only on which docs it holds).

    Raises:
        RepauditError: no docs, or a round size below 1.
    """
    if not doc_ids:
        raise RepauditError("no docs to estimate on")
    n = len(doc_ids)
    size = round_docs or max(MIN_ROUND_DOCS, math.ceil(n / DEFAULT_LOOKS))
    if size < 1:
        raise RepauditError(f"--round-docs must be at least 1, got {size}")
    perm = [doc_ids[i] for i in np.random.default_rng(seed).permutation(n)]
    return [sorted(perm[k:k + size]) for k in range(0, n, size)]


@functools.lru_cache(maxsize=64)
def boundary_constant(looks: tuple[int, ...], n: int, alpha: float = 0.05) -> float:
    """``c`` with ``P(max_k |Z_k| ≤ c) = 1 − alpha`` over the looks ``t_k < n`` (see module docstring).

    Args:
        looks: cumulative docs at each look, increasing; looks at ``n`` are dropped (there the
            mean is the population's and its interval has width 0).
        n: the population size N.

    Returns the z-quantile ``Φ⁻¹(1 − alpha/2)`` for a single look, and a larger value for more.
    """
    from scipy.stats import norm

    ts = np.array([t for t in looks if t < n], dtype=np.float64)
    if len(ts) <= 1:
        return float(norm.ppf(1 - alpha / 2))
    lo, hi = np.minimum.outer(ts, ts), np.maximum.outer(ts, ts)
    corr = np.sqrt(lo * (n - hi) / (hi * (n - lo)))
    chol = np.linalg.cholesky(corr + 1e-12 * np.eye(len(ts)))
    z = np.random.default_rng(20_240_101).standard_normal((_DRAWS, len(ts))) @ chol.T
    return float(np.quantile(np.abs(z).max(axis=1), 1 - alpha))


def half_widths(contrib: np.ndarray, n: int, constant: float, value_range: float = 1.0) -> np.ndarray:
    """Half-widths of the repeated confidence intervals of the row means of ``contrib``.

    Args:
        contrib: per-doc contributions, shape (m quantities, t docs so far).
        n: the population size N (docs available).
        constant: :func:`boundary_constant` of the planned looks.
        value_range: the span of one doc's contribution (1 for a difference of accuracies); one
            pseudo-doc this far from the mean regularises the variance.

    Returns shape (m,); zero when ``t == n``.
    """
    m, t = contrib.shape
    if t >= n:
        return np.zeros(m)
    ss = ((contrib - contrib.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    # one pseudo-doc a full range from the mean: no flip in t docs still leaves a rate ~1/t possible
    s2 = (ss + value_range ** 2) / max(t - 1, 1)
    return constant * np.sqrt(s2 * (1 - t / n) / t)


def run_rounds(doc_ids: list[int], precision: float, seed: int, round_docs: int | None,
               run_round: Callable[[list[int]], np.ndarray], alpha: float = 0.05,
               value_range: float = 1.0, gate: int | None = None) -> tuple[np.ndarray, SequentialReport]:
    """Evaluate rounds until every gating quantity's half-width is ≤ ``precision`` or the docs run out.

    Args:
        doc_ids: the available docs (N of them).
        precision: the half-width asked for, in metric units (> 0).
        run_round: evaluates one round's docs on every configuration and returns the per-doc
            contributions of the m quantities for those docs, shape (m, len(chunk)).
        gate: only the first ``gate`` quantities decide when to stop (the Shapley values; the
            interactions and the delta after them get intervals but do not gate); None = all.

    Returns:
        ``(contributions so far (m, t), report)``.

    Raises:
        RepauditError: a precision that is not a positive number.
    """
    if not (precision > 0 and math.isfinite(precision)):
        raise RepauditError(f"--precision must be a positive number of points, got {100 * precision:g}")
    chunks = plan_rounds(doc_ids, seed, round_docs)
    n = len(doc_ids)
    looks = tuple(int(x) for x in np.cumsum([len(c) for c in chunks]))
    c = boundary_constant(looks, n, alpha)
    parts: list[np.ndarray] = []
    used: list[int] = []
    hw = np.zeros(0)
    stopped = "docs exhausted"
    for chunk in chunks:
        parts.append(np.atleast_2d(np.asarray(run_round(chunk), dtype=np.float64)))
        used += chunk
        hw = half_widths(np.concatenate(parts, axis=1), n, c, value_range)
        if len(used) < n and hw.size and float(hw[:gate].max()) <= precision:
            stopped = "precision reached"
            break
    contrib = np.concatenate(parts, axis=1)
    return contrib, SequentialReport(
        precision=precision, alpha=alpha, seed=seed, round_docs=len(chunks[0]), rounds_run=len(parts),
        rounds_planned=len(chunks), docs_used=len(used), docs_available=n, doc_ids=used, constant=c,
        half_widths=[float(x) for x in hw], stopped=stopped, gating=len(hw[:gate]))


STRATIFIED = ("stratified: the docs that flip between the runs in full, the other strata (near-tie, rest) in "
              "proportional seeded slices; repeated confidence intervals with a Pocock-type constant (Jennison & "
              "Turnbull 1989); stratified finite-population variance (Cochran 1977, ch. 5)")


def plan_strata(census: list[int], strata: dict[str, list[int]], seed: int,
                round_docs: int | None = None) -> list[list[int]]:
    """Rounds of a stratified design: round 1 holds every ``census`` doc; each round takes the next
    proportional slice of every stratum in ``strata`` (a seeded permutation per stratum), so after
    look k every stratum h has ``round(f_k · N_h)`` docs evaluated, ``f_k`` the same for all strata.

    Returns the rounds (each sorted, as :func:`plan_rounds`); the sampled docs of look k number
    ``round_docs`` per round (default a tenth of the sampled docs, ≥ 20).

    Raises:
        RepauditError: no docs, or a round size below 1.
    """
    sampled = sum(len(v) for v in strata.values())
    if sampled + len(census) == 0:
        raise RepauditError("no docs to estimate on")
    size = round_docs or max(MIN_ROUND_DOCS, math.ceil(sampled / DEFAULT_LOOKS))
    if size < 1:
        raise RepauditError(f"--round-docs must be at least 1, got {size}")
    looks = max(1, math.ceil(sampled / size))
    rng = np.random.default_rng(seed)
    perms = {name: [ids[i] for i in rng.permutation(len(ids))] for name, ids in sorted(strata.items())}
    rounds: list[list[int]] = []
    taken = {name: 0 for name in perms}
    for k in range(1, looks + 1):
        chunk = list(census) if k == 1 else []
        for name, ids in perms.items():
            upto = len(ids) if k == looks else round(k * len(ids) / looks)
            upto = max(upto, taken[name], min(2, len(ids)))  # a stratum's variance needs docs from round 1
            chunk += ids[taken[name]:upto]
            taken[name] = upto
        rounds.append(sorted(chunk))
    return rounds


def stratified_estimate(contrib: np.ndarray, groups: np.ndarray, sizes: np.ndarray, census: np.ndarray,
                        constant: float, value_range: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stratified estimate of the mean over all docs and its repeated-interval half-width.

    Args:
        contrib: per-doc contributions of the docs evaluated so far, shape (m, t).
        groups: the stratum index of each of those docs, shape (t,).
        sizes: N_h, the docs in each stratum, shape (H,); their sum is N.
        census: per stratum, whether it is evaluated in full (its variance term is then 0).
        constant: the boundary constant ``c``.
        value_range: span of one doc's contribution; one pseudo-doc this far from a stratum's mean
            regularises its variance, as in :func:`half_widths`.

    Returns ``(estimate (m,), half-width (m,), weight per doc (t,))``: the estimate is
    ``Σ_h (N_h/N) ȳ_h`` = ``contrib @ weights`` (unbiased for the all-doc mean under simple random
    sampling within strata), the variance ``Σ_h (N_h/N)² (1 − n_h/N_h) s_h²/n_h`` (Cochran 1977,
    *Sampling Techniques*, §5.3), the half-width ``c`` times its square root.
    """
    n = float(sizes.sum())
    m = contrib.shape[0]
    weights = np.zeros(contrib.shape[1])
    var = np.zeros(m)
    for h, nh in enumerate(sizes):
        idx = np.flatnonzero(groups == h)
        if nh == 0:
            continue
        t = len(idx)
        if t == 0:
            raise RepauditError("a stratum has no evaluated doc yet: the rounds must slice every stratum")
        weights[idx] = nh / (n * t)
        if census[h] or t >= nh:
            continue
        y = contrib[:, idx]
        ss = ((y - y.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
        s2 = (ss + value_range ** 2) / max(t - 1, 1)
        var += (nh / n) ** 2 * (1 - t / nh) * s2 / t
    return contrib @ weights, constant * np.sqrt(var), weights


def run_stratified_rounds(census: list[int], strata: dict[str, list[int]], precision: float, seed: int,
                          round_docs: int | None, run_round: Callable[[list[int]], np.ndarray],
                          alpha: float = 0.05, value_range: float = 1.0, gate: int | None = None
                          ) -> tuple[np.ndarray, np.ndarray, SequentialReport]:
    """:func:`run_rounds` for a stratified design (:func:`plan_strata`): the ``census`` docs (those
    that flip between the recorded runs) first and in full, the ``strata`` in proportional slices.

    With the same fraction ``f_k`` of every sampled stratum at look k, the stratified estimator's
    variance is ``(1/f_k − 1) · const``, so standardised estimates at two looks are correlated as for
    simple random sampling of the sampled docs, and the Pocock-type constant of
    :func:`boundary_constant` over the sampled docs' looks gives repeated intervals with simultaneous
    coverage (the census part has no sampling error).

    Returns:
        ``(contributions so far (m, t), weight per doc (t,) with ``contrib @ w`` the estimate, report)``.

    Raises:
        RepauditError: a precision that is not a positive number, or no docs.
    """
    if not (precision > 0 and math.isfinite(precision)):
        raise RepauditError(f"--precision must be a positive number of points, got {100 * precision:g}")
    chunks = plan_strata(census, strata, seed, round_docs)
    names = ["flip", *sorted(strata)]
    of = {d: 0 for d in census} | {d: 1 + i for i, name in enumerate(sorted(strata)) for d in strata[name]}
    sizes = np.array([len(census), *(len(strata[k]) for k in sorted(strata))])
    is_census = np.array([True] + [False] * len(strata))
    n = int(sizes.sum())
    n_sampled = n - len(census)
    looks = tuple(int(x) for x in np.cumsum([len([d for d in c if of[d] > 0]) for c in chunks]))
    c = boundary_constant(looks, n_sampled, alpha) if n_sampled else boundary_constant((1,), 2, alpha)
    parts: list[np.ndarray] = []
    used: list[int] = []
    hw = np.zeros(0)
    weights = np.zeros(0)
    stopped = "docs exhausted"
    for chunk in chunks:
        parts.append(np.atleast_2d(np.asarray(run_round(chunk), dtype=np.float64)))
        used += chunk
        groups = np.array([of[d] for d in used])
        _, hw, weights = stratified_estimate(np.concatenate(parts, axis=1), groups, sizes, is_census, c, value_range)
        if len(used) < n and hw.size and float(hw[:gate].max()) <= precision:
            stopped = "precision reached"
            break
    groups = np.array([of[d] for d in used])
    strata_rep = [StratumReport(name=name, size=int(sizes[h]), used=int((groups == h).sum()), census=bool(is_census[h]))
                  for h, name in enumerate(names)]
    return np.concatenate(parts, axis=1), weights, SequentialReport(
        design=STRATIFIED, precision=precision, alpha=alpha, seed=seed, round_docs=len(chunks[0]),
        rounds_run=len(parts), rounds_planned=len(chunks), docs_used=len(used), docs_available=n, doc_ids=used,
        constant=c, half_widths=[float(x) for x in hw], stopped=stopped, gating=len(hw[:gate]), strata=strata_rep)


def sequential_summary(seq: SequentialReport) -> str:
    """One sentence for reports: the subset, the rounds, the design."""
    pts = 100 * seq.precision
    if seq.stopped == "precision reached":
        lvl = level(seq.alpha)
        what = f"every factor's {lvl} % interval" if seq.gating < len(seq.half_widths) else f"every {lvl} % interval"
        how = f"{what} reached ±{pts:g} points"
    else:
        how = f"±{pts:g} points was not reached before the docs ran out, so these are the values on all docs"
    if seq.strata:
        parts = [f"all {x.size} that flip between the runs" if x.census else f"{x.used} of {x.size} {x.name}"
                 for x in seq.strata if x.size]
        subset = (f"a stratified random subset (seed {seq.seed}: {', '.join(parts)}, weighted by stratum size) in "
                  f"{seq.rounds_run} of {seq.rounds_planned} rounds")
    else:
        subset = (f"a random subset (seed {seq.seed}) in {seq.rounds_run} of {seq.rounds_planned} rounds of "
                  f"{seq.round_docs}")
    return (f"Doc-adaptive estimate: {seq.docs_used} of {seq.docs_available} docs, {subset}; {how}. "
            f"Intervals are repeated confidence intervals for the value on all {seq.docs_available} docs "
            f"(Jennison & Turnbull 1989; c = {seq.constant:.3f}), valid whatever round the audit stopped at; "
            "the same command reproduces the subset, and a tighter --precision extends it from the batch store.")
