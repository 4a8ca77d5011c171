"""Does ``repaudit variance``'s minimum detectable effect (MDE) mean what it says? A simulation.

The MDE at 80 % power is (z₀.₉₇₅ + z₀.₈) · s_d / √n (:func:`repaudit.audit.variance.mde`; Miller 2024,
arXiv 2411.00640, §5), where s_d is the standard deviation of per-doc differences between two
configurations that differ only by noise. For 0/1 metrics s_d² is the paired disagreement rate p_d.

Each simulated comparison draws, for n docs, how many flip wrong→right (n₀₁) and right→wrong (n₁₀)
between systems A and B: Multinomial(n; (p_d + δ)/2, (p_d − δ)/2, 1 − p_d), i.e. the same
disagreement rate with a planted true difference δ = MDE. It is *detected* when a two-sided test at
α = 0.05 rejects: the paired z-test the MDE formula assumes, and the exact McNemar test ``compare``
reports. Planted δ = MDE should be detected ≈ 80 % of the time; δ = 0 ≈ 5 % (the test's size).

Rows: a grid of (n, p_d), plus — with ``--report`` — the (n, s_d) that a ``repaudit variance --json``
report observed for each format's acc and acc_norm.

    .venv/bin/python bench/mde_simulation.py --sims 4000 [--report variance.json]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
from scipy import stats as sps

from repaudit.audit.variance import mde

GRID = [(100, 0.10), (100, 0.30), (300, 0.05), (300, 0.20), (570, 0.10), (570, 0.25), (1000, 0.15),
        (3000, 0.08), (14042, 0.12)]


def detection(n: int, p_d: float, delta: float, sims: int, rng: np.random.Generator) -> tuple[float, float]:
    """(share detected by the paired z-test, share detected by the exact McNemar test) over ``sims`` draws."""
    p01, p10 = (p_d + delta) / 2, (p_d - delta) / 2
    counts = rng.multinomial(n, [p01, p10, 1 - p01 - p10], size=sims)
    n01, n10 = counts[:, 0].astype(np.float64), counts[:, 1].astype(np.float64)
    mean = (n01 - n10) / n
    var = ((n01 + n10) / n - mean ** 2) * n / (n - 1)
    se = np.sqrt(np.maximum(var, 1e-300) / n)
    z = sps.norm.ppf(0.975)
    by_z = np.mean((np.abs(mean) / se > z) & (var > 0))
    disc = n01 + n10
    lo = np.minimum(n01, n10)
    p = np.where(disc > 0, np.minimum(1.0, 2 * sps.binom.cdf(lo, np.maximum(disc, 1), 0.5)), 1.0)
    return float(by_z), float(np.mean(p < 0.05))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sims", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--report", type=Path, help="a repaudit variance --json report: add its observed rows")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    rows = [("grid", n, p) for n, p in GRID]
    if args.report:
        rep = json.loads(args.report.read_text())
        rows += [(f"{rep['task']} {x['format']} {x['metric']}", rep["n_docs"], x["sd_diff"] ** 2)
                 for x in rep["noise"] if x["metric"] in ("acc", "acc_norm")]
    mc = 1.96 * math.sqrt(0.8 * 0.2 / args.sims)
    print(f"{args.sims} simulated comparisons per row; Monte Carlo 95 % half-width at 80 %: ±{100 * mc:.1f} pts\n")
    print("| source | n docs | p_d (paired disagreement) | MDE (pts) | detected, z-test | detected, McNemar | "
          "size at δ = 0, z-test | size at δ = 0, McNemar |")
    print("|---|---|---|---|---|---|---|---|")
    for src, n, p_d in rows:
        delta = mde(math.sqrt(p_d), n)
        if delta > p_d:  # an effect larger than the disagreement cannot be planted with this p_d
            print(f"| {src} | {n} | {p_d:.3f} | {100 * delta:.2f} | (MDE > p_d: not plantable) | | | |")
            continue
        z1, m1 = detection(n, p_d, delta, args.sims, rng)
        z0, m0 = detection(n, p_d, 0.0, args.sims, rng)
        print(f"| {src} | {n} | {p_d:.3f} | {100 * delta:.2f} | {z1:.1%} | {m1:.1%} | {z0:.1%} | {m0:.1%} |",
              flush=True)


if __name__ == "__main__":
    main()
