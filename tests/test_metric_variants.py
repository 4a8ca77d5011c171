"""Scoring-only factors (``--acc-norm``): named by compare, replayed by attribute, swept with no new batch."""

from __future__ import annotations

import pytest

from repaudit.audit.compare import compare, load_run
from repaudit.errors import RepauditError
from repaudit.run.metrics import multiple_choice_metrics
from repaudit.run.records import write_record
from repaudit.run.runner import BackendPool, RunConfig, run


def test_acc_norm_normalisations_pick_different_choices():
    lls, choices = [-6.0, -9.0], ["cat", "elephants"]
    # per char: -2.0 vs -1.0 (picks 1); per token (3 vs 1 tokens): -2.0 vs -9.0 (picks 0)
    assert multiple_choice_metrics(lls, choices, 1, acc_norm="char_length")["acc_norm"] == 1.0
    assert multiple_choice_metrics(lls, choices, 0, acc_norm="token_length", n_tokens=[3, 1])["acc_norm"] == 1.0
    # "é" is 1 character but 2 bytes: per char -4.0 vs -2.5 (picks 1), per byte -2.0 vs -2.5 (picks 0)
    assert multiple_choice_metrics([-4.0, -2.5], ["é", "e"], 1, acc_norm="char_length")["acc_norm"] == 1.0
    assert multiple_choice_metrics([-4.0, -2.5], ["é", "e"], 1, acc_norm="byte_length")["acc_norm"] == 0.0
    with pytest.raises(ValueError):
        multiple_choice_metrics(lls, choices, 0, acc_norm="token_length")


def test_runs_differing_only_in_acc_norm_share_batches_compare_names_it_and_attribute_replays_it(
        tiny_model, shared_data, tmp_path):
    from repaudit.audit.attribution import run_attribution
    from repaudit.audit.replay import load_replay_source
    from repaudit.audit.sweep import sweep

    common = dict(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=30, cache_dir=tmp_path / "c")
    a = run(RunConfig(**common))
    b = run(RunConfig(**common, acc_norm="token_length"))
    assert b.timings.computed_batches == 0 and b.timings.cached_batches > 0  # scoring only: no forward pass
    assert b.fingerprint.metric.acc_norm_normalisation == "token_length"
    assert [d.loglikelihoods for d in a.docs] == [d.loglikelihoods for d in b.docs]
    assert any(da.metrics["acc_norm"] != db.metrics["acc_norm"] for da, db in zip(a.docs, b.docs))
    write_record(a, tmp_path / "a.json")
    write_record(b, tmp_path / "b.json")
    c = compare(load_run(tmp_path / "a.json"), load_run(tmp_path / "b.json"), n_boot=200)
    assert {(f.group, f.field) for f in c.differing()} == {("metric_variant", "acc_norm")}
    assert "acc_norm" in {s.metric for s in c.scores}  # still compared as the same metric
    srcs = [load_replay_source(tmp_path / f, shared_data, str(tiny_model), tmp_path / "c")
            for f in ("a.json", "b.json")]
    pool = BackendPool()
    att = run_attribution(*srcs, lambda cfg: run(cfg, backends=pool), metric="acc_norm", n_boot=200)
    assert att.factors == ["acc_norm"] and att.residual == pytest.approx(0.0, abs=1e-12)
    assert att.computed_batches == 0 and att.phi[0] == pytest.approx(att.recorded_delta)
    res = sweep(RunConfig(**common), "acc_norm", ["token_length", "byte_length"], run, metric="acc_norm")
    assert [p.value for p in res.points] == ["token_length", "byte_length"]
    assert res.computed_batches == 0 and res.cached_batches > 0  # the values reused the base's inference
    with pytest.raises(RepauditError, match="unknown acc_norm normalisation 'words'"):
        run(RunConfig(**common, acc_norm="words"))
