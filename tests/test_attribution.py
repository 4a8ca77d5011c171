"""Shapley attribution on a synthetic backend whose per-doc outcome is a known function of the factors."""

from __future__ import annotations

import numpy as np
import pytest

from repaudit.attribution import attribute, shapley_permutation, subsets

# Additive effects of three factors plus one interaction between the first two.
EFFECTS = {0: 0.10, 1: -0.04, 2: 0.02}
INTERACTION = 0.06  # only when factors 0 and 1 both take B's value


def _score(s: frozenset[int]) -> float:
    return 0.5 + sum(EFFECTS[i] for i in s) + (INTERACTION if {0, 1} <= s else 0.0)


def _outcomes(n: int, seed: int = 0) -> dict[frozenset[int], np.ndarray]:
    """Per-doc 0/1 outcomes: doc d is right in configuration S iff u_d < score(S), with one shared
    uniform u_d per doc (common random numbers), so every configuration's mean is close to its score."""
    u = (np.arange(n) + 0.5) / n
    np.random.default_rng(seed).shuffle(u)
    return {s: (u < _score(s)).astype(float) for s in subsets(3)}


def test_shapley_values_equal_the_analytic_ones_and_sum_to_delta():
    att = attribute(["dtype", "batch_size", "format"], _outcomes(10_000), n_boot=200)
    expected = np.array([EFFECTS[0] + INTERACTION / 2, EFFECTS[1] + INTERACTION / 2, EFFECTS[2]])
    assert att.phi == pytest.approx(expected, abs=2e-4)  # 1/n discretisation of the per-doc outcomes
    assert att.phi.sum() == pytest.approx(att.delta, abs=1e-12)
    assert att.delta == pytest.approx(_score(frozenset({0, 1, 2})) - _score(frozenset()), abs=2e-4)
    inter = dict(zip(att.pairs, att.interactions))
    assert inter[("dtype", "batch_size")] == pytest.approx(INTERACTION, abs=2e-4)
    assert inter[("dtype", "format")] == pytest.approx(0.0, abs=2e-4)
    for (lo, hi), x in zip(att.phi_ci, att.phi):
        assert lo <= x <= hi


def test_permutation_sampling_converges_and_keeps_efficiency():
    phi, se = shapley_permutation(3, _score, n_perm=400, seed=1)
    expected = np.array([EFFECTS[0] + INTERACTION / 2, EFFECTS[1] + INTERACTION / 2, EFFECTS[2]])
    assert phi.sum() == pytest.approx(_score(frozenset({0, 1, 2})) - _score(frozenset()))
    assert np.all(np.abs(phi - expected) <= 4 * se + 1e-12)


def test_missing_configuration_is_an_error():
    out = _outcomes(100)
    del out[frozenset({0, 2})]
    with pytest.raises(ValueError, match="lack 1 of the 8 configurations"):
        attribute(["a", "b", "c"], out)


def test_real_attribution_on_a_tiny_model_and_second_run_is_all_cache(tiny_model, shared_data, tmp_path):
    from repaudit.attribution import run_attribution
    from repaudit.replay import config_from_record
    from repaudit.runner import RunConfig, run

    common = dict(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=8, cache_dir=tmp_path / "c")
    rec_a = run(RunConfig(**common, dtype="float32", batch_size=4))
    rec_b = run(RunConfig(**common, dtype="bfloat16", batch_size=2, prompt_format="lettered"))
    cfg_a = config_from_record(rec_a, shared_data, str(tiny_model), tmp_path / "c")
    cfg_b = config_from_record(rec_b, shared_data, str(tiny_model), tmp_path / "c")
    first = run_attribution(rec_a, rec_b, cfg_a, cfg_b, run, n_boot=200)
    assert first.factors == ["dtype", "batch_size", "prompt_format"] and first.configurations == 8
    assert sum(first.phi) == pytest.approx(first.reexecuted_delta, abs=1e-12)
    # A and B themselves were re-executed from their fingerprints: same numbers, no residual
    assert first.fidelity_a == first.fidelity_b == 1.0 and first.residual == pytest.approx(0.0, abs=1e-12)
    assert first.computed_batches > 0
    second = run_attribution(rec_a, rec_b, cfg_a, cfg_b, run, n_boot=200)
    assert second.computed_batches == 0 and second.cached_batches > 0  # no inference at all
    assert second.phi == first.phi
