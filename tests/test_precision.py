"""``--precision`` (doc-adaptive attribution and sweeps) and ``--dry-run`` on a tiny model and real ARC-Easy docs."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from repaudit.audit.sequential import (
    boundary_constant,
    half_widths,
    plan_rounds,
    plan_strata,
    run_rounds,
    run_stratified_rounds,
    stratified_estimate,
)
from repaudit.cli import app
from repaudit.errors import RepauditError
from repaudit.run.runner import BackendPool, RunConfig, run


def test_rounds_are_a_seeded_partition_and_the_boundary_widens_with_looks():
    ids = list(range(100, 190))
    rounds = plan_rounds(ids, seed=3, round_docs=20)
    assert [len(r) for r in rounds] == [20, 20, 20, 20, 10]
    assert sorted(i for r in rounds for i in r) == ids and all(r == sorted(r) for r in rounds)
    assert plan_rounds(ids, 3, 20) == rounds and plan_rounds(ids, 4, 20) != rounds
    one = boundary_constant((50,), 1000)
    assert one == pytest.approx(1.959964, abs=1e-6)  # one look: the fixed-n z
    five = boundary_constant((200, 400, 600, 800, 1000), 1000)  # the last look (all docs) is exact
    ten = boundary_constant(tuple(range(100, 1001, 100)), 1000)
    assert one < five < ten < 3.0
    # a round with no flip is not treated as certain, and all docs give width 0
    assert half_widths(np.zeros((1, 50)), 1000, ten)[0] > 0.04
    assert half_widths(np.ones((2, 1000)), 1000, ten).tolist() == [0.0, 0.0]


def test_sequential_loop_stops_at_the_precision_and_covers_the_population_value():
    rng = np.random.default_rng(0)
    pop = (rng.uniform(size=(1, 2000)) < 0.3).astype(float) - (rng.uniform(size=(1, 2000)) < 0.1)
    contrib, seq = run_rounds(list(range(2000)), 0.04, 1, 100, lambda chunk: pop[:, chunk])
    assert seq.stopped == "precision reached" and seq.docs_used < 2000
    assert seq.half_widths[0] <= 0.04 and contrib.shape == (1, seq.docs_used)
    assert seq.docs_used == 100 * seq.rounds_run and seq.doc_ids == [i for r in plan_rounds(
        list(range(2000)), 1, 100)[:seq.rounds_run] for i in r]
    assert abs(contrib.mean() - pop.mean()) <= seq.half_widths[0]
    # asked for more than the docs can give: all docs, the exact value, width 0
    contrib, seq = run_rounds(list(range(2000)), 0.001, 1, 100, lambda chunk: pop[:, chunk])
    assert seq.stopped == "docs exhausted" and seq.docs_used == 2000 and contrib.mean() == pytest.approx(pop.mean())
    with pytest.raises(RepauditError, match="--precision must be a positive"):
        run_rounds(list(range(10)), 0.0, 1, 5, lambda chunk: pop[:, chunk])


def test_stratified_rounds_take_the_census_first_and_equal_slices_of_every_stratum():
    census, strata = [5, 50, 77], {"near-tie": list(range(100, 140)), "rest": list(range(200, 360))}
    rounds = plan_strata(census, strata, seed=2, round_docs=20)
    assert len(rounds) == 10 and set(census) <= set(rounds[0])
    assert sorted(i for r in rounds for i in r) == sorted(census + strata["near-tie"] + strata["rest"])
    for k in range(1, 11):  # after look k, each stratum has k/10 of its docs evaluated
        seen = {i for r in rounds[:k] for i in r}
        assert len(seen & set(strata["near-tie"])) == 4 * k and len(seen & set(strata["rest"])) == 16 * k
    assert plan_strata(census, strata, 2, 20) == rounds and plan_strata(census, strata, 3, 20) != rounds
    # all docs evaluated: the weighted estimate is the plain mean over all docs, with width 0
    rng = np.random.default_rng(1)
    ids = [i for r in rounds for i in r]
    pop = {i: rng.uniform(-1, 1, 2) for i in ids}
    x = np.stack([pop[i] for i in ids], axis=1)
    groups = np.array([0 if i in census else 1 if i < 200 else 2 for i in ids])
    est, hw, w = stratified_estimate(x, groups, np.array([3, 40, 160]), np.array([True, False, False]), 2.5)
    assert est == pytest.approx(x.mean(axis=1)) and hw.tolist() == [0.0, 0.0] and w.sum() == pytest.approx(1.0)


def test_stratified_loop_is_unbiased_and_covers_where_flips_are_rare():
    """A population where every doc A and B disagree on is a census doc: the estimate of the all-doc
    mean is weighted by stratum size, so oversampling the flips does not bias it."""
    rng = np.random.default_rng(0)
    n = 1500
    census = list(range(100))  # the flips: contribution ±1
    pop = np.zeros((1, n))
    pop[0, :100] = np.where(rng.uniform(size=100) < 0.8, 1.0, -1.0)
    pop[0, 100:] = (rng.uniform(size=n - 100) < 0.02) * 0.5  # hybrids flip a few agreed docs
    strata = {"near-tie": list(range(100, 450)), "rest": list(range(450, n))}
    estimates = []
    for seed in range(40):
        contrib, w, seq = run_stratified_rounds(census, strata, 0.03, seed, None, lambda chunk: pop[:, chunk])
        assert seq.stopped == "precision reached" and seq.strata[0].used == 100 and seq.strata[0].census
        est = float((contrib @ w)[0])
        assert abs(est - pop.mean()) <= seq.half_widths[0]
        estimates.append(est)
        assert seq.docs_used < n / 2
    # a plain mean over the docs used would overweight the flips (≈ +0.6 × 100/docs used); the weighted one does not
    assert abs(np.mean(estimates) - pop.mean()) < 0.003


def test_doc_subset_run_matches_the_full_run_doc_by_doc(tiny_model, shared_data, tmp_path):
    common = dict(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=12, num_fewshot=2,
                  cache_dir=tmp_path / "c", batch_size=1)
    full = run(RunConfig(**common))
    part = run(RunConfig(**common, doc_ids=[9, 2, 5]))
    assert [d.doc_id for d in part.docs] == [2, 5, 9]
    by_id = {d.doc_id: d for d in full.docs}
    for d in part.docs:  # few-shot examples are drawn over all docs first: same prompts, same numbers
        assert d.prompt_hash == by_id[d.doc_id].prompt_hash and d.loglikelihoods == by_id[d.doc_id].loglikelihoods
    assert part.fingerprint.data.doc_ids_sha256 and full.fingerprint.data.doc_ids_sha256 is None
    # a subset is part of what the digest covers: the same docs' subset and the full run digest differently
    assert full.fingerprint.canonical()["data"]["doc_ids_sha256"] is None
    assert part.fingerprint.digest() != full.fingerprint.digest()
    with pytest.raises(RepauditError, match="doc id 40 is not among the 12 docs"):
        run(RunConfig(**common, doc_ids=[1, 40]))


def test_precision_attribution_uses_a_subset_covers_the_full_values_and_extends_from_the_store(
        tiny_model, shared_data, tmp_path):
    from repaudit.audit.attribution import run_attribution
    from repaudit.audit.replay import load_replay_source
    from repaudit.report.audit import attribution_markdown
    from repaudit.run.records import write_record

    common = dict(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=60, cache_dir=tmp_path / "c")
    write_record(run(RunConfig(**common)), tmp_path / "a.json")
    write_record(run(RunConfig(**common, prompt_format="lettered", batch_size=4)), tmp_path / "b.json")
    src = [load_replay_source(tmp_path / f, shared_data, str(tiny_model), tmp_path / "c") for f in ("a.json", "b.json")]
    pool = BackendPool()

    def ex(cfg):
        return run(cfg, backends=pool)

    full = run_attribution(*src, ex, n_boot=200)
    loose = run_attribution(*src, ex, n_boot=200, precision=0.35, round_docs=15)
    seq = loose.sequential
    assert seq is not None and seq.stopped == "precision reached" and seq.docs_used < 60 == seq.docs_available
    assert loose.n_docs == seq.docs_used and max(seq.half_widths[:seq.gating]) <= 0.35 and seq.gating == 2
    for v, (lo, hi) in zip(full.phi, loose.phi_ci):
        assert lo <= v <= hi
    assert sum(loose.phi) == pytest.approx(loose.reexecuted_delta, abs=1e-12)
    assert "random subset" in attribution_markdown(loose)
    # the same command again computes nothing; a tighter one extends the same rounds from the store
    again = run_attribution(*src, ex, n_boot=200, precision=0.35, round_docs=15)
    assert again.computed_batches == 0 and again.phi == loose.phi
    tight = run_attribution(*src, ex, n_boot=200, precision=0.001, round_docs=15)
    assert tight.sequential.doc_ids[:seq.docs_used] == seq.doc_ids and tight.sequential.docs_used == 60
    assert tight.cached_batches >= loose.computed_batches + loose.cached_batches
    # all docs: the full attribution's values (rounds batch other docs together: a near-tie may flip one doc)
    assert tight.phi == pytest.approx(full.phi, abs=0.05)


def test_precision_sweep_and_dry_runs_through_the_cli(tiny_model, shared_data, tmp_path):
    base = ["--model", str(tiny_model), "--data-dir", str(shared_data), "--limit", "40", "--cache-dir",
            str(tmp_path / "c"), "--batch-size", "4"]
    cli = CliRunner()
    plan = cli.invoke(app, ["sweep", "--factor", "prompt_format", "--values", "lettered", *base, "--dry-run",
                            "--json"])
    assert plan.exit_code == 0, plan.output
    p = json.loads(plan.stdout)
    assert [c["label"] for c in p["configurations"]] == ["base", "noise floor: uncached repeat",
                                                         "prompt_format=lettered"]
    assert all(c["batches_stored"] == 0 and c["tokens_to_compute"] > 0 for c in p["configurations"])
    assert p["tokens_per_s"] > 0 and "measured now" in p["throughput_source"]
    out = tmp_path / "sweep.json"
    res = cli.invoke(app, ["sweep", "--factor", "prompt_format", "--values", "lettered", *base, "--precision", "45",
                           "--round-docs", "10", "-o", str(out)])
    assert res.exit_code == 0, res.output
    s = json.loads(out.read_text())
    assert s["sequential"]["docs_used"] < 40 and s["points"][0]["n"] == s["sequential"]["docs_used"]
    pt = s["points"][0]
    assert pt["ci_high"] - pt["delta"] == pytest.approx(s["sequential"]["half_widths"][0])
    # after the sweep its rounds are in the store, and the measured throughput is kept
    after = cli.invoke(app, ["sweep", "--factor", "prompt_format", "--values", "lettered", *base, "--dry-run",
                             "--format", "markdown"])
    assert after.exit_code == 0, after.output
    assert "earlier runs" in after.stdout and "| base | 40 |" in after.stdout
    # with --precision the plan is the rounds: the finished ones are in the store, the rest still to compute
    rounds = cli.invoke(app, ["sweep", "--factor", "prompt_format", "--values", "lettered", *base, "--precision", "45",
                              "--round-docs", "10", "--dry-run", "--json"])
    assert rounds.exit_code == 0, rounds.output
    value = json.loads(rounds.stdout)["configurations"][-1]
    first = p["configurations"][-1]
    assert value["docs"] == 40 and 0 < value["batches_stored"] < value["batches"]
    assert 0 < value["tokens_to_compute"] < first["tokens_to_compute"]
    bad = cli.invoke(app, ["sweep", "--factor", "prompt_format", "--values", "lettered", *base, "--precision", "0"])
    assert bad.exit_code == 2 and bad.stderr.startswith("error: --precision must be between 0 and 100")


def test_attribute_dry_run_counts_the_stored_batches(tiny_model, shared_data, tmp_path):
    from repaudit.run.records import write_record

    common = dict(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=10, cache_dir=tmp_path / "c")
    write_record(run(RunConfig(**common)), tmp_path / "a.json")
    write_record(run(RunConfig(**common, batch_size=2)), tmp_path / "b.json")
    res = CliRunner().invoke(app, ["attribute", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--model",
                                   str(tiny_model), "--data-dir", str(shared_data), "--cache-dir",
                                   str(tmp_path / "c"), "--dry-run", "--json"])
    assert res.exit_code == 0, res.output
    p = json.loads(res.stdout)
    # A and B ran with the store: both fully stored, nothing to compute, and throughput measured by those runs
    assert [c["label"] for c in p["configurations"]] == ["A", "B"]
    assert all(c["batches"] == c["batches_stored"] and c["tokens_to_compute"] == 0 for c in p["configurations"])
    assert "earlier runs" in p["throughput_source"]
