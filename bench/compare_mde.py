"""Does the MDE that ``compare`` and ``gate`` print beside a paired 0/1 row mean what it says? A simulation.

For each (n docs, flip share ψ) of a grid, a pair of runs is built with ``round(ψ n / 2)`` docs flipping each way,
and compare's own row code (:func:`repaudit.audit.scores.score_row`) prints its MDE at 80 % power
(:mod:`repaudit.audit.mde`: the exact McNemar test's power, summed over the flip count). Then ``--sims`` comparisons
of n docs are drawn with that move planted: Multinomial(n; (ψ' + δ)/2, (ψ' − δ)/2, 1 − ψ') wrong → right,
right → wrong and unchanged docs, with δ = the printed MDE and ψ' = max(ψ, δ) (the flip share the MDE assumes).
Each is *detected* when the row's test — the exact McNemar test at the row's α, as compare reports it — rejects.
The detection rate should be 80 % (the Monte Carlo standard error is about 0.6 points at 4000 simulations); with
no move planted (δ = 0, share ψ) it is the test's size, at most α.

    .venv/bin/python bench/compare_mde.py --sims 4000
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy import stats as sps

from repaudit.audit.scores import RowInput, score_row
from repaudit.audit.stat_settings import StatSettings
from repaudit.importers.comparable import DocOutcome, TaskOutcome

GRID = [(40, 0.10), (100, 0.05), (100, 0.30), (300, 0.02), (570, 0.0), (570, 0.12), (1000, 0.15), (3000, 0.08),
        (14042, 0.12)]


def printed_mde(n: int, psi: float, alpha: float) -> tuple[float, float]:
    """(the MDE compare prints for a row of n docs with ``psi`` of them flipping, half each way; the flip share
    realised) in points, through compare's row code."""
    k = round(psi * n / 2)
    xa = np.zeros(n)
    xb = np.zeros(n)
    xa[:k] = 1.0  # right → wrong
    xb[k:2 * k] = 1.0  # wrong → right
    xa[2 * k: 2 * k + n // 2] = xb[2 * k: 2 * k + n // 2] = 1.0  # right in both: a realistic score, no flip

    def run(x: np.ndarray) -> TaskOutcome:
        docs = {i: DocOutcome(doc_id=i, doc_hash=f"h{i}", prompt_hash=None, target=None, cluster=None,
                              metrics={"acc": float(v)}, prediction=None) for i, v in enumerate(x)}
        return TaskOutcome(task="t", reported={"acc": (float(x.mean()), float(np.std(x, ddof=1) / math.sqrt(n)))},
                           docs=docs, n_docs=n)

    row = score_row(RowInput("t", "acc", run(xa), run(xb), list(range(n)), same_task=True),
                    StatSettings(alpha=alpha, n_boot=200)).row
    assert row.method == "paired_score" and row.power is not None and row.power.test == "exact McNemar"
    return row.power.mde, 2 * k / n


def detected(n: int, psi: float, delta: float, alpha: float, sims: int, rng: np.random.Generator) -> float:
    """Share of ``sims`` comparisons of n docs (flip share ``psi``, planted move ``delta``, fractions) in which the
    exact two-sided McNemar test rejects at ``alpha``."""
    counts = rng.multinomial(n, [(psi + delta) / 2, (psi - delta) / 2, 1 - psi], size=sims)
    up, down = counts[:, 0], counts[:, 1]
    disc = up + down
    p = np.where(disc > 0, np.minimum(1.0, 2 * sps.binom.cdf(np.minimum(up, down), np.maximum(disc, 1), 0.5)), 1.0)
    return float(np.mean(p < alpha))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sims", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--alpha", type=float, nargs="+", default=[0.05, 0.1])
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    se = math.sqrt(0.8 * 0.2 / args.sims)
    print(f"| α | n | flip share | printed MDE (pts) | detected at the MDE | detected with no move | {args.sims} "
          "simulations each |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    worst = 0.0
    for alpha in args.alpha:
        for n, psi in GRID:
            mde, share = printed_mde(n, psi, alpha)
            delta = mde / 100
            hit = detected(n, max(share, delta), delta, alpha, args.sims, rng)
            size = detected(n, share, 0.0, alpha, args.sims, rng) if share > 0 else 0.0
            worst = max(worst, abs(hit - 0.8))
            print(f"| {alpha:g} | {n:,} | {100 * share:.1f} % | {mde:.2f} | {100 * hit:.1f} % | {100 * size:.1f} % | "
                  f"{(hit - 0.8) / se:+.1f} SE |")
    print(f"\nlargest |detected − 80 %|: {100 * worst:.1f} points (Monte Carlo SE {100 * se:.1f} points)")


if __name__ == "__main__":
    main()
