"""Calibration of compare's paired intervals on synthetic per-doc 0/1 outcomes with a known answer.

Null: run B is run A with 10 % of docs re-drawn by a fair coin (random tie-breaking noise; the
expected score does not move). Shift: additionally a fraction of B's wrong docs made right.
Prints, for the percentile bootstrap and for Tango's score interval (what compare shows for 0/1 metrics
without clusters), how often the 95 % interval excludes 0 — under the null that is the false-alarm rate
(5 % is the level), under a shift the detection rate — next to the power the paired z-test formula
predicts (``repaudit.audit.stats.paired_power``), and how often the exact McNemar p is below 0.05.

    .venv/bin/python bench/stats_calibration.py --pairs 1000 --n 400
    .venv/bin/python bench/stats_calibration.py --pairs 1000 --n 40
"""

from __future__ import annotations

import argparse

import numpy as np

from repaudit.audit.stats import mcnemar_exact, paired_bootstrap, paired_power, paired_score_interval


def _pair(rng, n, shift):
    a = (rng.random(n) < 0.5).astype(float)
    b = a.copy()
    noisy = rng.random(n) < 0.1
    b[noisy] = (rng.random(noisy.sum()) < 0.5).astype(float)
    if shift:
        wrong = np.flatnonzero(b == 0)
        b[rng.choice(wrong, size=int(round(shift * n)), replace=False)] = 1.0
    return a, b


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--n", type=int, default=400, help="docs per run")
    ap.add_argument("--boot", type=int, default=1000)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print("| planted shift (pts) | pairs | docs | bootstrap interval excludes 0 | score interval excludes 0 | "
          "exact McNemar p < 0.05 | predicted power |")
    print("|---|---|---|---|---|---|---|")
    for shift in (0.0, 0.01, 0.02, 0.03, 0.05, 0.10):
        boot, score, mcn, sds = 0, 0, 0, []
        for _ in range(args.pairs):
            a, b = _pair(rng, args.n, shift)
            sds.append(np.std(b - a, ddof=1))
            r = paired_bootstrap(a, b, n_boot=args.boot, seed=int(rng.integers(1 << 30)))
            boot += r.ci_low > 0 or r.ci_high < 0
            p, down, up = mcnemar_exact(a, b)
            lo, hi = paired_score_interval(down, up, args.n, 0.025)
            score += lo > 0 or hi < 0
            mcn += p < 0.05
        pred = paired_power(shift, float(np.mean(sds)), args.n) if shift else 0.05
        print(f"| {100 * shift:.0f} | {args.pairs} | {args.n} | {boot / args.pairs:.3f} | {score / args.pairs:.3f} | "
              f"{mcn / args.pairs:.3f} | {pred:.3f} |")


if __name__ == "__main__":
    main()
