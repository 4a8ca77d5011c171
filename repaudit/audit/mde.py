"""The smallest move a paired score row's test detects with 80 % power on its docs (its *minimum detectable effect*,
MDE), the effective number of docs, and the docs a 1- and a 3-point move would need.

Each row uses the test compare gives it (:mod:`repaudit.audit.scores`), at the row's two-sided level α before the
multiplicity adjustment:

* **0/1 metric, paired, no clusters** — the exact McNemar test. With ψ the share of docs that flip (either way)
  and δ = B − A, the flips number D ~ Binomial(n, ψ) and, given D, the wrong → right ones C ~ Binomial(D, (ψ + δ)
  / 2ψ). The test rejects when ``min(C, D − C) ≤ k_D``, the largest k with ``2 · F(k; D, ½) < α``; its power is
  summed exactly over D (the McNemar power of Connor 1987, "Sample size for testing differences in proportions for
  the paired-sample design", Biometrics 43:207–211, computed exactly rather than by his normal approximation). ψ is
  the observed flip share (b + c)/n, raised to δ where a move of δ needs more flips than were seen. The MDE is the
  δ at which the power reaches 80 % (``scipy.optimize.brentq``), the docs for a move the smallest n that reaches it
  (Connor's normal formula beyond :data:`EXACT_MAX` docs).
* **any other paired row** — the z-test of Δ = 0 with the row's standard error: MDE = (z₁₋α/₂ + z₀.₈) · SE (Miller
  2024, "Adding Error Bars to Evals", arXiv 2411.00640, §5); docs for a move δ: n · (MDE/δ)².

*Effective docs*: the shared docs over the design effect, n / deff with deff = (clustered SE / SE of the same docs
taken one by one)², 1 without clusters (Kish 1965, *Survey Sampling*, §8.2): where docs share a subject, they
count for fewer independent ones. ``bench/mde_simulation.py`` plants moves of the printed MDE and counts how often
the row's test finds them.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, ConfigDict
from scipy.special import ndtri

POWER = 0.8
#: beyond this many docs, the docs a move needs come from Connor's normal formula instead of the exact sum
EXACT_MAX = 200_000
#: the moves (points) whose docs a row reports
MOVES = (1.0, 3.0)


class RowPower(BaseModel):
    """What a paired row can detect: the MDE at 80 % power, the effective docs, the docs a 1- and a 3-point move
    need. Moves and the MDE in the row's unit (points for proportions)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    test: str
    """The row's test the power is of: ``exact McNemar`` or ``z test``."""
    alpha: float
    """Its two-sided level (the comparison's α, before the multiplicity adjustment)."""
    power: float = POWER
    """The power the MDE is for."""
    mde: float | None
    """The smallest true move the test detects with ``power`` on these docs; None: none up to the metric's range (or
    no spread to project from)."""
    n_docs: int
    """Shared docs the row rests on."""
    n_effective: float
    """n / design effect (``n_docs`` without clusters)."""
    design_effect: float
    """(clustered SE / SE of the docs one by one)²; 1 without clusters."""
    flip_share: float | None = None
    """0/1 rows: the share of docs that flipped, (b + c)/n; None otherwise."""
    docs_for: dict[str, int | None] = {}
    """Move in points (``"1"``, ``"3"``) → docs with the same per-doc noise that detect it with ``power`` (reports
    print it only up to ``docs_available``, and what would help beyond); None: not a points row, or no spread to
    project from."""
    docs_available: int | None = None
    """Docs the runs scored (the larger run): what this benchmark split offers."""
    note: str = ""
    """What would detect a 3-point move where this split cannot, or why there is no MDE; empty: nothing to add."""


def _critical(d: np.ndarray, alpha: float) -> np.ndarray:
    """Per flip count D, the largest k with 2·F(k; D, ½) < α (−1: no outcome rejects)."""
    from scipy.stats import binom

    k = binom.ppf(alpha / 2, d, 0.5) - 1
    return np.where(d > 0, k, -1)


def mcnemar_power(n: int, psi: float, delta: float, alpha: float) -> float:
    """Power of the two-sided exact McNemar test at level ``alpha`` on ``n`` docs when a share ``psi`` flips and
    the true move is ``delta`` (fractions; |delta| ≤ psi ≤ 1), summed exactly over the flip count (module
    docstring). Raises ValueError for |delta| > psi."""
    if abs(delta) > psi + 1e-12:
        raise ValueError("a move cannot exceed the share of docs that flip")
    if psi <= 0 or n <= 0:
        return 0.0
    from scipy.stats import binom  # scipy.stats costs ~0.6 s to import: only the exact power takes it

    q = min(max((psi + abs(delta)) / (2 * psi), 0.0), 1.0)
    lo, hi = (int(x) for x in binom.ppf([1e-12, 1 - 1e-12], n, psi))
    d = np.arange(max(lo, 0), min(hi, n) + 1)
    k = _critical(d, alpha)
    tails = np.where(k >= 0, binom.cdf(k, d, q) + binom.sf(d - k - 1, d, q), 0.0)
    return float(np.sum(binom.pmf(d, n, psi) * tails))


def _binary_mde(n: int, psi: float, alpha: float) -> float | None:
    """The move (fraction) the exact McNemar test detects with :data:`POWER` on n docs, flips at ``psi`` or more."""
    def gap(delta: float) -> float:
        return mcnemar_power(n, max(psi, delta), delta, alpha) - POWER

    if gap(1.0) < 0:
        return None
    from scipy.optimize import brentq

    return float(brentq(gap, 1e-9, 1.0, xtol=1e-7))


def _connor_docs(psi: float, delta: float, alpha: float) -> int:
    """Connor's (1987) normal-approximation docs for the McNemar test: ((z_a √ψ + z_b √(ψ − δ²)) / δ)²."""
    za, zb = ndtri(1 - alpha / 2), ndtri(POWER)
    return math.ceil(((za * math.sqrt(psi) + zb * math.sqrt(max(psi - delta * delta, 0.0))) / delta) ** 2)


def _binary_docs(psi: float, delta: float, alpha: float) -> int:
    """Smallest n whose exact McNemar power reaches :data:`POWER` for a move ``delta`` (fraction) at flip share
    ``max(psi, delta)``: bisection from Connor's approximation (beyond :data:`EXACT_MAX`, the approximation)."""
    psi = max(psi, delta)
    guess = _connor_docs(psi, delta, alpha)
    if guess > EXACT_MAX:
        return guess
    lo, hi = 1, max(guess, 8)
    while mcnemar_power(hi, psi, delta, alpha) < POWER:
        lo, hi = hi, 2 * hi
        if hi > EXACT_MAX:
            return _connor_docs(psi, delta, alpha)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if mcnemar_power(mid, psi, delta, alpha) >= POWER else (mid, hi)
    return hi


def binary_power(r2w: int, w2r: int, n: int, alpha: float, scale: float, unit: str,
                 n_available: int | None) -> RowPower:
    """:class:`RowPower` of a 0/1 row tested by exact McNemar: ``r2w``/``w2r`` flips of ``n`` shared docs; ``scale``
    turns a fraction into the row's unit (100 for points)."""
    psi = (r2w + w2r) / n
    delta = _binary_mde(n, psi, alpha)
    docs = {f"{m:g}": (_binary_docs(psi, m / scale, alpha) if unit == "pts" and m / scale <= 1 else None)
            for m in MOVES}
    return _with_note(RowPower(test="exact McNemar", alpha=alpha, mde=None if delta is None else scale * delta,
                               n_docs=n, n_effective=float(n), design_effect=1.0, flip_share=psi, docs_for=docs,
                               docs_available=n_available))


def z_power(se: float, se_docs: float | None, n: int, alpha: float, unit: str, n_available: int | None
            ) -> RowPower:
    """:class:`RowPower` of a row tested by a z-test with standard error ``se`` (row's unit) on ``n`` shared docs;
    ``se_docs``: the SE of the same docs taken one by one, where ``se`` is clustered (else None)."""
    ok = math.isfinite(se) and se > 0
    # a clustered SE of 0 (no spread between clusters) has no design effect to speak of: 1, never n / 0
    deff = (se / se_docs) ** 2 if ok and se_docs and se_docs > 0 and math.isfinite(se_docs) else 1.0
    mde = (ndtri(1 - alpha / 2) + ndtri(POWER)) * se if ok else None
    docs = {f"{m:g}": (math.ceil(n * (mde / m) ** 2) if unit == "pts" and mde is not None else None) for m in MOVES}
    return _with_note(RowPower(test="z test", alpha=alpha, mde=None if mde is None else float(mde), n_docs=n,
                               n_effective=n / deff, design_effect=deff, docs_for=docs, docs_available=n_available))


#: what decides what a benchmark's docs cannot: every sentence that says so ends with it (compare, gate)
WHAT_WOULD = ("average repeated runs of each configuration per doc (sampling or few-shot seeds; repaudit variance "
              "measures how much of the noise repeats remove) or evaluate more docs (the rest of the split, or a "
              "larger one)")


def _with_note(p: RowPower) -> RowPower:
    """Say why there is no MDE, or — where this split's docs cannot detect a 1- or 3-point move — that they cannot,
    and what would."""
    if p.mde is None:
        p.note = ("no doc differs between the runs: no spread to project a detectable move from" if p.test == "z test"
                  else f"no move up to the whole range is detectable on {p.n_docs} docs")
        return p
    have = max(p.docs_available or 0, p.n_docs)
    beyond = [m for m, need in p.docs_for.items() if need is not None and need > have]
    if beyond:
        worst = max(beyond, key=float)
        # the count beside a row is the row's own; the larger run's docs are a projection, and said to be one
        where = (f"even on all {have:,} docs the larger run scored (this row is paired on {p.n_docs:,})"
                 if have > p.n_docs else f"on the {p.n_docs:,} docs this row is paired on")
        p.note = f"no {worst}-point move would be detectable {where}: {WHAT_WOULD}"
    return p


def hide_sentence(p: RowPower, unit: str) -> str:
    """``a move smaller than X could hide here`` for a row within noise (``X`` the MDE)."""
    if p.mde is None:
        return f"any move could hide here ({p.note})"
    return f"a move smaller than {p.mde:.2f} {unit} could hide here ({100 * p.power:.0f} % power)"
