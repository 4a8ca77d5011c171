"""``repaudit variance``: the grid it runs, every number it reports recomputed independently, the reports."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from repaudit.errors import RepauditError
from repaudit.run.runner import BackendPool, RunConfig, run


@pytest.fixture(scope="module")
def report(tiny_model, shared_data, tmp_path_factory):
    from repaudit.audit.variance import variance

    pool = BackendPool()
    base = RunConfig(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=24, num_fewshot=2,
                     cache_dir=tmp_path_factory.mktemp("var"))
    recs = []

    def go(cfg):
        rec = run(cfg, backends=pool)
        recs.append((cfg, rec))
        return rec

    return variance(base, go, ["cloze", "lettered"], fewshot_seeds=3, order_seeds=2, n_boot=500), recs


def test_the_grid_is_seeds_then_orders_per_format(report):
    r, recs = report
    assert r.stat_settings.model_dump() == {"alpha": 0.05, "adjust": None, "n_boot": 500, "boot_seed": 0,
                                            "tie_eps": None}
    assert len(recs) == 2 * (3 + 2) and [u.format for u in r.runs] == ["cloze"] * 5 + ["lettered"] * 5
    assert [(u.fewshot_seed, u.order_seed) for u in r.runs[:5]] == [(1234, None), (1235, None), (1236, None),
                                                                     (1234, 1), (1234, 2)]
    ids = {tuple(d.fewshot_ids) for d in recs[0][1].docs}
    assert all({tuple(sorted(d.fewshot_ids)) for d in rec.docs} == {tuple(sorted(i)) for i in ids}
               for _, rec in recs[3:5])  # the order runs keep the first seed's examples


def test_every_number_matches_an_independent_computation(report):
    r, recs = report
    z = sps.norm.ppf(0.975) + sps.norm.ppf(0.8)
    for k, fmt in enumerate(["cloze", "lettered"]):
        block = [rec for _, rec in recs[5 * k: 5 * k + 5]]
        acc = [np.array([d.metrics["acc"] for d in rec.docs]) for rec in block]
        row = next(x for x in r.noise if x.format == fmt and x.metric == "acc")
        seeds = [a.mean() for a in acc[:3]]
        assert row.score == pytest.approx(np.mean(seeds))
        assert row.seed_sd == pytest.approx(np.std(seeds, ddof=1))
        assert row.order_sd == pytest.approx(np.std([seeds[0], acc[3].mean(), acc[4].mean()], ddof=1))
        # noise pairs: every two runs of the format (seeds and orders) whose prompts differ
        prompts = [[d.prompt_hash for d in rec.docs] for rec in block]
        pairs = [(i, j) for i in range(5) for j in range(i + 1, 5) if prompts[i] != prompts[j]]
        assert len(pairs) == 10  # with 2 shots every order run reorders some doc's examples
        sd_d = math.sqrt(np.mean([np.var(acc[i] - acc[j], ddof=1) for i, j in pairs]))
        assert row.mde_unpaired == pytest.approx(z * math.sqrt(2 * np.var(acc[0], ddof=1)) / math.sqrt(24))
        assert row.sd_diff == pytest.approx(sd_d) and row.mde == pytest.approx(z * sd_d / math.sqrt(24))
        assert row.docs_for_1pt == math.ceil((z * sd_d / 0.01) ** 2)
        assert row.seeds_for_1pt == max(1, math.ceil(2 * (z * np.std(seeds, ddof=1) / 0.01) ** 2))
        assert row.boot_low <= acc[0].mean() <= row.boot_high
        # prediction vs data noise of the seed runs (docs × seeds, in points): ANOVA's within and between parts
        x = 100 * np.stack(acc[:3], axis=1)
        pred = np.mean(np.var(x, axis=1, ddof=1))
        assert row.split.prediction_var == pytest.approx(pred)
        assert row.split.data_var == pytest.approx(max(np.var(x.mean(axis=1), ddof=1) - pred / 3, 0.0))
        k_choices = np.mean([1 / len(d.choices) for d in block[0].docs])
        assert row.chance == pytest.approx(k_choices)
        # continuous counterpart: softmax share of the gold choice, recomputed from the recorded log-likelihoods
        p = [math.exp(d.loglikelihoods[d.gold]) / sum(math.exp(x) for x in d.loglikelihoods) for d in block[0].docs]
        assert r.runs[5 * k].scores["p_gold"] == pytest.approx(np.mean(p))
        assert next(x for x in r.noise if x.format == fmt and x.metric == "p_gold").counterpart == "acc"
    spread = next(s for s in r.format_spread if s.metric == "acc")
    assert spread.spread == pytest.approx(abs(spread.scores["cloze"] - spread.scores["lettered"]))


def test_reports_render_and_the_plot_is_written(report, tmp_path):
    from repaudit.report.plots import variance_plot
    from repaudit.report.variance import variance_latex, variance_markdown

    r, _ = report
    mdtext = variance_markdown(r)
    assert "| cloze | acc |" in mdtext and "p_gold (≈ acc)" in mdtext
    assert "Prediction vs data noise of the seed runs" in mdtext
    assert r"\begin{tabular}" in variance_latex(r)
    assert all(p.stat().st_size > 1000 for p in variance_plot(r, tmp_path / "v.png"))


def test_a_zero_shot_base_or_one_seed_is_refused(tiny_model, shared_data):
    from repaudit.audit.variance import variance_grid

    base = RunConfig(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=4)
    with pytest.raises(RepauditError, match="n-shot base"):
        variance_grid(base, ["cloze"], 3, 2)
    with pytest.raises(RepauditError, match="between 2 and 1000"):
        variance_grid(base.model_copy(update={"num_fewshot": 1}), ["cloze"], 1, 0)


def test_the_command_writes_its_report_and_refuses_a_zero_shot_base_in_one_line(tiny_model, shared_data, tmp_path):
    import json

    from typer.testing import CliRunner

    from repaudit.cli import app

    out = tmp_path / "v.json"
    common = ["variance", "--model", str(tiny_model), "--data-dir", str(shared_data), "--cache-dir",
              str(tmp_path / "c"), "--doc-ids", "0,3,5,8,13,21", "--fewshot-seeds", "2", "--formats", "cloze"]
    res = CliRunner().invoke(app, [*common, "--num-fewshot", "1", "-o", str(out)])
    assert res.exit_code == 0, res.output
    rep = json.loads(out.read_text())
    assert rep["n_docs"] == 6 and len(rep["runs"]) == 3 and {x["metric"] for x in rep["noise"]} >= {"acc", "p_gold"}
    bad = CliRunner().invoke(app, [*common, "--num-fewshot", "0", "-o", str(tmp_path / "w.json")])
    assert bad.exit_code == 1 and bad.stderr.count("error:") == 1 and "n-shot base" in bad.stderr
    assert not (tmp_path / "w.json").exists()


def test_the_base_can_come_from_a_run_file(tiny_model, shared_data, tmp_path):
    import json

    from typer.testing import CliRunner

    from repaudit.cli import app
    from repaudit.run.records import write_record

    rec = run(RunConfig(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=5, num_fewshot=2,
                        prompt_format="lettered", cache_dir=tmp_path / "c"))
    write_record(rec, tmp_path / "base.json")
    res = CliRunner().invoke(app, ["variance", "--base", str(tmp_path / "base.json"), "--model", str(tiny_model),
                                   "--data-dir", str(shared_data), "--cache-dir", str(tmp_path / "c"),
                                   "--fewshot-seeds", "2", "--order-seeds", "0", "--formats", "lettered",
                                   "-o", str(tmp_path / "v.json")])
    assert res.exit_code == 0, res.output
    rep = json.loads((tmp_path / "v.json").read_text())
    assert (rep["n_docs"], rep["num_fewshot"]) == (5, 2)
    # the base run itself, replayed (its digest differs only in add_bos_token: replay sets the resolved value)
    acc = next(m.value for m in rec.metrics if m.name == "acc")
    assert rep["runs"][0]["scores"]["acc"] == pytest.approx(acc)
