"""Coverage of ``--precision``'s sequential intervals, by simulation, in both designs.

Each simulated audit draws a population of N docs whose per-doc outcomes (0/1, as acc) under the
2^k configurations of k = 3 factors carry planted effects, then runs repaudit's own doc-adaptive
loop (:func:`repaudit.audit.sequential.run_rounds` with the Shapley and interaction weights of
:mod:`repaudit.audit.attribution`) on a fresh random doc order until every Shapley value's interval
is ±PTS (they gate the stop, as in ``attribute``) or the docs run out. An interval *covers* when it
contains the value the full attribution computes on all N docs (the estimand ``attribute`` without
``--precision`` reports). Reported per scenario:
coverage of each Shapley value, of the interactions and of the delta, simultaneous coverage (all
quantities at once), the mean docs used, and — for contrast — the coverage of naive fixed-n 95 %
intervals (z = 1.96, same finite-population standard error) at the same data-dependent stopping
time, which optional stopping is known to break. Designs: ``uniform`` (``sweep --precision``: one
random doc order) and ``stratified`` (``attribute --precision``: the docs that flip between A and B
in full, then proportional slices of near-tie and other docs, stratum-weighted estimates).

    .venv/bin/python bench/sequential_coverage.py --audits 500
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from repaudit.audit.attribution import interaction_weights, shapley_weights, subsets
from repaudit.audit.sequential import half_widths, plan_rounds, run_rounds, run_stratified_rounds, stratified_estimate

#: planted effects on the probability of a correct answer, in points: main effects of the three
#: factors and one interaction (prompt format × n-shot), as in a real cloze-vs-lettered audit
#: and the doc-by-configuration noise (0.01: nearly no doc flips except through the effects)
SCENARIOS = {
    "three effects (−15, +3, 0; interaction −5)": ((-0.15, 0.03, 0.0), -0.05, 0.12),
    "small effects (−2, +1, 0; no interaction)": ((-0.02, 0.01, 0.0), 0.0, 0.12),
    "no effect at all": ((0.0, 0.0, 0.0), 0.0, 0.12),
    "rare one-way flips (0, +4, 0; little noise)": ((0.0, 0.04, 0.0), 0.0, 0.01),
    # A and B agree on nearly every doc (their probabilities are equal), the hybrids do not: the docs that
    # carry the Shapley values are outside the census, where the stratified design is weakest
    "interaction only (−10, −10, 0; interaction +20; A = B)": ((-0.10, -0.10, 0.0), 0.20, 0.01),
}


def population(rng: np.random.Generator, n: int, mains, inter: float, noise: float = 0.12
               ) -> tuple[np.ndarray, np.ndarray]:
    """Per-doc outcomes (2^3 configurations × n docs): doc difficulty ``u`` shared by all
    configurations, plus doc-by-configuration noise (so some docs flip without any effect); and each
    doc's decision margin in runs A (no factor) and B (all three), ``|u − threshold|``, the smaller
    of the two (what a recorded log-likelihood gap shows)."""
    u = rng.uniform(size=n)
    rows, margins = [], []
    for s in subsets(3):
        p = 0.55 + sum(mains[i] for i in s) + (inter if {0, 1} <= s else 0.0)
        cut = p + noise * rng.standard_normal(n)
        rows.append((u < cut).astype(np.float64))
        margins.append(np.abs(u - cut))
    return np.stack(rows), np.minimum(margins[0], margins[-1])


def strata(x: np.ndarray, margin: np.ndarray) -> tuple[list[int], dict[str, list[int]]]:
    """``attribute``'s strata for a simulated pair: flips between A and B (census), near-tie (the
    quarter of the rest with the smallest margin), rest (:func:`repaudit.audit.attribution.attribution_strata`)."""
    flip = x[0] != x[-1]
    census = np.flatnonzero(flip).tolist()
    others = np.flatnonzero(~flip)
    cut = np.quantile(margin[others], 0.25)
    return census, {"near-tie": others[margin[others] <= cut].tolist(), "rest": others[margin[others] > cut].tolist()}


def audit(rng: np.random.Generator, pop, weights: np.ndarray, precision: float, round_docs: int | None,
          design: str):
    """One simulated ``--precision`` audit on outcomes ``x``; returns (covered per quantity, naive
    covered per quantity, docs used)."""
    x, margin = pop
    n = x.shape[1]
    truth = weights @ x.mean(axis=1)
    contrib_all = weights @ x  # per-doc contribution of every quantity
    seed = int(rng.integers(0, 2**31))
    if design == "uniform":
        contrib, seq = run_rounds(list(range(n)), precision, seed, round_docs, lambda chunk: contrib_all[:, chunk],
                                  gate=3)
        est, naive = contrib.mean(axis=1), half_widths(contrib, n, 1.959964)
    else:
        census, st = strata(x, margin)
        contrib, w, seq = run_stratified_rounds(census, st, precision, seed, round_docs,
                                                lambda chunk: contrib_all[:, chunk], gate=3)
        sizes = np.array([len(census), len(st["near-tie"]), len(st["rest"])])
        of = {d: 0 for d in census} | {d: 1 for d in st["near-tie"]} | {d: 2 for d in st["rest"]}
        est, naive, _ = stratified_estimate(contrib, np.array([of[d] for d in seq.doc_ids]), sizes,
                                            np.array([True, False, False]), 1.959964)
    hw = np.asarray(seq.half_widths)
    return np.abs(est - truth) <= hw + 1e-12, np.abs(est - truth) <= naive + 1e-12, seq.docs_used


def early(cov: np.ndarray, stopped: np.ndarray) -> str:
    """Coverage of the least-covered Shapley value among audits that stopped before the last round
    (where the interval is not trivially exact)."""
    if not stopped.any():
        return "–"
    return f"{100 * cov[stopped, :3].mean(axis=0).min():.1f} % ({int(stopped.sum())})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--audits", type=int, default=500)
    ap.add_argument("--docs", default="570,2000", help="population sizes N")
    ap.add_argument("--precision", default="2,4", help="half-widths asked for, in points")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--design", default="uniform,stratified", help="uniform (sweep) and/or stratified (attribute)")
    args = ap.parse_args()
    w, _ = shapley_weights(3)
    m, _ = interaction_weights(3)
    delta = np.zeros((1, 8))
    delta[0, -1], delta[0, 0] = 1.0, -1.0
    weights = np.vstack([w, m, delta])  # 3 Shapley values, 3 interactions, the delta
    head = ("design", "scenario", "N", "±pts", "round", "audits", "cover φ1", "cover φ2", "cover φ3",
            "cover interactions", "cover Δ", "all at once", "φ, early stops only (min)", "naive z=1.96 (min over φ)",
            "docs used (mean)", "stopped early")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head), flush=True)
    t0 = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    for design, (name, (mains, inter, noise)) in ((d, sc) for d in args.design.split(",") for sc in SCENARIOS.items()):
        for n in (int(x) for x in args.docs.split(",")):
            for pts in (float(x) for x in args.precision.split(",")):
                cov, naive, used = [], [], []
                for _ in range(args.audits):
                    c, nv, u = audit(rng, population(rng, n, mains, inter, noise), weights, pts / 100, None, design)
                    cov.append(c)
                    naive.append(nv)
                    used.append(u)
                cov, naive, used = np.array(cov), np.array(naive), np.array(used)
                rd = len(plan_rounds(list(range(n)), 0)[0]) if design == "uniform" else "–"
                cells = [design, name, str(n), f"{pts:g}", str(rd), str(args.audits),
                         *(f"{100 * cov[:, i].mean():.1f} %" for i in range(3)),
                         f"{100 * cov[:, 3:6].mean():.1f} %", f"{100 * cov[:, 6].mean():.1f} %",
                         f"{100 * cov.all(axis=1).mean():.1f} %", early(cov, used < n),
                         f"{100 * naive[:, :3].mean(axis=0).min():.1f} %",
                         f"{used.mean():.0f} / {n}", f"{100 * (used < n).mean():.0f} %"]
                print("| " + " | ".join(cells) + " |", flush=True)
    print(f"\nbench wall {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
