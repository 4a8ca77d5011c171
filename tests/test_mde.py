"""The MDE beside every paired row (``repaudit.audit.mde``): the exact McNemar power against a brute-force sum with
scipy's binomial test, the z-test MDE and design effect against their formulas, and what compare and gate print."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from scipy import stats as sps
from typer.testing import CliRunner

from repaudit.audit.mde import binary_power, mcnemar_power, z_power
from repaudit.cli import app

PAIR = ["tests/fixtures/lmeval_config/openbookqa_0shot", "tests/fixtures/lmeval_config/openbookqa_3shot"]


def _brute(n: int, psi: float, delta: float, alpha: float) -> float:
    """Power by enumerating every (up, down) outcome of n docs and asking scipy's exact binomial test."""
    p_up, p_down = (psi + delta) / 2, (psi - delta) / 2
    total = 0.0
    for up in range(n + 1):
        for down in range(n + 1 - up):
            prob = sps.multinomial.pmf([up, down, n - up - down], n, [p_up, p_down, 1 - psi])
            if up + down and sps.binomtest(up, up + down, 0.5).pvalue < alpha:
                total += prob
    return total


@pytest.mark.parametrize("n,psi,delta,alpha", [(30, 0.2, 0.1, 0.05), (25, 0.5, 0.2, 0.1), (40, 0.1, 0.1, 0.05)])
def test_mcnemar_power_is_the_exact_sum(n, psi, delta, alpha):
    assert mcnemar_power(n, psi, delta, alpha) == pytest.approx(_brute(n, psi, delta, alpha), abs=1e-9)


def test_the_binary_mde_is_where_the_exact_power_reaches_80_percent():
    p = binary_power(30, 38, 570, 0.05, 100.0, "pts", 570)
    psi = 68 / 570
    assert p.test == "exact McNemar" and p.flip_share == pytest.approx(psi) and p.n_effective == 570
    assert mcnemar_power(570, psi, p.mde / 100, 0.05) == pytest.approx(0.8, abs=1e-4)
    # a normal approximation of the same test (Connor 1987) lands close by
    approx = (sps.norm.ppf(0.975) + sps.norm.ppf(0.8)) * math.sqrt(psi / 570)
    assert p.mde / 100 == pytest.approx(approx, rel=0.05)
    for move, need in p.docs_for.items():
        d = float(move) / 100
        assert mcnemar_power(need, max(psi, d), d, 0.05) >= 0.8
    assert p.docs_for["3"] > 570 and "no 3-point move would be detectable on the 570 docs" in p.note


def test_no_flip_still_bounds_the_move_a_test_can_see():
    p = binary_power(0, 0, 570, 0.05, 100.0, "pts", 570)
    # a move of δ flips at least a share δ of docs, all one way: D ~ Binomial(n, δ) and 6 flips reject at 0.05
    d = p.mde / 100
    assert sps.binom.sf(5, 570, d) == pytest.approx(0.8, abs=1e-4)


def test_a_z_row_mde_and_its_design_effect():
    p = z_power(1.5, 0.75, 400, 0.1, "pts", 1000)
    assert p.mde == pytest.approx((sps.norm.ppf(0.95) + sps.norm.ppf(0.8)) * 1.5)
    assert p.design_effect == pytest.approx(4.0) and p.n_effective == pytest.approx(100.0)
    assert p.docs_for == {"1": math.ceil(400 * p.mde ** 2), "3": math.ceil(400 * (p.mde / 3) ** 2)}
    assert z_power(0.0, None, 400, 0.05, "pts", 400).mde is None


def test_compare_prints_the_mde_beside_every_paired_row(tmp_path):
    out = tmp_path / "c.json"
    res = CliRunner().invoke(app, ["compare", *PAIR, "-o", str(out)])
    assert res.exit_code == 0, res.output
    rows = json.loads(out.read_text())["scores"]
    for r in rows:
        p = r["power"]
        assert r["method"] == "paired_score" and p["test"] == "exact McNemar"
        psi = (r["right_to_wrong"] + r["wrong_to_right"]) / r["n_paired"]
        d = p["mde"] / 100  # a move of d flips at least a share d of the docs
        assert mcnemar_power(r["n_paired"], max(psi, d), d, 0.05) == pytest.approx(0.8, abs=1e-4)
    md = CliRunner().invoke(app, ["compare", *PAIR, "--format", "markdown"]).output
    assert "| MDE |" in md and f"| {rows[0]['power']['mde']:.2f} |" in md
    assert f"a move smaller than {rows[0]['power']['mde']:.2f} pts could hide here" in md
    # the 40 docs cannot show a 3-point move: say what would, never a doc count above what the runs have
    assert "no 3-point move would be detectable on the 40 docs" in md and "evaluate more docs" in md
    assert not re.search(r"docs to detect a \d-pt move: [\d,]{3,}", md)


def test_gate_carries_the_row_mde(tmp_path):
    out = tmp_path / "g.json"
    res = CliRunner().invoke(app, ["gate", *PAIR, "--max-drop", "5", "-o", str(out)])
    assert res.exit_code in (0, 1, 2), res.output
    g = json.loads(out.read_text())
    by = {(r["task"], r["metric"]): r["power"]["mde"] for r in g["comparison"]["scores"]}
    assert all(r["power"]["mde"] == by[(r["task"], r["metric"])] for r in g["rows"])
    md = CliRunner().invoke(app, ["gate", *PAIR, "--max-drop", "5", "--format", "markdown"]).output
    assert "| MDE |" in md and "what the paired test can detect" in md


def test_random_pairs_agree_with_the_simulation():
    """A small planted-move simulation (the full one is bench/compare_mde.py): detected ≈ 80 % at the MDE."""
    rng = np.random.default_rng(1)
    p = binary_power(20, 20, 300, 0.05, 100.0, "pts", 300)
    d, psi = p.mde / 100, max(40 / 300, p.mde / 100)
    counts = rng.multinomial(300, [(psi + d) / 2, (psi - d) / 2, 1 - psi], size=3000)
    up, down = counts[:, 0], counts[:, 1]
    pv = np.where(up + down > 0, np.minimum(1, 2 * sps.binom.cdf(np.minimum(up, down), np.maximum(up + down, 1),
                                                                  0.5)), 1)
    assert np.mean(pv < 0.05) == pytest.approx(0.8, abs=0.03)


def test_a_move_the_split_cannot_detect_says_so_and_what_would():
    """7 of 570 docs flip: a 3-point move needs fewer docs than the split has, a 1-point move more. The sentence
    never prints a doc count above the 570 (issue 55, item 4): it says the split cannot, and what would."""
    from repaudit.report.power import power_text

    p = binary_power(5, 2, 570, 0.05, 100.0, "pts", 570)
    assert p.docs_for["3"] <= 570 < p.docs_for["1"]
    text = power_text(p, "pts", False)
    assert f"docs to detect a 3-pt move: {p.docs_for['3']:,}" in text and "1-pt move:" not in text
    assert text.endswith("no 1-point move would be detectable on the 570 docs this row is paired on: average "
                         "repeated runs of "
                         "each configuration per doc (sampling or few-shot seeds; repaudit variance measures how much "
                         "of the noise repeats remove) or evaluate more docs (the rest of the split, or a larger one)")


def test_one_cluster_on_every_doc_is_no_division_by_zero():
    """Every doc in one cluster (a --cluster that labels them all alike): the cluster-robust SE is 0 by construction,
    so the row resamples docs one by one and says why; the MDE has a design effect of 1, never n / 0."""
    import random

    from repaudit.audit.compare import compare
    from repaudit.importers.comparable import ComparableRun, DocOutcome, TaskOutcome
    from repaudit.vocabulary import Recorded

    def run(seed: int, binary: bool) -> ComparableRun:
        r = random.Random(seed)
        docs = {i: DocOutcome(doc_id=i, doc_hash=str(i), prompt_hash=None, target="0", cluster="all",
                              metrics={"acc": float(r.random() < 0.6) if binary else r.random()}, prediction=None)
                for i in range(40)}
        mean = sum(d.metrics["acc"] for d in docs.values()) / 40
        return ComparableRun(path=f"r{seed}", source="repaudit 0.1.0", factors={"t": Recorded()},
                             tasks={"t": TaskOutcome(task="t", reported={"acc": (mean, None)}, docs=docs, n_docs=40)})

    for binary in (True, False):
        row = compare(run(1, binary), run(2, binary), n_boot=200).scores[0]
        assert row.method in ("paired_score", "paired_bootstrap") and row.n_clusters is None
        assert "every doc is in one cluster ('all')" in row.note
        assert row.power is not None and row.power.design_effect == 1.0
    from repaudit.audit.mde import z_power

    assert z_power(0.0, 0.3, 40, 0.05, "pts", 40).n_effective == 40  # no spread: no design effect
