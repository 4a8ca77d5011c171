"""Prediction vs data noise (``repaudit.audit.noise``): the split equals a direct computation, on synthetic repeats
and on three real runs that differ by the few-shot seed, and it reaches every report."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from repaudit.audit.noise import split_noise
from repaudit.cli import app

SEEDS = sorted((Path(__file__).parent / "fixtures" / "repaudit_runs" / "fewshot_seeds").glob("*.json"))


def _direct(x: np.ndarray) -> tuple[float, float]:
    """(prediction variance, data variance) written out as sums, the ANOVA way: within-doc mean square, and the
    between-doc mean square less its share of it."""
    n, k = x.shape
    means = [sum(row) / k for row in x]
    grand = sum(means) / n
    within = sum(sum((v - m) ** 2 for v in row) for row, m in zip(x, means)) / (n * (k - 1))
    between = k * sum((m - grand) ** 2 for m in means) / (n - 1)
    return within, max((between - within) / k, 0.0)


def test_split_equals_the_anova_estimates_and_the_law_of_total_variance():
    rng = np.random.default_rng(7)
    p = rng.uniform(0, 1, 400)  # each doc's chance of being right
    x = (rng.uniform(size=(400, 6)) < p[:, None]).astype(float)
    s = split_noise(x)
    pred, data = _direct(x)
    assert (s.prediction_var, s.data_var) == pytest.approx((pred, data), rel=1e-12)
    assert s.prediction_share == pytest.approx(pred / (pred + data))
    # the score's variance is the doc means' sample variance over n (uncut), as the law of total variance says
    assert s.se == pytest.approx(math.sqrt(np.var(x.mean(axis=1), ddof=1) / 400))
    assert s.se_double_repeats == pytest.approx(math.sqrt(data / 400 + pred / (400 * 12)))
    assert s.se_double_docs == pytest.approx(s.se / math.sqrt(2))
    assert s.se_data_floor == pytest.approx(math.sqrt(data / 400))
    # population check: total variance of one (doc, repeat) ≈ prediction + data (Bernoulli: p(1 − p) + var(p))
    assert pred + data == pytest.approx(np.mean(p) * (1 - np.mean(p)), abs=0.02)


def test_split_refuses_what_it_cannot_split():
    with pytest.raises(ValueError):
        split_noise(np.ones((5, 1)))
    with pytest.raises(ValueError):
        split_noise(np.array([[0.0, np.nan], [1.0, 1.0]]))
    same = split_noise(np.ones((4, 3)))
    assert same.prediction_share is None and same.se == 0.0


def test_variance_across_seed_splits_real_repeats_as_computed_directly(tmp_path):
    assert len(SEEDS) == 3
    out = tmp_path / "seeds.json"
    res = CliRunner().invoke(app, ["variance", *map(str, SEEDS), "--across", "seed", "-o", str(out)])
    assert res.exit_code == 0, res.output
    rows = {(r["task"], r["metric"]): r for r in json.loads(out.read_text())["seed"]}
    docs = [{d["doc_id"]: d["metrics"] for d in json.loads(p.read_text())["docs"]} for p in SEEDS]
    ids = sorted(docs[0])
    assert all(sorted(d) == ids for d in docs)
    for metric in ("acc", "acc_norm"):
        x = 100 * np.array([[d[i][metric] for d in docs] for i in ids])  # points
        pred, data = _direct(x)
        split = rows[("arc_easy", metric)]["split"]
        assert (split["n_docs"], split["repeats"]) == (60, 3)
        assert (split["prediction_var"], split["data_var"]) == pytest.approx((pred, data), rel=1e-9)
        assert split["se"] == pytest.approx(math.sqrt(data / 60 + pred / 180), rel=1e-9)


def test_the_split_reaches_every_text_report(tmp_path):
    for suffix, needle in ((".md", "Prediction vs data noise"), (".tex", "Prediction vs data noise"),
                           (".txt", "prediction noise sd"), (".html", "prediction noise sd")):
        out = tmp_path / f"seeds{suffix}"
        res = CliRunner().invoke(app, ["variance", *map(str, SEEDS), "--across", "seed", "-o", str(out)])
        assert res.exit_code == 0, res.output
        assert needle in out.read_text(), suffix
