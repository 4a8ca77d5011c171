"""Coverage of compare's unpaired interval for a 0/1 metric on few docs, computed exactly (no simulation).

Two runs score the same n docs; each doc's pair of outcomes (A right?, B right?) is drawn independently from one 2×2
distribution with A's accuracy p_A, B's accuracy p_B and correlation ρ between the two runs' outcomes (the phi
coefficient: P(both right) = p_A·p_B + ρ·sqrt(p_A(1 − p_A)p_B(1 − p_B))). The joint distribution of the two runs' counts
(k_A, k_B) is the n-fold convolution of one doc's, so each interval's coverage of the true Δ = p_B − p_A is summed
exactly over every outcome. Each run's recorded stderr is lm-eval's, sqrt(p(1 − p)/(n − 1)).

Two intervals, at a nominal 95 %:

* ``Wald`` — Δ ± z·sqrt(se_A² + se_B²) from the recorded stderrs (what compare printed before issue 61), counted only
  where it gives a verdict (both stderrs > 0);
* ``Newcombe`` — the hybrid score interval of each side's Wilson interval (Newcombe 1998, method 10), which compare
  now gives an unpaired 0/1 row whose doc counts are known (:func:`repaudit.audit.scores.unpaired_proportion`).

Run: ``python bench/unpaired_coverage.py`` (a few seconds). ``tests/test_stats.py`` asserts the Newcombe column's
minimum over n = 20–30, p_A ∈ {5 %, 50 %, 90 %}, moves of up to ±10 points and ρ ∈ {0.1, 0.3}.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from repaudit.audit.stats import newcombe_interval  # noqa: E402

NS = tuple(range(20, 31))
ACCURACIES = (0.05, 0.5, 0.9)
MOVES = (-0.10, -0.05, 0.0, 0.05, 0.10)
RHOS = (0.1, 0.3)
ALPHA = 0.05


def outcomes(n: int, pa: float, pb: float, rho: float) -> np.ndarray:
    """P(k_A, k_B) of n docs, shape (n + 1, n + 1): the n-fold convolution of one doc's 2×2 distribution (each doc
    adds (1, 1), (1, 0), (0, 1) or (0, 0) to the two counts)."""
    p11 = pa * pb + rho * math.sqrt(pa * (1 - pa) * pb * (1 - pb))
    cells = (p11, pa - p11, pb - p11, 1 - pa - pb + p11)
    if min(cells) < -1e-12:
        raise ValueError(f"no 2×2 distribution has p_A {pa}, p_B {pb} and correlation {rho}")
    p11, p10, p01, p00 = (max(c, 0.0) for c in cells)
    joint = np.zeros((n + 1, n + 1))
    joint[0, 0] = 1.0
    for _ in range(n):
        nxt = p00 * joint
        nxt[1:, 1:] += p11 * joint[:-1, :-1]
        nxt[1:, :] += p10 * joint[:-1, :]
        nxt[:, 1:] += p01 * joint[:, :-1]
        joint = nxt
    return joint


def coverage(n: int, pa: float, pb: float, rho: float, alpha: float = ALPHA) -> tuple[float, float, float]:
    """(Wald coverage among the outcomes it gives a verdict for, the share of those outcomes, Newcombe coverage)."""
    z = float(sps.norm.ppf(1 - alpha / 2))
    delta = pb - pa
    joint = outcomes(n, pa, pb, rho)
    k = np.arange(n + 1) / n
    a, b = np.meshgrid(k, k, indexing="ij")  # a[ka, kb] = ka / n, b[ka, kb] = kb / n
    sa, sb = np.sqrt(a * (1 - a) / (n - 1)), np.sqrt(b * (1 - b) / (n - 1))
    told_mask = (sa > 0) & (sb > 0)
    se = np.hypot(sa, sb)
    wald_in = ((b - a) - z * se <= delta) & (delta <= (b - a) + z * se)
    lo, hi = newcombe_interval(a, n, b, n, alpha)
    told = float(joint[told_mask].sum())
    wald = float(joint[told_mask & wald_in].sum())
    newcombe = float(joint[(lo - 1e-12 <= delta) & (delta <= hi + 1e-12)].sum())
    return wald / told if told else float("nan"), told, newcombe


def table(ns=NS, accuracies=ACCURACIES, moves=MOVES, rhos=RHOS) -> list[tuple]:
    """One row per (n, p_A): the worst Wald and Newcombe coverage over the moves and correlations."""
    rows = []
    for n in ns:
        for pa in accuracies:
            cells = [coverage(n, pa, pa + m, rho) for m in moves for rho in rhos if 0 < pa + m < 1]
            rows.append((n, pa, min(c[0] for c in cells), min(c[1] for c in cells), min(c[2] for c in cells)))
    return rows


def main() -> None:
    print("Unpaired interval of a 0/1 metric, nominal 95 %: worst exact coverage over moves of −10 to +10 points "
          "and run correlation 0.1 and 0.3")
    print(f"{'n':>3} {'p_A':>5}  {'Wald (verdicts)':>15} {'share with a verdict':>21}  {'Newcombe':>9}")
    for n, pa, wald, told, newc in table():
        print(f"{n:>3} {pa:>5.2f}  {100 * wald:>14.1f}% {100 * told:>20.1f}%  {100 * newc:>8.1f}%")


if __name__ == "__main__":
    main()
